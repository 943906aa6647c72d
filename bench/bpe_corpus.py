#!/usr/bin/env python3
"""A trained-BPE fixture shared by bench/parquet_bench.py and bench/memory_bench.py
(not a benchmark itself): English prose every Debian machine has (the license
texts and every package's copyright file) cut into documents of a few KB; a 32k
byte-level BPE trained on it with PyPI `tokenizers` (GPT-2 style or Llama 3
style); and tokpack's bare encode (bench/tokenizer_encode_bench) and `tokpack
build` of a JSONL file, each in a fresh process.

Published tokenizer speed against other encoders, on real vocabularies, is
bench/encode_peers.py's.
"""
import sys
from pathlib import Path

import harness
from harness import REPO

sys.path.insert(0, str(REPO / "tests" / "python"))


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
