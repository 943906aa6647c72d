"""JAX support for tokpack.Loader: as_="jax" batches and ranks from
jax.distributed.

Batches reach JAX through DLPack without a copy: a jax.Array views the
loader's ring buffer and keeps that batch alive (the lifetime rule). Two
things JAX does differently from torch are handled here:

- With 64-bit types off (JAX's default), JAX turns an int64 DLPack array into
  an int32 copy without a word. So an as_="jax" loader defaults to int32
  then, refuses an explicit int64, and checks again per batch in case
  jax_enable_x64 was switched off after the loader was made.
- JAX dispatches computations asynchronously and frees a batch only when the
  computations using it have finished, after Python has dropped it. A
  training loop can run ahead of them until every ring buffer is held, so
  when that happens and the caller does not itself hold them all, the next
  batch waits for JAX to release one instead of failing.

Not thread-safe, like the Loader that uses it. JAX is imported only when
as_="jax" is asked for; finding the rank never imports it.
"""
from __future__ import annotations

import sys
import time
import weakref
from typing import Any, Callable, Dict, List, Optional, Tuple

# How long a full ring waits for JAX's pending computations before the
# buffers count as held by the caller (a DLPack export of a batch, such as
# torch.from_dlpack(x), holds one without keeping x alive).
RELEASE_SECONDS = 60.0


def distributed_rank_world() -> Optional[Tuple[int, int]]:
    """(jax.process_index(), jax.process_count()) when JAX's distributed
    runtime is initialised in this process, else None. JAX is not imported
    here: a process that has not imported it has not initialised it."""
    dist = sys.modules.get("jax.distributed")
    if dist is None or not dist.is_initialized():
        return None
    jax = sys.modules["jax"]
    return int(jax.process_index()), int(jax.process_count())


def resolve_dtype(dtype: Any, name_of: Callable[[Any], str]) -> str:
    """The loader dtype for as_="jax": the user's, or int64 when JAX has
    64-bit types on and int32 when off. An int64 request with them off is a
    ValueError, never a silent int32 copy."""
    import jax

    x64 = bool(jax.config.jax_enable_x64)
    if dtype is None:
        return "int64" if x64 else "int32"
    name = name_of(dtype)
    if name == "int64" and not x64:
        raise ValueError(_X64_MESSAGE)
    return name


_X64_MESSAGE = (
    'as_="jax" with dtype="int64" needs JAX\'s 64-bit types, which are off '
    "(jax_enable_x64 is False), so JAX would silently turn every batch into an int32 "
    'copy. Either pass dtype="int32" (or leave dtype out: as_="jax" then picks int32), '
    'or enable them before creating the loader: jax.config.update("jax_enable_x64", True) '
    "or JAX_ENABLE_X64=1."
)


class JaxBatches:
    """Takes the core loader's batches as jax.Arrays (zero-copy), waiting
    for ring buffers that JAX's pending computations still hold."""

    def __init__(self, core: Any, ring_size: int, int64: bool) -> None:
        import jax
        import jax.dlpack

        self._core = core
        self._ring = ring_size
        self._from_dlpack = jax.dlpack.from_dlpack
        self._config = jax.config if int64 else None
        # Weak references to the arrays of recently handed-out batches: a
        # batch the caller still references holds its buffer for good.
        self._handed: List[Tuple["weakref.ref[Any]", ...]] = []

    def convert(self, array: Any) -> Any:
        # copy=False: a copy (for example of a misaligned buffer) is an
        # error instead of a silent cost.
        return self._from_dlpack(array, copy=False)

    def take(self) -> Optional[Tuple[Any, ...]]:
        """The core's next batch (None at the end), waiting while every
        ring buffer is held but not every one by the caller."""
        if self._config is not None and not self._config.jax_enable_x64:
            raise ValueError("jax_enable_x64 was switched off after this int64 loader was "
                             "created; " + _X64_MESSAGE)
        deadline = None
        delay = 0.0005
        while True:
            try:
                return self._core.next()
            except RuntimeError as e:
                if "batch buffers are still held" not in str(e):
                    raise
                if self._held_by_caller() >= self._ring:
                    raise
                now = time.monotonic()
                deadline = deadline or now + RELEASE_SECONDS
                if now >= deadline:
                    raise RuntimeError(
                        f"{e}; waited {RELEASE_SECONDS:g} s for JAX's pending computations to "
                        "release them (a DLPack export of a batch also holds its buffer)") from None
            time.sleep(delay)
            delay = min(2 * delay, 0.01)

    def handed_out(self, batch: Dict[str, Any]) -> None:
        """Remembers a batch handed to the caller (weakly)."""
        if len(self._handed) >= 2 * self._ring:
            self._handed = [refs for refs in self._handed if _alive(refs)]
        self._handed.append(tuple(weakref.ref(a) for a in batch.values()))

    def _held_by_caller(self) -> int:
        return sum(1 for refs in self._handed if _alive(refs))


def _alive(refs: Tuple["weakref.ref[Any]", ...]) -> bool:
    return any(r() is not None for r in refs)
