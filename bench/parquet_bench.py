#!/usr/bin/env python3
"""Parquet input benchmark (not a test): `tokpack build` from Parquet against
the same texts as JSONL.zst, and both against tokpack's bare encode of those
texts (the tokenizer bound), same run, interleaved.

The texts are bpe_corpus.py's (license and copyright prose every Debian
machine has, in documents of a few KB), encoded with a Llama-3-style 32k BPE
trained on them. The Parquet file is FineWeb-like: a `text` column and an
`id` column, snappy, row groups of 1000 rows. Every measurement is a fresh
process; the median of the rounds counts. MB/s are MB of UTF-8 text over the
build's wall time (the process as a whole).

    .venv/bin/python bench/parquet_bench.py            # prints the table
    .venv/bin/python bench/parquet_bench.py --report docs/benchmarks.md

Target (issue 14): the Parquet build >= 0.9x of the bare encode at one thread,
as for JSONL, so reading Parquet is never what a build waits on.
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import harness
from harness import REPO, median
from bpe_corpus import corpus, run_bare, run_build, train_bpe


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=8, help="MB of text (default 8)")
    ap.add_argument("--repeat", type=int, default=4,
                    help="the inputs hold the texts this many times over, so process start "
                         "and tokenizer load weigh little (default 4)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", default="1,2", help="build thread counts (default 1,2)")
    ap.add_argument("--tokpack", default=str(REPO / "build" / "tokpack"))
    ap.add_argument("--encode-bench",
                    default=str(REPO / "build" / "bench" / "tokenizer_encode_bench"))
    ap.add_argument("--report", help="write the parquet section of this report")
    a = ap.parse_args()
    import pyarrow as pa
    import pyarrow.parquet as pq

    work = Path(tempfile.mkdtemp(prefix="tokpack-pqbench-"))
    docs, size = corpus(a.mb)
    texts = docs * a.repeat
    with open(work / "docs.jsonl", "w", encoding="utf-8") as f:
        for d in texts:
            f.write(json.dumps({"text": d}) + "\n")
    subprocess.run(["zstd", "-q", "-f", str(work / "docs.jsonl")], check=True)
    pq.write_table(pa.table({"id": list(range(len(texts))), "text": texts}),
                   work / "docs.parquet", row_group_size=1000, compression="snappy")
    tok = train_bpe("llama3", docs, work)
    text_mb = a.repeat * size / 1e6
    print(f"corpus: {len(texts)} documents, {text_mb:.1f} MB of text", file=sys.stderr)

    threads = [int(t) for t in a.threads.split(",")]
    configs = [("bare encode", 1, None)] + [
        (fmt, t, work / name) for t in threads
        for fmt, name in (("JSONL.zst", "docs.jsonl.zst"), ("Parquet", "docs.parquet"))]
    paths = {c[:2]: c[2] for c in configs}

    def measure(config):
        if paths[config] is None:
            return run_bare(a.encode_bench, tok, work / "docs.jsonl")
        return run_build(a.tokpack, tok, paths[config], work / "out", config[1])

    seconds, failed = harness.interleaved(list(paths), a.rounds, measure)
    if failed:
        sys.exit(f"parquet_bench failed: {failed}")
    mbs = {k: text_mb / median(v) for k, v in seconds.items()}
    bare = mbs[("bare encode", 1)]
    rows = ["| input | threads | MB/s of text | vs bare encode (1 thread) | Parquet vs JSONL.zst |",
            "|---|---|---|---|---|"]
    for what, t, _ in configs:
        vs_jsonl = (f"{mbs[(what, t)] / mbs[('JSONL.zst', t)]:.2f}x" if what == "Parquet"
                    else "")
        rows.append(f"| {what} | {t} | {mbs[(what, t)]:.1f} | {mbs[(what, t)] / bare:.2f}x | "
                    f"{vs_jsonl} |")
    sizes = {p.name: p.stat().st_size / 1e6 for p in
             (work / "docs.jsonl.zst", work / "docs.parquet")}
    table = "\n".join(rows)
    note = (f"{text_mb:.1f} MB of text in {len(texts)} documents; JSONL.zst "
            f"{sizes['docs.jsonl.zst']:.1f} MB, Parquet (snappy) {sizes['docs.parquet']:.1f} MB; "
            f"medians of {a.rounds} interleaved rounds (rotated) on {harness.machine_line()}.")
    print(table + "\n\n" + note)
    if a.report:
        harness.write_section(
            "parquet", "Made by `.venv/bin/python bench/parquet_bench.py --report "
            f"docs/benchmarks.md`.\n\n{table}\n\n{note}\n", Path(a.report))


if __name__ == "__main__":
    main()
