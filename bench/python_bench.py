#!/usr/bin/env python3
"""Python loader benchmark (not a test).

1. tokpack's Python loop (``for batch in loader: x = batch["input_ids"]``,
   as_="torch" and as_="numpy") as a fraction of the C++ loop over the same
   Loader (build/bench/reader_bench run), same dataset, seq_len, batch size,
   threads and prefetch. Target: >= 90%.
2. Side by side on the same tokens and machine: Megatron-Core's GPTDataset
   (reading tokpack's shard .bin/.idx unchanged) through a torch DataLoader,
   LitData's TokensLoader (StreamingDataset + StreamingDataLoader over the
   same documents converted with litdata.optimize), and a nanoGPT-style
   get_batch (np.memmap of the same uint16 tokens, random offsets).

Every measurement runs in its own process; configurations are interleaved
(rotated each round) so machine noise falls on all of them alike, and the
median over rounds is reported. Every loop ends with int64 [batch, seq_len]
inputs and labels in hand, as a trainer would feed a model.

bench/peers_bench.sh makes the benchmark's own virtual environment (peers
from PyPI plus tokpack) and runs this script in it:

    bench/peers_bench.sh [--rounds 3] [--seconds 5] [--write-doc docs/benchmarks-python.md]

Workers (internal): python_bench.py --worker NAME --data DIR ... prints one
JSON line.
"""
import argparse
import functools
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
READER_BENCH = REPO / "build" / "bench" / "reader_bench"


# --------------------------------------------------------------------------
# Workers: one measurement each, in a fresh process.

def timed(batches, seconds, warmup_seconds, consume):
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

    return timed(loader, a.seconds, a.warmup, consume)


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
    if name == "megatron-index":
        t0 = time.perf_counter()
        train = megatron_dataset(a, a.megatron_samples)
        print(json.dumps({"seconds": time.perf_counter() - t0, "samples": len(train)}))
        return
    if name.startswith("tokpack-"):
        steps, took, first = worker_tokpack(a, name.split("-")[1])
    else:
        steps, took, first = {"megatron": worker_megatron, "litdata": worker_litdata,
                              "nanogpt": worker_nanogpt}[name](a)
    print(json.dumps({"samples_per_s": steps * a.batch_size / took, "steps": steps,
                      "seconds": took, "first_batch_s": first,
                      "rss_anon_kb": rss_anon_kb()}))
    sys.stdout.flush()
    os._exit(0)  # Do not wait for loader threads or DataLoader workers to wind down.


# --------------------------------------------------------------------------
# Driver.

def sh(cmd, **kw):
    return subprocess.run([str(c) for c in cmd], check=True, **kw)


def measure(a, name, threads=None):
    threads = a.threads if threads is None else threads
    if name == "cpp":
        out = sh([READER_BENCH, "run", a.data, a.seconds, threads, a.prefetch, a.seq_len,
                  a.batch_size], capture_output=True, text=True).stdout
    else:
        cmd = [sys.executable, __file__, "--worker", name] + common_args(a, threads)
        out = sh(cmd, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def common_args(a, threads=None):
    return ["--data", a.data, "--workdir", a.workdir, "--seconds", a.seconds,
            "--warmup", a.warmup, "--seq-len", a.seq_len, "--batch-size", a.batch_size,
            "--threads", a.threads if threads is None else threads, "--prefetch", a.prefetch,
            "--workers", a.workers, "--vocab-size", a.vocab_size,
            "--megatron-samples", a.megatron_samples,
            "--litdata-chunk-bytes", a.litdata_chunk_bytes]


def page_in(paths):
    for p in paths:
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass


def versions():
    out = {"python": platform.python_version()}
    for mod in ("tokpack", "torch", "numpy", "megatron.core", "litdata"):
        try:
            m = __import__(mod, fromlist=["_"])
            out[mod] = getattr(m, "__version__", "?")
        except Exception as e:  # Reported, not fatal: the peer's row says why.
            out[mod] = f"not importable ({type(e).__name__})"
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--data", default="/tmp/tokpack-python-bench/data")
    ap.add_argument("--workdir", default="/tmp/tokpack-python-bench")
    ap.add_argument("--tokens", type=int, default=100_000_000)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--warmup", type=float, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seq-len", type=int, default=2048)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2, help="tokpack assembler threads")
    ap.add_argument("--prefetch", type=int, default=4, help="tokpack ring size (its default)")
    ap.add_argument("--workers", type=int, default=2,
                    help="DataLoader workers for Megatron and LitData (and optimize)")
    ap.add_argument("--vocab-size", type=int, default=50000)
    ap.add_argument("--megatron-samples", type=int, default=2_000_000)
    ap.add_argument("--litdata-chunk-bytes", default="64MB")
    ap.add_argument("--only", help="comma-separated subset of configurations")
    ap.add_argument("--write-doc")
    a = ap.parse_args()
    if a.worker:
        run_worker(a)
        return

    work = Path(a.workdir)
    work.mkdir(parents=True, exist_ok=True)
    if not (Path(a.data) / "manifest.json").exists():
        print(f"writing a synthetic dataset of {a.tokens:,} tokens to {a.data}", file=sys.stderr)
        sh([READER_BENCH, "make", a.data, a.tokens])
    data_files = sorted(Path(a.data).glob("shard-*"))
    def snapshot():
        return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in Path(a.data).iterdir()}

    before = snapshot()

    configs = ["cpp-1", "py-torch-1", "py-numpy-1", "cpp-2", "py-torch-2", "py-numpy-2",
               "megatron", "litdata", "nanogpt"]
    if a.only:
        configs = [c for c in configs if c in a.only.split(",")]
    setup, skipped = {}, {}
    if "litdata" in configs and not (work / "litdata" / "index.json").exists():
        try:
            r = json.loads(sh([sys.executable, __file__, "--worker", "litdata-optimize"]
                              + common_args(a), capture_output=True, text=True
                              ).stdout.strip().splitlines()[-1])
            setup["litdata optimize (once)"] = r["seconds"]
        except subprocess.CalledProcessError as e:
            skipped["litdata"] = (e.stderr or "").strip().splitlines()[-1:]
    if "megatron" in configs:
        try:
            r = json.loads(sh([sys.executable, __file__, "--worker", "megatron-index"]
                              + common_args(a), capture_output=True, text=True
                              ).stdout.strip().splitlines()[-1])
            setup["Megatron GPTDataset index build (cached after the first)"] = r["seconds"]
        except subprocess.CalledProcessError as e:
            skipped["megatron"] = (e.stderr or "").strip().splitlines()[-1:]
    configs = [c for c in configs if c not in skipped]

    results = {c: [] for c in configs}
    errors = {}
    t_all = time.perf_counter()
    for r in range(a.rounds):
        page_in(data_files + sorted((work / "litdata").glob("*.bin")))
        k = r % len(configs)
        for c in configs[k:] + configs[:k]:
            if c in errors:
                continue
            kind, _, threads = c.rpartition("-") if c[-1].isdigit() else (c, "", None)
            name = {"cpp": "cpp", "py-torch": "tokpack-torch", "py-numpy": "tokpack-numpy"
                    }.get(kind, kind)
            try:
                res = measure(a, name, int(threads) if threads else None)
            except subprocess.CalledProcessError as e:
                errors[c] = (e.stderr or "").strip().splitlines()[-1:]
                print(f"{c}: FAILED {errors[c]}", file=sys.stderr)
                continue
            results[c].append(res)
            print(f"round {r + 1} {c}: {res['samples_per_s']:,.0f} samples/s", file=sys.stderr)
    wall = time.perf_counter() - t_all
    unchanged = before == snapshot()

    doc = report(a, results, {**skipped, **errors}, setup, wall, unchanged)
    print(doc)
    if a.write_doc:
        Path(a.write_doc).write_text(doc)


