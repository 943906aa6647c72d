#!/usr/bin/env python3
"""Many remote sources and warm remote reads (not a test): what a Loader over
10, 100 and 1000 remote datasets costs to open, in time, threads and
sockets, and how fast a remote dataset whose chunks are all cached is read,
against the same files on local disk, in the same run.

- sources: N copies of a small dataset served over http:// by a loopback
  server (tests/python's RangeServer, in this process); a fresh worker
  process opens tokpack.Loader([N URLs]) with a cold cache and reads a few
  batches, while a sampler thread reads /proc/self/status (threads) and
  /proc/self/fd (sockets) every millisecond; the sampler is not counted.
  With --baseline-python (another build's interpreter, e.g. main's .venv)
  the same worker runs there too, interleaved, as "before".
- warm: one dataset read with a full shuffle from local disk, from http://
  and from s3:// (moto, SigV4 checked) with a cache that an earlier epoch
  filled, default settings; samples/s after the first batch, ratios against
  local taken within each round, the order rotated each round.

    .venv/bin/python bench/remote_sources_bench.py [--rounds 3] [--report docs/benchmarks.md]
"""
import argparse
import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path

import harness
from harness import REPO, median

BENCH = REPO / "build" / "bench" / "reader_bench"
CLI = REPO / "build" / "tokpack"
SEQ_LEN, BATCH = 2048, 8


# --------------------------------------------------------------------------
# Worker side: one measurement per process, result as one JSON line.

def _threads():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return 0


def _sockets():
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            n += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except OSError:
            pass
    return n


class Sampler(threading.Thread):
    """Peak threads (itself not counted) and sockets of this process."""

    def __init__(self):
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.threads = self.sockets = 0

    def run(self):
        while not self.stop.is_set():
            self.threads = max(self.threads, _threads() - 1)
            self.sockets = max(self.sockets, _sockets())
            self.stop.wait(0.001)

    def finish(self):
        self.stop.set()
        self.join()
        return self.threads, self.sockets


def worker_sources(a):
    import tokpack
    sampler = Sampler()
    sampler.start()
    t0 = time.perf_counter()
    loader = tokpack.Loader(a["urls"], seq_len=a["seq_len"], batch_size=BATCH, seed=1,
                            as_="numpy", max_steps=a["steps"])
    t_open = time.perf_counter() - t0
    steps = 0
    for _ in loader:
        steps += 1
    took = time.perf_counter() - t0
    threads, sockets = sampler.finish()
    return {"open_s": t_open, "seconds": took, "steps": steps, "peak_threads": threads,
            "peak_sockets": sockets, "cores": os.cpu_count()}


def worker_steady(a):
    import tokpack
    t0 = time.perf_counter()
    loader = tokpack.Loader(a["src"], seq_len=SEQ_LEN, batch_size=BATCH, seed=1,
                            shuffle="full", as_="numpy", max_steps=a["steps"])
    first = cpu0 = None
    steps = check = 0
    for batch in loader:
        if first is None:
            first, cpu0 = time.perf_counter(), time.process_time()
        check += int(batch["input_ids"][0, steps % SEQ_LEN])
        steps += 1
    took = time.perf_counter() - first
    cpu = time.process_time() - cpu0
    stats = loader.stats()
    return {"steady_samples_per_s": (steps - 1) * BATCH / took, "checksum": check,
            "cpu_us_per_sample": cpu * 1e6 / ((steps - 1) * BATCH),
            "cache_misses": stats.get("cache_misses", 0)}


# --------------------------------------------------------------------------
# Parent side.

