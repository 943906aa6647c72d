"""tokpack.Loader: the training-side iterator over packed token datasets."""
from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import _core
from ._dataset import Dataset

PathLike = Union[str, "os.PathLike[str]", Dataset]
Sources = Union[PathLike, Sequence[PathLike], Sequence[Tuple[PathLike, float]], Mapping[Any, float]]

_FORMATS = ("torch", "numpy", "dlpack")


def _default_rank_world() -> Tuple[int, int]:
    """torch.distributed's rank and world size when it is initialized, else
    the RANK / WORLD_SIZE environment variables (torchrun sets them), else 0 / 1.
    torch is not imported here: if the trainer has not imported it, it has
    not initialized torch.distributed either."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


def _as_dataset(source: PathLike) -> Dataset:
    return source if isinstance(source, Dataset) else Dataset(source)


def _parse_sources(sources: Sources) -> Tuple[List[Dataset], List[float]]:
    if isinstance(sources, Mapping):
        pairs = list(sources.items())
    elif isinstance(sources, (str, os.PathLike, Dataset)):
        pairs = [(sources, 1.0)]
    else:
        pairs = [s if isinstance(s, tuple) else (s, 1.0) for s in sources]
    if not pairs:
        raise ValueError("tokpack.Loader needs at least one dataset")
    return [_as_dataset(p) for p, _ in pairs], [float(w) for _, w in pairs]


def _shuffle_mode(shuffle: Union[bool, str]) -> str:
    if shuffle is True:
        return "full"
    if shuffle is False:
        return "none"
    return str(shuffle)


def _dtype_name(dtype: Any) -> str:
    # Accepts "int64", numpy.int64, torch.int64 and the like.
    name = getattr(dtype, "__name__", None) or str(dtype)
    return name.replace("torch.", "")


class Loader:
    """Shuffled, rank-partitioned batches of fixed-length token sequences,
    assembled ahead by C++ threads, with a resumable cursor.

    Each batch is a dict of tensors (torch, numpy, or DLPack-capable arrays,
    see ``as_``) that share memory with the loader's ring of buffers:

    - ``input_ids`` and ``labels``: ``[batch_size, seq_len]``; ``labels`` are
      the inputs shifted by one token (sample i is the window of seq_len + 1
      tokens at stream offset i * seq_len);
    - with ``document_boundaries=True`` also ``position_ids`` (int32,
      ``[batch_size, seq_len]``, restarting at each document) and
      ``cu_seqlens`` (int32 offsets of segments in the flattened batch, then
      the total, as flash-attention's varlen kernels take them).

    Lifetime rule: a batch's memory stays valid and unchanged for as long as
    any tensor (or view) of that batch is alive, even after the loader is
    gone; it returns to the ring when the last one is released. A trainer
    that keeps every one of ``prefetch`` batches alive gets a RuntimeError
    from the next ``next()`` instead of a hang; copy what you keep.

    Iterating continues from the cursor: a second ``for`` loop picks up where
    the first stopped. Iteration ends after ``epochs`` passes or ``max_steps``
    steps (counted from the start of the data, also across resumes), or
    never when both are 0.

    With ``device="cuda"`` (or "cuda:N", or a torch.device) batches arrive in
    GPU memory: the compact tokens are copied on a dedicated CUDA stream into
    ``device_prefetch`` device buffers and widened there; a consumer's stream
    (torch's current stream) waits for each batch, and a buffer is refilled
    only after that stream has passed the point where the batch was released
    (docs/gpu.md).

    Not thread-safe: iterate and checkpoint from one thread. The GIL is
    released while waiting for a batch and Ctrl-C interrupts the wait (the
    batch is not lost). A loader belongs to the process that created it: in
    a forked child (e.g. a DataLoader worker) using it raises RuntimeError.
    """

    def __init__(
        self,
        sources: Sources,
        seq_len: int = 2048,
        batch_size: int = 8,
        seed: int = 0,
        *,
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        shuffle: Union[bool, str] = True,
        block_size: int = 64,
        block_window: int = 16,
        dtype: Any = "int64",
        document_boundaries: bool = False,
        epochs: int = 0,
        max_steps: int = 0,
        threads: int = 2,
        prefetch: int = 4,
        as_: Optional[str] = None,
        device: Any = None,
        device_prefetch: int = 3,
        lookahead_steps: int = 16,
    ) -> None:
        if as_ is None:
            as_ = "torch" if _torch_available() else "numpy"
        if as_ not in _FORMATS:
            raise ValueError(f"as_ must be one of {_FORMATS}, not {as_!r}")
        self._device = _parse_device(device)
        if self._device is not None and as_ == "numpy":
            raise ValueError('numpy arrays cannot hold GPU memory: use as_="torch" or "dlpack"')
        default_rank, default_world = _default_rank_world()
        self._rank = default_rank if rank is None else int(rank)
        self._world_size = default_world if world_size is None else int(world_size)
        self._datasets, self._weights = _parse_sources(sources)
        self._seq_len = int(seq_len)
        self._batch_size = int(batch_size)
        self._document_boundaries = bool(document_boundaries)
        self._as = as_
        self._convert = _converter(as_)
        # torch converts bare DLPack capsules fastest; device batches need
        # __dlpack__(stream) to order torch's stream, so they stay Arrays.
        self._capsules = as_ == "torch" and self._device is None
        if self._device is None:
            make = _core.Loader
            where: Tuple[Any, ...] = ()
        else:
            make = _core.DeviceLoader
            where = (self._device, int(device_prefetch))
        self._core = make(
            [d._core for d in self._datasets],
            self._weights,
            *where,
            seq_len=self._seq_len,
            batch_size=self._batch_size,
            seed=int(seed),
            rank=self._rank,
            world_size=self._world_size,
            shuffle=_shuffle_mode(shuffle),
            block_size=int(block_size),
            block_window=int(block_window),
            dtype=_dtype_name(dtype),
            document_boundaries=self._document_boundaries,
            epochs=int(epochs),
            max_steps=int(max_steps),
            threads=int(threads),
            prefetch=int(prefetch),
            lookahead_steps=int(lookahead_steps),
        )
        self._created = time.perf_counter()
        self._first_next: Optional[float] = None
        self._last_next: Optional[float] = None

    # Iteration ---------------------------------------------------------

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        return self

    def __next__(self) -> Dict[str, Any]:
        if self._core.forked:
            raise RuntimeError(_FORK_MESSAGE)
        if self._first_next is None:
            self._first_next = time.perf_counter()
        arrays = self._core.next(self._capsules) if self._capsules else self._core.next()
        self._last_next = time.perf_counter()
        if arrays is None:
            raise StopIteration
        convert = self._convert
        out = {"input_ids": convert(arrays[0]), "labels": convert(arrays[1])}
        if len(arrays) == 4:
            out["position_ids"] = convert(arrays[2])
            out["cu_seqlens"] = convert(arrays[3])
        return out

    def __len__(self) -> int:
        """Steps in the whole run, counting those before a resume (so an LR
        schedule sized by it is the same in a fresh and a resumed run).
        TypeError for an endless loader (epochs=0 and max_steps=0)."""
        remaining = self._core.remaining_steps
        if remaining < 0:
            raise TypeError("an endless tokpack.Loader has no len(); pass epochs= or max_steps=")
        return self._core.step + remaining

    def __length_hint__(self) -> int:
        remaining = self._core.remaining_steps
        return remaining if remaining >= 0 else 0

    # Checkpointing -----------------------------------------------------

    @property
    def step(self) -> int:
        """The step number of the batch the next ``next()`` returns."""
        return self._core.step

    def state_dict(self) -> Dict[str, Any]:
        """The cursor after the last batch returned, as a JSON-able dict of a
        few hundred bytes. It does not depend on rank, world size or batch
        size, so it resumes on any of them; save it from any one rank."""
        return json.loads(self._core.state())

    def load_state_dict(self, state: Union[Mapping[str, Any], str]) -> None:
        """Continues from a saved cursor: the next batch is the one that
        followed it. ValueError when the state was made for other data, seed,
        seq_len, shuffle mode or weights, or is not a tokpack cursor."""
        if self._core.forked:
            raise RuntimeError(_FORK_MESSAGE)
        text = state if isinstance(state, str) else json.dumps(dict(state))
        self._core.load_state(text)

    # Introspection -----------------------------------------------------

    def stats(self) -> Dict[str, float]:
        """Data-path statistics since creation: steps served, the consumer's
        wait for data (total, mean, last, max, p50 and p99 over the last 1024
        steps, and as a fraction of wall time between the first and the
        latest next()), assembly time, bytes and throughput in samples and
        tokens per second; for remote data also the process's chunk cache
        hits and misses, bytes fetched and seconds spent fetching."""
        s = self._core.stats()
        steps = s["steps"]
        elapsed = 0.0
        if self._first_next is not None and self._last_next is not None:
            elapsed = self._last_next - self._first_next
        s["wait_seconds_mean"] = s["wait_seconds_total"] / steps if steps else 0.0
        s["elapsed_seconds"] = elapsed
        s["wait_fraction"] = s["wait_seconds_total"] / elapsed if elapsed > 0 else 0.0
        samples = steps * self._batch_size
        s["samples_per_second"] = samples / elapsed if elapsed > 0 else 0.0
        s["tokens_per_second"] = s["samples_per_second"] * self._seq_len
        return s

    @property
    def datasets(self) -> List[Dataset]:
        return list(self._datasets)

    @property
    def rank(self) -> int:
        return self._rank

    @property
    def world_size(self) -> int:
        return self._world_size

    @property
    def seq_len(self) -> int:
        return self._seq_len

    @property
    def batch_size(self) -> int:
        return self._batch_size

    @property
    def samples_per_source(self) -> List[int]:
        n = self.seq_len
        return [d.num_samples(n) for d in self._datasets]

    @property
    def device(self) -> str:
        """Where batches are delivered: "cpu" or "cuda:N"."""
        return "cpu" if self._device is None else f"cuda:{self._device}"

    def __repr__(self) -> str:
        names = ", ".join(f"{d.path!r}: {w:g}" for d, w in zip(self._datasets, self._weights))
        return (
            f"tokpack.Loader({{{names}}}, seq_len={self._seq_len}, "
            f"batch_size={self._batch_size}, rank={self._rank}/{self._world_size}, "
            f"step={self.step}, device={self.device!r}, as_={self._as!r})"
        )

    def __reduce__(self):
        raise TypeError(
            "a tokpack.Loader cannot be pickled (it owns C++ threads and buffers). "
            "It needs no DataLoader workers: iterate it directly, or build one inside "
            "each process from its arguments and load_state_dict()."
        )

    # Items are not addressable: a clear error for map-style use (for
    # example torch's DataLoader given a loader it does not see as iterable).
    def __getitem__(self, index: Any):
        raise TypeError(
            "tokpack.Loader is an iterator of ready batches, not a map-style dataset; "
            "iterate it directly (for batch in loader), or use tokpack.Dataset for "
            "random access"
        )


_FORK_MESSAGE = (
    "this tokpack.Loader was created in another process: its C++ threads do not survive "
    "fork (DataLoader workers fork). tokpack.Loader already assembles batches in "
    "background threads, so use it without DataLoader workers (num_workers=0), "
    "or create the loader inside the process that iterates it."
)


def _parse_device(device: Any) -> Optional[int]:
    """None for the CPU, else the CUDA device index ("cuda", "cuda:1", torch.device)."""
    if device is None:
        return None
    text = str(device)
    if text == "cpu":
        return None
    if text == "cuda":
        # A torch.device("cuda") has index None: the current device then.
        index = None if isinstance(device, str) else getattr(device, "index", None)
        if index is not None:
            return int(index)
        cuda = sys.modules.get("torch.cuda")
        return int(cuda.current_device()) if cuda is not None and cuda.is_initialized() else 0
    if text.startswith("cuda:") and text[5:].isdigit():
        return int(text[5:])
    raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:N', not {device!r}")


def cuda_available() -> bool:
    """True if this build of tokpack has CUDA and a GPU is usable here."""
    return bool(_core.cuda_available()[0])


def _torch_available() -> bool:
    if "torch" in sys.modules:
        return sys.modules["torch"] is not None  # None: imports of torch are blocked
    import importlib.util

    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        return False


def _converter(as_: str):
    if as_ == "dlpack":
        return lambda a: a
    if as_ == "numpy":
        import numpy as np

        return np.from_dlpack
    import torch
    import torch.utils.dlpack

    _register_with_torch(torch)
    return torch.utils.dlpack.from_dlpack


def _register_with_torch(torch) -> None:
    # torch's DataLoader treats IterableDatasets as streams (no sampler, no
    # __getitem__), which is what a Loader is: registering makes
    # DataLoader(loader, batch_size=None) pass batches through unchanged.
    from torch.utils.data import IterableDataset

    if not issubclass(Loader, IterableDataset):
        IterableDataset.register(Loader)
