#!/usr/bin/env python3
"""Cold-start benchmark (not a test): tokpack's Loader reading a dataset from
a loopback S3 (moto, SigV4 checked) behind an object store's latency and a
per-connection bandwidth cap, with an empty chunk cache, in a training-like
loop: next(), then sleep one step time (the "model"), repeat.

It measures, per configuration, in interleaved rounds:
- the first batch: time from Loader() to the first batch, against one
  chunk's fetch time through the same path (a read of one sample's tokens
  from a freshly opened dataset with an empty cache, median of a few chunks,
  measured in the same round);
- the consumer's wait in next() after the warm-up steps: mean (also as a
  share of the step time), percentiles, max;
- what was fetched (chunks, MB).
Configurations: lookahead_steps=16 (the default: hints ordered by step,
readers ahead of hints) and lookahead_steps=0 (no hints: each assembler
fetches its rows' chunks itself, one after another) as the baseline.

Latency: `tc netem` on loopback when the kernel and permissions allow it,
else (and said so in the output) a shaping proxy in this process
(tests/python/remote_servers.py FaultProxy with latency_s and bytes_per_s).

    .venv/bin/python bench/cold_start_bench.py [--rounds 3] [--steps 300] \\
        [--latency-ms 30] [--mb-per-s 80] [--report docs/benchmarks.md]
"""
import argparse
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from statistics import mean

import harness
from harness import REPO, median, percentile

MAKE = REPO / "build" / "bench" / "reader_bench"
CLI = REPO / "build" / "tokpack"
SEQ_LEN, BATCH = 8192, 8
CONFIGS = {"lookahead_steps=16": 16, "lookahead_steps=0 (baseline)": 0}


# --------------------------------------------------------------------------
# Worker side: one measurement per process (empty cache), one JSON line.

