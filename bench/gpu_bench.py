"""GPU data-path benchmark for tokpack.Loader(device="cuda") (issue: async GPU copy).

    python bench/gpu_bench.py [--data DIR] [--steps 300] [--report docs/benchmarks.md]

Two measurements, each against a baseline taken in the same run:

1. Training-like loop: every step embeds the batch's tokens and runs bf16
   matmuls sized to take about --step-ms on this GPU, with 8 x 8192 tokens per
   step, and reads its loss (.item()), as a trainer that logs it does. The
   same loop runs over a batch already on the GPU (no data path); the data
   path's cost is the loader loop's extra time per step, and the host-side
   wait for data comes from loader.stats(). Target: wait < 1% of the step
   time. Without the per-step .item() the host runs ahead of the GPU until
   every device buffer is still read by queued steps, and then waits in
   next() for the GPU: that wait is back-pressure, not a data stall.
2. Host-to-device bandwidth: tokpack's copy stage (compact uint16 windows,
   no compute) against plain cudaMemcpyAsync of the same bytes from pinned
   memory (torch's pinned .to(non_blocking=True)). Target: >= 80%.

Needs a CUDA GPU, torch with CUDA, and tokpack built with CUDA.
"""
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import torch

import harness
import tokpack

ROOT = Path(__file__).resolve().parents[1]


def make_data(path, tokens):
    if (Path(path) / "manifest.json").exists():
        return
    reader_bench = ROOT / "build" / "bench" / "reader_bench"
    subprocess.run([str(reader_bench), "make", str(path), str(tokens)], check=True)


def calibrate(dim, step_ms):
    """Number of dim x dim bf16 matmuls that take about step_ms."""
    a = torch.randn(dim, dim, device="cuda", dtype=torch.bfloat16)
    # Warm up first: the first products load cuBLAS and pick kernels, and
    # timing them made one matmul look like a whole step (0.6 ms steps on an H200).
    for _ in range(5):
        a = a @ a
        a = a / a.norm()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(20):
        a = a @ a
        a = a / a.norm()
    end.record()
    torch.cuda.synchronize()
    per = start.elapsed_time(end) / 20
    return max(1, round(step_ms / per))


def train_step(x, table, w, matmuls):
    h = table[x].flatten(0, 1)[: w.shape[0]]  # the data enters the computation
    for _ in range(matmuls):
        h = (h @ w) / 64.0
    return h.float().sum()


