#!/usr/bin/env python3
"""Python loader benchmark (not a test).

1. tokpack's Python loop (``for batch in loader: x = batch["input_ids"]``,
   as_="torch" and as_="numpy") as a fraction of the C++ loop over the same
   Loader (build/bench/reader_bench run), same dataset, seq_len, batch size,
   threads and prefetch. Target: >= 95% at 2 threads. Its own section of
   the report (reading-loops), written whenever the loops run.
2. Side by side on the same tokens and machine: Megatron-Core's GPTDataset
   (reading tokpack's shard .bin/.idx unchanged) through a torch DataLoader,
   LitData's TokensLoader (StreamingDataset + StreamingDataLoader over the
   same documents converted with litdata.optimize), MosaicML Streaming's
   StreamingDataset + StreamingDataLoader over MDS shards of the same token
   stream (written with streaming.MDSWriter), and a nanoGPT-style get_batch
   (np.memmap of the same uint16 tokens, random offsets). Written (section
   reading) only when some peer runs: --only cpp-1,py-torch-1,py-numpy-1,
   cpp-2,py-torch-2,py-numpy-2 runs and writes the loops alone.

Every measurement runs in its own process; configurations are interleaved
(rotated each round) so machine noise falls on all of them alike, and the
median over rounds is reported. Every loop ends with int64 [batch, seq_len]
inputs and labels in hand, as a trainer would feed a model.

bench/peers_bench.sh makes the benchmark's own virtual environment (peers
from PyPI plus tokpack) and runs this script in it:

    bench/peers_bench.sh [--rounds 3] [--seconds 5] [--report docs/benchmarks.md]

Workers (internal): python_bench.py --worker NAME --data DIR ... prints one
JSON line.
"""
import argparse
import functools
import json
import os
import shutil
import sys
import time
from pathlib import Path

import harness
from harness import REPO, fmt, median, ratio_rounds
READER_BENCH = REPO / "build" / "bench" / "reader_bench"


# --------------------------------------------------------------------------
# Workers: one measurement each, in a fresh process.

def timed(batches, seconds, warmup_seconds, consume, on_start=None):
    """Iterates `batches`, calling consume(batch) (what the training step
    would take from it); warms up for warmup_seconds (and at least 20 batches)
    after the first batch, then counts batches for `seconds`."""
    it = iter(batches)
    t_start = time.perf_counter()
    consume(next(it))
    first_batch_s = time.perf_counter() - t_start
    t0, n = time.perf_counter(), 0
    while n < 20 or time.perf_counter() - t0 < warmup_seconds:
        consume(next(it))
        n += 1
    if on_start is not None:
        on_start()
    steps, t0 = 0, time.perf_counter()
    while True:
        consume(next(it))
        steps += 1
        took = time.perf_counter() - t0
        if took >= seconds:
            return steps, took, first_batch_s


def rss_anon_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    return -1


def worker_tokpack(a, as_):
    import tokpack

    loader = tokpack.Loader(a.data, seq_len=a.seq_len, batch_size=a.batch_size, seed=1,
                            shuffle=True, threads=a.threads, prefetch=a.prefetch, as_=as_)
    sink = []

    def consume(batch):
        x = batch["input_ids"]
        y = batch["labels"]
        sink.append(x.shape[0] + y.shape[0])
        sink.clear()

    waited = []

    def on_start():
        waited.append(loader.stats()["wait_seconds_total"])

    steps, took, first = timed(loader, a.seconds, a.warmup, consume, on_start)
    # The loop's own time per batch, outside waiting for the assemblers.
    busy_us = (took - (loader.stats()["wait_seconds_total"] - waited[0])) / steps * 1e6
    return steps, took, first, {"busy_us_per_batch": busy_us}