def worker_probe(a):
    """Seconds to read one sample's tokens from each of a few chunks, one
    after another, from a dataset just opened with an empty cache; then
    from `parallel` other chunks side by side (wall time)."""
    import tokpack
    ds = tokpack.Dataset(a["url"])
    chunk_tokens = a["chunk_bytes"] // 2
    chunks = max(1, ds.num_tokens // chunk_tokens)
    # Spread over the shards; never the same chunk twice (chunks is odd or large).
    picks = [(i * 7 + 3) % chunks for i in range(a["chunks"] + a["parallel"])]

    def read(c):
        ds.tokens(c * chunk_tokens + 1, SEQ_LEN + 1)

    took = []
    for c in picks[:a["chunks"]]:
        t0 = time.perf_counter()
        read(c)
        took.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    with ThreadPoolExecutor(a["parallel"]) as ex:
        list(ex.map(read, picks[a["chunks"]:]))
    return {"fetch_s": took, "parallel_s": time.perf_counter() - t0}


def worker_run(a):
    """The training-like loop; the wait of every step and the first batch."""
    import tokpack
    t0 = time.perf_counter()
    ds = tokpack.Dataset(a["url"])
    open_s = time.perf_counter() - t0
    kw = dict(shuffle=a["shuffle"])
    if a["shuffle"] == "block":
        kw.update(block_size=a["block_size"], block_window=a["window_chunks"])
    elif a["shuffle"] == "window":
        kw.update(window_chunks=a["window_chunks"])
    t0 = time.perf_counter()
    loader = tokpack.Loader(ds, seq_len=SEQ_LEN, batch_size=BATCH, seed=1,
                            lookahead_steps=a["lookahead"], as_="numpy", max_steps=a["steps"],
                            **kw)
    waits, first = [], None
    for wait, batch in harness.timed_next(iter(loader)):
        waits.append(wait)
        if first is None:
            first = time.perf_counter() - t0
        del batch
        time.sleep(a["step_s"])  # The model's step; the loader works meanwhile.
    st = loader.stats()
    return {"open_s": open_s, "first_batch_s": first, "waits": waits,
            "chunks": st["cache_misses"], "bytes": st["bytes_fetched"]}


# --------------------------------------------------------------------------
# Parent side.

def try_netem(latency_ms, mb_per_s):
    """Delay and rate on loopback with tc netem; a description, or None when
    it cannot be set (no sch_netem in the kernel, no permission)."""
    half = latency_ms / 2  # Both directions cross lo.
    cmd = ["tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", f"{half}ms",
           "rate", f"{int(mb_per_s * 8)}mbit"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        print(f"tc netem: {e}; using the shaping proxy", file=sys.stderr)
        return None
    if r.returncode != 0:
        print(f"tc netem: {(r.stderr or r.stdout).strip()}; using the shaping proxy",
              file=sys.stderr)
        return None
    return (f"`tc netem` on loopback: {half:g} ms each way, {mb_per_s * 8:g} Mbit/s "
            f"(shared by all connections)")


def serve_proxy(upstream, kw, conn):
    """Runs a shaping FaultProxy in this (spawned) process, so that its
    Python does not share a GIL with moto's: sends its URL on `conn`, stops
    when `conn` says so (or closes)."""
    sys.path.insert(0, str(REPO / "tests" / "python"))
    from remote_servers import FaultProxy
    with FaultProxy(upstream, (), rate=0, **kw) as proxy:
        conn.send(proxy.url)
        try:
            conn.recv()
        except EOFError:
            pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=64_000_000)
    ap.add_argument("--shard-tokens", type=int, default=2_000_000,
                    help="one chunk per shard: moto copies a whole object for every ranged "
                         "GET, so larger shards would measure moto")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup-steps", type=int, default=10)
    ap.add_argument("--step-ms", type=float, default=100)
    ap.add_argument("--latency-ms", type=float, default=30)
    ap.add_argument("--mb-per-s", type=float, default=80, help="per connection (MB = 1e6 B)")
    ap.add_argument("--shuffle", default="window", choices=["window", "block", "full"])
    ap.add_argument("--window-chunks", type=int, default=4,
                    help="chunks per window (window_chunks; with block, one-chunk blocks)")
    ap.add_argument("--probe-chunks", type=int, default=3)
    ap.add_argument("--workdir", default="/tmp/tokpack-cold-start-bench")
    ap.add_argument("--report", help="write the cold-start section of this report")
    args = ap.parse_args()

    MotoServer = harness.moto_server_class()
    work = Path(args.workdir)
    base, manifest = harness.synthetic_dataset(MAKE, work, args.tokens, args.shard_tokens)
    chunk_bytes = manifest["chunk_bytes"]
    bin_bytes = sum(s["bin"]["bytes"] for s in manifest["shards"])
    caches = work / "caches"
    shutil.rmtree(caches, ignore_errors=True)
    caches.mkdir(parents=True)
    n_cache = [0]

    moto = MotoServer().start()
    proxy = None
    netem = None
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "TOKPACK_"))}
        env.update(moto.env())
        env["TOKPACK_CACHE_BYTES"] = str(64 << 30)
        url = "s3://bench/ds"
        moto.client().create_bucket(Bucket="bench")
        subprocess.run([str(CLI), "push", str(base), url], env=env, check=True,
                       capture_output=True)
        netem = try_netem(args.latency_ms, args.mb_per_s)
        link = netem
        if netem is None:
            ctx = multiprocessing.get_context("spawn")
            ours, theirs = ctx.Pipe()
            proxy = ctx.Process(target=serve_proxy, args=(
                moto.url, {"latency_s": args.latency_ms / 1e3,
                           "bytes_per_s": args.mb_per_s * 1e6}, theirs), daemon=True)
            proxy.start()
            proxy_url = ours.recv()
            env.update(moto.env(endpoint_url=proxy_url))
            link = (f"a shaping proxy (`FaultProxy(latency_s={args.latency_ms / 1e3:g}, "
                    f"bytes_per_s={args.mb_per_s:g}e6)` in tests/python/remote_servers.py, in a "
                    f"process of its own): "
                    f"{args.latency_ms:g} ms before each request is relayed, each response "
                    f"body paced to {args.mb_per_s:g} MB/s per connection "
                    f"(`tc netem` is not available here)")
        print(f"link: {link}", file=sys.stderr)
        common = {"url": url, "chunk_bytes": chunk_bytes}

        def measure(name):
            n_cache[0] += 1
            e = dict(env, TOKPACK_CACHE_DIR=str(caches / f"c{n_cache[0]}"))
            if name == "probe":
                a = dict(common, chunks=args.probe_chunks, parallel=args.window_chunks)
            else:
                a = dict(common, lookahead=CONFIGS[name], steps=args.steps,
                         step_s=args.step_ms / 1e3, shuffle=args.shuffle,
                         block_size=chunk_bytes // 2 // SEQ_LEN, window_chunks=args.window_chunks)
            cmd = [sys.executable, __file__, "--worker", "probe" if name == "probe" else "run",
                   json.dumps(a)]
            return harness.run_child(cmd, e, timeout=args.steps * args.step_ms / 1e3 + 300).result

        def log(r):
            if "fetch_s" in r:
                return ("chunk fetch " + ", ".join(f"{t * 1e3:.0f} ms" for t in r["fetch_s"]) +
                        f"; {args.window_chunks} side by side {r['parallel_s'] * 1e3:.0f} ms")
            w = r["waits"][args.warmup_steps:]
            return (f"first batch {r['first_batch_s'] * 1e3:.0f} ms, steady mean wait "
                    f"{mean(w) * 1e3:.3f} ms, max {max(w) * 1e3:.1f} ms, {r['chunks']} chunks")

        results, failed = harness.interleaved(["probe", *CONFIGS], args.rounds, measure, log)
    finally:
        if proxy:
            ours.send("stop")
            proxy.join()
        if netem:
            subprocess.run(["tc", "qdisc", "del", "dev", "lo", "root"], capture_output=True)
        moto.stop()
    if failed:
        sys.exit(f"failed: {failed}")

    # ----------------------------------------------------------------------
    # Table.
    fetch = [median(r["fetch_s"]) for r in results["probe"]]
    step_s = args.step_ms / 1e3
    rows = ["| configuration | first batch (median) | first batch / one chunk's fetch "
            "(median of rounds) | steady mean wait / step | as % of the step | p50 | p99 | max "
            "| steps that waited > 1 ms | chunks fetched | MB fetched |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    summary = {}
    for name in CONFIGS:
        rs = results[name]
        firsts = [r["first_batch_s"] for r in rs]
        steady = [w for r in rs for w in r["waits"][args.warmup_steps:]]
        pct = mean(steady) / step_s * 100
        summary[name] = {"first_ratio": harness.ratio_rounds(firsts, fetch), "pct": pct}
        rows.append(
            f"| {name} | {median(firsts) * 1e3:,.0f} ms | "
            f"{summary[name]['first_ratio']:.2f}x | {mean(steady) * 1e3:,.3f} ms | "
            f"{pct:.3f}% | {percentile(steady, 50) * 1e3:,.3f} ms | "
            f"{percentile(steady, 99) * 1e3:,.2f} ms | {max(steady) * 1e3:,.1f} ms | "
            f"{sum(w > 1e-3 for w in steady)} of {len(steady)} | "
            f"{median([r['chunks'] for r in rs]):,.0f} | "
            f"{median([r['bytes'] for r in rs]) / 1e6:,.0f} |")
    table = "\n".join(rows)
    fetch_line = (f"One chunk's fetch through the same path: {median(fetch) * 1e3:,.0f} ms "
                  f"(median of {args.probe_chunks} chunks per round, {args.rounds} rounds; "
                  f"rounds' medians {', '.join(f'{f * 1e3:.0f}' for f in fetch)} ms). "
                  f"{args.window_chunks} chunks fetched side by side the same way (about what "
                  f"the first step needs): "
                  f"{median([r['parallel_s'] for r in results['probe']]) * 1e3:,.0f} ms.")
    print(f"link: {link}", table, fetch_line, sep="\n\n")
    (work / "results.json").write_text(json.dumps({"results": results, "link": link}, indent=1))

    if args.report:
        mode = (f'shuffle="block" with one block per chunk ({chunk_bytes // 2 // SEQ_LEN} '
                f"samples) and windows of {args.window_chunks} blocks"
                if args.shuffle == "block" else
                f'shuffle="window" with window_chunks={args.window_chunks}'
                if args.shuffle == "window" else f'shuffle="{args.shuffle}"')
        doc = DOC.format(
            cmd=f".venv/bin/python bench/cold_start_bench.py --rounds {args.rounds} "
                f"--steps {args.steps} --latency-ms {args.latency_ms:g} "
                f"--mb-per-s {args.mb_per_s:g} --report {args.report}",
            machine=harness.machine_line(), link=link, tokens=args.tokens,
            mb=bin_bytes / 1e6, nshards=len(manifest["shards"]),
            chunk_mib=chunk_bytes / (1 << 20), mode=mode, steps=args.steps,
            step_ms=args.step_ms, warmup=args.warmup_steps, rounds=args.rounds,
            table=table, fetch_line=fetch_line)
        harness.write_section("cold-start", doc, Path(args.report))


DOC = """Measured with

    {cmd}

on {machine} (shared with other work, so noisy; no GPU; rounds interleaved,
every ratio taken within a round).

Link: {link}. Server: moto (`MotoServer`, SigV4 checked) on loopback, in
Python, sharing the cores with the reader.

Setup: synthetic uint16 dataset of {tokens:,} tokens ({mb:,.0f} MB, {nshards}
shards, {chunk_mib:g} MiB chunks) pushed to the loopback S3; each run is a
fresh process with an empty `TOKPACK_CACHE_DIR`. Loader: seq_len 8192,
batch 8 (8 x 8192 tokens per step), {mode}, default threads (2) and
prefetch (4), `as_="numpy"`; the loop sleeps {step_ms:g} ms per step as
compute, {steps} steps; the first {warmup} steps are the warm-up, the
steady-state columns pool the rest of {rounds} rounds. First batch: from
`Loader(...)` to the first batch in hand (the dataset is already open).

{table}

{fetch_line}

Reading:
- Steady state: the chunks of the next window are hinted up to 16 steps
  before they are needed, so the consumer's wait is the cost of a `next()`
  from Python. Without hints the host ring (4 batches) hides most fetches,
  but not every window change: there an assembler fetches new chunks itself.
- First batch: the loader hints the step being assembled with the smallest
  step number, so its rows' chunks are fetched side by side (the assembler
  takes the first out of the queue and fetches it itself); without hints
  each assembler fetches its rows' chunks one after another. In window
  mode a step's rows come from the few units of one window, so the first
  step needs few chunks and the baseline is close; the hints count most
  where a step's rows need many chunks (`--shuffle block` or `full`, and
  window changes), which is why the steady state shows no step that waited.
- What this link cannot show: moto and the proxy are Python processes on
  the reader's cores, so fetches in parallel slow each other down, where an
  object store serves each connection at its own rate; the chunks fetched
  side by side above show it, and most of the first batch's time beyond one
  fetch is that. The bandwidth cap is per
  connection, as object stores have it; a shared NIC limit is not modelled.
"""


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        kind, arg = sys.argv[2], json.loads(sys.argv[3])
        out = {"probe": worker_probe, "run": worker_run}[kind](arg)
        print(json.dumps(out))
    else:
        main()
