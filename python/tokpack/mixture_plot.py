"""Draws a mixture's plan (tokpack.mixture_plan, or `tokpack sample --plan-json`):
per source the planned weights over the steps (top) and the realised share
of the draws over a rolling window (bottom), with the phase starts as
vertical lines, the ramps shaded and the caps marked. With many sources,
the largest by total share are drawn and the rest grouped as "other".

    tokpack sample --phases mix.json --batch-size 8 --plan-json > plan.json
    python -m tokpack.mixture_plot plan.json mix.png

`tokpack sample --plot PNG` runs this module. matplotlib is needed only
here (pip install 'tokpack[plots]'); it is imported when a plot is drawn.
"""
from __future__ import annotations

import json
import sys
from typing import Any, List, Mapping, Sequence, Tuple, Union

import numpy as np

from ._plan import MixturePlan

OTHER_COLOR = "#b0b0b0"
TOP_SOURCES = 8  # Distinct colors a reader can still tell apart.


def _grouped(plan: MixturePlan, top: int) -> Tuple[List[str], np.ndarray, np.ndarray, List[int]]:
    """(labels, planned, drawn, group of each source): the `top` sources by
    total share (all if that leaves at most one out), then "other"."""
    k = len(plan.names)
    total = plan.drawn[-1].astype(np.float64) if len(plan.steps) else np.zeros(k)
    if k <= top + 1:
        return list(plan.names), plan.planned, plan.drawn.astype(np.float64), list(range(k))
    order = sorted(range(k), key=lambda s: (-total[s], s))[:top]
    group = [top] * k
    for g, s in enumerate(order):
        group[s] = g
    labels = [plan.names[s] for s in order] + [f"other ({k - top} sources)"]
    index = np.asarray(group)
    planned = np.zeros((len(plan.steps), top + 1))
    drawn = np.zeros((len(plan.steps), top + 1))
    for g in range(top + 1):
        planned[:, g] = plan.planned[:, index == g].sum(axis=1)
        drawn[:, g] = plan.drawn[:, index == g].astype(np.float64).sum(axis=1)
    return labels, planned, drawn, group


def _rolling_share(steps: np.ndarray, drawn: np.ndarray, window: int) -> np.ndarray:
    """Each group's share of the draws of the `window` recorded steps up to
    each one (cumulative counts differenced; before the first, zero)."""
    base = np.vstack([np.zeros((1, drawn.shape[1])), drawn])
    lag = np.maximum(np.arange(len(steps)) + 1 - window, 0)
    part = drawn - base[lag]
    total = part.sum(axis=1, keepdims=True)
    return np.divide(part, total, out=np.zeros_like(part), where=total > 0)


def _mark_events(axes: Sequence[Any], plan: MixturePlan, last: int) -> None:
    starts = [e for e in plan.events if e["kind"] == "phase_start"]
    for i, e in enumerate(starts):
        step, phase = e["step"], e["phase"]
        ramp = plan.phases[phase][2] if phase < len(plan.phases) else 0
        end = min(step + ramp, starts[i + 1]["step"] if i + 1 < len(starts) else last + 1)
        for ax in axes:
            if step > 0:
                ax.axvline(step, color="black", linewidth=1)
            if ramp > 0 and end > step:
                ax.axvspan(step, end, color="black", alpha=0.08, linewidth=0)
        axes[0].annotate(f"phase {phase}" + (f" (ramp {ramp})" if ramp else ""), (step, 1.0),
                         xycoords=("data", "axes fraction"), xytext=(3, -12),
                         textcoords="offset points", fontsize=8)
    for e in plan.events:
        if e["kind"] == "exhausted":
            for ax in axes:
                ax.axvline(e["step"], color="#d62728", linewidth=1.5, linestyle="--")
            axes[0].annotate("exhausted: every source capped", (e["step"], 0.5),
                             xycoords=("data", "axes fraction"), rotation=90, fontsize=8,
                             color="#d62728", ha="right", va="center")


def plot(plan: Union[MixturePlan, Mapping[str, Any]], path: str, top: int = TOP_SOURCES,
         window: int = 0) -> None:
    """Writes the figure of `plan` (a MixturePlan or the JSON of
    `tokpack sample --plan-json`) to `path` (PNG). top: sources drawn by
    name, the rest grouped; window: recorded steps per realised share
    (0: a fiftieth of them)."""
    try:
        import matplotlib
    except ImportError as e:
        raise ImportError("tokpack.mixture_plot needs matplotlib: "
                          "pip install 'tokpack[plots]'") from e
    matplotlib.use("Agg")  # Files only: no display needed.
    import matplotlib.pyplot as plt

    if not isinstance(plan, MixturePlan):
        plan = MixturePlan.from_json(plan)
    labels, planned, drawn, group = _grouped(plan, top)
    steps = plan.steps
    window = window or max(1, len(steps) // 50)
    share = _rolling_share(steps, drawn, window)
    cmap = plt.get_cmap("tab10" if len(labels) <= 10 else "tab20")
    colors = [cmap(i % cmap.N) for i in range(len(labels))]
    grouped = len(labels) < len(plan.names)
    if grouped:
        colors[-1] = OTHER_COLOR
    fig, axes = plt.subplots(2, 1, figsize=(12, 8), sharex=True, layout="constrained")
    if len(steps):
        axes[0].stackplot(steps, planned.T, colors=colors, labels=labels, step="post",
                          linewidth=0)
        # "other" sums many sources: on its own axis, so the named ones keep their scale.
        other = axes[1].twinx() if grouped else None
        for g, label in enumerate(labels):
            ax = other if grouped and g == len(labels) - 1 else axes[1]
            ax.plot(steps, share[:, g], color=colors[g], linewidth=1.2)
            ax.plot(steps, planned[:, g], color=colors[g], linewidth=0.8, linestyle=":",
                    drawstyle="steps-post")
        if other is not None:
            other.set_ylim(bottom=0)
            other.set_ylabel(f"{labels[-1]} (grey)", color="#707070")
        _mark_events(axes, plan, int(steps[-1]))
        caps = [e for e in plan.events if e["kind"] == "cap"]
        for e in caps:
            g = group[plan.names.index(e["source"])]
            i = min(int(np.searchsorted(steps, e["step"])), len(steps) - 1)
            axes[1].plot(e["step"], share[i, g], marker="X", markersize=9, color=colors[g],
                         markeredgecolor="black")
            if len(caps) <= 12:
                axes[1].annotate(f"cap: {e['source']}", (e["step"], share[i, g]),
                                 xytext=(4, 4), textcoords="offset points", fontsize=7)
    axes[0].set_ylim(0, 1)
    axes[0].set_ylabel("planned weight")
    axes[0].set_title("Planned weights per source (stacked; ramps shaded, phases as lines)")
    axes[0].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    axes[1].set_ylim(bottom=0)
    axes[1].set_ylabel("share of the draws")
    axes[1].set_xlabel("step")
    stride = int(steps[1] - steps[0]) if len(steps) > 1 else 1
    axes[1].set_title(f"Realised share over {window * stride} steps (solid) against the plan "
                      "(dotted); X: a source reaches its cap")
    fig.suptitle(f"tokpack mixture plan: {len(plan.names)} sources, global batch "
                 f"{plan.global_batch}, {int(steps[-1]) + 1 if len(steps) else 0} steps",
                 fontsize=10)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv: Sequence[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m tokpack.mixture_plot PLAN.json OUT.png", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as f:
        plot(json.load(f), argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