def megatron_dataset(a, num_samples):
    from megatron.core.datasets.blended_megatron_dataset_builder import \
        BlendedMegatronDatasetBuilder
    from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig
    from megatron.core.tokenizers import MegatronTokenizer

    # The data has no tokenizer; Megatron's "null" tokenizer (for
    # benchmarking) gives the vocab size (its EOD id is vocab_size, which
    # never occurs in the data) and does nothing else here.
    tokenizer = MegatronTokenizer.from_pretrained(metadata_path={"library": "null"},
                                                  vocab_size=a.vocab_size)
    prefixes = sorted(str(p)[:-4] for p in Path(a.data).glob("shard-*.bin"))
    config = GPTDatasetConfig(
        random_seed=1,
        sequence_length=a.seq_len,
        # One prefix per shard, weighted by size as Megatron does when no
        # weights are given: the tokpack shards are read as they are.
        blend=(prefixes, None),
        split="100,0,0",
        path_to_cache=str(Path(a.workdir) / "megatron-cache"),
        tokenizer=tokenizer,
        reset_position_ids=False,
        reset_attention_mask=False,
        eod_mask_loss=False,
        # A [seq, seq] mask per sample is for attention kernels that need
        # one; flash/TE attention makes its own (Megatron's
        # --no-create-attention-mask-in-dataloader).
        create_attention_mask=False,
    )
    train, _, _ = BlendedMegatronDatasetBuilder(GPTDataset, [num_samples, None, None],
                                                lambda: True, config).build()
    return train


def worker_megatron(a):
    import torch

    train = megatron_dataset(a, a.megatron_samples)
    # As Megatron's build_pretraining_data_loader: the dataset is already
    # shuffled, its sampler hands out consecutive indices in batches,
    # workers are persistent (pin_memory only matters with a GPU).
    loader = torch.utils.data.DataLoader(train, batch_size=a.batch_size, shuffle=False,
                                         num_workers=a.workers, drop_last=True,
                                         persistent_workers=a.workers > 0,
                                         pin_memory=torch.cuda.is_available())

    def consume(batch):
        x = batch["tokens"]
        y = batch["labels"]
        assert x.shape == (a.batch_size, a.seq_len) and y.dtype == torch.int64

    return timed(loader, a.seconds, a.warmup, consume)


def litdata_cycle(loader):
    # litgpt wraps its StreamingDataLoader in a CycleIterator: a new epoch
    # begins where the last one ended.
    while True:
        yield from loader


def worker_litdata(a):
    import torch
    from litdata import StreamingDataLoader, StreamingDataset, TokensLoader

    ds = StreamingDataset(str(Path(a.workdir) / "litdata"),
                          item_loader=TokensLoader(block_size=a.seq_len + 1),
                          shuffle=True, drop_last=True, seed=1)
    loader = StreamingDataLoader(ds, batch_size=a.batch_size, num_workers=a.workers,
                                 pin_memory=torch.cuda.is_available(), drop_last=True)

    def consume(batch):
        # litgpt's pretrain step: inputs and targets from the block of seq_len + 1.
        x = batch[:, 0:a.seq_len].contiguous().long()
        y = batch[:, 1:a.seq_len + 1].contiguous().long()
        assert x.shape == (a.batch_size, a.seq_len) and y.dtype == torch.int64

    return timed(litdata_cycle(loader), a.seconds, a.warmup, consume)


def mds_write(a):
    """Writes the token stream as MDS shards the way MosaicML's docs and
    llm-foundry's convert_dataset_hf --concat_tokens do for pretraining text:
    documents concatenated (tokpack's stream already has an EOS after each),
    cut into fixed-length samples, one ndarray column per sample. Samples are
    seq_len + 1 tokens so that inputs and labels are both seq_len long, as
    for LitData's block_size; the dtype stays uint16 as stored."""
    import numpy as np
    import tokpack
    from streaming import MDSWriter

    ds = tokpack.Dataset(a.data)
    block = a.seq_len + 1
    n = ds.num_tokens // block
    t0 = time.perf_counter()
    shutil.rmtree(Path(a.workdir) / "mds", ignore_errors=True)
    with MDSWriter(out=str(Path(a.workdir) / "mds"), columns={"tokens": "ndarray:uint16"},
                   compression=None) as out:
        for i in range(n):
            # Dataset.tokens() returns int64; the data is uint16.
            out.write({"tokens": np.asarray(ds.tokens(i * block, block), dtype=np.uint16)})
    return time.perf_counter() - t0, n


