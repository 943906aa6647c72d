#!/usr/bin/env python3
"""Reader benchmark (not a test): how close tokpack's Loader (C++ `Next()`
loop, seq_len 2048, batch 8, shuffled, int64 inputs+targets, dataset in the
page cache) comes to the machine's memcpy bound, how long opening a dataset
of many shards takes, and the loader's anonymous resident memory with a 10x
larger dataset. Its samples/s are published once, in the Reading section
(bench/python_bench.py, which runs the same C++ loop beside the Python one).

    python3 bench/reader_bench.py [--tokens 100000000] [--seconds 8] [--rounds 3] \
        [--report docs/benchmarks.md]
"""
import argparse
import sys
from pathlib import Path

import harness
from harness import REPO, median

BENCH = REPO / "build" / "bench" / "reader_bench"


def run(dirname, seconds, threads):
    return harness.run_child([BENCH, "run", dirname, seconds, threads]).result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=100_000_000)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--workdir", default="/tmp/tokpack-reader-bench")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--report", help="write the reader section of this report")
    args = ap.parse_args()
    work = Path(args.workdir)
    for name, tokens in (("1x", args.tokens), ("10x", 10 * args.tokens)):
        if not (work / name / "manifest.json").exists():
            print(f"writing the {name} dataset ({tokens} tokens)", file=sys.stderr)
            harness.run_child([BENCH, "make", work / name, tokens])
    if not (work / "shards1000" / "manifest.json").exists():
        harness.run_child([BENCH, "make", work / "shards1000", 4000000, 4000])
    opened = harness.run_child([BENCH, "open", work / "shards1000"]).result
    configs = {"1 thread": (work / "1x", 1), "2 threads": (work / "1x", 2),
               "2 threads, 10x data": (work / "10x", 2)}
    results, failed = harness.interleaved(
        configs, args.rounds, lambda c: run(configs[c][0], args.seconds, configs[c][1]),
        log=lambda r: f"{r['gb_per_s']:.2f} GB/s")
    if failed:
        sys.exit(f"reader_bench failed: {failed}")
    # Within each round: the loader's output bandwidth over that run's memcpy bound.
    share = {c: median([r["gb_per_s"] / r["memcpy_gb_per_s"] for r in results[c]])
             for c in ("1 thread", "2 threads")}
    memcpy = median([r["memcpy_gb_per_s"] for c in configs for r in results[c]])
    small, big = results["2 threads"][-1], results["2 threads, 10x data"][-1]
    body = f"""Made by `python3 bench/reader_bench.py --report docs/benchmarks.md` on
{harness.machine_line()}; {args.rounds} rounds of {args.seconds:g} s per configuration,
interleaved, medians.

Setup: synthetic uint16 dataset of {args.tokens:,} tokens in the page cache, seq_len
2048, batch 8, full shuffle, int64 inputs and targets (256 KiB written per batch), one
consumer calling `Next()` (`build/bench/reader_bench run`). The memcpy bound copies 256
MiB (best of 5, in the same process): it reads and writes every byte, as assembly does.
The loader's samples/s are in the [Reading](#reading) table (its C++ loop rows).

| loader | output bandwidth / memcpy bound |
|---|---:|
| tokpack Loader, 1 assembler thread | {share['1 thread']:.0%} |
| tokpack Loader, 2 assembler threads | {share['2 threads']:.0%} |

memcpy bound: {memcpy:.2f} GB/s (median over the runs).

Opening a dataset of {opened['shards']} shards (mapping every .bin and .idx, checking
sizes against headers and the manifest): {opened['open_seconds'] * 1000:.1f} ms (best of 5).

Anonymous RSS after a run: {small['rss_anon_kb'] / 1024:.1f} MiB with {small['tokens']:,}
tokens, {big['rss_anon_kb'] / 1024:.1f} MiB with {big['tokens']:,} tokens (ratio
{big['rss_anon_kb'] / small['rss_anon_kb']:.2f}). The dataset itself is memory-mapped:
its pages are shared page cache, not loader memory, so resident anonymous memory is the
measure of the loader's own footprint (ring buffers and threads).
"""
    print(body)
    if args.report:
        harness.write_section("reader", body, Path(args.report))


if __name__ == "__main__":
    main()
