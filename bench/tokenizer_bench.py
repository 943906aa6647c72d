#!/usr/bin/env python3
"""Tokenizer benchmark (not a test): tokpack's BPE encoder against PyPI
`tokenizers` and `tiktoken`, single thread, same text, same run, interleaved;
then `tokpack build` end to end against tokpack's own bare encode, at 1 and 2
threads.

The text is English prose every Debian machine has (the license texts and
every package's copyright file, as the demo uses), cut into documents of a
few KB. Two byte-level BPE tokenizers are trained on it with PyPI
`tokenizers` (vocabulary 32k): GPT-2 style (ByteLevel's regex) and Llama 3
style (a Split regex, ignore_merges); the tiktoken file is the GPT-2-style
vocabulary as ranks with cl100k_base's pattern.

Every measurement runs in a fresh process (each encoder's caches start cold)
and each round visits every configuration in turn; the median of the rounds
counts. Throughput is MB of UTF-8 text per second of encoding (loading the
tokenizer and the text is not counted for the bare encoders; `tokpack build`
is timed as a whole process).

    .venv/bin/python bench/tokenizer_bench.py                 # prints the table
    .venv/bin/python bench/tokenizer_bench.py --report docs/benchmarks.md

Targets (issue 13): tokpack >= 5x tokenizers and >= 2x tiktoken, build >= 0.9x
of the bare encode, >= 1.8x from 1 to 2 build threads.
"""
import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import harness
from harness import REPO, median
sys.path.insert(0, str(REPO / "tests" / "python"))

# One child per measurement: prints the seconds spent encoding and the ids' count.
CHILD = r"""
import json, os, sys, time
kind, tok_path, docs_path = sys.argv[1:4]
docs = json.load(open(docs_path, encoding="utf-8"))
if kind == "tokenizers":
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(tok_path)
    t0 = time.perf_counter()
    n = sum(len(e.ids) for e in tok.encode_batch(docs, add_special_tokens=False))
elif kind == "tiktoken":
    import tiktoken
    sys.path.insert(0, sys.argv[4])
    import tokenizer_refs, base64
    ranks = {base64.b64decode(b): int(r) for b, r in
             (line.split() for line in open(tok_path))}
    enc = tokenizer_refs.tiktoken_reference("cl100k_base", ranks)
    t0 = time.perf_counter()
    n = sum(len(enc.encode_ordinary(d)) for d in docs)
else:
    import tokpack
    kw = {"pattern": "cl100k_base"} if tok_path.endswith(".tiktoken") else {}
    tok = tokpack.Tokenizer(tok_path, **kw)
    t0 = time.perf_counter()
    n = sum(len(tok.encode(d)) for d in docs)
print(json.dumps({"seconds": time.perf_counter() - t0, "tokens": n}))
"""


def corpus(limit_mb):
    paths = sorted(Path("/usr/share/common-licenses").glob("*")) + sorted(
        Path("/usr/share/doc").glob("*/copyright"))
    docs, size = [], 0
    for p in paths:
        if not p.is_file():
            continue
        text = p.read_bytes().decode("utf-8", errors="replace")
        for i in range(0, len(text), 4000):  # documents of a few KB
            piece = text[i:i + 4000]
            docs.append(piece)
            size += len(piece.encode())
        if size > limit_mb * 1e6:
            break
    return docs, size