def report(a, results, failed, setup, wall, unchanged):
    def per_round(c):
        return [r["samples_per_s"] for r in results.get(c, [])]

    def med(c):
        v = per_round(c)
        return statistics.median(v) if v else None

    def ratio_rounds(c, base):
        # Ratio within each round (adjacent runs), then the median.
        v = [x / y for x, y in zip(per_round(c), per_round(base))]
        return statistics.median(v) if v else None

    def fmt(x, f="{:,.0f}"):
        return f.format(x) if x is not None else "n/a"

    lines = ["| threads | loop | samples/s (median) | per round | vs C++ loop |",
             "|---|---|---|---|---|"]
    for t in (1, 2):
        for c, label in ((f"cpp-{t}", "C++ `Next()` loop (reader_bench run)"),
                         (f"py-torch-{t}", 'Python, as_="torch"'),
                         (f"py-numpy-{t}", 'Python, as_="numpy"')):
            if c not in results:
                continue
            rounds = ", ".join(f"{x:,.0f}" for x in per_round(c))
            rel = "1.00" if c.startswith("cpp") else fmt(ratio_rounds(c, f"cpp-{t}"), "{:.1%}")
            lines.append(f"| {t} | {label} | {fmt(med(c))} | {rounds} | {rel} |")
    table1 = "\n".join(lines)

    base = f"py-torch-{a.threads}"
    peers = [
        (base, f"tokpack.Loader, as_=\"torch\", threads={a.threads}, prefetch={a.prefetch}"),
        ("megatron", f"Megatron-Core GPTDataset + torch DataLoader, num_workers={a.workers}"),
        ("litdata", f"LitData StreamingDataset(TokensLoader) + StreamingDataLoader, "
                    f"num_workers={a.workers}"),
        ("nanogpt", "nanoGPT-style np.memmap get_batch (main thread)"),
    ]
    lines = ["| loader | samples/s (median) | per round | tokpack / it | first batch (s) |",
             "|---|---|---|---|---|"]
    for c, label in peers:
        if c in failed or not results.get(c):
            lines.append(f"| {label} | not run: {' '.join(failed.get(c, ['not selected']))} "
                         f"| | | |")
            continue
        rounds = ", ".join(f"{x:,.0f}" for x in per_round(c))
        rel = "1.00x" if c == base else fmt(ratio_rounds(base, c), "{:.2f}x")
        first = statistics.median(r["first_batch_s"] for r in results[c])
        lines.append(f"| {label} | {fmt(med(c))} | {rounds} | {rel} | {first:.2f} |")
    table2 = "\n".join(lines)
    setup_lines = "\n".join(f"- {k}: {v:.1f} s" for k, v in setup.items())
    vers = ", ".join(f"{k} {v}" for k, v in versions().items())
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                if l.startswith("model name")), platform.processor())
    return f"""<!-- written by bench/python_bench.py -->
Machine: {cpu}, {os.cpu_count()} vCPUs (shared), no GPU. {vers}.
Settings: seq_len {a.seq_len}, batch {a.batch_size}, {a.rounds} rounds of {a.seconds:g} s per
configuration (after {a.warmup:g} s of warm-up), each in a fresh process, rotated each round;
{wall:.0f} s in all. Dataset files unchanged by the run (sizes and mtimes): {unchanged}.

### tokpack's Python loop vs its C++ loop

{table1}

### Side by side

{table2}

{setup_lines}
"""


if __name__ == "__main__":
    main()
