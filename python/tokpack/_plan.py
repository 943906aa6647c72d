"""tokpack.mixture_plan: what a mixture draws from each source, step by step
from the start of the data, as numpy arrays, and the events that change it
(phase starts, ramp ends, caps reached). The core runs the loader's own
schedule without reading data (include/tokpack/mixture_plan.h), so the
counts are what a Loader of these phases and global batch serves.
`tokpack sample --plot` writes the same plan as JSON (MixturePlan.from_json
reads it) and tokpack.mixture_plot draws either.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

from . import _core, _phases

PerSource = Union[Mapping[str, float], Sequence[float]]


@dataclass
class MixturePlan:
    """A mixture's plan over its recorded steps (rows) and sources (columns).

    names: the sources. steps: int64 [n], the recorded steps (every
    stride-th and the last). phase: int64 [n], the phase drawing at each.
    planned: float64 [n, sources], the weights the schedule aims at over the
    step (during a ramp, its mean over the step; a capped source's weight
    shared out). drawn: uint64 [n, sources], cumulative draws to the end of
    the step. events: dicts with kind ("phase_start", "ramp_end", "cap",
    "exhausted"), step, phase, and for caps the source's name. phases:
    (start_step, [weight per source], ramp_steps) as planned."""

    names: List[str]
    global_batch: int
    steps: np.ndarray
    phase: np.ndarray
    planned: np.ndarray
    drawn: np.ndarray
    events: List[Dict[str, Any]] = field(default_factory=list)
    phases: List[Any] = field(default_factory=list)

    @classmethod
    def from_json(cls, report: Mapping[str, Any]) -> "MixturePlan":
        """The plan `tokpack sample --plan-json` prints (or --plot writes)."""
        sources = report["sources"]
        n = len(report["steps"])

        def columns(key: str, dtype: Any) -> np.ndarray:
            return np.array([s[key] for s in sources], dtype=dtype).reshape(len(sources), n).T

        return cls(names=[s["name"] for s in sources], global_batch=int(report["global_batch"]),
                   steps=np.asarray(report["steps"], dtype=np.int64),
                   phase=np.asarray(report["phase"], dtype=np.int64),
                   planned=columns("planned", np.float64), drawn=columns("drawn", np.uint64),
                   events=[dict(e) for e in report["events"]],
                   phases=[(p["start_step"], list(p["weights"]), p.get("ramp_steps", 0))
                           for p in report["phases"]])


def _per_source(what: str, values: Optional[PerSource], names: Sequence[str],
                kind: type) -> List[Any]:
    if values is None:
        return []
    if isinstance(values, Mapping):
        unknown = set(values) - set(names)
        if unknown:
            raise ValueError(f"{what}: unknown sources {sorted(map(str, unknown))}; the sources "
                             f"are {list(names)}")
        values = [values.get(n, 0) for n in names]
    values = list(values)
    if len(values) != len(names):
        raise ValueError(f"{what} has {len(values)} values for the {len(names)} sources "
                         f"{list(names)}")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, numbers.Real if kind is float
                                                 else numbers.Integral):
            raise TypeError(f"{what}: {v!r} is not a number of the right kind ({kind.__name__})")
    return [kind(v) for v in values]


def _positive_int(what: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{what} must be an integer >= 1, not {value!r}")
    return int(value)


def mixture_plan(sources: Any, phases: Sequence[_phases.Phase], *, global_batch: int,
                 steps: int, stride: int = 1, max_epochs: Optional[PerSource] = None,
                 samples: Optional[PerSource] = None) -> MixturePlan:
    """The plan of a mixture over `steps` steps of `global_batch` samples
    (batch_size * world_size), recording every `stride`-th step and the last.

    `sources` and `phases` are what tokpack.Loader takes (names mapped to
    paths or Datasets, a list of them, or None for the phases' keys); no
    data is read. Caps: `max_epochs` per source (by name, or a list in
    source order; 0: none) needs `samples`, each source's samples per epoch
    (Loader.samples_per_source). Drawing is O(steps * global_batch * log
    sources): a stride keeps long plans small, not fast."""
    _, names, core = _phases.resolve(sources, phases)
    global_batch = _positive_int("global_batch", global_batch)
    steps = _positive_int("steps", steps)
    stride = _positive_int("stride", stride)
    epochs = _per_source("max_epochs", max_epochs, names, float)
    counts = _per_source("samples", samples, names, int)
    if epochs and not counts:
        raise ValueError("max_epochs needs samples= (each source's samples per epoch, "
                         "Loader.samples_per_source) to count its cap in draws")
    raw = _core.mixture_plan(names, core, epochs, counts, global_batch, steps, stride)
    n, k = len(raw["steps"]) // 8, len(names)
    events = []
    for kind, step, phase, source in raw["events"]:
        event = {"kind": kind, "step": step, "phase": phase}
        if source is not None:
            event["source"] = names[source]
        events.append(event)
    return MixturePlan(
        names=list(names), global_batch=global_batch,
        steps=np.frombuffer(raw["steps"], dtype=np.int64).copy(),
        phase=np.frombuffer(raw["phase"], dtype=np.int64).copy(),
        planned=np.frombuffer(raw["planned"], dtype=np.float64).reshape(n, k).copy(),
        drawn=np.frombuffer(raw["drawn"], dtype=np.uint64).reshape(n, k).copy(),
        events=events, phases=[(p[0], list(p[1]), p[2] if len(p) > 2 else 0) for p in core])
