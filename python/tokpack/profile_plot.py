"""Draws a `tokpack profile --json` report: the p99 wait for data per loader
setting against the budget (1% of the training step), the distribution of
the wait per step, and a timeline of waiting and training for the baseline
setting next to the recommended one.

    tokpack profile DATA --json > report.json
    python -m tokpack.profile_plot report.json profile.png

`tokpack profile --plot PNG` runs this module. matplotlib is needed only
here (pip install 'tokpack[plots]'); it is imported when a plot is drawn.
"""
from __future__ import annotations

import json
import sys
from typing import Any, Dict, List, Sequence

WAIT_COLOR = "#d62728"
TRAIN_COLOR = "#1f77b4"
TIMELINE_STEPS = 12  # Enough steps to see the rhythm, few enough to see each one.


def _label(config: Dict[str, Any]) -> str:
    return f"threads={config['threads']}, prefetch={config['prefetch']}"


def _log_axis(axis: Any) -> None:
    """A log scale labelled in plain numbers (0.02, not 2 x 10^-2)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    if axis.axis_name == "y":
        axis.axes.set_yscale("log")
    else:
        axis.axes.set_xscale("log")
    low, high = axis.get_view_interval()
    few_decades = high < 1000 * max(low, 1e-12)  # Room for 1-2-5 steps, else powers of 10.
    axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0) if few_decades else (1.0,)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def _p99_bars(ax: Any, report: Dict[str, Any]) -> None:
    configs = report["configurations"]
    pick = report["recommended"]["index"]
    budget_ms = report["budget_seconds"] * 1e3
    floor_ms = 1e-4  # 0.1 us: where a log axis shows a wait of zero.
    p99 = [max(c["wait_p99_seconds"] * 1e3, floor_ms) for c in configs]
    # The verdict is the profiler's (it allows for timer noise), not redrawn here.
    colors = [TRAIN_COLOR if c["within_budget"] else WAIT_COLOR for c in configs]
    bars = ax.bar(range(len(configs)), p99, color=colors)
    bars[pick].set_edgecolor("black")
    bars[pick].set_linewidth(2.5)
    _log_axis(ax.yaxis)
    ax.set_xticks(range(len(configs)))
    ax.set_xticklabels(
        [f"t={c['threads']} p={c['prefetch']}\n{c['cpu_seconds_per_step'] * 1e3:.2f} ms"
         for c in configs], fontsize=8, rotation=45 if len(configs) > 6 else 0)
    if budget_ms > 0:
        ax.axhline(budget_ms, color="black", linestyle="--",
                   label=f"budget: 1% of the {report['step_seconds'] * 1e3:g} ms step")
    from matplotlib.patches import Patch

    handles, _ = ax.get_legend_handles_labels()
    handles += [Patch(color=TRAIN_COLOR, label="p99 within budget"),
                Patch(color=WAIT_COLOR, label="p99 over budget"),
                Patch(facecolor="white", edgecolor="black", linewidth=2.5, label="recommended")]
    ax.legend(handles=handles, fontsize=8)
    ax.set_ylabel("p99 wait for data per step (ms, log)")
    ax.set_xlabel("setting (t = threads, p = prefetch) and its CPU time per step")
    ax.set_title("p99 wait per loader setting")


def _wait_histogram(ax: Any, shown: Sequence[int], names: Sequence[str],
                    report: Dict[str, Any]) -> None:
    import numpy as np

    configs = report["configurations"]
    waits = {i: np.maximum(np.subtract(configs[i]["ready_seconds"],
                                       configs[i]["request_seconds"]) * 1e6, 0.1)
             for i in shown}
    everything = np.concatenate(list(waits.values()))
    bins = np.geomspace(everything.min(), everything.max() * 1.01 + 0.1, 20)
    for i, name, color in zip(shown, names, ("#7f7f7f", "#2ca02c")):
        ax.hist(waits[i], bins=bins, histtype="step", linewidth=2, color=color,
                label=f"{name}: {_label(configs[i])}")
    if report["budget_seconds"] > 0:
        ax.axvline(report["budget_seconds"] * 1e6, color="black", linestyle="--",
                   label="budget (1% of the step)")
    _log_axis(ax.xaxis)
    ax.set_xlabel("wait for data per step (µs, log)")
    ax.set_ylabel("steps")
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.set_title("Wait per step")
    ax.legend(fontsize=8)


def _timeline(ax: Any, shown: Sequence[int], names: Sequence[str],
              report: Dict[str, Any]) -> None:
    from matplotlib.patches import Patch

    configs = report["configurations"]
    labels = []
    for row, (i, name) in enumerate(zip(shown, names)):
        c = configs[i]
        n = min(TIMELINE_STEPS, len(c["request_seconds"]))
        start = c["request_seconds"][0]
        ms = [[(t - start) * 1e3 for t in c[key][:n]]
              for key in ("request_seconds", "ready_seconds", "done_seconds")]
        waits = [(r, d - r) for r, d in zip(ms[0], ms[1])]
        trains = [(r, d - r) for r, d in zip(ms[1], ms[2])]
        # White edges separate the steps; a wait too short to see stays so.
        ax.broken_barh(trains, (row - 0.35, 0.7), facecolors=TRAIN_COLOR, edgecolor="white",
                       linewidth=0.8)
        ax.broken_barh(waits, (row - 0.35, 0.7), facecolors=WAIT_COLOR)
        waited = sum(w for _, w in waits) / max(ms[2][-1], 1e-9)
        labels.append(f"{name}\n{_label(c)}\nwaiting {100 * waited:.2f}% of the time")
    ax.set_yticks(range(len(shown)))
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_ylim(-0.6, len(shown) - 0.2)
    ax.invert_yaxis()
    ax.set_xlabel("time since the first measured step (ms)")
    ax.legend(handles=[Patch(color=WAIT_COLOR, label="waiting for data (next())"),
                       Patch(color=TRAIN_COLOR, label="training step")],
              loc="upper center", bbox_to_anchor=(0.5, -0.18), fontsize=8, ncol=2)
    ax.set_title(f"Timeline of the first {TIMELINE_STEPS} measured steps")


def plot(report: Dict[str, Any], path: str) -> None:
    """Writes the figure for a `tokpack profile --json` report to `path` (PNG)."""
    try:
        import matplotlib
    except ImportError as e:
        raise ImportError("tokpack.profile_plot needs matplotlib: "
                          "pip install 'tokpack[plots]'") from e
    matplotlib.use("Agg")  # Files only: no display needed.
    import matplotlib.pyplot as plt

    baseline, pick = report["baseline"], report["recommended"]["index"]
    shown: List[int] = [baseline] if baseline == pick else [baseline, pick]
    names = ["baseline = recommended"] if baseline == pick else ["baseline", "recommended"]
    fig = plt.figure(figsize=(13, 8.5), layout="constrained")
    grid = fig.add_gridspec(2, 2, height_ratios=[3, 2])
    _p99_bars(fig.add_subplot(grid[0, 0]), report)
    _wait_histogram(fig.add_subplot(grid[0, 1]), shown, names, report)
    _timeline(fig.add_subplot(grid[1, :]), shown, names, report)
    fig.suptitle(f"tokpack profile: {report['dataset']}, batch {report['batch_size']} x "
                 f"{report['seq_len']} tokens on {report['device']}, "
                 f"{report['step_seconds'] * 1e3:g} ms step\n{report['recommended']['advice']}",
                 fontsize=9, wrap=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv: Sequence[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m tokpack.profile_plot REPORT.json OUT.png", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as f:
        plot(json.load(f), argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
