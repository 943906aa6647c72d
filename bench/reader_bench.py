#!/usr/bin/env python3
"""Reader benchmark (not a test): tokpack's Loader (seq_len 2048, batch 8,
shuffled, int64 inputs+targets, dataset in the page cache, one consumer)
against, in the same run, the machine's memcpy bound and what nanoGPT's
get_batch does (numpy memmap, random windows, astype(int64), stack).
Also: anonymous resident memory with a 10x larger dataset.

    python3 bench/reader_bench.py [--tokens 100000000] [--seconds 10] \
        [--write-doc docs/benchmarks-reader.md]
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "build" / "bench" / "reader_bench"


def nanogpt_get_batch(data, block_size, batch_size, rng):
    ix = rng.integers(0, len(data) - block_size - 1, size=batch_size)
    x = np.stack([data[i:i + block_size].astype(np.int64) for i in ix])
    y = np.stack([data[i + 1:i + 1 + block_size].astype(np.int64) for i in ix])
    return x, y


def numpy_baseline(bin_path, seconds):
    data = np.memmap(bin_path, dtype=np.uint16, mode="r")
    np.asarray(data).sum()  # Page everything in, as the C++ side does.
    rng = np.random.default_rng(1)
    for _ in range(50):
        nanogpt_get_batch(data, 2048, 8, rng)
    steps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        nanogpt_get_batch(data, 2048, 8, rng)
        steps += 1
    return steps * 8 / (time.perf_counter() - t0)


def run(dirname, seconds, threads):
    out = subprocess.run([str(BENCH), "run", str(dirname), str(seconds), str(threads)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=100_000_000)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--workdir", default="/tmp/tokpack-reader-bench")
    ap.add_argument("--write-doc")
    args = ap.parse_args()
    work = Path(args.workdir)
    for name, tokens in (("1x", args.tokens), ("10x", 10 * args.tokens)):
        if not (work / name / "manifest.json").exists():
            print(f"writing the {name} dataset ({tokens} tokens)", file=sys.stderr)
            subprocess.run([str(BENCH), "make", str(work / name), str(tokens)], check=True)

    if not (work / "shards1000" / "manifest.json").exists():
        subprocess.run([str(BENCH), "make", str(work / "shards1000"), "4000000", "4000"],
                       check=True)
    opened = json.loads(subprocess.run([str(BENCH), "open", str(work / "shards1000")],
                                       check=True, capture_output=True, text=True).stdout)
    res = {t: run(work / "1x", args.seconds, t) for t in (1, 2)}
    big = run(work / "10x", args.seconds, 2)
    numpy_sps = numpy_baseline(work / "1x" / "shard-00000.bin", args.seconds)
    memcpy = res[2]["memcpy_gb_per_s"]
    rows = [
        ("numpy memmap get_batch (nanoGPT)", numpy_sps, numpy_sps * 2 * 2048 * 8 / 1e9, None),
        ("tokpack Loader, 1 assembler thread", res[1]["samples_per_s"], res[1]["gb_per_s"], res[1]),
        ("tokpack Loader, 2 assembler threads", res[2]["samples_per_s"], res[2]["gb_per_s"], res[2]),
    ]
    lines = ["| reader | samples/s | GB/s out | vs numpy | vs memcpy |", "|---|---|---|---|---|"]
    for name, sps, gbs, _ in rows:
        lines.append(f"| {name} | {sps:,.0f} | {gbs:.2f} | {sps / numpy_sps:.2f}x | "
                     f"{gbs / memcpy:.0%} |")
    lines.append(f"| memcpy (256 MiB, best of 5) | | {memcpy:.2f} | | 100% |")
    rss = (f"Anonymous RSS after the run: {res[2]['rss_anon_kb'] / 1024:.1f} MiB with "
           f"{res[2]['tokens']:,} tokens, {big['rss_anon_kb'] / 1024:.1f} MiB with "
           f"{big['tokens']:,} tokens (ratio {big['rss_anon_kb'] / res[2]['rss_anon_kb']:.2f}).")
    table = "\n".join(lines)
    opening = (f"Opening a dataset of {opened['shards']} shards (mapping every .bin and .idx, "
               f"checking sizes against headers and the manifest): "
               f"{opened['open_seconds'] * 1000:.1f} ms (best of 5).")
    print(table)
    print(rss)
    print(opening)
    if args.write_doc:
        cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                    if l.startswith("model name")), platform.processor())
        Path(args.write_doc).write_text(f"""# Reader benchmark

Measured with `python3 bench/reader_bench.py --write-doc {args.write_doc}` on
{cpu}, {os.cpu_count()} cores (shared, noisy machine; ratios are within one run).

Setup: synthetic uint16 dataset of {args.tokens:,} tokens in the page cache,
seq_len 2048, batch 8, full shuffle, int64 inputs and targets (2 x 8 x 2048 x 8
bytes = 256 KiB written per batch), one consumer calling `Next()`, {args.seconds:g} s
per configuration. "GB/s out" counts the bytes of inputs plus targets produced;
the memcpy bound copies 256 MiB (it reads and writes every byte, as assembly
does). The numpy baseline is nanoGPT's `get_batch`: `np.memmap` of the same
.bin, random windows, `astype(np.int64)`, `np.stack`, inputs and targets.

{table}

{opening}

{rss} The dataset itself is memory-mapped: its pages are shared page cache,
not loader memory, so resident anonymous memory is the measure of the loader's
own footprint (ring buffers and threads).
""")


if __name__ == "__main__":
    main()
