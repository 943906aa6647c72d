"""TrainedBatches: a Loader's batches as a trainer sees them, with the cursor
of the last batch trained rather than the last batch read.

Trainers read ahead (Lightning fetches one batch early to see the end
coming; data loaders prefetch), so a loader's own state_dict() at checkpoint
time can be past what the model has seen, and a resume would skip those
batches. TrainedBatches keeps the cursor after each of the last `keep`
batches it handed out (a few hundred bytes each, no batch data), and the
trainer's glue asks for the cursor after however many batches it trained.

Invariant: state_after(n) is the cursor after the first n batches handed
out since the start or the last load_state_dict(); n = 0 is the start.
Not thread-safe, like the Loader.
"""
from __future__ import annotations

import collections
import json
from typing import Any, Deque, Dict, Mapping, Optional, Sequence, Tuple, Union

from .._loader import Loader


class TrainedBatches:
    """Iterates `loader`, remembering the cursor after each batch."""

    def __init__(self, loader: Loader, keep: int = 64) -> None:
        if not isinstance(loader, Loader):
            raise TypeError(f"expected a tokpack.Loader, got {type(loader).__name__}")
        self.loader = loader
        self._keep = keep
        self._restart()

    def _restart(self) -> None:
        # (batches handed out, cursor after them), the oldest first; the
        # cursor after the latest batch is the loader's own until the next.
        self._served = 0
        self._states: Deque[Tuple[int, str]] = collections.deque(maxlen=self._keep)

    def __iter__(self) -> "TrainedBatches":
        return self

    def __next__(self) -> Dict[str, Any]:
        # The cursor after the previous batch is taken now, before the next
        # one, while the trainer has been busy with the model and the loader's
        # threads are idle: right after next() they compete for the CPU.
        if not self._states or self._states[-1][0] != self._served:  # Not after the end.
            self._states.append((self._served, self.loader._core.state()))
        batch = next(self.loader)
        self._served += 1
        return batch

    @property
    def served(self) -> int:
        """Batches handed out since the start or the last load_state_dict()."""
        return self._served

    def state_after(self, trained: int) -> Dict[str, Any]:
        """The cursor after the first `trained` batches handed out. ValueError
        for more than were handed out, or for a batch further back than the
        last `keep` (a trainer that reads that far ahead)."""
        if trained > self._served:
            raise ValueError(f"{trained} batches trained, but only {self._served} were read")
        if trained == self._served:
            return json.loads(self.loader._core.state())
        oldest = self._states[0][0]
        if trained < oldest:
            raise ValueError(
                f"the trainer read {self._served - trained} batches past the last one trained; "
                f"tokpack keeps the cursors of the last {self._keep}")
        return json.loads(self._states[trained - oldest][1])

    def load_state_dict(self, state: Union[Mapping[str, Any], str],
                        phases: Optional[Sequence[Any]] = None) -> None:
        """Moves the loader to a saved cursor (continuing with `phases`, if
        given, as Loader.load_state_dict does); counting restarts there."""
        self.loader.load_state_dict(state, phases)
        self._restart()


def run_steps(loader: Loader) -> Optional[int]:
    """The steps of the loader's whole run (len(loader)), or None for an
    endless one."""
    try:
        return len(loader)
    except TypeError:
        return None
