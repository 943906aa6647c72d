#!/usr/bin/env python3
"""Streaming at scale (not a test): a dataset at least 8x the chunk cache,
read from a loopback S3 (moto, SigV4 checked) by a world of 4 ranks on two
simulated nodes: ranks 0 and 1 share one cache directory (one node), ranks 2
and 3 share a second one (the other node), each cache limited to
--cache-mib. Every rank is a fresh process; the ranks step in lockstep (a
barrier after each batch, as a collective would), and all four start
together.

Per node it reports:
- bytes fetched / dataset bytes per epoch: the sum over the node's ranks of
  the loader's own counter (Loader.stats()["bytes_fetched"], the chunk
  downloads of that process, its prefetches included; a chunk that the other
  rank of the node downloaded is a cache hit). shuffle="window" runs a whole
  epoch; "full" and "block" (its defaults) run --full-steps / --block-steps
  steps and the figure is extrapolated to the epoch from the second half of
  those steps (bytes fetched in it * epoch steps / its steps), said so in
  the table;
- the peak bytes on disk of the node's cache directory, sampled every 20 ms
  under the cache's own lock (the one its writers hold while they evict and
  add), against the limit;
- samples/s of the node's ranks as fast as they go, against the same dataset
  on local disk read by the same four processes in the same round;
- the consumer's wait per step (time in next()) in a training-like run that
  sleeps --step-ms per step after the barrier: percentiles over the steady
  state (after --warmup-steps) of both ranks, and the warm-up.

    .venv/bin/python bench/streaming_bench.py [--rounds 2] [--report docs/benchmarks.md]
"""
import argparse
import fcntl
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import harness
from harness import REPO, median, percentile
from remote_bench import make_chunked_copy

BENCH = REPO / "build" / "bench" / "reader_bench"
CLI = REPO / "build" / "tokpack"
SEQ_LEN, BATCH, WORLD, PER_NODE = 2048, 8, 4, 2
MiB = 1 << 20


# --------------------------------------------------------------------------
# Worker side: one rank per process, result as one JSON line.

def worker(a):
    import tokpack
    ds = tokpack.Dataset(a["src"])
    kw = dict(seq_len=SEQ_LEN, batch_size=BATCH, seed=1, rank=a["rank"], world_size=WORLD,
              shuffle=a["shuffle"], as_="numpy", dtype="int32")
    kw.update({"max_steps": a["steps"]} if a["steps"] else {"epochs": 1})
    if a.get("window_chunks"):
        kw["window_chunks"] = a["window_chunks"]
    loader = tokpack.Loader(ds, **kw)
    sock = socket.create_connection(("127.0.0.1", a["barrier"]))
    sock.settimeout(600)

    def barrier():
        sock.sendall(b"s")
        if sock.recv(1) != b"g":
            raise RuntimeError("the barrier closed: another rank failed")

    barrier()  # All ranks start together.
    waits = []
    mid = {}
    check = 0
    t0 = time.perf_counter()
    for wait, batch in harness.timed_next(iter(loader)):
        waits.append(wait)
        if len(waits) == a["mark"]:
            mid = loader.stats()
        check += int(batch["input_ids"][0, len(waits) % SEQ_LEN])
        del batch
        barrier()
        if a["step_s"]:
            time.sleep(a["step_s"])  # The model's step; the loader works meanwhile.
    wall = time.perf_counter() - t0
    sock.close()
    st = loader.stats()
    return {"waits": waits, "wall_s": wall, "steps": len(waits), "checksum": check,
            "bytes_fetched": st.get("bytes_fetched", 0), "cache_misses": st.get("cache_misses", 0),
            "mid_bytes_fetched": mid.get("bytes_fetched", 0),
            "cache_hits": st.get("cache_hits", 0), "uncached_reads": st.get("uncached_reads", 0),
            "window": {k: loader.options.get(k) for k in ("shuffle", "window_chunks")}}


# --------------------------------------------------------------------------
# Parent side.