def train_bpe(name, docs, work):
    """A 32k byte-level BPE trained on `docs`: "gpt2" (ByteLevel's regex) or
    "llama3" (a Split regex, ignore_merges); returns the tokenizer.json path."""
    import tokenizer_refs as refs
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers, Regex
    tok = Tokenizer(models.BPE(ignore_merges=name == "llama3"))
    if name == "gpt2":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(refs.LLAMA3_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.train_from_iterator(docs, trainers.BpeTrainer(
        vocab_size=32000, special_tokens=["<|endoftext|>"], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok.save(str(work / f"{name}.json"))
    return work / f"{name}.json"


def run_child(kind, tok, docs_path):
    env = dict(os.environ, RAYON_NUM_THREADS="1", TOKENIZERS_PARALLELISM="true")
    return harness.run_child([sys.executable, "-c", CHILD, kind, tok, docs_path,
                              REPO / "tests" / "python"], env).result


def run_bare(bench_bin, tok, jsonl):
    """tokpack's Tokenizer::Encode over the documents, one thread, one pass
    (caches cold, as in a build): the bound a build is measured against."""
    return harness.run_child([bench_bin, tok, jsonl, "--passes", "1"]).result["seconds"]


def run_build(tokpack_bin, tok, jsonl, out, threads):
    args = [tokpack_bin, "build", "-t", str(tok), "-i", str(jsonl), "-o", str(out), "--force",
            "-q", "--threads", str(threads)]
    if str(tok).endswith(".tiktoken"):
        args += ["--pattern", "cl100k_base"]
    return harness.run_child(args).wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=8, help="MB of text (default 8)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tokpack", default=str(REPO / "build" / "tokpack"))
    ap.add_argument("--encode-bench",
                    default=str(REPO / "build" / "bench" / "tokenizer_encode_bench"))
    ap.add_argument("--build-repeat", type=int, default=4,
                    help="the build and its bare bound read the documents this many times "
                         "over, so that starting the process and loading the tokenizer (about "
                         "50 ms) weigh as little as in a real build (default 4)")
    ap.add_argument("--report", help="write the tokenizers section of this report")
    a = ap.parse_args()

    import tokenizer_refs as refs
    from tokenizers import Tokenizer

    work = Path(tempfile.mkdtemp(prefix="tokpack-tokbench-"))
    docs, size = corpus(a.mb)
    (work / "docs.json").write_text(json.dumps(docs), encoding="utf-8")
    with open(work / "docs.jsonl", "w", encoding="utf-8") as f:
        for _ in range(a.build_repeat):
            for d in docs:
                f.write(json.dumps({"text": d}) + "\n")
    print(f"corpus: {len(docs)} documents, {size / 1e6:.1f} MB", file=sys.stderr)

    tokenizers = {name: train_bpe(name, docs, work) for name in ("gpt2", "llama3")}
    refs.tiktoken_from(Tokenizer.from_file(str(tokenizers["gpt2"])), work / "gpt2.tiktoken")

    configs = [("gpt2", "tokenizers", tokenizers["gpt2"]), ("gpt2", "tokpack", tokenizers["gpt2"]),
               ("llama3", "tokenizers", tokenizers["llama3"]),
               ("llama3", "tokpack", tokenizers["llama3"]),
               ("cl100k", "tiktoken", work / "gpt2.tiktoken"),
               ("cl100k", "tokpack", work / "gpt2.tiktoken")]
    builds = [("llama3", threads) for threads in (0, 1, 2)]  # 0: the bare encode
    tokenizer_of = {c[:2]: c[2] for c in configs}

    def measure(config):
        if config[0] != "build":
            return run_child(config[1], tokenizer_of[config], work / "docs.json")
        _, name, threads = config
        if threads == 0:
            return run_bare(a.encode_bench, tokenizers[name], work / "docs.jsonl")
        return run_build(a.tokpack, tokenizers[name], work / "docs.jsonl", work / "out",
                         threads)

    names = list(tokenizer_of) + [("build", *b) for b in builds]
    results, failed = harness.interleaved(names, a.rounds, measure)
    if failed:
        sys.exit(f"tokenizer_bench failed: {failed}")
    counts = {c: results[c][-1]["tokens"] for c in names if c[0] != "build"}
    mbs = {c: size / 1e6 / median([r["seconds"] for r in results[c]])
           for c in names if c[0] != "build"}
    build_mbs = {b: a.build_repeat * size / 1e6 / median(results[("build", *b)])
                 for b in builds}
    for style in ("gpt2", "llama3", "cl100k"):
        ref = "tiktoken" if style == "cl100k" else "tokenizers"
        assert counts[(style, "tokpack")] == counts[(style, ref)], (style, counts)
    lines = [
        f"Made by `.venv/bin/python bench/tokenizer_bench.py --report docs/benchmarks.md` on "
        f"{harness.machine_line()}: "
        f"{size / 1e6:.1f} MB of English license and copyright text in {len(docs)} documents "
        f"of up to 4,000 characters, vocabulary 32k trained on it; median of {a.rounds} "
        "interleaved rounds (rotated), each encoder in a fresh process, one thread "
        "(tokenizers' `encode_batch` with `RAYON_NUM_THREADS=1`, tiktoken's "
        "`encode_ordinary`, tokpack's `Tokenizer.encode` from Python, per document). "
        "Every pair produced the same number of tokens (the tests check the ids).",
        "",
        "| tokenizer | reference | reference MB/s | tokpack MB/s | tokpack / reference |",
        "|---|---|---:|---:|---:|",
    ]
    for style, ref in (("gpt2", "tokenizers"), ("llama3", "tokenizers"), ("cl100k", "tiktoken")):
        lines.append(f"| {style} | {ref} | {mbs[(style, ref)]:.1f} | {mbs[(style, 'tokpack')]:.1f}"
                     f" | {mbs[(style, 'tokpack')] / mbs[(style, ref)]:.2f}x |")
    bare = build_mbs[("llama3", 0)]
    lines += [
        "",
        f"`tokpack build` of the same documents, {a.build_repeat} times over, as JSONL with the "
        "llama3-style tokenizer.json (the whole process: start, tokenizer load, read, parse, "
        "encode, write, checksums), "
        f"against the bare encode: `Tokenizer::Encode` over the documents already in memory, "
        f"one thread, one pass (bench/tokenizer_encode_bench): {bare:.1f} MB/s.",
        "",
        "| build threads | MB/s | / bare encode | / build at 1 thread |",
        "|---:|---:|---:|---:|",
    ]
    for (name, threads), v in build_mbs.items():
        if threads:
            lines.append(f"| {threads} | {v:.1f} | {v / bare:.2f}x | "
                         f"{v / build_mbs[(name, 1)]:.2f}x |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.report:
        harness.write_section("tokenizers", text, Path(a.report))


if __name__ == "__main__":
    main()
