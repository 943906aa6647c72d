#!/usr/bin/env python3
"""sentencepiece encoding speed of two tokpack builds (a benchmark, not a test).

Runs bench/tokenizer_encode_bench (tokpack::Tokenizer::Encode, one thread, as the
packer calls it) from each build on the same held-out corpus with a unigram and a
BPE `.model`, interleaved, in MB of text per CPU second of the encoding thread: every round runs every (model, build) pair once, and the
best of --repeat rounds counts, so the ratios compare numbers taken seconds apart on
the same (shared, noisy) machine. "same ids" compares the builds' hashes of all ids
(builds linking different sentencepiece versions may differ on unigram models).

    # this tree (build/) against a baseline commit, built here from `git archive`:
    python3 bench/spm_speed.py --baseline-ref fde4706
    # or two existing build directories that both have the bench:
    python3 bench/spm_speed.py --build before=/path/a --build after=build

The corpus is packer_bench.py's synthetic English-like text (different seeds for
training and encoding); the models are trained with Debian's spm_train.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "bench"))
import packer_bench  # noqa: E402  (its corpus generator)

BENCH = "tokenizer_encode_bench"
BENCH_CMAKE = f"""
add_executable({BENCH} {BENCH}.cc)
target_include_directories({BENCH} PRIVATE ${{PROJECT_SOURCE_DIR}})
target_link_libraries({BENCH} PRIVATE tokpack_core simdjson::simdjson)
"""


def build_baseline(ref, work, jobs):
    """Builds the bench against tokpack at `ref` (from `git archive`, so the
    repository is left as it is) and returns its build directory."""
    src = os.path.join(work, f"baseline-{ref}")
    out = src + "-build"
    if not os.path.exists(os.path.join(out, "bench", BENCH)):
        shutil.rmtree(src, ignore_errors=True)
        os.makedirs(src)
        archive = subprocess.run(["git", "-C", REPO, "archive", ref], check=True,
                                 stdout=subprocess.PIPE).stdout
        subprocess.run(["tar", "-x", "-C", src], input=archive, check=True)
        for name in (f"{BENCH}.cc", "jsonl_texts.h"):
            shutil.copy(os.path.join(REPO, "bench", name), os.path.join(src, "bench"))
        # Commits since the bench was added define its target themselves.
        with open(os.path.join(src, "bench", "CMakeLists.txt"), "r+") as f:
            if f"add_executable({BENCH} " not in f.read():
                f.write(BENCH_CMAKE)
        subprocess.run(["cmake", "-S", src, "-B", out, "-G", "Ninja",
                        "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DTOKPACK_BUILD_TESTS=OFF",
                        "-DTOKPACK_ENABLE_CUDA=OFF"], check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["ninja", "-C", out, f"-j{jobs}", BENCH], check=True,
                       stdout=subprocess.DEVNULL)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", action="append", default=[], metavar="NAME=DIR",
                    help="a build directory with bench/tokenizer_encode_bench (repeatable)")
    ap.add_argument("--baseline-ref", help="also build and run this commit, as 'baseline'")
    ap.add_argument("--work", default="/tmp/tokpack-spm-speed")
    ap.add_argument("--mb", type=float, default=8.0, help="held-out corpus size (MB)")
    ap.add_argument("--vocab-size", type=int, default=8000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--passes", type=int, default=1, help="passes over the corpus per run")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)

    builds = []
    if args.baseline_ref:
        builds.append(("baseline", build_baseline(args.baseline_ref, args.work, args.jobs)))
    for spec in args.build or ["this=build"]:
        name, _, d = spec.partition("=")
        builds.append((name, d if os.path.isabs(d) else os.path.join(REPO, d)))
    for name, d in builds:
        if not os.path.exists(os.path.join(d, "bench", BENCH)):
            sys.exit(f"{name}: {d}/bench/{BENCH} not found (build it: ninja -C {d} {BENCH})")

    train_corpus = os.path.join(args.work, "train.jsonl")
    held_out = os.path.join(args.work, f"held-out-{args.mb:g}mb.jsonl")
    if not os.path.exists(train_corpus):
        packer_bench.generate_corpus(train_corpus, 12_000_000, seed=1)
    if not os.path.exists(held_out):
        packer_bench.generate_corpus(held_out, int(args.mb * 1e6), seed=2)
    models = {}
    for kind in ("unigram", "bpe"):
        prefix = os.path.join(args.work, f"{kind}-v{args.vocab_size}")
        models[kind] = (prefix + ".model" if os.path.exists(prefix + ".model")
                        else packer_bench.train_model(train_corpus, prefix, args.vocab_size,
                                                        10_000_000, model_type=kind))

    best = {}
    for _ in range(args.repeat):
        for kind, model in models.items():
            for name, d in builds:
                out = subprocess.run([os.path.join(d, "bench", BENCH), model, held_out,
                                      "--passes", str(args.passes)],
                                     check=True, capture_output=True, text=True).stdout
                r = json.loads(out)
                key = (kind, name)
                if key not in best or r["mb_per_cpu_s"] > best[key]["mb_per_cpu_s"]:
                    best[key] = r

    first = builds[0][0]
    print(f"| model ({args.vocab_size}) | " + " | ".join(f"{n} MB/s" for n, _ in builds) +
          " | " + " | ".join(f"{n} / {first}" for n, _ in builds[1:]) + " | same ids |" +
          " wall MB/s |")
    print("|---" * (2 * len(builds) + 2) + "|")
    for kind in models:
        rates = [best[(kind, n)]["mb_per_cpu_s"] for n, _ in builds]
        walls = [best[(kind, n)]["mb_per_s"] for n, _ in builds]
        same = len({best[(kind, n)]["ids_fnv1a"] for n, _ in builds}) == 1
        print(f"| {kind} | " + " | ".join(f"{x:.2f}" for x in rates) + " | " +
              " | ".join(f"{x / rates[0]:.2f}x" for x in rates[1:]) +
              f" | {'yes' if same else 'no'} | " + " / ".join(f"{x:.2f}" for x in walls) + " |")
    r = best[(next(iter(models)), first)]
    print(f"\n{r['documents']} documents, {r['text_bytes'] / 1e6:.1f} MB, one thread, "
          f"best of {args.repeat} interleaved rounds; MB/s per CPU second of the encoding "
          f"thread (wall MB/s also counts time other processes held the core)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