class Barrier:
    """Releases the ranks' step together: each sends a byte per step and
    waits for the reply, sent once every rank has sent. A rank that closes
    while others wait closes them all (they fail instead of hanging)."""

    def __init__(self, n):
        self.n = n
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(n)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        conns = self.conns
        try:
            self.sock.settimeout(900)
            while len(conns) < self.n:
                conns.append(self.sock.accept()[0])
            while True:
                got = [c.recv(1) for c in conns]
                if not all(got):
                    break  # Done (all closed) or a rank failed (some closed).
                for c in conns:
                    c.sendall(b"g")
        except OSError:
            pass
        finally:
            for c in conns:
                c.close()
            self.sock.close()

    def abort(self):
        """Wakes the thread and every waiting rank: a rank has failed."""
        for s in [self.sock] + list(self.conns):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class CacheSampler:
    """Samples the chunk bytes on disk of each cache directory every
    `every` seconds, under the cache-wide lock, and keeps the peak."""

    def __init__(self, dirs, every=0.02):
        self.dirs = dirs
        self.peak = {d: 0 for d in dirs}
        self.samples = 0
        self.every = every
        self.stop_flag = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    @staticmethod
    def bytes_on_disk(d):
        chunks = Path(d) / "chunks"
        if not chunks.exists():
            return 0
        with open(Path(d) / "cache.lock", "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            total = 0
            for p in chunks.iterdir():
                try:
                    total += p.stat().st_size
                except FileNotFoundError:
                    pass
            return total

    def _run(self):
        while not self.stop_flag.is_set():
            for d in self.dirs:
                self.peak[d] = max(self.peak[d], self.bytes_on_disk(d))
            self.samples += 1
            self.stop_flag.wait(self.every)

    def stop(self):
        self.stop_flag.set()
        self.thread.join()
        for d in self.dirs:
            self.peak[d] = max(self.peak[d], self.bytes_on_disk(d))
        return self.peak


def run_world(src, shuffle, steps, step_s, caches, base_env, window_chunks):
    """The four ranks at once; caches: one directory per node, or None
    (local disk). Returns one dict per node."""
    barrier = Barrier(WORLD)
    sampler = CacheSampler(caches) if caches else None
    results = [None] * WORLD
    errors = []

    def rank(r):
        env = dict(base_env)
        if caches:
            env["TOKPACK_CACHE_DIR"] = caches[r // PER_NODE]
        a = {"src": src, "rank": r, "shuffle": shuffle, "steps": steps, "step_s": step_s,
             "mark": steps // 2,
             "barrier": barrier.port, "window_chunks": window_chunks}
        try:
            results[r] = harness.run_child(
                [sys.executable, __file__, "--worker", json.dumps(a)], env, timeout=1200).result
        except harness.ChildFailed as e:
            errors.append(str(e))
            barrier.abort()

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(WORLD)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    peaks = sampler.stop() if sampler else {}
    if errors:
        raise harness.ChildFailed(errors[0])
    nodes = []
    for n in range(WORLD // PER_NODE):
        rs = results[n * PER_NODE:(n + 1) * PER_NODE]
        steps_run = rs[0]["steps"]
        nodes.append({
            "steps": steps_run, "wall_s": max(r["wall_s"] for r in rs),
            "samples_per_s": sum(r["steps"] for r in rs) * BATCH / max(r["wall_s"] for r in rs),
            "bytes_fetched": sum(r["bytes_fetched"] for r in rs),
            "mid_bytes_fetched": sum(r["mid_bytes_fetched"] for r in rs),
            "cache_misses": sum(r["cache_misses"] for r in rs),
            "cache_hits": sum(r["cache_hits"] for r in rs),
            "uncached_reads": sum(r["uncached_reads"] for r in rs),
            "peak_cache_bytes": peaks.get(caches[n], 0) if caches else 0,
            "waits": [w for r in rs for w in r["waits"]],
            "window": rs[0]["window"]})
    return nodes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=72_000_000)
    ap.add_argument("--shard-tokens", type=int, default=4_000_000,
                    help="small shards: moto reads a whole object for every ranged GET")
    ap.add_argument("--chunk-bytes", type=int, default=MiB)
    ap.add_argument("--cache-mib", type=int, default=16)
    ap.add_argument("--window-chunks", type=int, default=0, help="0: derived from the cache")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--full-steps", type=int, default=32,
                    help="steps of shuffle=full measured (extrapolated to the epoch)")
    ap.add_argument("--block-steps", type=int, default=96,
                    help="steps of shuffle=block measured (extrapolated to the epoch)")
    ap.add_argument("--local-epochs", type=int, default=4,
                    help="epochs of the unpaced local-disk baseline")
    ap.add_argument("--step-ms", type=float, default=20)
    ap.add_argument("--paced-steps", type=int, default=0,
                    help="steps of the paced (training-like) runs; 0: one epoch")
    ap.add_argument("--warmup-steps", type=int, default=20)
    ap.add_argument("--modes", default="window,full,block")
    ap.add_argument("--workdir", default="/tmp/tokpack-streaming-bench")
    ap.add_argument("--report", help="write the streaming section of this report")
    args = ap.parse_args()

    MotoServer = harness.moto_server_class()
    modes = [m for m in args.modes.split(",") if m]
    work = Path(args.workdir)
    base, _ = harness.synthetic_dataset(BENCH, work, args.tokens, args.shard_tokens)
    ds = work / f"{base.name}-c{args.chunk_bytes}"
    make_chunked_copy(base, ds, args.chunk_bytes)
    manifest = json.loads((ds / "manifest.json").read_text())
    bin_bytes = sum(s["bin"]["bytes"] for s in manifest["shards"])
    limit = args.cache_mib * MiB
    n_samples = (bin_bytes // 2 - 1) // SEQ_LEN
    epoch_steps = n_samples // (WORLD * BATCH)  # full and block: every sample once.
    caches_root = work / "caches"
    subprocess.run(["rm", "-rf", str(caches_root)], check=True)
    n_cache = [0]

    def fresh_caches():
        n_cache[0] += 1
        return [str(caches_root / f"r{n_cache[0]}-node{n}") for n in range(WORLD // PER_NODE)]

    steps_of = {"window": 0, "full": args.full_steps, "block": args.block_steps}
    server = MotoServer().start()
    try:
        base_env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("AWS_", "TOKPACK_"))}
        base_env.update(server.env())
        base_env["TOKPACK_CACHE_BYTES"] = str(limit)
        url = "s3://bench/streaming"
        server.client().create_bucket(Bucket="bench")
        t0 = time.perf_counter()
        subprocess.run([str(CLI), "push", str(ds), url], env=base_env, check=True,
                       capture_output=True)
        print(f"pushed {bin_bytes / 1e6:.0f} MB in {time.perf_counter() - t0:.1f} s",
              file=sys.stderr)

        def measure(name):
            kind, mode = name.split(":")
            paced = kind == "paced"
            step_s = args.step_ms / 1000 if paced else 0
            if mode == "local":
                # Several epochs unpaced: one takes well under a second.
                steps = args.paced_steps if paced else args.local_epochs * epoch_steps
                return run_world(str(ds), "full", steps, step_s, None, base_env, 0)
            steps = args.paced_steps if paced and mode == "window" else steps_of[mode]
            return run_world(url, mode, steps, step_s, fresh_caches(), base_env,
                             args.window_chunks)

        names = ["epoch:local"] + [f"epoch:{m}" for m in modes] + ["paced:local"] + (
            ["paced:window"] if "window" in modes else [])

        def log(nodes):
            return ", ".join(f"node {i}: {n['samples_per_s']:,.0f} samples/s, "
                             f"{n['bytes_fetched'] / 1e6:,.0f} MB fetched, peak cache "
                             f"{n['peak_cache_bytes'] / MiB:.1f} MiB" for i, n in enumerate(nodes))

        results, failed = harness.interleaved(names, args.rounds, measure, log=log)
    finally:
        server.stop()
    (work / "results.json").write_text(json.dumps({"results": results, "failed": failed}))

    # ----------------------------------------------------------------------
    # Tables.
    E = {k.split(":")[1]: v for k, v in results.items() if k.startswith("epoch:")}
    P = {k.split(":")[1]: v for k, v in results.items() if k.startswith("paced:")}
    nodes = range(WORLD // PER_NODE)
    label = {"window": 'shuffle="window"', "full": 'shuffle="full"',
             "block": 'shuffle="block" (defaults)', "local": "local disk"}
    amp_rows = ["| shuffle | node | steps measured (of the epoch) | bytes fetched / dataset "
                "bytes per epoch | MB fetched | chunk downloads | peak cache on disk "
                f"(limit {args.cache_mib} MiB) | samples/s | vs local disk | MB/s fetched |",
                "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    over_limit = False
    for mode in modes:
        for n in nodes:
            rs = [r[n] for r in E.get(mode, [])]
            if not rs:
                continue
            steps = rs[0]["steps"]
            whole = mode == "window" or steps >= epoch_steps
            # A part of an epoch: the second half's rate (the first half
            # fills the cache; both halves end with lookahead_steps of
            # prefetches ahead), times the epoch's steps.
            half = steps - steps // 2
            amp = median([(r["bytes_fetched"] if whole else (r["bytes_fetched"] - r[
                "mid_bytes_fetched"]) * epoch_steps / half) / bin_bytes for r in rs])
            peak = max(r["peak_cache_bytes"] for r in rs)
            over_limit |= peak > limit
            vs = median([r["samples_per_s"] / l[n]["samples_per_s"]
                         for r, l in zip(rs, E["local"])])
            measured = ("one epoch" if whole else
                        f"{steps} of {epoch_steps:,} (extrapolated from the last {half})")
            amp_rows.append(
                f"| {label[mode]} | {n} | {measured} | {amp:,.2f} | "
                f"{median([r['bytes_fetched'] for r in rs]) / 1e6:,.0f} | "
                f"{median([r['cache_misses'] for r in rs]):,.0f} | {peak / MiB:.1f} MiB | "
                f"{median([r['samples_per_s'] for r in rs]):,.0f} | {vs:.3g}x | "
                f"{median([r['bytes_fetched'] / r['wall_s'] for r in rs]) / 1e6:,.0f} |")
    for n in nodes:
        rs = [r[n] for r in E["local"]]
        amp_rows.append(f"| {label['local']} (full) | {n} | {args.local_epochs} epochs | | | | | "
                        f"{median([r['samples_per_s'] for r in rs]):,.0f} | 1x | |")
    amp_table = "\n".join(amp_rows)

    wait_rows = [f"| source | node | warm-up: wait in the first {args.warmup_steps} steps "
                 "| p50 | p90 | p99 | max | mean wait / step time | bytes fetched / dataset bytes |",
                 "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for mode, rounds in P.items():
        for n in nodes:
            rs = [r[n] for r in rounds]
            steady = []
            warm = []
            for r in rs:
                per_rank = len(r["waits"]) // PER_NODE
                for k in range(PER_NODE):
                    w = r["waits"][k * per_rank:(k + 1) * per_rank]
                    warm.append(sum(w[:args.warmup_steps]))
                    steady += w[args.warmup_steps:]
            mean_wait = sum(steady) / len(steady) if steady else 0
            wait_rows.append(
                f"| {label[mode]} | {n} | {median(warm) * 1e3:,.0f} ms | "
                f"{percentile(steady, 50) * 1e6:,.0f} us | {percentile(steady, 90) * 1e6:,.0f} us | "
                f"{percentile(steady, 99) * 1e6:,.0f} us | {max(steady) * 1e3:,.1f} ms | "
                f"{mean_wait / (args.step_ms / 1000):.2%} | " + (
                    f"{median([r['bytes_fetched'] / bin_bytes for r in rs]):.2f} |"
                    if mode != "local" else " |"))
    wait_table = "\n".join(wait_rows)
    window = next((r[0]["window"] for r in E.get("window", [])), {})
    print(amp_table, wait_table, sep="\n\n")
    if over_limit:
        print("a cache went over its limit", file=sys.stderr)
    if args.report:
        doc = DOC.format(
            cmd=".venv/bin/python bench/streaming_bench.py --report docs/benchmarks.md",
            machine=harness.machine_line(), tokens=args.tokens, mb=bin_bytes / 1e6,
            shards=len(manifest["shards"]), chunk_kib=args.chunk_bytes // 1024,
            cache_mib=args.cache_mib, ratio=bin_bytes / limit, rounds=args.rounds,
            epoch_steps=epoch_steps, step_ms=args.step_ms,
            paced=f"{args.paced_steps} steps" if args.paced_steps else "one epoch",
            window=json.dumps(window) if window else "(not measured: --modes has no window)",
            amp_table=amp_table, wait_table=wait_table,
            failed="" if not failed else "\n\nFailed: " + "; ".join(
                f"{k}: {v}" for k, v in failed.items()))
        harness.write_section("streaming", doc, Path(args.report))


DOC = """Measured with

    {cmd}

on {machine} (shared with other work, so noisy; the S3 server is moto, in
Python on loopback, sharing the two cores with the four ranks).

Setup: {tokens:,} random uint16 tokens ({mb:,.0f} MB in {shards} shards,
`chunk_bytes` {chunk_kib:,} KiB) pushed once to moto; each node's cache is
limited to {cache_mib} MiB (`TOKPACK_CACHE_BYTES`), so the dataset is
{ratio:.1f}x the cache. A world of 4 ranks (seq_len 2048, batch 8, seed 1,
default threads, prefetch and lookahead_steps): ranks 0 and 1 share one cache
directory (node 0), ranks 2 and 3 another (node 1). Each rank is a fresh
process; the ranks step in lockstep (a barrier after each batch, like a
collective). One epoch is {epoch_steps:,} steps for full and block. The
window mode's settings as the loader resolved them (`Loader.options`):
{window}. Median of {rounds}
rounds, configurations interleaved; "vs local disk" is the node's samples/s
over the same node's with the same four processes reading the dataset from
local disk in the same round.

### Bytes fetched per epoch, cache bound and throughput

Bytes fetched is the loader's own counter (`Loader.stats()["bytes_fetched"]`)
summed over the node's two ranks. Full and block run part of an epoch: their
figure is the rate of the second half of the steps run (after the cache has
filled; prefetches run `lookahead_steps` ahead at both ends), times the steps
of an epoch. The peak is sampled every 20 ms under the cache's lock.

{amp_table}

### Consumer wait per step

A training-like loop: `next()`, the barrier, then sleep {step_ms:g} ms (the
model's step), for {paced}, on a cold cache; the wait is the time `next()`
took. The percentiles pool the steady-state steps of both ranks of a node.

{wait_table}{failed}

### Reading

- Bytes: with the window mode each node downloads the dataset about once
  per epoch, and the two ranks of a node share each download (one fetch
  per chunk per node); a full shuffle downloads about a chunk per sample
  once the cache is full, and block's defaults (64-sample blocks) are not
  aligned to chunks. The peak column is the cache bound: it never passes
  the limit, in any mode.
- Speed: a node that reads the dataset from the store once per epoch reads
  at most as fast as the store delivers it (the MB/s column): here a
  Python moto on loopback, sharing two cores with four ranks, so "vs local
  disk" measures moto, not tokpack or a real object store. The wait table
  is the figure that matters for training: whether the loader keeps up
  with a step time when the fetch bandwidth is enough.
"""


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--worker":
        print(json.dumps(worker(json.loads(sys.argv[2]))))
    else:
        main()