def training_loop(a, matmuls):
    vocab = tokpack.Dataset(a.data).manifest["tokenizer"].get("vocab_size", 65536)
    vocab = max(int(vocab), 65536)
    table = torch.randn(vocab, a.dim, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(a.dim, a.dim, device="cuda", dtype=torch.bfloat16)
    results = {}
    # Baseline: the same steps over one batch that is already on the GPU.
    fixed = torch.randint(0, 60000, (a.batch_size, a.seq_len), device="cuda")
    for name in ["baseline", "tokpack"]:
        loader = None
        if name == "tokpack":
            loader = tokpack.Loader(a.data, seq_len=a.seq_len, batch_size=a.batch_size, seed=1,
                                    device="cuda", threads=a.threads, prefetch=a.prefetch)
        losses, nexts = [], []
        for i in range(a.steps + a.warmup):
            if i == a.warmup:
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                wait0 = loader.stats()["wait_seconds_total"] if loader is not None else 0.0
            t = time.perf_counter()
            x = next(loader)["input_ids"] if loader is not None else fixed
            if i >= a.warmup:
                nexts.append(time.perf_counter() - t)
            losses.append(train_step(x, table, w, matmuls).item())
            del x
        torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
        r = {"step_ms": seconds / a.steps * 1e3}
        if loader is not None:
            s = loader.stats()
            r["wait_ms_mean"] = (s["wait_seconds_total"] - wait0) / a.steps * 1e3
            # The loader's own maximum counts the first batch's cold start
            # (the warm-up steps): the longest next() of the measured steps.
            r["next_ms_max"] = max(nexts) * 1e3
        results[name] = r
    base = results["baseline"]["step_ms"]
    results["overhead_fraction"] = results["tokpack"]["step_ms"] / base - 1
    results["wait_fraction"] = results["tokpack"]["wait_ms_mean"] / results["tokpack"]["step_ms"]
    return results


def bandwidth(a):
    nbytes = a.batch_size * (a.seq_len + 1) * 2  # what tokpack copies per batch (uint16)
    host = torch.empty(nbytes, dtype=torch.uint8).pin_memory()
    dev = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    stream = torch.cuda.Stream()
    n = a.bandwidth_batches
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    with torch.cuda.stream(stream):
        for _ in range(n):
            dev.copy_(host, non_blocking=True)
    torch.cuda.synchronize()
    plain = nbytes * n / (time.perf_counter() - t0)

    loader = tokpack.Loader(a.data, seq_len=a.seq_len, batch_size=a.batch_size, seed=2,
                            device="cuda", threads=a.threads, prefetch=a.prefetch)
    for _ in range(a.warmup):
        next(loader)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        x = next(loader)["input_ids"]
        del x
    torch.cuda.synchronize()
    ours = nbytes * n / (time.perf_counter() - t0)
    return {"batch_bytes": nbytes, "plain_GBps": plain / 1e9, "tokpack_GBps": ours / 1e9,
            "ratio": ours / plain}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/tmp/tokpack-gpu-bench")
    ap.add_argument("--tokens", type=int, default=200_000_000)
    ap.add_argument("--seq-len", type=int, default=8192)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--prefetch", type=int, default=4)
    ap.add_argument("--dim", type=int, default=4096)
    ap.add_argument("--step-ms", type=float, default=10.0)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--bandwidth-batches", type=int, default=2000)
    ap.add_argument("--report", help="write the GPU section of this report")
    a = ap.parse_args()
    if not (torch.cuda.is_available() and tokpack.cuda_available()):
        sys.exit("needs a CUDA GPU, torch with CUDA and tokpack built with CUDA")
    make_data(a.data, a.tokens)
    matmuls = calibrate(a.dim, a.step_ms)
    train = training_loop(a, matmuls)
    bw = bandwidth(a)
    device = torch.cuda.get_device_name()
    report = {"device": device, "machine": harness.machine_line(),
              "matmuls_per_step": matmuls, "training": train, "bandwidth": bw}
    print(json.dumps(report, indent=2))
    if a.report:
        write_doc(a, report)


def write_doc(a, r):
    t, b = r["training"], r["bandwidth"]
    text = f"""Command (on a machine with a GPU): `scripts/gpu_check.sh bench` (which runs
`python bench/gpu_bench.py --report docs/benchmarks.md`).

Device: {r['device']}, host {r['machine']}. Batches of {a.batch_size} x {a.seq_len} tokens, shuffled, copied as
uint16 windows and widened to int64 on the GPU; {a.threads} assembler threads.

### Training-like loop ({r['matmuls_per_step']} bf16 {a.dim}x{a.dim} matmuls per step)

Each step reads its loss (`.item()`), so the host waits for the GPU there, not in `next()`.

| loop | ms per step | host wait for data per step |
|---|---:|---:|
| baseline (batch already on the GPU) | {t['baseline']['step_ms']:.3f} | - |
| tokpack.Loader(device="cuda") | {t['tokpack']['step_ms']:.3f} | {t['tokpack']['wait_ms_mean']:.4f} ms mean; longest next() {t['tokpack']['next_ms_max']:.3f} ms |

Wait for data: {t['wait_fraction'] * 100:.3f}% of the step (target < 1%). Step time over the
baseline: {t['overhead_fraction'] * 100:+.2f}%.

### Host-to-device copies ({b['batch_bytes']:,} bytes per batch)

| copy | GB/s |
|---|---:|
| plain cudaMemcpyAsync from pinned memory | {b['plain_GBps']:.2f} |
| tokpack's copy stage (end to end, no compute) | {b['tokpack_GBps']:.2f} |

Ratio: {b['ratio'] * 100:.1f}% (target >= 80%).
"""
    harness.write_section("gpu", text, Path(a.report))


if __name__ == "__main__":
    main()
