"""Mixture phases for tokpack.Loader: the Python spellings of a phase list
(``(start_step, {key: weight})`` pairs or dicts, keyed by source name, path
or Dataset) mapped to source names, and the core's per-source and per-phase
counts turned back into named dicts.

The rules of a phase list (start steps, weights, names) are the core's
mixture model (include/tokpack/mixture.h, through _core.phases_by_name),
which names the phase and the source in its errors; here are only what
Python adds: its types and its keys.
"""
from __future__ import annotations

import math
import numbers
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _core
from ._dataset import Dataset

PathLike = Union[str, "os.PathLike[str]", Dataset]
# (start_step, {name: weight}), (start_step, {name: weight}, ramp_steps) or
# {"start_step": ..., "weights": {...}, "ramp_steps": ...} (ramp_steps optional).
Phase = Union[Tuple[int, Mapping[Any, float]], Tuple[int, Mapping[Any, float], int],
              Mapping[str, Any]]
# (start_step, [weight per source]), with ramp_steps third when it is > 0.
CorePhase = Tuple[Any, ...]


def ramp_of(phase: Sequence[Any]) -> int:
    """A core phase's ramp_steps (0 when it has none)."""
    return int(phase[2]) if len(phase) > 2 else 0


def _is_location(x: Any) -> bool:
    return isinstance(x, (str, os.PathLike, Dataset))


def _path(x: PathLike) -> str:
    return x.path if isinstance(x, Dataset) else os.fspath(x)


def _name(x: PathLike) -> str:
    """A source's default name: its path, and for a part of a held-out split
    the part too ("data/web[949,50,1:1]")."""
    if isinstance(x, Dataset) and x._options.get("split"):
        return f"{x.path}[{x._options['split']}:{x._options.get('split_index', 0)}]"
    return _path(x)


def format_weights(weights: Mapping[str, float]) -> str:
    """{'web': 0.9, 'code': 0.1}: repr gives each float's shortest form."""
    return "{" + ", ".join(f"{k!r}: {float(w)!r}" for k, w in weights.items()) + "}"


def unique_names(locations: Sequence[PathLike]) -> List[str]:
    """The sources' names in a single-mixture loader: the paths given (a
    Dataset's own path), a repeated one suffixed with #2, #3, ..."""
    names: List[str] = []
    taken: set = set()
    for loc in locations:
        names.append(_unique(_name(loc), taken))
        taken.add(names[-1])
    return names


def _unique(name: str, taken: Any) -> str:
    """`name`, or name#2, name#3, ...: the first not in `taken`."""
    k = 1
    while (name if k == 1 else f"{name}#{k}") in taken:
        k += 1
    return name if k == 1 else f"{name}#{k}"


def _phase_parts(i: int, phase: Any) -> Tuple[Any, Any, Any]:
    if isinstance(phase, Mapping):
        extra = set(phase) - {"start_step", "weights", "ramp_steps"}
        if extra or "start_step" not in phase or "weights" not in phase:
            raise ValueError(f"phases[{i}] must have the keys 'start_step' and 'weights' (and "
                             f"optionally 'ramp_steps') only, not {sorted(map(str, phase))}")
        return phase["start_step"], phase["weights"], phase.get("ramp_steps", 0)
    if isinstance(phase, (tuple, list)) and len(phase) in (2, 3):
        return phase[0], phase[1], phase[2] if len(phase) == 3 else 0
    raise TypeError(f"phases[{i}] must be (start_step, {{source: weight}}[, ramp_steps]) or a "
                    f"dict with 'start_step' and 'weights', not {phase!r}")


