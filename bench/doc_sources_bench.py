#!/usr/bin/env python3
"""Document sources benchmark (not a test): what `.src` files cost.

Builds one synthetic JSONL corpus (short documents, each with a string id, a
few blank lines) with `tokpack build` with and without `--no-doc-sources`,
interleaved --repeat times (so both are timed seconds apart on the same,
possibly shared, machine), and prints the best and median wall time of each,
the slowdown, and the size of the .src files per document.

    python3 bench/doc_sources_bench.py --docs 1000000 --repeat 5
    python3 bench/doc_sources_bench.py --docs 10000000 --repeat 1   # the size on 10M documents
"""
import argparse
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORDS = ("the data model token shard index train loss batch step sample merge corpus "
         "reader writer input output file line row record source origin").split()


def corpus(path, docs, seed=0):
    rng = random.Random(seed)
    with open(path, "w") as f:
        for i in range(docs):
            if i % 1000 == 999:
                f.write("\n")
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 60)))
            f.write('{"id": "doc-%d", "text": "%s"}\n' % (i, text))


def model(d):
    text = d / "train.txt"
    rng = random.Random(1)
    text.write_text("\n".join(" ".join(rng.choice(WORDS) for _ in range(30))
                              for _ in range(2000)))
    subprocess.run(["spm_train", f"--input={text}", f"--model_prefix={d / 'm'}",
                    "--vocab_size=100", "--hard_vocab_limit=false", "--model_type=unigram",
                    "--minloglevel=2"],
                   check=True, capture_output=True)
    return d / "m.model"


def build(tokpack, model_path, inputs, out, threads, sources):
    shutil.rmtree(out, ignore_errors=True)
    args = [tokpack, "build", "-i", str(inputs), "-o", str(out), "-t", str(model_path),
            "--threads", str(threads), "--quiet"]
    if not sources:
        args.append("--no-doc-sources")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(args, check=True, capture_output=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tokpack", default=str(REPO / "build" / "tokpack"))
    ap.add_argument("--dir", default=None, help="work directory (default: a temporary one)")
    ap.add_argument("--size-only", action="store_true", help="one build with sources, no timing")
    a = ap.parse_args()
    d = Path(a.dir or tempfile.mkdtemp(prefix="doc-sources-bench-"))
    d.mkdir(parents=True, exist_ok=True)
    inputs = d / "corpus.jsonl"
    if not inputs.exists():
        corpus(inputs, a.docs)
    m = model(d)
    times = {True: [], False: []}
    for r in range(0 if a.size_only else a.repeat):
        for sources in ((True, False) if r % 2 == 0 else (False, True)):
            times[sources].append(build(a.tokpack, m, inputs, d / "out", a.threads, sources))
    build(a.tokpack, m, inputs, d / "out", a.threads, True)
    src = sum(p.stat().st_size for p in (d / "out").glob("*.src"))
    bins = sum(p.stat().st_size for p in (d / "out").glob("*.bin"))
    print(f"corpus: {a.docs} documents, {inputs.stat().st_size / 1e6:.1f} MB; "
          f"--threads {a.threads}; {a.repeat} interleaved runs each")
    if not a.size_only:
        for sources in (False, True):
            wall = [w for w, _ in times[sources]]
            cpu = [c for _, c in times[sources]]
            print(f"  {'with' if sources else 'without'} sources: wall best {min(wall):.2f} s, "
                  f"median {statistics.median(wall):.2f} s; CPU best {min(cpu):.2f} s, "
                  f"median {statistics.median(cpu):.2f} s")
        for i, what in ((0, "wall"), (1, "CPU")):
            w = [t[i] for t in times[True]]
            wo = [t[i] for t in times[False]]
            print(f"  {what} cost of sources: best {min(w) / min(wo) - 1:+.1%}, median "
                  f"{statistics.median(w) / statistics.median(wo) - 1:+.1%}")
    print(f"  .src: {src} bytes, {src / a.docs:.2f} bytes per document "
          f"({src / bins:.1%} of the .bin bytes)")
    if not a.dir:
        shutil.rmtree(d)
    return 0


if __name__ == "__main__":
    sys.exit(main())
