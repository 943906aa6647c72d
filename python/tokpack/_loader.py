"""tokpack.Loader: the training-side iterator over packed token datasets."""
from __future__ import annotations

import json
import os
import time
from functools import partial
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import _arrays, _core, _jax, _phases
from ._dataloader import refuse_auto_collation
from ._dataset import Dataset
from ._options import LoaderOptions
from ._phases import Phase

if TYPE_CHECKING:
    from typing_extensions import Unpack

PathLike = Union[str, "os.PathLike[str]", Dataset]
Sources = Union[PathLike, Sequence[PathLike], Sequence[Tuple[PathLike, float]], Mapping[Any, float]]

_FORMATS = ("torch", "numpy", "jax", "dlpack")


def _parse_sources(sources: Sources) -> Tuple[List[Dataset], List[float]]:
    if isinstance(sources, Mapping):
        pairs = list(sources.items())
        named = [k for k, v in pairs if isinstance(v, (str, os.PathLike, Dataset))]
        if named:
            raise ValueError(f"sources maps {named[0]!r} to a dataset: a dict of names to "
                             "datasets goes with phases=[(0, {name: weight}), ...]; without "
                             "phases give {path: weight}")
    elif isinstance(sources, (str, os.PathLike, Dataset)):
        pairs = [(sources, 1.0)]
    else:
        pairs = [s if isinstance(s, tuple) else (s, 1.0) for s in sources]
    if not pairs:
        raise ValueError("tokpack.Loader needs at least one dataset")
    return _open_side_by_side([p for p, _ in pairs]), [float(w) for _, w in pairs]


def _open_side_by_side(locations: Sequence[PathLike]) -> List[Dataset]:
    """Datasets of `locations` (paths, or Datasets kept as they are), the
    paths opened side by side: a mixture of many remote sources waits for a
    few manifest fetches, not for all of them in turn."""
    paths = [p for p in locations if not isinstance(p, Dataset)]
    opened = iter(Dataset._open_all(paths)) if len(paths) > 1 else None
    return [p if isinstance(p, Dataset) else next(opened) if opened else Dataset(p)
            for p in locations]