def _ramp_steps(where: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{where}: ramp_steps must be an integer, not {value!r}")
    return int(value)


def _start_step(i: int, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"phases[{i}]: start_step must be an integer, not {value!r}")
    return int(value)


def _weight(where: str, key: Any, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{where}: the weight of {key!r} must be a number, not {value!r}")
    return float(value)


class Sources:
    """The datasets of a phased loader and how phases name them: by name,
    else by a source's path or Dataset object."""

    def __init__(self) -> None:
        self.locations: List[PathLike] = []
        self.names: List[str] = []
        self._by_name: Dict[str, int] = {}
        self._by_location: Dict[Any, int] = {}  # path, or a Dataset object
        self._shared_paths: set = set()  # Paths of several sources (parts of a split).

    def add(self, name: str, location: PathLike) -> None:
        if name in self._by_name:
            raise ValueError(f"source {name!r} is given twice")
        self._by_name[name] = len(self.names)
        path = _path(location)
        if path in self._by_location and self.locations[self._by_location[path]] is not location:
            self._shared_paths.add(path)
        self._by_location.setdefault(path, len(self.names))
        if isinstance(location, Dataset):
            self._by_location.setdefault(location, len(self.names))
        self.locations.append(location)
        self.names.append(name)

    def lookup(self, key: Any, where: str, add: bool) -> int:
        """The dataset index of a phase's key; with `add`, a path or Dataset
        not seen yet becomes a new source (sources=None)."""
        if isinstance(key, str) and key in self._by_name:
            return self._by_name[key]
        if _is_location(key):
            probe = key if isinstance(key, Dataset) else _path(key)
            if probe in self._shared_paths:
                raise ValueError(f"{where}: {key!r} is the path of several sources "
                                 f"{self.names}; name them (sources={{name: Dataset}}) or use "
                                 "the Dataset objects as keys")
            if probe in self._by_location:
                return self._by_location[probe]
            if add:
                # Two Datasets of one path (other options) are two sources.
                self.add(_unique(_name(key), self._by_name), key)
                return len(self.names) - 1
        raise ValueError(f"{where}: unknown source {key!r}; the sources are {self.names}")


def _parse(phases: Sequence[Phase], sources: Sources, add: bool) -> List[CorePhase]:
    if isinstance(phases, (str, bytes, Mapping)) or not isinstance(phases, Sequence):
        raise TypeError("phases must be a list of (start_step, {source: weight}), not "
                        f"{type(phases).__name__}")
    named: List[Tuple[int, List[Tuple[str, float]], int]] = []
    for i, phase in enumerate(phases):
        start, weights, ramp = _phase_parts(i, phase)
        start = _start_step(i, start)
        where = f"phases[{i}] (start_step {start})"
        if not isinstance(weights, Mapping):
            raise TypeError(f"{where}: weights must be a dict {{source: weight}}, not "
                            f"{type(weights).__name__}")
        pairs = []
        for key, value in weights.items():
            w = _weight(where, key, value)
            pairs.append((sources.names[sources.lookup(key, where, add)], w))
        named.append((start, pairs, _ramp_steps(where, ramp)))
    return _core.phases_by_name(sources.names, named)


def resolve(sources: Any, phases: Sequence[Phase]) -> Tuple[List[PathLike], List[str],
                                                              List[CorePhase]]:
    """(locations, names, core phases) of Loader(sources, phases=phases).

    `sources` is None (the phases' keys are paths or Datasets, in order of
    first appearance), a path or Dataset, a list of them (the phases' keys
    are those), or a mapping {name: path or Dataset} (the keys are the
    names). Weights in `sources` as well are a ValueError."""
    table = Sources()
    if isinstance(sources, Mapping):
        for name, location in sources.items():
            if not _is_location(location):
                raise ValueError(
                    f"with phases=, sources maps names to paths or Datasets, but {name!r} maps "
                    f"to {location!r}: give the weights in the phases only")
            table.add(str(name), location)
    elif sources is not None:
        locations = [sources] if _is_location(sources) else list(sources)
        for location in locations:
            if not _is_location(location):
                raise ValueError(
                    f"with phases=, sources lists paths or Datasets, not {location!r}: give the "
                    "weights in the phases only")
        for name, location in zip(unique_names(locations), locations):
            table.add(name, location)
    core = _parse(phases, table, add=sources is None)
    if not table.names:
        raise ValueError("tokpack.Loader needs at least one dataset")
    return table.locations, table.names, core


def parse_for(names: Sequence[str], locations: Sequence[PathLike],
              phases: Sequence[Phase]) -> List[CorePhase]:
    """Phases for a loader that exists: keys must be its sources' names (or
    their paths or Datasets)."""
    table = Sources()
    for name, location in zip(names, locations):
        table.add(name, location)
    return _parse(phases, table, add=False)


def caps_for(names: Sequence[str], locations: Sequence[PathLike],
             max_epochs: Optional[Mapping[Any, float]]) -> List[float]:
    """Loader(max_epochs={source: epochs}) as one cap per dataset (0: none;
    [] when no cap is given). Keys are names, paths or Datasets, as in
    phases; the core checks the values."""
    if max_epochs is None:
        return []
    if not isinstance(max_epochs, Mapping):
        raise TypeError("max_epochs must be a dict {source: epochs}, not "
                        f"{type(max_epochs).__name__}")
    table = Sources()
    for name, location in zip(names, locations):
        table.add(name, location)
    caps = [0.0] * len(names)
    for key, value in max_epochs.items():
        cap = _weight("max_epochs", key, value)
        if not math.isfinite(cap) or cap < 0:
            raise ValueError(f"max_epochs: the cap of {key!r} is {cap!r}; a cap is a finite "
                             "number of epochs > 0 (0: no cap)")
        caps[table.lookup(key, "max_epochs", add=False)] = cap
    return caps


def resume_hint(begun: Sequence[CorePhase], names: Sequence[str]) -> str:
    """The phases a run began, by this loader's names: what to pass to
    resume it (the core's message lists weights in dataset order)."""
    phases = ", ".join(
        f"({p[0]}, {format_weights({n: w for n, w in zip(names, p[1]) if w})}"
        + (f", {ramp_of(p)})" if ramp_of(p) else ")") for p in begun)
    return f"; by this loader's source names: phases=[{phases}, ...]"


def changed(begun: Sequence[CorePhase], phases: Sequence[CorePhase]) -> bool:
    """True if `phases` do not start with the begun ones (a begun phase may
    list fewer sources: the loader's extra ones are absent from it)."""
    if len(phases) < len(begun):
        return bool(begun)
    for old, new in zip(begun, phases):
        (k, w), (k2, w2) = old[:2], new[:2]
        if k != k2 or list(w) != list(w2[:len(w)]) or any(w2[len(w):]):
            return True
        if ramp_of(old) != ramp_of(new):
            return True
    return False


def cursor_phases(state: Any) -> List[CorePhase]:
    """The begun phases of a saved cursor, or [] if it has none readable."""
    try:
        out: List[CorePhase] = []
        for p in state["phases"]:
            phase = (int(p["start_step"]), [float(w) for w in p["weights"]])
            ramp = int(p.get("ramp_steps", 0))
            out.append((*phase, ramp) if ramp else phase)
        return out
    except (KeyError, TypeError, ValueError, AttributeError):
        return []


def named(core: Sequence[CorePhase], names: Sequence[str]) -> List[Tuple[Any, ...]]:
    """(start_step, {name: weight}), with ramp_steps third when it is > 0."""
    out: List[Tuple[Any, ...]] = []
    for p in core:
        phase = (int(p[0]), dict(zip(names, map(float, p[1]))))
        out.append((*phase, ramp_of(p)) if ramp_of(p) else phase)
    return out


def named_stats(stats: Dict[str, Any], names: Sequence[str],
                samples_per_source: Sequence[int]) -> None:
    """Replaces the core's per-source and per-phase lists by named dicts."""
    sources = []
    for name, s, per_epoch in zip(names, stats["sources"], samples_per_source):
        sources.append(dict(name=name, **s,
                            epochs=s["samples"] / per_epoch if per_epoch else 0.0))
    stats["sources"] = sources
    stats["phases"] = [
        {"start_step": p["start_step"], "start_position": p["start_position"],
         "weights": dict(zip(names, p["weights"])), "samples": dict(zip(names, p["samples"]))}
        for p in stats["phases"]
    ]


def in_loader_steps(phases: Sequence[Phase], factor: int) -> Sequence[Phase]:
    """`phases` with every start_step multiplied by `factor` (optimizer steps
    of `factor` loader steps each, for the trainer integrations). A list
    that is not one of phases is returned as it is: the Loader names what is
    wrong with it."""
    if factor == 1 or isinstance(phases, (str, bytes, Mapping)) or not isinstance(phases,
                                                                                  Sequence):
        return phases
    out: List[Phase] = []
    for i, phase in enumerate(phases):
        start, weights, ramp = _phase_parts(i, phase)
        ramp = _ramp_steps(f"phases[{i}]", ramp) * factor
        out.append((_start_step(i, start) * factor, weights, ramp) if ramp else
                   (_start_step(i, start) * factor, weights))
    return out


def start_steps(phases: Any) -> List[int]:
    """The start steps of a phase list as given (integers only; what is not
    one is left to the Loader's checks)."""
    if isinstance(phases, (str, bytes, Mapping)) or not isinstance(phases, Sequence):
        return []
    steps = []
    for i, phase in enumerate(phases):
        try:
            start, _, _ = _phase_parts(i, phase)
        except (TypeError, ValueError):
            continue
        if isinstance(start, numbers.Integral) and not isinstance(start, bool):
            steps.append(int(start))
    return steps
