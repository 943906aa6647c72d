"""Where a Loader's batches go: the ranks of the job, the device and dtype
spellings of torch and numpy, and the conversion of each core array into
the caller's array type (without a copy)."""
from __future__ import annotations

import os
import sys
from typing import Any, Tuple

from . import _jax


def default_rank_world() -> Tuple[int, int]:
    """torch.distributed's rank and world size when it is initialized, else
    JAX's process index and count when jax.distributed is, else the RANK /
    WORLD_SIZE environment variables (torchrun sets them), else 0 / 1.
    Neither torch nor JAX is imported here: if the trainer has not imported
    one, it has not initialized it either."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    from_jax = _jax.distributed_rank_world()
    if from_jax is not None:
        return from_jax
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


def dtype_name(dtype: Any) -> str:
    # Accepts "int64", numpy.int64, torch.int64 and the like.
    name = getattr(dtype, "__name__", None) or str(dtype)
    return name.replace("torch.", "")


def device_text(device: Any) -> str:
    """A device as text for the core's one parser. A torch.device("cuda")
    has no index: it means torch's current device."""
    if device is None:
        return "cpu"
    if not isinstance(device, str) and getattr(device, "type", None) == "cuda":
        index = getattr(device, "index", None)
        if index is None:
            cuda = sys.modules.get("torch.cuda")
            index = cuda.current_device() if cuda is not None and cuda.is_initialized() else 0
        return f"cuda:{int(index)}"
    return str(device)


def torch_available() -> bool:
    if "torch" in sys.modules:
        return sys.modules["torch"] is not None  # None: imports of torch are blocked
    import importlib.util

    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        return False


def converter(as_: str, loader_class: type):
    if as_ == "dlpack":
        return lambda a: a
    if as_ == "numpy":
        import numpy as np

        # The buffer protocol gives a writable array (np.from_dlpack of an
        # unversioned capsule is read-only), which DLPack consumers such as
        # jnp.from_dlpack then take without a copy. Its base is a memoryview
        # of the tokpack array, which keeps the batch alive.
        return np.asarray
    import torch
    import torch.utils.dlpack

    _register_with_torch(torch, loader_class)
    return torch.utils.dlpack.from_dlpack


def capsule_converter():
    """What makes a torch tensor of a bare DLPack capsule: torch's own
    converter without its Python wrapper (which, given a capsule, calls
    it), about 0.5 us less per array; the wrapper where it is missing."""
    import torch
    import torch.utils.dlpack

    return getattr(torch._C, "_from_dlpack", None) or torch.utils.dlpack.from_dlpack


def _register_with_torch(torch, loader_class: type) -> None:
    # torch's DataLoader treats IterableDatasets as streams (no sampler, no
    # __getitem__), which is what a Loader is: registering makes
    # DataLoader(loader, batch_size=None) pass batches through unchanged.
    from torch.utils.data import IterableDataset

    if not issubclass(loader_class, IterableDataset):
        IterableDataset.register(loader_class)
