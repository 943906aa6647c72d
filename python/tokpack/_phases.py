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

import numbers
import os
from typing import Any, Dict, List, Mapping, Sequence, Tuple, Union

from . import _core
from ._dataset import Dataset

PathLike = Union[str, "os.PathLike[str]", Dataset]
# (start_step, {name: weight}) or {"start_step": ..., "weights": {...}}.
Phase = Union[Tuple[int, Mapping[Any, float]], Mapping[str, Any]]
CorePhase = Tuple[int, List[float]]


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
    for loc in locations:
        name, k = _name(loc), 1
        while (name if k == 1 else f"{name}#{k}") in names:
            k += 1
        names.append(name if k == 1 else f"{name}#{k}")
    return names


def _phase_parts(i: int, phase: Any) -> Tuple[Any, Any]:
    if isinstance(phase, Mapping):
        extra = set(phase) - {"start_step", "weights"}
        if extra or "start_step" not in phase or "weights" not in phase:
            raise ValueError(f"phases[{i}] must have the keys 'start_step' and 'weights' only, "
                             f"not {sorted(map(str, phase))}")
        return phase["start_step"], phase["weights"]
    if isinstance(phase, (tuple, list)) and len(phase) == 2:
        return phase[0], phase[1]
    raise TypeError(f"phases[{i}] must be (start_step, {{source: weight}}) or a dict with "
                    f"'start_step' and 'weights', not {phase!r}")


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
                self.add(unique_names([*self.names, _name(key)])[-1], key)
                return len(self.names) - 1
        raise ValueError(f"{where}: unknown source {key!r}; the sources are {self.names}")


def _parse(phases: Sequence[Phase], sources: Sources, add: bool) -> List[CorePhase]:
    if isinstance(phases, (str, bytes, Mapping)) or not isinstance(phases, Sequence):
        raise TypeError("phases must be a list of (start_step, {source: weight}), not "
                        f"{type(phases).__name__}")
    named: List[Tuple[int, List[Tuple[str, float]]]] = []
    for i, phase in enumerate(phases):
        start, weights = _phase_parts(i, phase)
        start = _start_step(i, start)
        where = f"phases[{i}] (start_step {start})"
        if not isinstance(weights, Mapping):
            raise TypeError(f"{where}: weights must be a dict {{source: weight}}, not "
                            f"{type(weights).__name__}")
        pairs = []
        for key, value in weights.items():
            w = _weight(where, key, value)
            pairs.append((sources.names[sources.lookup(key, where, add)], w))
        named.append((start, pairs))
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


def resume_hint(begun: Sequence[CorePhase], names: Sequence[str]) -> str:
    """The phases a run began, by this loader's names: what to pass to
    resume it (the core's message lists weights in dataset order)."""
    phases = ", ".join(
        f"({start}, {format_weights({n: w for n, w in zip(names, weights) if w})})"
        for start, weights in begun)
    return f"; by this loader's source names: phases=[{phases}, ...]"


def changed(begun: Sequence[CorePhase], phases: Sequence[CorePhase]) -> bool:
    """True if `phases` do not start with the begun ones (a begun phase may
    list fewer sources: the loader's extra ones are absent from it)."""
    if len(phases) < len(begun):
        return bool(begun)
    for (k, w), (k2, w2) in zip(begun, phases):
        if k != k2 or list(w) != list(w2[:len(w)]) or any(w2[len(w):]):
            return True
    return False


def cursor_phases(state: Any) -> List[CorePhase]:
    """The begun phases of a saved cursor, or [] if it has none readable."""
    try:
        return [(int(p["start_step"]), [float(w) for w in p["weights"]])
                for p in state["phases"]]
    except (KeyError, TypeError, ValueError):
        return []


def named(core: Sequence[CorePhase], names: Sequence[str]) -> List[Tuple[int, Dict[str, float]]]:
    return [(int(start), dict(zip(names, map(float, weights)))) for start, weights in core]


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
        start, weights = _phase_parts(i, phase)
        out.append((_start_step(i, start) * factor, weights))
    return out


def start_steps(phases: Any) -> List[int]:
    """The start steps of a phase list as given (integers only; what is not
    one is left to the Loader's checks)."""
    if isinstance(phases, (str, bytes, Mapping)) or not isinstance(phases, Sequence):
        return []
    steps = []
    for i, phase in enumerate(phases):
        try:
            start, _ = _phase_parts(i, phase)
        except (TypeError, ValueError):
            continue
        if isinstance(start, numbers.Integral) and not isinstance(start, bool):
            steps.append(int(start))
    return steps
