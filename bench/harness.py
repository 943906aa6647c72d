"""The benchmarks' shared harness: machine facts, running a measurement in a
child process, interleaved rounds, medians and percentiles, and writing one
section of the one report, docs/benchmarks.md.

Every bench/*.py script measures in fresh child processes (one JSON line
on stdout, the last one), runs its configurations interleaved with the
order rotated each round so that a shared machine's noise falls on all of
them alike, reports medians and ratios taken within a round, and replaces
its own section of docs/benchmarks.md (between its markers), leaving the
rest of the page as it is. scripts/bench_all.sh runs them all.
"""
import collections
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REPORT = REPO / "docs" / "benchmarks.md"


class ChildFailed(RuntimeError):
    """A measurement's process failed; the message is its last stderr line."""


def sh(command):
    """Stdout of a shell command that reads a machine fact; "" if it fails."""
    try:
        return subprocess.run(command, shell=True, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def machine():
    """What a reader needs to judge the numbers: CPU, cores, memory, OS, commit."""
    lscpu = {}
    for line in sh("lscpu").splitlines():
        key, _, value = line.partition(":")
        lscpu[key.strip()] = value.strip()
    return {
        "cpu": lscpu.get("Model name") or platform.processor() or platform.machine(),
        "vcpus": len(os.sched_getaffinity(0)),
        "threads_per_core": lscpu.get("Thread(s) per core", "?"),
        "hypervisor": lscpu.get("Hypervisor vendor", ""),
        "mem_gib": sh("free -g | awk '/^Mem:/ {print $2}'"),
        "os": sh(". /etc/os-release && echo $PRETTY_NAME"),
        "kernel": platform.release(),
        "python": platform.python_version(),
        # A copy without its history (the GPU bundle's machine) names its commit.
        "commit": os.environ.get("TOKPACK_COMMIT")
        or sh(f"git -C {shlex.quote(str(REPO))} rev-parse --short HEAD"),
    }


def machine_line(m=None):
    m = m or machine()
    vm = f" ({m['hypervisor']} VM)" if m["hypervisor"] else ""
    return (f"{m['cpu']}, {m['vcpus']} vCPUs{vm}, {m['mem_gib']} GiB RAM, {m['os']}, "
            f"Linux {m['kernel']}, Python {m['python']}; tokpack at commit {m['commit']}")


def versions(dists):
    """Installed version of each distribution, or "not installed"."""
    from importlib import metadata

    out = {}
    for dist in dists:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def last_line(text):
    lines = [line for line in (text or "").strip().splitlines() if line.strip()]
    return lines[-1] if lines else "failed without a message"


Child = collections.namedtuple("Child", "result stdout wall usage")


def run_child(cmd, env=None, timeout=None):
    """Runs one measurement in a fresh process and returns Child(result: its
    last stdout line parsed as JSON, or None if that is not JSON; stdout;
    wall seconds; its resource usage, for CPU time and peak RSS).
    ChildFailed (with its last stderr line) if it fails or times out."""
    cmd = [str(c) for c in cmd]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        timer = threading.Timer(timeout, p.kill) if timeout else None
        if timer:
            timer.start()
        try:
            _, status, usage = os.wait4(p.pid, 0)
        finally:
            if timer:
                timer.cancel()
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
    if p.returncode != 0:
        why = "timed out" if timer and p.returncode < 0 else last_line(stderr)
        raise ChildFailed(f"{why} ({shlex.join(cmd[:2])} ...)")
    try:
        result = json.loads(last_line(stdout))
    except json.JSONDecodeError:
        result = None
    return Child(result, stdout, wall, usage)


def interleaved(names, rounds, measure, log=None, before_round=None):
    """measure(name) for every name, `rounds` times, the order rotated each
    round; before_round() first in each (e.g. to page the inputs in). Returns
    ({name: [result per round]}, {name: why it failed}); a name that fails
    once is dropped from later rounds."""
    names = list(names)
    results = {n: [] for n in names}
    failed = {}
    for r in range(rounds):
        if before_round:
            before_round()
        k = r % len(names) if names else 0
        for name in names[k:] + names[:k]:
            if name in failed:
                continue
            try:
                results[name].append(measure(name))
            except (ChildFailed, subprocess.CalledProcessError) as e:
                failed[name] = str(e) if isinstance(e, ChildFailed) else last_line(e.stderr)
                print(f"{name}: FAILED: {failed[name]}", flush=True, file=sys.stderr)
                continue
            if log:
                print(f"round {r + 1}/{rounds} {name}: {log(results[name][-1])}", flush=True,
                      file=sys.stderr)
    return results, failed


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def ratio_rounds(num, den):
    """num[i] / den[i] within each round (runs close in time), then the median."""
    return median([x / y for x, y in zip(num, den) if y])


def percentile(values, q):
    """The q-th percentile (0..100) by nearest rank; 0.0 for no values."""
    values = sorted(values)
    if not values:
        return 0.0
    k = min(len(values) - 1, max(0, int(round(q / 100 * (len(values) - 1)))))
    return values[k]


def fmt(x, spec="{:,.0f}"):
    return spec.format(x) if x is not None else "n/a"


def loadavg():
    return os.getloadavg()[0]


def write_section(name, body, report=REPORT):
    """Replaces section `name` of the report (the text between its markers)
    with `body`; the prose around it stays. A section not there yet is
    appended."""
    begin, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    text = report.read_text() if report.exists() else "# Benchmarks\n"
    block = f"{begin}\n{body.strip()}\n{end}"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    report.write_text(text)
    return report


def plot_bars(path, bars, title, xlabel, log):
    """A horizontal bar chart of (name, value) pairs, tokpack's in red."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 0.45 * len(bars) + 1.2), dpi=80)
    names = [b[0] for b in bars][::-1]
    vals = [b[1] for b in bars][::-1]
    colors = ["#d62728" if n.startswith("tokpack") else "#7f7f7f" for n in names]
    ax.barh(names, vals, color=colors)
    if log:
        ax.set_xscale("log")
    for i, v in enumerate(vals):
        ax.text(v, i, f" {v:,.0f}" if v >= 100 else f" {v:.2f}", va="center", fontsize=8)
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=9)
    ax.margins(x=0.15)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def synthetic_dataset(maker, work, tokens, shard_tokens):
    """The path of the uint16 dataset `maker make` writes under `work` (made
    once per size, then reused across runs) and its manifest."""
    base = Path(work) / f"ds-{tokens}-s{shard_tokens}"
    if not (base / "manifest.json").exists():
        print(f"writing the dataset ({tokens:,} tokens)", file=sys.stderr)
        subprocess.run([str(maker), "make", str(base), str(tokens), str(shard_tokens)],
                       check=True)
    return base, json.loads((base / "manifest.json").read_text())


def moto_server_class():
    """tests/python's MotoServer (the loopback S3), with werkzeug's line per
    request turned off."""
    import logging
    sys.path.insert(0, str(REPO / "tests" / "python"))
    from remote_servers import MotoServer
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    return MotoServer


def timed_next(it):
    """Yields each batch of iterator `it` with the seconds next() took."""
    while True:
        t = time.perf_counter()
        try:
            batch = next(it)
        except StopIteration:
            return
        yield time.perf_counter() - t, batch