def mosaic_loader(a, workers):
    import torch
    from streaming import StreamingDataLoader, StreamingDataset
    from streaming.base.util import clean_stale_shared_memory

    # Workers end with os._exit, which skips Streaming's shared-memory cleanup.
    clean_stale_shared_memory()
    ds = StreamingDataset(local=str(Path(a.workdir) / "mds"), shuffle=True, shuffle_seed=1,
                          batch_size=a.batch_size)
    return StreamingDataLoader(ds, batch_size=a.batch_size, num_workers=workers,
                               pin_memory=torch.cuda.is_available(), drop_last=True)


def worker_mosaic(a):
    import torch

    loader = mosaic_loader(a, a.workers)

    def consume(batch):
        t = batch["tokens"]
        x = t[:, 0:a.seq_len].long()
        y = t[:, 1:a.seq_len + 1].long()
        assert x.shape == (a.batch_size, a.seq_len) and y.dtype == torch.int64

    return timed(litdata_cycle(loader), a.seconds, a.warmup, consume)


def worker_nanogpt(a):
    import numpy as np
    import torch

    bins = sorted(Path(a.data).glob("shard-*.bin"))
    assert len(bins) == 1, "the nanoGPT-style loader reads one file of concatenated tokens"
    path, block, bs = str(bins[0]), a.seq_len, a.batch_size
    torch.manual_seed(1)

    def get_batch():
        # nanoGPT's train.py get_batch: a fresh memmap each call (it does so
        # to avoid a memory leak), batch_size random offsets, uint16 ->
        # int64 per row, torch.stack.
        data = np.memmap(path, dtype=np.uint16, mode="r")
        ix = torch.randint(len(data) - block, (bs,))
        x = torch.stack([torch.from_numpy(data[i:i + block].astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy(data[i + 1:i + 1 + block].astype(np.int64))
                         for i in ix])
        return x, y

    def batches():
        while True:
            yield get_batch()

    return timed(batches(), a.seconds, a.warmup, lambda b: None)


def worker_dataloader_floor(a):
    """What torch's DataLoader itself costs on this machine: a dataset whose
    samples are ready-made tensors shaped like Megatron's (tokens, labels),
    through the same DataLoader settings."""
    import torch

    class Ready(torch.utils.data.Dataset):
        def __init__(self):
            self.x = torch.zeros(a.seq_len, dtype=torch.int64)

        def __len__(self):
            return 1 << 40

        def __getitem__(self, i):
            return {"tokens": self.x, "labels": self.x}

    loader = torch.utils.data.DataLoader(Ready(), batch_size=a.batch_size, num_workers=a.workers,
                                         persistent_workers=a.workers > 0)
    return timed(loader, a.seconds, a.warmup, lambda b: (b["tokens"], b["labels"]))


def worker_crosscheck(a):
    """The peers see the same tokens: Megatron's IndexedDataset over each
    shard prefix gives tokpack's documents (counts, lengths, sampled
    contents), LitData's chunks hold all the tokens, the nanoGPT file is the
    token stream."""
    import numpy as np
    import tokpack

    ds = tokpack.Dataset(a.data)
    out = {"tokpack_documents": len(ds), "tokpack_tokens": ds.num_tokens}
    try:
        from megatron.core.datasets.indexed_dataset import IndexedDataset

        docs, tokens, same = 0, 0, True
        rng = np.random.default_rng(0)
        for prefix in sorted(str(p)[:-4] for p in Path(a.data).glob("shard-*.bin")):
            m = IndexedDataset(prefix)
            for i in rng.integers(0, len(m), 200):
                same &= bool(np.array_equal(m[int(i)], ds.doc(docs + int(i))))
            docs += len(m)
            tokens += int(m.sequence_lengths.sum())
        out["megatron_documents"], out["megatron_tokens"] = docs, tokens
        out["megatron_sampled_docs_equal"] = same
    except Exception as e:  # Recorded in the report.
        out["megatron_error"] = f"{type(e).__name__}: {e}"
    index = Path(a.workdir) / "litdata" / "index.json"
    if index.exists():
        out["litdata_tokens"] = sum(c["dim"] for c in json.loads(index.read_text())["chunks"])
    mds = Path(a.workdir) / "mds" / "index.json"
    if mds.exists():
        samples = sum(s["samples"] for s in json.loads(mds.read_text())["shards"])
        out["mosaic_samples"], out["mosaic_tokens"] = samples, samples * (a.seq_len + 1)
    bins = sorted(Path(a.data).glob("shard-*.bin"))
    if len(bins) == 1:
        flat = np.memmap(bins[0], dtype=np.uint16, mode="r")
        out["nanogpt_tokens"] = len(flat)
        out["nanogpt_stream_equal"] = bool(np.array_equal(flat[-5000:],
                                                          ds.tokens(ds.num_tokens - 5000, 5000)))
    return out


def litdata_optimize(a):
    """Converts the tokpack dataset's documents (read with tokpack.Dataset)
    into LitData chunks, as litgpt's data preparation does: each document's
    tokens are one item, TokensLoader concatenates them."""
    import tokpack
    from litdata import TokensLoader, optimize

    n = len(tokpack.Dataset(a.data))
    per_input = 1000
    inputs = [(b, min(n, b + per_input)) for b in range(0, n, per_input)]
    t0 = time.perf_counter()
    optimize(fn=functools.partial(_litdata_docs, data=a.data), inputs=inputs,
             output_dir=str(Path(a.workdir) / "litdata"), chunk_bytes=a.litdata_chunk_bytes,
             item_loader=TokensLoader(), num_workers=a.workers)
    return time.perf_counter() - t0


def _litdata_docs(span, data):
    import numpy as np
    import tokpack

    ds = tokpack.Dataset(data)
    for i in range(*span):
        yield np.array(ds.doc(i))  # uint16, as stored


def run_worker(a):
    name = a.worker
    if name == "litdata-optimize":
        print(json.dumps({"seconds": litdata_optimize(a)}))
        return
    if name == "mds-write":
        seconds, n = mds_write(a)
        print(json.dumps({"seconds": seconds, "samples": n}))
        return
    if name == "crosscheck":
        print(json.dumps(worker_crosscheck(a)))
        return
    if name == "megatron-index":
        t0 = time.perf_counter()
        train = megatron_dataset(a, a.megatron_samples)
        print(json.dumps({"seconds": time.perf_counter() - t0, "samples": len(train)}))
        return
    extra = {}
    if name.startswith("tokpack-"):
        steps, took, first, extra = worker_tokpack(a, name.split("-")[1])
    else:
        steps, took, first = {"megatron": worker_megatron, "litdata": worker_litdata,
                              "nanogpt": worker_nanogpt,
                              "mosaic": worker_mosaic,
                              "dataloader-floor": worker_dataloader_floor}[name](a)
    print(json.dumps({"samples_per_s": steps * a.batch_size / took, "steps": steps,
                      "seconds": took, "first_batch_s": first,
                      "rss_anon_kb": rss_anon_kb(), **extra}))
    sys.stdout.flush()
    os._exit(0)  # Do not wait for loader threads or DataLoader workers to wind down.


# --------------------------------------------------------------------------
# Driver.

def default_reader_bench():
    # Prefer the Release build peers_bench.sh makes: the Python extension is
    # built Release too, so both loops run the same optimized core.
    release = REPO / "build" / "bench-release" / "bench" / "reader_bench"
    return str(release if release.exists() else REPO / "build" / "bench" / "reader_bench")


# name -> (worker, tokpack threads, DataLoader workers, label)
def configurations(a):
    w = a.workers
    return {
        "cpp-1": ("cpp", 1, None, "C++ `Next()` loop (reader_bench run)"),
        "py-torch-1": ("tokpack-torch", 1, None, 'Python `for batch in loader`, as_="torch"'),
        "py-numpy-1": ("tokpack-numpy", 1, None, 'Python `for batch in loader`, as_="numpy"'),
        "cpp-2": ("cpp", 2, None, "C++ `Next()` loop (reader_bench run)"),
        "py-torch-2": ("tokpack-torch", 2, None, 'Python `for batch in loader`, as_="torch"'),
        "py-numpy-2": ("tokpack-numpy", 2, None, 'Python `for batch in loader`, as_="numpy"'),
        f"megatron-w{w}": ("megatron", None, w,
                           f"Megatron-Core GPTDataset + DataLoader, num_workers={w}"),
        "megatron-w0": ("megatron", None, 0, "Megatron-Core GPTDataset + DataLoader, num_workers=0"),
        f"litdata-w{w}": ("litdata", None, w,
                          f"LitData StreamingDataset(TokensLoader) + StreamingDataLoader, "
                          f"num_workers={w}"),
        "litdata-w0": ("litdata", None, 0, "LitData StreamingDataset(TokensLoader) + "
                                           "StreamingDataLoader, num_workers=0"),
        f"mosaic-w{w}": ("mosaic", None, w,
                         f"MosaicML StreamingDataset(MDS) + StreamingDataLoader, num_workers={w}"),
        "mosaic-w0": ("mosaic", None, 0, "MosaicML StreamingDataset(MDS) + "
                                         "StreamingDataLoader, num_workers=0"),
        "nanogpt": ("nanogpt", None, None, "nanoGPT-style np.memmap get_batch (main thread)"),
        f"floor-w{w}": ("dataloader-floor", None, w,
                        f"reference: torch DataLoader of ready-made tensors, num_workers={w}"),
    }


def measure(a, config):
    worker, threads, workers, _ = configurations(a)[config]
    if worker == "cpp":
        res = harness.run_child([a.reader_bench, "run", a.data, a.seconds, threads, a.prefetch,
                                 a.seq_len, a.batch_size]).result
        res["busy_us_per_batch"] = (a.seconds - res["wait_s"]) / res["steps"] * 1e6
        return res
    cmd = [sys.executable, __file__, "--worker", worker] + common_args(a, threads, workers)
    return harness.run_child(cmd).result


def common_args(a, threads=None, workers=None):
    return ["--data", a.data, "--workdir", a.workdir, "--seconds", a.seconds,
            "--warmup", a.warmup, "--seq-len", a.seq_len, "--batch-size", a.batch_size,
            "--threads", a.threads if threads is None else threads, "--prefetch", a.prefetch,
            "--workers", a.workers if workers is None else workers,
            "--vocab-size", a.vocab_size, "--megatron-samples", a.megatron_samples,
            "--litdata-chunk-bytes", a.litdata_chunk_bytes]


def setup_step(a, worker):
    """Runs a one-time preparation worker; returns (its JSON, None) or (None, why not)."""
    try:
        return harness.run_child([sys.executable, __file__, "--worker", worker]
                                 + common_args(a)).result, None
    except harness.ChildFailed as e:
        return None, str(e)


def page_in(paths):
    for p in paths:
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass


def versions():
    return harness.versions(("tokpack", "torch", "numpy", "megatron-core", "litdata",
                             "mosaicml-streaming"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--data", default="/tmp/tokpack-python-bench/data")
    ap.add_argument("--workdir", default="/tmp/tokpack-python-bench",
                    help="LitData chunks and Megatron's index cache go here")
    ap.add_argument("--tokens", type=int, default=100_000_000,
                    help="size of the synthetic dataset made when --data has none")
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--warmup", type=float, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seq-len", type=int, default=2048)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2, help="tokpack assembler threads")
    ap.add_argument("--prefetch", type=int, default=4, help="tokpack ring size (its default)")
    ap.add_argument("--workers", type=int, default=2,
                    help="DataLoader workers for Megatron and LitData (Megatron's default)")
    ap.add_argument("--vocab-size", type=int, default=50000)
    ap.add_argument("--megatron-samples", type=int, default=2_000_000)
    ap.add_argument("--litdata-chunk-bytes", default="64MB")
    ap.add_argument("--reader-bench", default=default_reader_bench())
    ap.add_argument("--only", help="comma-separated subset of the configurations")
    ap.add_argument("--report", help="write the reading section of this report "
                                      "(docs/benchmarks.md) and its plot beside it")
    ap.add_argument("--json-out", help="also write the raw results as JSON (for bench_report.py)")
    a = ap.parse_args()
    if a.worker:
        run_worker(a)
        return

    work = Path(a.workdir)
    work.mkdir(parents=True, exist_ok=True)
    if not (Path(a.data) / "manifest.json").exists():
        print(f"writing a synthetic dataset of {a.tokens:,} tokens to {a.data}", file=sys.stderr)
        harness.run_child([a.reader_bench, "make", a.data, a.tokens])
    data_files = sorted(Path(a.data).glob("shard-*"))

    def snapshot():
        return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in Path(a.data).iterdir()}

    before = snapshot()
    table = configurations(a)
    configs = list(dict.fromkeys(table))  # Drops the duplicate when --workers 0.
    if a.only:
        configs = [c for c in configs if c in a.only.split(",")]
    setup, failed = {}, {}
    if any(table[c][0] == "litdata" for c in configs):
        if not (work / "litdata" / "index.json").exists():
            r, why = setup_step(a, "litdata-optimize")
            if r:
                setup["litdata.optimize of the documents (once)"] = r["seconds"]
            else:
                failed.update({c: why for c in configs if table[c][0] == "litdata"})
    if any(table[c][0] == "mosaic" for c in configs):
        if not (work / "mds" / "index.json").exists():
            r, why = setup_step(a, "mds-write")
            if r:
                setup[f"MDSWriter of the token stream ({r['samples']:,} samples, once)"] = \
                    r["seconds"]
            else:
                failed.update({c: why for c in configs if table[c][0] == "mosaic"})
    if any(table[c][0] == "megatron" for c in configs):
        r, why = setup_step(a, "megatron-index")
        if r:
            setup[f"Megatron GPTDataset build ({r['samples']:,} samples; its index files are "
                  f"cached in the workdir after the first run)"] = r["seconds"]
        else:
            failed.update({c: why for c in configs if table[c][0] == "megatron"})

    check, why = setup_step(a, "crosscheck")
    check = check or {"error": why}

    run = [c for c in configs if c not in failed]
    cached = data_files + sorted((work / "litdata").glob("*.bin")) + sorted(
        (work / "mds").glob("*.mds"))
    t_all, load = time.perf_counter(), [harness.loadavg()]
    results, run_failed = harness.interleaved(
        run, a.rounds, lambda c: measure(a, c),
        log=lambda res: f"{res['samples_per_s']:,.0f} samples/s",
        before_round=lambda: page_in(cached))
    failed.update(run_failed)
    wall = time.perf_counter() - t_all
    load.append(harness.loadavg())
    unchanged = before == snapshot()

    loops_doc, peers_doc = report(a, table, configs, results, failed, setup, wall, unchanged,
                                  check, load)
    doc = "\n".join(d for d in (loops_doc, peers_doc) if d)
    print(doc)
    if a.report:
        if loops_doc:
            harness.write_section("reading-loops", loops_doc, Path(a.report))
        if peers_doc:
            harness.write_section("reading", peers_doc, Path(a.report))
            plot_reading(a, table, configs, results, failed, Path(a.report).parent)
    if a.json_out:
        Path(a.json_out).write_text(json.dumps({
            "configs": {c: table[c] for c in configs}, "results": results, "failed": failed,
            "setup": setup, "check": check, "wall": wall, "loadavg": load,
            "unchanged": unchanged, "versions": versions(), "threads": a.threads,
            "rounds": a.rounds, "seconds": a.seconds, "seq_len": a.seq_len,
            "batch_size": a.batch_size, "prefetch": a.prefetch, "workers": a.workers,
            "markdown": doc}, indent=1))


