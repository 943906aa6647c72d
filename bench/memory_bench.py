#!/usr/bin/env python3
"""Memory benchmark (not a test): the peak RSS of `tokpack build` on one huge
JSONL line against the same bytes as ordinary lines, same run, interleaved.

Inputs, made here from packer_bench.py's synthetic English (documents of
50..2000 words with some accents, digits and punctuation):

  * a 100 MB line: the documents joined into one text, one JSONL record,
    under the default --max-document-bytes (256 MiB), so it is encoded;
  * a 1 GB line: the same, 10x; over the limit, so it is refused as a bad
    record (--skip-bad-lines), read through without being held whole (the
    tokenizer.json only: the line is never tokenized);
  * the baselines: the same documents as ordinary JSONL lines, 100 MB and 1 GB.

Each runs with two tokenizers trained here: a sentencepiece unigram model
(spm_train, 16k) and a GPT-2-style byte-level BPE tokenizer.json (PyPI
`tokenizers`, 32k). `--compare BIN` adds the 100 MB inputs built by another
tokpack binary (e.g. an older build, without --max-document-bytes) to the
same rounds. Every build is a fresh process with --threads 2; peak RSS is its
own (wait4's ru_maxrss, forked from a small process); the median of the rounds
counts.

    .venv/bin/python bench/memory_bench.py                   # prints the table
    .venv/bin/python bench/memory_bench.py --report docs/benchmarks.md

Target (issue 16): peak RSS bounded whatever the input: a document costs a
fixed multiple of its size (the tokenizer's), documents over the limit cost
nothing, and a build holds at most about 64 MiB + one document of input in
flight, whatever its thread count.
"""
import argparse
import json
import random
import shutil
import sys
import tempfile
from pathlib import Path

import harness
from harness import REPO, median
from packer_bench import make_document, make_lexicon, train_model

MB = 1000 * 1000
MiB = 1 << 20

# Runs a command and prints its own peak RSS (see the script).
PEAK_RSS = REPO / "scripts" / "peak_rss.py"


def write_inputs(work, base_docs, sizes):
    """For each size in bytes: line-<size>.jsonl (one record holding the
    documents joined by blank lines, repeated up to the size) and
    lines-<size>.jsonl (the same documents as one record each)."""
    block = "\n\n".join(base_docs) + "\n\n"
    escaped = json.dumps(block, ensure_ascii=False)[1:-1].encode()
    lines = "".join(json.dumps({"text": d}, ensure_ascii=False) + "\n" for d in base_docs).encode()
    paths = {}
    for size in sizes:
        one, many = work / f"line-{size}.jsonl", work / f"lines-{size}.jsonl"
        with one.open("wb") as f:
            f.write(b'{"text": "')
            for _ in range(max(1, size // len(escaped))):
                f.write(escaped)
            f.write(b'"}\n')
        with many.open("wb") as f:
            for _ in range(max(1, size // len(lines))):
                f.write(lines)
        paths[size] = (one, many)
    return paths


def run_build(tokpack, tok, src, out, extra=()):
    """(peak RSS MiB, wall s, counts) of one build."""
    shutil.rmtree(out, ignore_errors=True)
    cmd = [tokpack, "build", "-t", tok, "-i", src, "-o", out, "--threads", "2", "--quiet",
           "--skip-bad-lines", *extra]
    child = harness.run_child([sys.executable, "-S", PEAK_RSS, *map(str, cmd)])
    counts = json.loads((out / "manifest.json").read_text())["provenance"]["counts"]
    shutil.rmtree(out)
    return {"rss": child.result["maxrss_kb"] / 1024, "wall": child.wall, "counts": counts}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=100, help="the huge line's size (default 100 MB)")
    ap.add_argument("--big-mb", type=int, default=1000,
                    help="the refused line's size (default 1000 MB; 0 leaves it out)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tokpack", default=str(REPO / "build" / "tokpack"))
    ap.add_argument("--compare", help="another tokpack binary, run on the --mb inputs too")
    ap.add_argument("--work", help="directory for the inputs (default: a new one in $TMPDIR)")
    ap.add_argument("--report", help="write the memory section of this report")
    a = ap.parse_args()
    sys.path.insert(0, str(REPO / "tests" / "python"))
    from bpe_corpus import train_bpe

    work = Path(a.work or tempfile.mkdtemp(prefix="tokpack-membench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        rng = random.Random(16)
        words, cum = make_lexicon(rng)
        docs, size = [], 0
        while size < 4 * MB:
            docs.append(make_document(rng, words, cum))
            size += len(docs[-1].encode())
        sample = work / "sample.jsonl"
        sample.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs))
        toks = {"sentencepiece unigram 16k": train_model(str(sample), str(work / "spm"), 16000,
                                                         4 * MB),
                "tokenizer.json BPE 32k": str(train_bpe("gpt2", docs, work))}
        sizes = [a.mb * MB] + ([a.big_mb * MB] if a.big_mb else [])
        paths = write_inputs(work, docs, sizes)

        configs = {}
        for tok_name, tok in toks.items():
            for size in sizes:
                if size != a.mb * MB and not tok.endswith(".json"):
                    continue  # The refused line is read, not tokenized: one tokenizer will do.
                one, many = paths[size]
                configs[(tok_name, size, "one line", "this")] = (a.tokpack, tok, one)
                configs[(tok_name, size, "lines", "this")] = (a.tokpack, tok, many)
                if a.compare and size == a.mb * MB:
                    configs[(tok_name, size, "one line", "compare")] = (a.compare, tok, one)
                    configs[(tok_name, size, "lines", "compare")] = (a.compare, tok, many)

        def measure(key):
            binary, tok, src = configs[key]
            return run_build(binary, tok, src, work / "out")

        results, failed = harness.interleaved(
            list(configs), a.rounds, measure,
            log=lambda r: f"{r['rss']:.0f} MiB, {r['wall']:.1f} s")
        if failed:
            sys.exit(f"memory_bench failed: {failed}")
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)

    rows = ["| tokenizer | input | binary | peak RSS, MiB | vs the same bytes as lines | "
            "wall s | documents / bad records |", "|---|---|---|---|---|---|---|"]
    for (tok_name, size, shape, which), rs in results.items():
        base = results[(tok_name, size, "lines", which)]
        rss = median([r["rss"] for r in rs])
        ratio = harness.ratio_rounds([r["rss"] for r in rs], [r["rss"] for r in base])
        c = rs[-1]["counts"]
        binary = "this" if which == "this" else "--compare"
        what = f"{size // MB} MB {'in one line' if shape == 'one line' else 'as lines'}"
        rows.append(f"| {tok_name} | {what} | {binary} | {rss:,.0f} | {ratio:.2f}x | "
                    f"{median([r['wall'] for r in rs]):.1f} | {c['documents']:,} / "
                    f"{c['bad_lines']} |")
    table = "\n".join(rows)
    compare = f"; `--compare` is `{a.compare}`" if a.compare else ""
    note = (f"--threads 2, default --max-document-bytes (256 MiB), --skip-bad-lines; medians of "
            f"{a.rounds} interleaved rounds (rotated){compare}, on {harness.machine_line()}.")
    print(table + "\n\n" + note)
    if a.report:
        flags = f" --mb {a.mb} --big-mb {a.big_mb}" if (a.mb, a.big_mb) != (100, 1000) else ""
        harness.write_section(
            "memory", f"Made by `.venv/bin/python bench/memory_bench.py{flags} --report "
            f"docs/benchmarks.md`.\n\n{table}\n\n{note}\n", Path(a.report))


if __name__ == "__main__":
    main()