class Loader:
    """Shuffled, rank-partitioned batches of fixed-length token sequences,
    assembled ahead by C++ threads, with a resumable cursor.

    Each batch is a dict of tensors (torch tensors, writable numpy arrays,
    jax.Arrays, or DLPack-capable tokpack arrays, see ``as_``) that share
    memory with the loader's ring of buffers:

    - ``input_ids`` and ``labels``: ``[batch_size, seq_len]`` (sample i is
      the window of seq_len + 1 tokens at stream offset i * seq_len); with
      ``labels="next"`` (the default) ``labels`` are the inputs shifted by one
      token, for a loss computed directly; with ``labels="same"`` they equal
      ``input_ids``, for models that shift internally (Hugging Face causal
      LMs);
    - with ``document_boundaries=True`` also ``position_ids`` (int32,
      ``[batch_size, seq_len]``, restarting at each document) and
      ``cu_seqlens`` (int32 offsets of segments in the flattened batch, then
      the total, as flash-attention's varlen kernels take them); always with
      ``packing="best_fit"``, whose samples are padded bins of whole documents
      with ``labels`` -100 across documents and on padding (docs/python.md);
    - ``labels`` are -100 wherever the label's token carries no loss in its
      dataset's loss mask (datasets built with loss spans, docs/format.md
      3.1; a dataset without masks trains every token); with
      ``loss_mask=True`` also ``loss_mask`` (uint8, ``[batch_size,
      seq_len]``): 1 where ``labels`` carry loss, 0 where they are -100.

    Lifetime rule: a batch's memory stays valid and unchanged for as long as
    any tensor (or view) of that batch is alive, even after the loader is
    gone; it returns to the ring when the last one is released. A trainer
    that keeps every one of ``prefetch`` batches alive gets a RuntimeError
    from the next ``next()`` instead of a hang; copy what you keep.

    ``phases=[(start_step, {source: weight}), ...]`` changes the mixture
    during the run; a phase given as a dict with ``"ramp_steps": n`` (or a
    third tuple element) moves the weights linearly from the previous phase's
    over its first n steps. ``max_epochs={source: k}`` caps a source at k
    epochs; its weight is then shared out among the others (docs/reader.md,
    "Ramps and caps").

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

    ``rank`` and ``world_size`` default to torch.distributed's when it is
    initialized, else to ``jax.process_index()`` / ``jax.process_count()``
    when jax.distributed is, else to the RANK / WORLD_SIZE environment
    variables, else 0 / 1. With ``as_="jax"`` (docs/jax.md) ``dtype``
    defaults to int32 unless jax_enable_x64 is on, and int64 with it off is
    a ValueError (JAX would silently copy it to int32).

    It yields whole batches: ``torch.utils.data.DataLoader(loader)`` (which
    collates ``batch_size=1`` items by default) is a TypeError; pass
    ``batch_size=None``.

    Not thread-safe: iterate and checkpoint from one thread. The GIL is
    released while waiting for a batch and Ctrl-C interrupts the wait (the
    batch is not lost). A loader belongs to the process that created it: in
    a forked child (e.g. a DataLoader worker) using it raises RuntimeError.
    """

    def __init__(
        self,
        sources: Optional[Sources] = None,
        *args: int,
        phases: Optional[Sequence[Phase]] = None,
        max_epochs: Optional[Mapping[Any, float]] = None,
        as_: Optional[str] = None,
        **options: "Unpack[LoaderOptions]",
    ) -> None:
        # The options are declared once, in the C++ core (LoaderOptions);
        # tokpack._options lists them with their types and docs. Positional
        # arguments are the first ones: seq_len, batch_size, seed.
        names = [o["name"] for o in _core.loader_options()]
        if len(args) > 3:
            raise TypeError("tokpack.Loader takes seq_len, batch_size and seed positionally; "
                            "pass the other options by keyword")
        for name, value in zip(names, args):
            if name in options:
                raise TypeError(f"tokpack.Loader got {name} twice")
            options[name] = value
        if as_ is None:
            as_ = "torch" if _arrays.torch_available() else "numpy"
        if as_ not in _FORMATS:
            raise ValueError(f"as_ must be one of {_FORMATS}, not {as_!r}")
        # Python spellings of option values: shuffle=True/False, dtype=torch.int64,
        # device=torch.device(...), and rank/world_size from torch.distributed.
        # shuffle=True is the default, "auto": "window" for remote data larger
        # than its cache, else "full".
        if isinstance(options.get("shuffle"), bool):
            options["shuffle"] = "auto" if options["shuffle"] else "none"
        if as_ == "jax":
            options["dtype"] = _jax.resolve_dtype(options.get("dtype"), _arrays.dtype_name)
        elif "dtype" in options:
            options["dtype"] = _arrays.dtype_name(options["dtype"])
        options["device"] = _core.parse_device(_arrays.device_text(options.get("device")))
        on_gpu = options["device"] != "cpu"
        if on_gpu and as_ == "numpy":
            raise ValueError('numpy arrays cannot hold GPU memory: use as_="torch" or "dlpack"')
        if on_gpu and as_ == "jax":
            raise ValueError(
                'as_="jax" delivers batches in host memory only (device="cuda" with JAX is '
                "untested): leave device out and place or shard each batch with "
                "jax.device_put or jax.make_array_from_process_local_data (docs/jax.md)")
        default_rank, default_world = _arrays.default_rank_world()
        if options.get("rank") is None:
            options["rank"] = default_rank
        if options.get("world_size") is None:
            options["world_size"] = default_world
        if phases is None:
            if sources is None:
                raise TypeError("tokpack.Loader needs sources (or phases=)")
            self._datasets, weights = _parse_sources(sources)
            self._names = _phases.unique_names(self._datasets)
            caps = _phases.caps_for(self._names, self._datasets, max_epochs)
            self._core = _core.Loader([d._core for d in self._datasets], weights,
                                      max_epochs=caps, **options)
        else:
            locations, self._names, core_phases = _phases.resolve(sources, phases)
            self._datasets = _open_side_by_side(locations)
            caps = _phases.caps_for(self._names, self._datasets, max_epochs)
            self._core = _core.Loader([d._core for d in self._datasets], phases=core_phases,
                                      max_epochs=caps, **options)
        self._options: Dict[str, Any] = self._core.options
        self._as = as_
        self._jax: Optional[_jax.JaxBatches] = None
        if as_ == "jax":
            self._jax = _jax.JaxBatches(self._core, int(self._options["prefetch"]),
                                        self._options["dtype"] == "int64")
            self._convert = self._jax.convert
            self._take = self._jax.take
        else:
            self._convert = _arrays.converter(as_, Loader)
            # torch converts bare DLPack capsules fastest; device batches need
            # __dlpack__(stream) to order torch's stream, so they stay Arrays.
            capsules = as_ == "torch" and not on_gpu
            self._take = partial(self._core.next, True) if capsules else self._core.next
            # __next__ in one call to the core: take, convert, make the dict.
            convert = (None if as_ == "dlpack" else
                       _arrays.capsule_converter() if capsules else self._convert)
            self._next_dict = partial(self._core.next_dict, convert, capsules)
        self._created = time.perf_counter()

    # Iteration ---------------------------------------------------------

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        refuse_auto_collation(self)
        return self

    def __next__(self) -> Dict[str, Any]:
        if self._jax is not None:
            return self._next_jax()
        out = self._next_dict()
        if out is None:  # The end, or a forked child (the core does not take a batch there).
            if self._core.forked:
                raise RuntimeError(_FORK_MESSAGE)
            raise StopIteration
        return out

    def _next_jax(self) -> Dict[str, Any]:
        if self._core.forked:
            raise RuntimeError(_FORK_MESSAGE)
        arrays = self._take()
        if arrays is None:
            raise StopIteration
        convert = self._convert
        out = {"input_ids": convert(arrays[0]), "labels": convert(arrays[1])}
        if len(arrays) >= 4:
            out["position_ids"] = convert(arrays[2])
            out["cu_seqlens"] = convert(arrays[3])
        if len(arrays) % 2:  # An odd length: the loss_mask is last.
            out["loss_mask"] = convert(arrays[-1])
        self._jax.handed_out(out)
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

    def load_state_dict(self, state: Union[Mapping[str, Any], str],
                        phases: Optional[Sequence[Phase]] = None) -> None:
        """Continues from a saved cursor: the next batch is the one that
        followed it. ValueError when the state was made for other data, seed,
        seq_len or shuffle mode, began other phases than this loader's, or
        is not a tokpack cursor.

        With ``phases``, the loader continues with these phases instead of
        its own: "resume, and change the mixture from the saved step on" in
        one call, checked against the saved run only. The phases it began
        (those with a start_step below ``state["step"]``) must be given as
        they were; later ones apply from their steps, e.g. ``phases=[*old,
        (state["step"], {"web": 0.5, "math": 0.5})]`` starts a new phase
        with the first batch after the resume (steps continue from the
        saved one, whatever the world size). On an error the loader keeps
        its phases and position."""
        if self._core.forked:
            raise RuntimeError(_FORK_MESSAGE)
        text = state if isinstance(state, str) else json.dumps(dict(state))
        core = None if phases is None else _phases.parse_for(self._names, self._datasets, phases)
        try:
            self._core.load_state(text, core)
        except ValueError as e:
            try:
                begun = _phases.cursor_phases(json.loads(text))
            except ValueError:
                begun = []
            if _phases.changed(begun, self._core.phases if core is None else core):
                raise ValueError(f"{e}{_phases.resume_hint(begun, self._names)}") from None
            raise

    # Mixture phases -----------------------------------------------------

    @property
    def phases(self) -> List[Tuple[int, Dict[str, float]]]:
        """The mixture as ``[(start_step, {name: weight}), ...]``: the phases
        begun, then those to come. Names are those of a ``sources`` mapping,
        else the paths as given (a Dataset's own path). A single-mixture
        loader has one phase at step 0."""
        return _phases.named(self._core.phases, self._names)

    def set_phases(self, phases: Sequence[Phase]) -> None:
        """Replaces the phases from the next batch on. Phases that began
        before ``step`` must stay as they are (ValueError naming the phase
        otherwise); a phase at ``step`` starts with the next batch. Keys are
        the loader's source names (or their paths or Datasets); a source
        cannot be added to a loader that exists."""
        if self._core.forked:
            raise RuntimeError(_FORK_MESSAGE)
        core = _phases.parse_for(self._names, self._datasets, phases)
        try:
            self._core.set_phases(core)
        except ValueError as e:
            begun = [p for p in self._core.phases if p[0] < self.step]
            if _phases.changed(begun, core):
                raise ValueError(f"{e}{_phases.resume_hint(begun, self._names)}") from None
            raise

    def start_phase(self, weights: Mapping[Any, float]) -> int:
        """Starts a phase with these weights at the next batch (at
        ``loader.step``), dropping phases that have not begun; returns that
        step. The phase is recorded in the cursor like any other."""
        step = self.step
        begun = [p for p in self.phases if p[0] < step]
        self.set_phases([*begun, (step, weights)])
        return step

    # Introspection -----------------------------------------------------

    def stats(self) -> Dict[str, Any]:
        """Data-path statistics since creation: steps served, the consumer's
        wait for data (total, mean, last, max, p50 and p99 over the last 1024
        steps, and as a fraction of wall time between the first and the
        latest next()), assembly time, bytes and throughput in samples and
        tokens per second; for remote data also the process's chunk cache
        hits and misses, bytes fetched and seconds spent fetching.

        And the mixture as served, for an audit: ``sources``, per source
        ``{"name", "samples", "tokens", "epochs_completed", "epoch_samples",
        "epochs", "trainable_tokens"}`` (``epochs`` = samples / samples per
        epoch, so 1.5 means half of its samples were seen twice;
        ``trainable_tokens``: labels of this rank's rows from it that carry
        loss, not -100, since the loader was created), and ``phases``, per phase begun
        ``{"start_step", "start_position", "weights": {name: w}, "samples":
        {name: n}}``. These counts (but trainable_tokens) are global (all ranks' rows, not this
        rank's) from the start of the data to the last batch returned,
        resumes included: every rank reports the same."""
        s = self._core.stats()
        steps = s["steps"]
        elapsed = self._core.next_seconds  # From the first next() to the end of the latest.
        s["wait_seconds_mean"] = s["wait_seconds_total"] / steps if steps else 0.0
        s["elapsed_seconds"] = elapsed
        s["wait_fraction"] = s["wait_seconds_total"] / elapsed if elapsed > 0 else 0.0
        samples = steps * self.batch_size
        s["samples_per_second"] = samples / elapsed if elapsed > 0 else 0.0
        s["tokens_per_second"] = s["samples_per_second"] * self.seq_len
        _phases.named_stats(s, self._names, self.samples_per_source)
        return s

    def explain(self, step: int, steps: int = 1, *,
                rank: Optional[int] = None) -> List[Dict[str, Any]]:
        """What the rows of ``steps`` steps from ``step`` were made of, so a
        loss spike can be traced to its data: one dict per row, in global
        batch order (every rank's, or only ``rank``'s), ``{"step", "rank",
        "row", "source" (its name), "sample", "spans"}``, each span a dict
        ``{"column", "document", "offset", "length", "origin", "removed"}``: tokens
        ``[offset, offset + length)`` of ``document`` of the source's dataset
        at columns ``[column, column + length)`` of the row (a window holds
        seq_len + 1 tokens, the last only a label), and ``origin`` its
        :meth:`Dataset.source` (None without document sources);
        ``removed``: the document is on the dataset's removal list, so the
        row held pad tokens there, without loss. Replays
        the order from where this loader began (the start, or the state it
        loaded) at this loader's global batch, without reading tokens, in
        time that grows with ``step`` (Ctrl-C stops it): a step served before
        a resume at another world or batch size needs a loader with those
        settings, resumed from the cursor of the resume before it.
        ValueError for a step before where this loader began, IndexError
        past the end."""
        if self._core.forked:
            raise RuntimeError(_FORK_MESSAGE)
        if rank is not None and not 0 <= rank < self.world_size:
            raise ValueError(f"rank {rank} is not a rank of world_size {self.world_size}")
        rows = []
        for st, rk, row, source, sample, spans in self._core.explain(step, steps):
            if rank is not None and rk != rank:
                continue
            ds = self._datasets[source]
            rows.append({
                "step": st, "rank": rk, "row": row, "source": self._names[source],
                "sample": sample,
                "spans": [{"column": c, "document": d, "offset": o, "length": n,
                           "origin": ds.source(d) if ds.has_sources else None,
                           "removed": ds.is_removed(d)}
                          for c, d, o, n in spans],
            })
        return rows

    @property
    def datasets(self) -> List[Dataset]:
        return list(self._datasets)

    @property
    def tokenizer_info(self) -> Dict[str, Any]:
        """The tokenizer the batches' ids come from (type, vocab_size, special
        ids): the first dataset's ``tokenizer_info``, which every dataset of
        the mixture shares, since a mixture of different tokenizers or BOS/EOS
        settings is refused. With ``allow_mixed_tokenizers=True`` they may
        differ, and it is still the first dataset's."""
        return self._datasets[0].tokenizer_info

    @property
    def options(self) -> Dict[str, Any]:
        """Every option of this loader, defaults included (see tokpack._options),
        as in effect: shuffle="auto" shows the mode it chose ("full" or
        "window") and window_chunks the window it sized."""
        return dict(self._options)

    @property
    def rank(self) -> int:
        return int(self._options["rank"])

    @property
    def world_size(self) -> int:
        return int(self._options["world_size"])

    @property
    def seq_len(self) -> int:
        return int(self._options["seq_len"])

    @property
    def batch_size(self) -> int:
        return int(self._options["batch_size"])

    @property
    def samples_per_source(self) -> List[int]:
        """Positions of one epoch of each source: its samples, less those
        shuffle="window" leaves out at fetch-unit edges."""
        return list(self._core.samples_per_source)

    @property
    def device(self) -> str:
        """Where batches are delivered: "cpu" or "cuda:N"."""
        return str(self._options["device"])

    def __repr__(self) -> str:
        phases = self.phases
        mixture = (_phases.format_weights(phases[0][1]) if len(phases) == 1 else
                   "phases=[" + ", ".join(
                       f"({p[0]}, {_phases.format_weights(p[1])}"
                       + (f", {_phases.ramp_of(p)})" if _phases.ramp_of(p) else ")")
                       for p in phases) + "]")
        return (
            f"tokpack.Loader({mixture}, seq_len={self.seq_len}, "
            f"batch_size={self.batch_size}, rank={self.rank}/{self.world_size}, "
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


def cuda_available() -> bool:
    """True if this build of tokpack has CUDA and a GPU is usable here."""
    return bool(_core.cuda_available()[0])
