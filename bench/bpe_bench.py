#!/usr/bin/env python3
"""Byte-level BPE encoding speed (not a test): tokpack against PyPI tokenizers
and tiktoken, single thread, on the same documents and the same vocabulary.

Targets: >= 5x tokenizers' Tokenizer.encode and >= 2x tiktoken's
encode_ordinary, in MB/s of UTF-8 text.

    bench/bpe_bench.py --bench build/bench/bpe_encode_bench --text corpus.txt \
        [--tokenizer tokenizer.json] [--megabytes 20] [--rounds 3]

Without --tokenizer it trains a 50k byte-level BPE (GPT-2 style) on the text
with tokenizers' BpeTrainer; the tiktoken ranks are that model's merges in
order (rank = id), run with the llama3 and gpt2 (r50k) split patterns. Each
measurement runs in its own process; rounds are interleaved and the median
is reported.
"""
import argparse
import base64
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile

LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
          r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
R50K = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""

WORKER = r"""
import json, os, sys, time
os.environ["RAYON_NUM_THREADS"] = "1"
kind, model, pattern, docs_path = sys.argv[1:5]
docs = json.load(open(docs_path))
nbytes = sum(len(d.encode()) for d in docs)
if kind == "tokenizers":
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(model)
    fn = lambda d: tok.encode(d, add_special_tokens=False)
else:
    import base64, tiktoken
    ranks = {}
    for line in open(model, "rb"):
        a, r = line.split()
        ranks[base64.b64decode(a)] = int(r)
    enc = tiktoken.Encoding(name="bench", pat_str=pattern, mergeable_ranks=ranks,
                            special_tokens={})
    fn = enc.encode_ordinary
for d in docs[:200]:
    fn(d)
t = time.perf_counter()
for d in docs:
    fn(d)
print(json.dumps({"mb_per_s": nbytes / (time.perf_counter() - t) / 1e6}))
"""


def byte_level_decoder():
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True, help="path of bpe_encode_bench")
    ap.add_argument("--text", required=True, help="UTF-8 text to cut into documents")
    ap.add_argument("--tokenizer", help="a byte-level BPE tokenizer.json (default: train one)")
    ap.add_argument("--megabytes", type=float, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="bpe_bench_")
    data = open(args.text, encoding="utf-8", errors="replace").read()
    rng = random.Random(0)
    docs, total = [], 0
    while total < args.megabytes * 1e6:
        i = rng.randrange(max(1, len(data) - 9000))
        d = data[i:i + rng.randint(1000, 8000)]
        docs.append(d)
        total += len(d.encode())
    docs_json = os.path.join(work, "docs.json")
    json.dump(docs, open(docs_json, "w"))
    docs_bin = os.path.join(work, "docs.bin")
    with open(docs_bin, "wb") as f:
        for d in docs:
            b = d.encode()
            f.write(b"%d\n" % len(b) + b)
    model = args.tokenizer
    if model is None:
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        tok.train_from_iterator(docs[:3000], trainers.BpeTrainer(
            vocab_size=50000, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            special_tokens=["<|endoftext|>"], show_progress=False))
        model = os.path.join(work, "tokenizer.json")
        tok.save(model)
    spec = json.load(open(model, encoding="utf-8"))
    inv = byte_level_decoder()
    ranks = {bytes([b]): b for b in range(256)}
    for m in spec["model"]["merges"]:
        a, b = m if isinstance(m, list) else m.split(" ")
        ranks.setdefault(bytes(inv[c] for c in a + b), len(ranks))
    ranks_path = os.path.join(work, "ranks.tiktoken")
    with open(ranks_path, "wb") as f:
        for t, r in ranks.items():
            f.write(base64.b64encode(t) + b" %d\n" % r)

    runs = {
        "tokpack hf": [args.bench, "hf", model, docs_bin, "1", "3"],
        "tokenizers": [sys.executable, "-c", WORKER, "tokenizers", model, "", docs_json],
        "tokpack tiktoken llama3": [args.bench, "tiktoken", ranks_path, "llama3", docs_bin, "1",
                                    "3"],
        "tiktoken llama3": [sys.executable, "-c", WORKER, "tiktoken", ranks_path, LLAMA3,
                            docs_json],
        "tokpack tiktoken gpt2": [args.bench, "tiktoken", ranks_path, "gpt2", docs_bin, "1", "3"],
        "tiktoken gpt2": [sys.executable, "-c", WORKER, "tiktoken", ranks_path, R50K, docs_json],
    }
    results = {k: [] for k in runs}
    names = list(runs)
    for r in range(args.rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            out = subprocess.run(runs[name], check=True, capture_output=True, text=True).stdout
            results[name].append(json.loads(out.strip().splitlines()[-1])["mb_per_s"])
    med = {k: statistics.median(v) for k, v in results.items()}
    print(f"{total / 1e6:.1f} MB in {len(docs)} documents, median of {args.rounds} rounds")
    for k, v in med.items():
        print(f"  {k:26s} {v:8.2f} MB/s")
    print(f"  tokpack/tokenizers        {med['tokpack hf'] / med['tokenizers']:8.1f}x (target 5x)")
    for p in ["llama3", "gpt2"]:
        print(f"  tokpack/tiktoken {p:8s} "
              f"{med['tokpack tiktoken ' + p] / med['tiktoken ' + p]:8.1f}x (target 2x)")


if __name__ == "__main__":
    main()
