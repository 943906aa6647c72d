#!/usr/bin/env python3
"""Packing benchmark against peers (not a test): `tokpack build` against a
Megatron-style pipeline and LitData's optimize(), on the same corpus, the same
sentencepiece model and the same number of processes/threads (tokpack encodes
with the sentencepiece release cmake/sentencepiece.cmake builds from its PyPI
sdist, the Python pipelines with the venv's sentencepiece wheel; the check
records both versions).

  * tokpack: `tokpack build -i FILES -o DIR -t MODEL --threads N --quiet`.
  * Megatron-style: what Megatron-LM's tools/preprocess_data.py does (its tools/
    are not in the megatron-core wheel, so the same steps are written out here):
    a multiprocessing.Pool of N workers, each loading the tokenizer in its
    initializer (sentencepiece's Python module, as Megatron's
    SentencePieceTokenizer does), pool.imap(encode, lines, 32) over the JSONL
    lines, EOD appended (--append-eod), the main process writing every document
    through megatron.core.datasets.indexed_dataset.IndexedDatasetBuilder with
    DType.optimal_dtype(vocab size) and finalize()-ing the .idx.
  * LitData: litdata.optimize(fn, inputs=<the JSONL files>, output_dir,
    num_workers=N, chunk_bytes=..., item_loader=TokensLoader()), fn yielding each
    document's token ids (sentencepiece, EOS appended) as litgpt's data
    preparation does.

Each run is a fresh process timed from start to exit (time.perf_counter around
it, so interpreter start and imports count); the packers run interleaved,
rotated each round; the report gives medians and per-round ratios against
tokpack. The outputs are then compared: Megatron's .bin/.idx against tokpack's
shard byte for byte and per document, LitData's chunks by token count and token
histogram (its order depends on the worker that handled each file).

    build/bench-venv/bin/python bench/packing_peers.py --work build/bench-all \
        --tokpack build/tokpack --json-out build/bench-all/packing.json

Workers (internal): packing_peers.py --run NAME ... prints one JSON line.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import harness

REPO = harness.REPO


# --------------------------------------------------------------------------
# Corpus and tokenizer (made once, reused).

def prepare(work, files):
    """The demo corpus (scripts/make_demo_corpus.py: Debian's license and
    copyright texts), re-split into `files` JSONL files of about equal size so
    that per-file parallelism (LitData's) has work for every worker; and a
    sentencepiece unigram model (vocab 8000) trained on it with spm_train,
    exactly as scripts/demo.sh does."""
    corpus = work / "corpus"
    model = work / "tok.model"
    if len(list(corpus.glob("part-*.jsonl"))) == files and model.exists():
        return sorted(map(str, corpus.glob("part-*.jsonl"))), str(model)
    raw = work / "corpus-raw"
    shutil.rmtree(raw, ignore_errors=True)
    subprocess.run([sys.executable, REPO / "scripts" / "make_demo_corpus.py", raw], check=True)
    lines = []
    for name in ("licenses.jsonl", "copyrights.jsonl"):
        lines += (raw / name).read_bytes().splitlines(keepends=True)
    total = sum(map(len, lines))
    shutil.rmtree(corpus, ignore_errors=True)
    corpus.mkdir(parents=True)
    out, part, size = [], 0, 0
    for line in lines:
        out.append(line)
        size += len(line)
        if size >= total * (part + 1) / files and part < files - 1:
            (corpus / f"part-{part:02d}.jsonl").write_bytes(b"".join(out))
            out, part = [], part + 1
    (corpus / f"part-{part:02d}.jsonl").write_bytes(b"".join(out))
    subprocess.run(["spm_train", f"--input={raw / 'train.txt'}", f"--model_prefix={work / 'tok'}",
                    "--vocab_size=8000", "--model_type=unigram", "--input_sentence_size=200000",
                    "--shuffle_input_sentence=true", "--minloglevel=2"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shutil.rmtree(raw)
    return sorted(map(str, corpus.glob("part-*.jsonl"))), str(model)


# --------------------------------------------------------------------------
# Megatron-style: preprocess_data.py's Encoder + Pool + IndexedDatasetBuilder.

class MegatronEncoder:
    def __init__(self, model):
        self.model = model

    def initializer(self):
        import sentencepiece

        MegatronEncoder.sp = sentencepiece.SentencePieceProcessor(model_file=self.model)

    def encode(self, line):
        data = json.loads(line)
        ids = MegatronEncoder.sp.encode(data["text"])
        if ids:
            ids.append(MegatronEncoder.sp.eos_id())  # --append-eod
        return ids, len(line)


def run_megatron(a):
    import multiprocessing

    import numpy as np
    import sentencepiece
    import torch  # noqa: F401  (IndexedDatasetBuilder takes tensors/arrays)
    from megatron.core.datasets import indexed_dataset

    vocab = sentencepiece.SentencePieceProcessor(model_file=a.model).vocab_size()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    prefix = str(out / "megatron_text_document")
    builder = indexed_dataset.IndexedDatasetBuilder(
        prefix + ".bin", dtype=indexed_dataset.DType.optimal_dtype(vocab))
    encoder = MegatronEncoder(a.model)
    docs = tokens = 0
    with multiprocessing.Pool(a.procs, initializer=encoder.initializer) as pool:
        for path in a.inputs:
            with open(path, encoding="utf-8") as fin:
                for ids, _ in pool.imap(encoder.encode, fin, 32):
                    if not ids:
                        continue
                    builder.add_document(np.asarray(ids), [len(ids)])
                    docs += 1
                    tokens += len(ids)
    builder.finalize(prefix + ".idx")
    return {"documents": docs, "tokens": tokens}


# --------------------------------------------------------------------------
# LitData: optimize() with TokensLoader, as litgpt prepares pretraining data.

_SP = {}


def litdata_tokenize(filepath, model):
    import numpy as np
    import sentencepiece

    sp = _SP.get(model)
    if sp is None:
        sp = _SP[model] = sentencepiece.SentencePieceProcessor(model_file=model)
    with open(filepath, encoding="utf-8") as f:
        for line in f:
            ids = sp.encode(json.loads(line)["text"])
            if ids:
                ids.append(sp.eos_id())
                yield np.asarray(ids, dtype=np.uint16)


def run_litdata(a):
    import functools

    from litdata import TokensLoader, optimize

    shutil.rmtree(a.out, ignore_errors=True)
    optimize(fn=functools.partial(litdata_tokenize, model=a.model), inputs=list(a.inputs),
             output_dir=a.out, num_workers=a.procs, chunk_bytes=a.chunk_bytes,
             item_loader=TokensLoader())
    index = json.loads((Path(a.out) / "index.json").read_text())
    return {"tokens": sum(c["dim"] for c in index["chunks"]), "chunks": len(index["chunks"])}


# --------------------------------------------------------------------------
# Checks: do the outputs hold the same token stream?

def compare(a, tok_dir, meg_dir, lit_dir):
    import numpy as np
    import sentencepiece
    import tokpack

    out = {}
    ds = tokpack.Dataset(tok_dir)
    out["tokpack_documents"], out["tokpack_tokens"] = len(ds), ds.num_tokens
    # tokpack encodes with the sentencepiece release cmake/sentencepiece.cmake
    # builds from its PyPI sdist; the Python pipelines with this venv's wheel.
    out["sentencepiece_python"] = sentencepiece.__version__
    out["tokpack_sentencepiece"] = tokpack_sentencepiece()
    stream = np.concatenate([np.fromfile(p, dtype=np.uint16)
                             for p in sorted(glob.glob(f"{tok_dir}/shard-*.bin"))])
    lengths = np.array([len(ds.doc(i)) for i in range(len(ds))])
    try:
        from megatron.core.datasets.indexed_dataset import IndexedDataset

        prefix = f"{meg_dir}/megatron_text_document"
        m = IndexedDataset(prefix)
        mstream = np.fromfile(prefix + ".bin", dtype=m.index.dtype)
        out["megatron_documents"] = len(m)
        out["megatron_tokens"] = int(m.sequence_lengths.sum())
        out["megatron_dtype"] = np.dtype(m.index.dtype).name
        out["megatron_doc_lengths_equal"] = bool(
            len(m) == len(ds) and np.array_equal(m.sequence_lengths, lengths))
        out["megatron_stream_equal"] = bool(np.array_equal(mstream, stream))
        if not out["megatron_stream_equal"] and len(m) == len(ds):
            diff = [i for i in range(len(ds)) if not np.array_equal(m[i], ds.doc(i))]
            out["megatron_docs_differing"] = len(diff)
            out["megatron_first_differing_doc"] = diff[:5]
        shards = sorted(glob.glob(f"{tok_dir}/shard-*"))
        if len(shards) == 2:
            same = {}
            for ext in ("bin", "idx"):
                same[ext] = (Path(f"{tok_dir}/shard-00000.{ext}").read_bytes()
                             == Path(f"{prefix}.{ext}").read_bytes())
            out["megatron_files_byte_identical"] = same
    except Exception as e:  # Recorded in the report.
        out["megatron_error"] = f"{type(e).__name__}: {e}"
    try:
        index = json.loads((Path(lit_dir) / "index.json").read_text())
        out["litdata_tokens"] = sum(c["dim"] for c in index["chunks"])
        # A chunk file is [num_items:uint32][offsets:uint32 * (num_items + 1)][items],
        # the offsets counted from the start of the file.
        hist = np.zeros(1 << 16, dtype=np.int64)
        for c in index["chunks"]:
            raw = Path(lit_dir, c["filename"]).read_bytes()
            n = int(np.frombuffer(raw[:4], np.uint32)[0])
            offsets = np.frombuffer(raw[4:4 + 4 * (n + 1)], np.uint32)
            data = np.frombuffer(raw[offsets[0]:offsets[-1]], np.uint16)
            hist += np.bincount(data, minlength=1 << 16)
        out["litdata_token_histogram_equal"] = bool(
            np.array_equal(hist, np.bincount(stream, minlength=1 << 16)))
    except Exception as e:
        out["litdata_error"] = f"{type(e).__name__}: {e}"
    return out


def tokpack_sentencepiece():
    """The sentencepiece release tokpack is built with (cmake/sentencepiece.cmake)."""
    import re

    text = (REPO / "cmake" / "sentencepiece.cmake").read_text()
    m = re.search(r"set\(TOKPACK_SPM_VERSION ([^)\s]+)\)", text)
    return m.group(1) if m else None


# --------------------------------------------------------------------------
# Driver.

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run")
    ap.add_argument("--out")
    ap.add_argument("--model")
    ap.add_argument("--inputs", nargs="*")
    ap.add_argument("--work", default=str(REPO / "build" / "bench-all"))
    ap.add_argument("--tokpack", default=str(REPO / "build" / "tokpack"))
    ap.add_argument("--procs", type=int, default=2,
                    help="tokpack --threads, Megatron Pool size, LitData num_workers")
    ap.add_argument("--files", type=int, default=8, help="JSONL files the corpus is split into")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--chunk-bytes", default="64MB")
    ap.add_argument("--json-out")
    a = ap.parse_args()
    if a.run:
        t0 = time.perf_counter()
        r = {"megatron": run_megatron, "litdata": run_litdata}[a.run](a)
        r["inner_seconds"] = time.perf_counter() - t0
        print(json.dumps(r))
        sys.stdout.flush()
        return

    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    inputs, model = prepare(work, a.files)
    in_bytes = sum(os.path.getsize(p) for p in inputs)
    docs = sum(1 for p in inputs for _ in open(p, "rb"))
    outs = {"tokpack": work / "pack-tokpack", "megatron": work / "pack-megatron",
            "litdata": work / "pack-litdata"}

    def command(name):
        if name == "tokpack":
            cmd = [a.tokpack, "build", "-t", model, "-o", outs[name], "--threads", a.procs,
                   "--quiet", "--force"]
            for i in inputs:
                cmd += ["-i", i]
            return cmd
        return [sys.executable, __file__, "--run", name, "--out", outs[name], "--model", model,
                "--procs", a.procs, "--chunk-bytes", a.chunk_bytes, "--inputs", *inputs]

    names = ["tokpack", "megatron", "litdata"]

    def measure(name):
        if name == "megatron":
            shutil.rmtree(outs[name], ignore_errors=True)
        return harness.run_child(command(name)).wall

    def page_in():  # Inputs in the page cache for every run alike.
        for p in inputs:
            Path(p).read_bytes()

    load = [harness.loadavg()]
    t_all = time.perf_counter()
    results, failed = harness.interleaved(names, a.rounds, measure,
                                          log=lambda wall: f"{wall:.2f} s", before_round=page_in)
    load.append(harness.loadavg())
    a.model, a.inputs = model, inputs
    check = compare(a, str(outs["tokpack"]), str(outs["megatron"]), str(outs["litdata"]))
    res = {"inputs": [os.path.relpath(p, REPO) for p in inputs], "input_bytes": in_bytes,
           "documents": docs, "model": os.path.relpath(model, REPO), "procs": a.procs,
           "rounds": a.rounds, "seconds": results, "failed": failed, "check": check,
           "wall": time.perf_counter() - t_all, "loadavg": load,
           "chunk_bytes": a.chunk_bytes}
    for n in names:
        if results[n]:
            res.setdefault("median_s", {})[n] = harness.median(results[n])
    print(json.dumps(res, indent=1))
    if a.json_out:
        Path(a.json_out).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