def run_worker(kind, args, env, python=sys.executable):
    return harness.run_child([python, __file__, "--worker", kind, json.dumps(args)],
                             env, timeout=600).result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--counts", default="10,100,1000", help="source counts; empty: none")
    ap.add_argument("--source-tokens", type=int, default=40_000)
    ap.add_argument("--source-steps", type=int, default=50)
    ap.add_argument("--tokens", type=int, default=32_000_000)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline-python", help="also run the sources part with this interpreter")
    ap.add_argument("--skip-warm", action="store_true")
    ap.add_argument("--workdir", default="/tmp/tokpack-sources-bench")
    ap.add_argument("--report", help="write the remote-sources section of this report")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO / "tests" / "python"))
    from remote_servers import RangeServer

    work = Path(args.workdir)
    counts = [int(c) for c in args.counts.split(",") if c]
    small, _ = harness.synthetic_dataset(BENCH, work, args.source_tokens, args.source_tokens)
    served = work / "served"
    for i in range(max(counts, default=0)):
        d = served / f"s{i:04d}"
        if not (d / "manifest.json").exists():
            shutil.copytree(small, d)
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "TOKPACK_"))}
    caches = work / "caches"
    shutil.rmtree(caches, ignore_errors=True)
    caches.mkdir(parents=True)
    n_cache = [0]

    def fresh_cache():
        n_cache[0] += 1
        return str(caches / f"c{n_cache[0]}")

    # seq_len fits a small source several times over.
    seq_len = max(16, args.source_tokens // 8)
    pythons = {"this build": sys.executable}
    if args.baseline_python:
        pythons["before"] = args.baseline_python
    sources = {}
    with RangeServer(served) as server:
        names = [(py, n) for n in counts for py in pythons]

        def measure(name):
            py, n = name
            env = dict(base_env, TOKPACK_CACHE_DIR=fresh_cache())
            urls = [f"{server.url}/s{i:04d}" for i in range(n)]
            return run_worker("sources", {"urls": urls, "steps": args.source_steps,
                                          "seq_len": seq_len}, env, pythons[py])

        sources, failed = harness.interleaved(
            names, args.rounds, measure,
            log=lambda r: f"open {r['open_s']:.2f} s, {r['peak_threads']} threads, "
                          f"{r['peak_sockets']} sockets")
    cores = os.cpu_count()
    lines = ["| remote sources | build | open (median) | peak threads | peak sockets "
             f"| bound: 2 x cores + 16 = {2 * cores + 16} threads |",
             "|---|---|---|---|---|---|"]
    for n in counts:
        for py in pythons:
            rs = sources.get((py, n), [])
            if not rs:
                lines.append(f"| {n} | {py} | failed: {failed.get((py, n), '')[:60]} | | | |")
                continue
            threads = max(r["peak_threads"] for r in rs)
            ok = "within" if threads <= 2 * cores + 16 else "over"
            lines.append(f"| {n} | {py} | {median([r['open_s'] for r in rs]):.2f} s | {threads} "
                         f"| {max(r['peak_sockets'] for r in rs)} | {ok} |")
    sources_table = "\n".join(lines)
    before_note = (" \"before\" is the build given by --baseline-python (one pool of "
                   "prefetch threads and connections per dataset, opened one after another), "
                   "run interleaved with this one." if args.baseline_python else "")
    print(sources_table)

    warm_table = ""
    if not args.skip_warm:
        warm_table = warm(args, base_env, fresh_cache, RangeServer)
        print(warm_table)

    if args.report:
        command = " ".join(["bench/remote_sources_bench.py"] + sys.argv[1:])
        doc = f"""Measured with

    .venv/bin/python {command}

on {harness.machine_line()} (shared with other work, so noisy; every ratio is against
a baseline measured in the same run, rounds interleaved).

**Many sources.** A `tokpack.Loader` over N remote datasets (copies of one of
{args.source_tokens:,} tokens, served over http:// by tests/python's `RangeServer` on
loopback, in the benchmark's process), opened with an empty cache in a fresh process,
then {args.source_steps} batches of {BATCH} read: the time the constructor took (every
manifest and index fetched), and the most threads (the sampling thread not counted) and
sockets the process had at any millisecond. Threads and connections are per process
and storage settings, not per source (docs/remote.md, "Prefetch"), and the sources
open side by side on at most `prefetch_threads` threads.{before_note}

{sources_table}

{warm_table}
"""
        harness.write_section("remote-sources", doc, Path(args.report))


def warm(args, base_env, fresh_cache, RangeServer):
    MotoServer = harness.moto_server_class()
    work = Path(args.workdir)
    base, manifest = harness.synthetic_dataset(BENCH, work, args.tokens, 8_000_000)
    steps = (args.tokens // SEQ_LEN // BATCH - 1) * args.epochs
    cache = fresh_cache()
    results = {}
    with RangeServer(base.parent) as http, MotoServer() as s3:
        env = dict(base_env, TOKPACK_CACHE_DIR=cache, TOKPACK_CACHE_BYTES=str(64 << 30))
        env.update(s3.env())
        s3.client().create_bucket(Bucket="bench")
        import subprocess
        subprocess.run([str(CLI), "push", str(base), "s3://bench/ds"], env=env, check=True,
                       capture_output=True)
        srcs = {"local disk": str(base), "http://": f"{http.url}/{base.name}",
                "s3://": "s3://bench/ds"}
        for name in ("http://", "s3://"):  # Fills the cache: one epoch each.
            run_worker("steady", {"src": srcs[name], "steps": steps // args.epochs}, env)
        results, _ = harness.interleaved(
            list(srcs), args.rounds,
            lambda name: run_worker("steady", {"src": srcs[name], "steps": steps}, env),
            log=lambda r: f"{r['steady_samples_per_s']:,.0f} samples/s, "
                          f"{r['cpu_us_per_sample']:.2f} us CPU per sample, "
                          f"{r['cache_misses']} misses")
    local = [r["steady_samples_per_s"] for r in results["local disk"]]
    lines = [f"**Warm reads.** {args.tokens:,} tokens (uint16, 4 MiB chunks), seq_len {SEQ_LEN}, "
             f"batch {BATCH}, `shuffle=\"full\"`, default settings (lookahead_steps 16, "
             f"2 threads), {args.epochs} epochs after the first batch, from local disk (page "
             "cache), from http:// (`RangeServer`) and from s3:// (moto, SigV4 checked), both "
             "on loopback, with a cache an earlier epoch filled: no chunk is fetched while "
             "timed. CPU per sample is the process's CPU time (all threads) over the samples, "
             "steadier than samples/s on a shared machine.", "",
             "| reader | samples/s after the first batch (median) | vs local disk (median of "
             "per-round ratios) | CPU per sample, all threads (median) | local disk's CPU "
             "per sample over this one's (median of per-round ratios) |",
             "|---|---|---|---|---|"]
    local_cpu = [r["cpu_us_per_sample"] for r in results["local disk"]]
    for name, rs in results.items():
        sps = [r["steady_samples_per_s"] for r in rs]
        cpu = [r["cpu_us_per_sample"] for r in rs]
        ratio = median([s / l for s, l in zip(sps, local)])
        cpu_ratio = median([l / c for c, l in zip(cpu, local_cpu)])
        lines.append(f"| {name} | {median(sps):,.0f} | {ratio:.2f}x | {median(cpu):.2f} us "
                     f"| {cpu_ratio:.2f}x |")
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--worker":
        kind, a = sys.argv[2], json.loads(sys.argv[3])
        r = {"sources": worker_sources, "steady": worker_steady}[kind](a)
        print(json.dumps(r))
    else:
        main()