def plot_reading(a, table, configs, results, failed, folder):
    """The loaders side by side, samples/s on a log scale."""
    short = {"tokpack-torch": "tokpack", "megatron": "Megatron-Core", "litdata": "LitData",
             "mosaic": "MosaicML Streaming", "nanogpt": "nanoGPT memmap",
             "dataloader-floor": "DataLoader floor"}
    bars = []
    for c in [f"py-torch-{a.threads}"] + [c for c in configs if table[c][1] is None]:
        if c in failed or not results.get(c):
            continue
        worker, _, workers, _ = table[c]
        name = short[worker] + (f" (w={workers})" if workers is not None else "")
        bars.append((name, median([r["samples_per_s"] for r in results[c]])))
    harness.plot_bars(folder / "benchmarks-reading.png", bars,
                      f"Shuffled reading, seq_len {a.seq_len}, batch {a.batch_size} "
                      f"(samples/s, log scale, higher is better)", "samples/s", log=True)


def report(a, table, configs, results, failed, setup, wall, unchanged, check, load):
    def per_round(c):
        return [r["samples_per_s"] for r in results.get(c, [])] if c not in failed else []

    def med(c):
        return median(per_round(c))

    def ratio(c, base):
        return ratio_rounds(per_round(c), per_round(base))

    lines = ["| threads | loop | samples/s (median) | per round | vs C++ (median; per round) "
             "| loop's own time per batch |", "|---|---|---|---|---|---|"]
    loops = [c for c in configs if table[c][1] is not None]
    for c in loops:
        worker, threads, _, label = table[c]
        if c in failed:
            lines.append(f"| {threads} | {label} | not run: {failed[c]} | | | |")
            continue
        rounds = ", ".join(f"{x:,.0f}" for x in per_round(c))
        rel = "100%"
        if worker != "cpp":
            each = [x / y for x, y in zip(per_round(c), per_round(f"cpp-{threads}")) if y]
            rel = (f"**{fmt(ratio(c, f'cpp-{threads}'), '{:.1%}')}**; "
                   + ", ".join(f"{x:.0%}" for x in each))
        busy = median([r["busy_us_per_batch"] for r in results[c]])
        lines.append(f"| {threads} | {label} | {fmt(med(c))} | {rounds} | {rel} | "
                     f"{busy:.1f} µs |")
    table1 = "\n".join(lines)

    base = f"py-torch-{a.threads}"
    lines = ["| loader | samples/s (median) | per round | tokpack is | first batch |",
             "|---|---|---|---|---|"]
    for c in [base] + [c for c in configs if table[c][1] is None]:
        label = table[c][3]
        if c == base:
            label = (f'tokpack.Loader, as_="torch", threads={a.threads}, '
                     f'prefetch={a.prefetch}')
        if c in failed or not results.get(c):
            why = failed.get(c, "not selected (--only)")
            lines.append(f"| {label} | not run: {why} | | | |")
            continue
        rounds = ", ".join(f"{x:,.0f}" for x in per_round(c))
        rel = ("1.00x" if c == base else "—" if table[c][0] == "dataloader-floor"
               else fmt(ratio(base, c), "{:.1f}x"))
        first = median([r["first_batch_s"] for r in results[c]])
        lines.append(f"| {label} | {fmt(med(c))} | {rounds} | {rel} | {first * 1000:.0f} ms |")
    table2 = "\n".join(lines)
    setup_lines = "\n".join(f"- {k}: {v:.1f} s" for k, v in setup.items())
    peers = [c for c in configs if table[c][1] is None]
    vers = ", ".join(f"{k} {v}" for k, v in versions().items()
                     if peers or k in ("tokpack", "torch", "numpy"))
    rb = os.path.relpath(a.reader_bench, REPO)
    only = f" --only {','.join(configs)}" if a.only else ""
    head = f"""Made by `bench/python_bench.py{only} --report docs/benchmarks.md` (scripts/bench_all.sh
runs it with the peers).
Machine: {harness.machine_line()}.
Versions: {vers}. C++ loop: `{rb}`.
Settings: seq_len {a.seq_len}, batch {a.batch_size}, tokpack prefetch {a.prefetch}; {a.rounds}
rounds of {a.seconds:g} s per configuration after {a.warmup:g} s of warm-up, each run in a
fresh process, the order rotated each round; {wall:.0f} s for all rounds; 1-minute load
average {load[0]:.1f} before, {load[1]:.1f} after. The dataset's
files were unchanged by the run (names, sizes, mtimes): {unchanged}.
"""
    loops_doc = f"""{head}
{table1}
""" if loops else ""
    peers_doc = f"""{head}
![reading](benchmarks-reading.png)

{table2}

One-time preparation, not in the numbers above:

{setup_lines}

Same tokens (bench/python_bench.py --worker crosscheck): `{json.dumps(check)}`
""" if peers else ""
    return loops_doc, peers_doc


if __name__ == "__main__":
    main()
