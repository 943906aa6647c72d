#!/usr/bin/env python3
"""Mixtures of many sources (not a test): what the number of sources and
the world size cost the reader, in one run.

1. Sources: one mixture of N local sources (N = 1, 100, 1000), equal
   weights, the same total tokens split evenly among them (bare Megatron
   int32 prefixes of random tokens), read by tokpack.Loader (seq_len 2048,
   batch 8, full shuffle, 2 assembler threads, as_="numpy"): construction
   time, samples/s over --seconds, process CPU microseconds per sample, and
   the threads the process runs. Target: 1000 sources >= 0.9x the samples/s
   of one source, taken within each round.
2. World size: rank 0 of a loader over the 1000 sources with world_size W
   (1, 64, 512) and batch 8 per rank, one assembler thread: process CPU per
   step. Every rank walks the mixture schedule over the whole global batch
   (W x 8 positions) to find its slice, so this is the cost that grows with
   W; the rows a rank reads do not.

Every measurement runs in its own process; configurations are interleaved
(rotated each round), and medians over rounds are reported.

    .venv/bin/python bench/mixture_bench.py --rounds 3 --report docs/benchmarks.md
"""
import argparse
import json
import os
import resource
import shutil
import struct
import sys
import time
from pathlib import Path

import numpy as np

import harness
from harness import REPO, fmt, median

IDX_MAGIC = b"MMIDIDX\x00\x00"
SEQ = 2048
BATCH = 8
SOURCES = (1, 100, 1000)
WORLDS = (1, 64, 512)


def write_prefix(prefix, tokens, doc_tokens=4096):
    lengths = [min(doc_tokens, len(tokens) - i) for i in range(0, len(tokens), doc_tokens)]
    pointers = np.concatenate([[0], np.cumsum(np.array(lengths, np.int64) * 4)])[:-1]
    idx = (IDX_MAGIC + struct.pack("<QBQQ", 1, 4, len(lengths), len(lengths) + 1)
           + np.array(lengths, "<i4").tobytes() + np.array(pointers, "<i8").tobytes()
           + np.arange(len(lengths) + 1, dtype="<i8").tobytes())
    Path(str(prefix) + ".idx").write_bytes(idx)
    Path(str(prefix) + ".bin").write_bytes(tokens.astype("<i4").tobytes())


def make_data(work, total_tokens):
    """work/n{N}/s{i}: N sources of total_tokens / N tokens each."""
    rng = np.random.default_rng(0)
    for n in SOURCES:
        d = work / f"n{n}"
        if (d / "done").exists():
            continue
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
        per = total_tokens // n
        for i in range(n):
            write_prefix(d / f"s{i}", rng.integers(0, 50000, per, dtype=np.int64))
        (d / "done").write_text("")


def threads():
    return len(os.listdir("/proc/self/task"))


def cpu():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def worker(args):
    import tokpack
    n = args.sources
    paths = [str(Path(args.data) / f"n{n}" / f"s{i}") for i in range(n)]
    phases = [(0, {p: 1.0 for p in paths})]
    t0 = time.perf_counter()
    loader = tokpack.Loader(phases=phases, seq_len=SEQ, batch_size=BATCH, seed=1,
                            threads=args.threads, world_size=args.world, rank=0, as_="numpy")
    construct = time.perf_counter() - t0
    it = iter(loader)
    for _ in range(3):  # Warm: the pipeline running, the pages mapped.
        next(it)
    c0, w0, steps = cpu(), time.perf_counter(), 0
    while time.perf_counter() - w0 < args.seconds:
        next(it)
        steps += 1
    wall, used = time.perf_counter() - w0, cpu() - c0
    print(json.dumps({"construct_s": construct, "samples_per_s": steps * BATCH / wall,
                      "cpu_us_per_sample": used / (steps * BATCH) * 1e6,
                      "cpu_ms_per_step": used / steps * 1e3, "threads": threads()}))


def run(args, sources, world, threads_):
    cmd = [sys.executable, __file__, "--worker", "--data", str(args.work), "--sources",
           str(sources), "--world", str(world), "--threads", str(threads_), "--seconds",
           str(args.seconds)]
    return harness.run_child(cmd, timeout=600).result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--data")
    ap.add_argument("--sources", type=int, default=1)
    ap.add_argument("--world", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=150_000_000,
                    help="total tokens, split evenly among the sources")
    ap.add_argument("--work", type=Path, default=REPO / "build" / "bench-mixture")
    ap.add_argument("--report")
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    make_data(args.work, args.tokens)
    names = [f"sources={n}" for n in SOURCES] + [f"world={w}" for w in WORLDS]

    def measure(name):
        kind, value = name.split("=")
        if kind == "sources":
            return run(args, int(value), 1, 2)
        return run(args, SOURCES[-1], int(value), 1)

    results, failed = harness.interleaved(
        names, args.rounds, measure,
        log=lambda r: f"{r['samples_per_s']:,.0f} samples/s, {r['cpu_ms_per_step']:.3f} ms/step")
    med = {n: {k: median([r[k] for r in rs]) for k in rs[0]} for n, rs in results.items() if rs}
    base = results.get("sources=1", [])
    lines = [f"Machine: {harness.machine_line()}. seq_len {SEQ}, batch {BATCH}, "
             f"{args.tokens:,} tokens split evenly among the sources, full shuffle, "
             f"median of {args.rounds} interleaved rounds of {args.seconds:g} s "
             "(bench/mixture_bench.py).", "",
             "| sources | construct | samples/s | vs 1 source | CPU us per sample | threads |",
             "|---:|---:|---:|---:|---:|---:|"]
    for n in SOURCES:
        name = f"sources={n}"
        if name not in med:
            lines.append(f"| {n} | failed: {failed.get(name, '?')} | | | | |")
            continue
        m = med[name]
        rounds = results[name]
        ratio = median([r["samples_per_s"] / b["samples_per_s"] for r, b in zip(rounds, base)])
        lines.append(f"| {n} | {m['construct_s'] * 1e3:,.0f} ms | {fmt(m['samples_per_s'])} | "
                     f"{ratio:.2f}x | {m['cpu_us_per_sample']:.1f} | {m['threads']:.0f} |")
    lines += ["", f"Rank 0 of world size W over the {SOURCES[-1]} sources, 8 rows per rank, "
              "one assembler thread: process CPU per step (the schedule walks the whole "
              "global batch of W x 8 positions).", "",
              "| world size | global batch | CPU ms per step | vs world size 1 |",
              "|---:|---:|---:|---:|"]
    first = results.get(f"world={WORLDS[0]}", [])
    for w in WORLDS:
        name = f"world={w}"
        if name not in med:
            lines.append(f"| {w} | {w * BATCH} | failed: {failed.get(name, '?')} | |")
            continue
        ratio = median([r["cpu_ms_per_step"] / b["cpu_ms_per_step"]
                        for r, b in zip(results[name], first)])
        lines.append(f"| {w} | {w * BATCH:,} | {med[name]['cpu_ms_per_step']:.3f} | "
                     f"{ratio:.2f}x |")
    body = "\n".join(lines)
    print(body)
    if args.report:
        harness.write_section("mixture-sources", body, Path(args.report))


if __name__ == "__main__":
    main()
