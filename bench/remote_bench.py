#!/usr/bin/env python3
"""Remote-read benchmark (not a test): tokpack's Loader reading a dataset from
a loopback S3 server (moto, SigV4 checked) against the same dataset on local
disk, in the same run.

- throughput over one epoch (seq_len 2048, batch 8, full shuffle) from local
  disk, from S3 with a cold (empty) chunk cache and from S3 with the cache
  that cold epoch filled ("warm"); ratios against local, per round;
- the cost of one window read (Dataset::ReadTokens of 2049 tokens, one
  thread, `reader_bench windows`) from local disk and from the warm cache,
  in the same rounds;
- the consumer's wait per step in a training-like loop (a fixed step time
  slept per step), cold cache, with lookahead_steps 16 and 0, and from local
  disk for comparison;
- cold-epoch throughput for several chunk sizes (the manifest's chunk_bytes);
- moto's raw bandwidth for ranged GETs (boto3), as context.

Every measurement runs in a fresh subprocess (clean environment, cache
handle and page-cache state of the loader's own process); the moto server
runs in this process and counts the requests it serves.

    .venv/bin/python bench/remote_bench.py [--tokens 64000000] [--rounds 3] \
        [--report docs/benchmarks.md]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from statistics import mean

import harness
from harness import REPO, median, percentile
BENCH = REPO / "build" / "bench" / "reader_bench"
CLI = REPO / "build" / "tokpack"
SEQ_LEN, BATCH = 2048, 8
MiB = 1 << 20


# --------------------------------------------------------------------------
# Worker side: one measurement per process, result as one JSON line.

def _dir_stats(d):
    files = [f for f in Path(d).glob("chunks/*") if f.is_file()] if d else []
    return len(files), sum(f.stat().st_size for f in files)


def worker_epoch(a):
    """One pass over the data (a["steps"] steps), timed from Dataset open."""
    import tokpack
    t0 = time.perf_counter()
    ds = tokpack.Dataset(a["src"])
    t_open = time.perf_counter() - t0
    loader = tokpack.Loader(ds, seq_len=SEQ_LEN, batch_size=BATCH, seed=1,
                            shuffle=a["shuffle"], lookahead_steps=a["lookahead"],
                            as_="numpy", max_steps=a["steps"])
    first = None
    steps = 0
    check = 0
    for batch in loader:
        if first is None:
            first = time.perf_counter() - t0
        check += int(batch["input_ids"][0, steps % SEQ_LEN])
        steps += 1
    took = time.perf_counter() - t0
    files, nbytes = _dir_stats(os.environ.get("TOKPACK_CACHE_DIR") if a["remote"] else None)
    return {"open_s": t_open, "first_batch_s": first, "seconds": took, "steps": steps,
            "samples_per_s": steps * BATCH / took,
            "steady_samples_per_s": (steps - 1) * BATCH / (took - first),
            "cache_files": files,
            "cache_bytes": nbytes, "checksum": check,
            "wait_total_s": loader.stats()["wait_seconds_total"]}


def worker_wait(a):
    """A training-like loop: take a batch, 'compute' for step_s, repeat.
    Returns the consumer's wait in next() for every step."""
    import tokpack
    ds = tokpack.Dataset(a["src"])
    loader = tokpack.Loader(ds, seq_len=SEQ_LEN, batch_size=BATCH, seed=1,
                            shuffle=a["shuffle"], lookahead_steps=a["lookahead"],
                            as_="numpy", max_steps=a["steps"])
    waits = []
    t_start = time.perf_counter()
    for wait, batch in harness.timed_next(iter(loader)):
        waits.append(wait)
        _ = int(batch["input_ids"][0, 0])
        del batch
        time.sleep(a["step_s"])  # The model's step; the loader works meanwhile.
    st = loader.stats()
    files, nbytes = _dir_stats(os.environ.get("TOKPACK_CACHE_DIR") if a["remote"] else None)
    return {"waits": waits, "wall_s": time.perf_counter() - t_start,
            "stats_wait_total_s": st["wait_seconds_total"],
            "stats_wait_max_s": st["wait_seconds_max"],
            "cache_files": files, "cache_bytes": nbytes}


# --------------------------------------------------------------------------
# Parent side.

class RequestCounter:
    """WSGI middleware in front of moto: counts requests and the bytes asked
    for by ranged GETs, so that we see what the reader sends."""

    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        with getattr(self, "lock", threading.Lock()):
            self.gets = self.ranged = self.range_bytes = self.other = 0

    def snapshot(self):
        with self.lock:
            return {"gets": self.gets, "ranged_gets": self.ranged,
                    "range_bytes": self.range_bytes, "other": self.other}

    def __call__(self, environ, start_response):
        rng = environ.get("HTTP_RANGE")
        with self.lock:
            if environ.get("REQUEST_METHOD") == "GET":
                self.gets += 1
                if rng and rng.startswith("bytes="):
                    self.ranged += 1
                    a, _, b = rng[6:].partition("-")
                    if a and b:
                        self.range_bytes += int(b) - int(a) + 1
            else:
                self.other += 1
        return self.app(environ, start_response)


def run_worker(kind, args, env):
    return harness.run_child([sys.executable, __file__, "--worker", kind, json.dumps(args)],
                             env).result


def make_chunked_copy(base, dst, chunk_bytes):
    """The dataset at `base` with another chunk size: `tokpack import
    --chunk-bytes` writes a manifest over the same .bin/.idx (with a relative
    path to them), which we rewrite to sit beside hard links of the files."""
    if (dst / "manifest.json").exists():
        return
    tmp = dst.parent / (dst.name + ".import")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(dst, ignore_errors=True)
    prefixes = sorted(str(f.with_suffix("")) for f in base.glob("shard-*.bin"))
    subprocess.run([str(CLI), "import", *prefixes, "-o", str(tmp),
                    "--chunk-bytes", str(chunk_bytes)], check=True, capture_output=True)
    m = json.loads((tmp / "manifest.json").read_text())
    for s in m["shards"]:
        name = Path(s["path"]).name
        s["path"] = name
    dst.mkdir(parents=True)
    for s in m["shards"]:
        for ext in (".bin", ".idx"):
            os.link(base / (s["path"] + ext), dst / (s["path"] + ext))
    (dst / "manifest.json").write_text(json.dumps(m, indent=2))
    shutil.rmtree(tmp)


def raw_bandwidth(client, bucket, key, size, part=4 * MiB, n=24, threads=8):
    """MB/s of ranged GETs of `part` bytes, one at a time and `threads` at once."""
    def get(i):
        start = (i * part) % (size - part)
        body = client.get_object(Bucket=bucket, Key=key,
                                 Range=f"bytes={start}-{start + part - 1}")["Body"].read()
        assert len(body) == part
    get(0)
    t0 = time.perf_counter()
    for i in range(n):
        get(i)
    seq = n * part / (time.perf_counter() - t0) / 1e6
    with ThreadPoolExecutor(threads) as ex:
        t0 = time.perf_counter()
        list(ex.map(get, range(n * 2)))
        par = n * 2 * part / (time.perf_counter() - t0) / 1e6
    return seq, par


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=64_000_000)
    ap.add_argument("--shard-tokens", type=int, default=8_000_000,
                    help="small shards: moto reads a whole object for every ranged GET")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--wait-rounds", type=int, default=2)
    ap.add_argument("--step-ms", type=float, default=50)
    ap.add_argument("--wait-steps", type=int, default=200)
    ap.add_argument("--warmup-steps", type=int, default=20)
    ap.add_argument("--chunk-sizes", default="262144,1048576,4194304,16777216",
                    help="chunk_bytes values for the cold-epoch sweep ('' to skip)")
    ap.add_argument("--pairs", type=int, default=3,
                    help="warm/local pairs per round for the steady-state and window tables")
    ap.add_argument("--steady-epochs", type=int, default=4,
                    help="epochs of the warm steady-state measurement")
    ap.add_argument("--windows", type=int, default=200_000,
                    help="random windows timed per per-window measurement")
    ap.add_argument("--workdir", default="/tmp/tokpack-remote-bench")
    ap.add_argument("--report", help="write the remote section of this report")
    args = ap.parse_args()

    MotoServer = harness.moto_server_class()
    work = Path(args.workdir)
    base, manifest = harness.synthetic_dataset(BENCH, work, args.tokens, args.shard_tokens)
    default_chunk = manifest["chunk_bytes"]
    bin_bytes = sum(s["bin"]["bytes"] for s in manifest["shards"])
    chunk_sizes = [int(c) for c in args.chunk_sizes.split(",") if c]
    variants = {c: (base if c == default_chunk else work / f"{base.name}-c{c}")
                for c in chunk_sizes}
    for c, d in variants.items():
        if d != base:
            make_chunked_copy(base, d, c)
    steps_epoch = args.tokens // SEQ_LEN // BATCH - 1  # One pass (the last sample needs L+1).
    caches = work / "caches"
    shutil.rmtree(caches, ignore_errors=True)
    caches.mkdir(parents=True)
    n_cache = [0]

    def fresh_cache():
        n_cache[0] += 1
        return str(caches / f"c{n_cache[0]}")

    results = {"epoch": {}, "wait": {}, "chunks": {}, "window": {}, "steady": {}}
    server = MotoServer().start()
    try:
        counter = RequestCounter(server._moto._server.app)
        server._moto._server.app = counter
        s3 = server.client()
        s3.create_bucket(Bucket="bench")
        base_env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("AWS_", "TOKPACK_"))}
        base_env.update(server.env())
        base_env["TOKPACK_CACHE_BYTES"] = str(64 << 30)

        urls = {}
        push_s = {}
        for c in sorted(set([default_chunk] + chunk_sizes)):
            d = variants.get(c, base)
            urls[c] = f"s3://bench/c{c}"
            t0 = time.perf_counter()
            subprocess.run([str(CLI), "push", str(d), urls[c]], env=base_env, check=True,
                           capture_output=True)
            push_s[c] = time.perf_counter() - t0
        print(f"pushed {len(urls)} copies; {bin_bytes / 1e6:.0f} MB took "
              f"{push_s[default_chunk]:.1f} s", file=sys.stderr)
        # push writes the files under a generation prefix that its manifest names.
        pushed = json.loads(s3.get_object(Bucket="bench", Key=f"c{default_chunk}/manifest.json")
                            ["Body"].read())
        key = f"c{default_chunk}/{pushed['shards'][0]['path']}.bin"
        shard_bytes = manifest["shards"][0]["bin"]["bytes"]
        bw_seq, bw_par = raw_bandwidth(s3, "bench", key, shard_bytes)
        # moto copies the whole object for each ranged GET: show what that costs.
        big = 8 * shard_bytes
        s3.put_object(Bucket="bench", Key="big.bin", Body=b"\0" * big)
        bw_big, _ = raw_bandwidth(s3, "bench", "big.bin", big, n=6, threads=1)
        print(f"moto ranged 4 MiB GETs: {bw_seq:.0f} MB/s sequential, {bw_par:.0f} MB/s "
              f"with 8 threads; {bw_big:.0f} MB/s from a {big / 1e6:.0f} MB object",
              file=sys.stderr)

        url = urls[default_chunk]

        def epoch(src, remote, cache=None, lookahead=16, epochs=1):
            env = dict(base_env)
            if cache:
                env["TOKPACK_CACHE_DIR"] = cache
            counter.reset()
            r = run_worker("epoch", {"src": src, "remote": remote, "shuffle": True,
                                     "lookahead": lookahead, "steps": steps_epoch * epochs},
                           env)
            r.update(counter.snapshot())
            return r

        def windows(src, cache=None):
            env = dict(base_env)
            if cache:
                env["TOKPACK_CACHE_DIR"] = cache
            return harness.run_child([BENCH, "windows", src, args.windows, SEQ_LEN], env).result

        # (a)-(c): interleaved rounds; the order of local and remote alternates.
        for rnd in range(args.rounds):
            order = ["local", "s3"] if rnd % 2 == 0 else ["s3", "local"]
            for what in order:
                if what == "local":
                    r = epoch(str(base), False)
                    results["epoch"].setdefault("local", []).append(r)
                else:
                    cache = fresh_cache()
                    results["epoch"].setdefault("cold", []).append(epoch(url, True, cache))
                    results["epoch"].setdefault("warm", []).append(epoch(url, True, cache))
                    results["epoch"].setdefault("warm0", []).append(
                        epoch(url, True, cache, lookahead=0))
            # Warm against local in back-to-back pairs (the machine's load
            # drifts), order alternating: steady state, then single windows.
            for p in range(args.pairs):
                for what in (order if p % 2 == 0 else order[::-1]):
                    if what == "local":
                        results["steady"].setdefault("local", []).append(
                            epoch(str(base), False, epochs=args.steady_epochs))
                    else:
                        results["steady"].setdefault("s3", []).append(
                            epoch(url, True, cache, epochs=args.steady_epochs))
                for what in (order if p % 2 == 0 else order[::-1]):
                    if what == "local":
                        results["window"].setdefault("local", []).append(windows(str(base)))
                    else:
                        results["window"].setdefault("s3", []).append(windows(url, cache))
            print(f"round {rnd}: " + ", ".join(
                f"{k} {v[-1]['samples_per_s']:,.0f} samples/s"
                for k, v in results["epoch"].items()) + "; steady " + ", ".join(
                f"{k} {v[-1]['steady_samples_per_s']:,.0f} samples/s"
                for k, v in results["steady"].items()) + "; per window " + ", ".join(
                f"{k} {v[-1]['cpu_us_per_window']:.2f} us CPU"
                for k, v in results["window"].items()), file=sys.stderr)

        # (d): steady-state wait per step.
        wait_cfgs = [("local disk", str(base), False, 16),
                     ("s3, cold cache, lookahead_steps=16", url, True, 16),
                     ("s3, cold cache, lookahead_steps=0", url, True, 0)]
        for rnd in range(args.wait_rounds):
            cfgs = wait_cfgs if rnd % 2 == 0 else list(reversed(wait_cfgs))
            for name, src, remote, look in cfgs:
                env = dict(base_env)
                if remote:
                    env["TOKPACK_CACHE_DIR"] = fresh_cache()
                counter.reset()
                r = run_worker("wait", {"src": src, "remote": remote, "shuffle": True,
                                        "lookahead": look, "steps": args.wait_steps,
                                        "step_s": args.step_ms / 1000}, env)
                r.update(counter.snapshot())
                results["wait"].setdefault(name, []).append(r)
                w = r["waits"][args.warmup_steps:]
                print(f"wait round {rnd} {name}: warm-up {sum(r['waits'][:args.warmup_steps]):.3f}"
                      f" s, steady mean {mean(w) * 1e3:.3f} ms max "
                      f"{max(w) * 1e3:.2f} ms", file=sys.stderr)

        # Chunk-size sweep: cold epochs, interleaved over rounds.
        for rnd in range(min(2, args.rounds) if chunk_sizes else 0):
            for c in (chunk_sizes if rnd % 2 == 0 else list(reversed(chunk_sizes))):
                r = epoch(urls[c], True, fresh_cache())
                results["chunks"].setdefault(c, []).append(r)
                print(f"chunks round {rnd} {c}: {r['samples_per_s']:,.0f} samples/s, "
                      f"{r['ranged_gets']} GETs", file=sys.stderr)
            r = epoch(str(base), False)
            results["chunks"].setdefault("local", []).append(r)
    finally:
        server.stop()

    # ----------------------------------------------------------------------
    # Tables.
    E = results["epoch"]
    med = median
    loc = [r["samples_per_s"] for r in E["local"]]
    lines = ["| reader | samples/s (median) | vs local disk (median of per-round ratios) "
             "| time to first batch | ranged GETs | MB fetched |",
             "|---|---|---|---|---|---|"]
    for name, label in (("local", "local disk (page cache)"),
                        ("cold", "s3, cold cache (empty cache dir)"),
                        ("warm", "s3, warm cache (same cache dir again)"),
                        ("warm0", "s3, warm cache, lookahead_steps=0")):
        sps = [r["samples_per_s"] for r in E[name]]
        ratio = med([s / l for s, l in zip(sps, loc)])
        first = med([r["first_batch_s"] for r in E[name]])
        gets = int(med([r["ranged_gets"] for r in E[name]])) if name != "local" else ""
        mb = f"{med([r['range_bytes'] for r in E[name]]) / 1e6:,.0f}" if name != "local" else ""
        lines.append(f"| {label} | {med(sps):,.0f} | {ratio:.3f}x | {first * 1e3:,.0f} ms "
                     f"| {gets} | {mb} |")
    epoch_table = "\n".join(lines)

    S = results["steady"]
    sl = ["| reader | samples/s after the first batch (median) | vs local disk (median of "
          "per-pair ratios) |", "|---|---|---|"]
    for name, label in (("local", "local disk (page cache)"),
                        ("s3", "s3, warm cache, lookahead_steps=16")):
        ratio = med([r["steady_samples_per_s"] / l["steady_samples_per_s"]
                     for r, l in zip(S[name], S["local"])])
        sl.append(f"| {label} | {med([r['steady_samples_per_s'] for r in S[name]]):,.0f} "
                  f"| {ratio:.3f}x |")
    steady_table = "\n".join(sl)

    Wn = results["window"]
    wl = ["| reader | CPU us per window (median) | wall us per window (median) "
          "| s3 vs local, CPU time (median of per-pair ratios) |", "|---|---|---|---|"]
    for name, label in (("local", "local disk (page cache)"), ("s3", "s3, warm cache")):
        ratio = med([l["cpu_us_per_window"] / r["cpu_us_per_window"]
                     for l, r in zip(Wn["local"], Wn[name])])
        wl.append(f"| {label} | {med([r['cpu_us_per_window'] for r in Wn[name]]):.2f} "
                  f"| {med([r['us_per_window'] for r in Wn[name]]):.2f} | {ratio:.3f}x |")
    window_table = "\n".join(wl)

    W = results["wait"]
    wl = ["| source | warm-up: wait in first %d steps | steady state: mean wait / step | p50 "
          "| p99 | max | steps that waited > 1 ms | ranged GETs | MB fetched |"
          % args.warmup_steps, "|---|---|---|---|---|---|---|---|---|"]
    for name, _, _, _ in wait_cfgs:
        rs = W[name]
        steady = [w for r in rs for w in r["waits"][args.warmup_steps:]]
        warm = med([sum(r["waits"][:args.warmup_steps]) for r in rs])
        slow = sum(1 for w in steady if w > 1e-3)
        gets = int(med([r["ranged_gets"] for r in rs])) if "s3" in name else ""
        mb = f"{med([r['range_bytes'] for r in rs]) / 1e6:,.0f}" if "s3" in name else ""
        wl.append(f"| {name} | {warm * 1e3:,.1f} ms | {mean(steady) * 1e6:,.0f} us | "
                  f"{percentile(steady, 50) * 1e6:,.0f} us | {percentile(steady, 99) * 1e6:,.0f} us | "
                  f"{max(steady) * 1e3:,.2f} ms | {slow} of {len(steady)} | {gets} | {mb} |")
    wait_table = "\n".join(wl)

    C = results["chunks"]
    chunk_table = ""
    if chunk_sizes:
        cl = ["| chunk_bytes | cold samples/s (median) | vs local disk | ranged GETs | "
              "MB fetched | time to first batch |", "|---|---|---|---|---|---|"]
        cloc = med([r["samples_per_s"] for r in C["local"]])
        for c in chunk_sizes:
            rs = C[c]
            sps = med([r["samples_per_s"] for r in rs])
            cl.append(f"| {c // 1024:,} KiB | {sps:,.0f} | {sps / cloc:.3f}x | "
                      f"{int(med([r['ranged_gets'] for r in rs]))} | "
                      f"{med([r['range_bytes'] for r in rs]) / 1e6:,.0f} | "
                      f"{med([r['first_batch_s'] for r in rs]) * 1e3:,.0f} ms |")
        chunk_table = "\n".join(cl)

    context = (f"moto's raw bandwidth on this machine (boto3, ranged GETs of 4 MiB from a "
               f"{shard_bytes / 1e6:,.0f} MB shard object): "
               f"{bw_seq:,.0f} MB/s one at a time, {bw_par:,.0f} MB/s with 8 at once; "
               f"from a {big / 1e6:,.0f} MB object {bw_big:,.0f} MB/s one at a time (moto "
               f"copies the whole object for every ranged GET, so its cost per request "
               f"grows with the object, which is why the shards here are small). "
               f"`tokpack push` of the {bin_bytes / 1e6:,.0f} MB dataset took "
               f"{push_s[default_chunk]:.1f} s.")
    print(epoch_table, steady_table, window_table, wait_table, chunk_table, context, sep="\n\n")
    (work / "results.json").write_text(json.dumps(
        {"results": {k: {str(kk): vv for kk, vv in v.items()} for k, v in results.items()},
         "bw": [bw_seq, bw_par, bw_big], "push_s": push_s}, indent=1))

    if args.report:
        doc = DOC.format(
            cmd=f".venv/bin/python bench/remote_bench.py --report {args.report}",
            machine=harness.machine_line(), tokens=args.tokens, mb=bin_bytes / 1e6,
            chunk_kib=default_chunk // 1024,
            nchunks=sum(-(-s["bin"]["bytes"] // default_chunk) for s in manifest["shards"]),
            nshards=len(manifest["shards"]), shard_mb=shard_bytes / 1e6,
            steps=steps_epoch, rounds=args.rounds, wait_rounds=args.wait_rounds,
            step_ms=args.step_ms, wait_steps=args.wait_steps, warmup=args.warmup_steps,
            epoch_table=epoch_table, window_table=window_table, windows=args.windows,
            steady_table=steady_table, steady_epochs=args.steady_epochs,
            pairs=args.pairs, npairs=args.pairs * args.rounds,
            wait_table=wait_table,
            chunk_table=chunk_table or "(skipped)", context=context,
            reading=READING)
        harness.write_section("remote", doc, Path(args.report))


DOC = """Measured with

    {cmd}

on {machine} (shared with other work, so noisy; no GPU; every
ratio is against a baseline measured in the same run, rounds interleaved).
The S3 server is moto (`tests/python/remote_servers.py`'s `MotoServer`, with
SigV4 checking) on loopback, in Python: far slower than real S3, and it
shares the two cores with the reader.

Setup: synthetic uint16 dataset of {tokens:,} tokens ({mb:,.0f} MB in
{nshards} shards of up to {shard_mb:,.0f} MB, `chunk_bytes` {chunk_kib:,} KiB = {nchunks} chunks), made by
`build/bench/reader_bench make`, pushed once with `build/tokpack push`.
Loader: seq_len 2048, batch 8, full shuffle, seed 1, int64, `as_="numpy"`,
default threads (2) and prefetch (4). Each measurement is a fresh
subprocess; "cold" is an empty `TOKPACK_CACHE_DIR`, "warm" is the same
directory again right after, `TOKPACK_CACHE_BYTES` 64 GiB. Ranged GETs and
MB fetched are counted by a WSGI wrapper in front of moto.

### Throughput over one epoch

One epoch = {steps:,} steps, timed from `tokpack.Dataset(...)` to the last
batch (so it includes opening the dataset and, when cold, downloading the
data); median of {rounds} rounds.

{epoch_table}

### Warm steady state

An epoch here takes a tenth of a second, so the table above weighs opening
the dataset (the manifest from S3) and the first batch, and the machine's
noise, heavily. This one runs {steady_epochs} epochs per measurement and counts
only the batches after the first: the warm cache's reading speed against
local disk; {pairs} back-to-back pairs per round (order alternating), median
over the {npairs} pairs of the ratio within each pair.

{steady_table}

### One window read

`build/bench/reader_bench windows SRC {windows}`: {windows:,} random windows of
2049 tokens read as int64 by `Dataset::ReadTokens` on one thread, after a
pass that reads the whole dataset (for the warm cache: maps every chunk);
pairs as above, median over the {npairs} pairs. This is
the reader's own cost per sample, without the Loader around it; the thread's
CPU time is the steadier figure on a shared machine.

{window_table}

### Consumer wait per step

A training-like loop: `next()`, then sleep {step_ms:g} ms (the "model"),
{wait_steps} steps, cold cache, full shuffle; the wait is the time `next()`
took, measured in Python. The first {warmup} steps are the warm-up; the
steady-state columns pool the remaining steps of {wait_rounds} rounds.

{wait_table}

### Chunk size (cold epoch)

The same tokens with other `chunk_bytes` (`tokpack import --chunk-bytes` over
the same .bin/.idx, pushed as separate datasets); one cold epoch each,
median of 2 rounds, against local disk in the same rounds.

{chunk_table}

### Context

{context}

### Reading

{reading}
"""

READING = """\
- Bytes: a cold epoch fetches every chunk exactly once (the ranged GETs are
  one per .bin chunk plus one per .idx; MB fetched equals the dataset), and a
  warm epoch fetches nothing. No duplicate or wasted requests.
- Cold: the full shuffle touches every chunk within the first few steps, so
  a cold epoch of this small dataset is "download the dataset, then read it
  from the cache"; its throughput is bounded by moto (Python, on the same two
  cores) and is not a statement about real S3. Larger chunks help
  (fewer requests, the same bytes): per-request cost dominates below 1 MiB.
- Warm: each process maps a cached chunk once and keeps the mapping (under
  the chunk's shared lock), so a warm read is a hash lookup and a widening
  copy straight from the mapping, as from a local file: compare the warm rows
  and the window table with local disk above. Before the mappings, every
  window read opened, flocked, pread, futimensed and closed its chunk file
  and copied the bytes once more before widening: warm ran at 0.49-0.54x of
  local disk, and one window cost 8.0-8.5 us of CPU against 1.1-1.3 us from
  local disk (`reader_bench windows` built on the commit before, same
  machine, 300,000 windows). Earlier still, warm was 0.12x: rows read their
  inputs and targets separately through the cache, and lookahead hints
  queued no-op visits to cached chunks; a row now reads its window once, and
  a remote file sends no hints for chunks this process has mapped.
  Since then a warm read takes its mapping from its file's slot for the chunk (no
  key, no table lock, no probe) while no mapping has left the process's table;
  "Many remote sources, and warm remote reads" below measures warm reads since.
- Wait per step: once the data is cached the consumer's wait is the cost of
  a `next()` from Python (about 0.1 ms) for local disk and S3 alike, with and
  without lookahead: zero in the sense of the target. All waiting happens in
  the warm-up, in the first step, and there lookahead_steps=16 waits longer
  than 0: hints are fetched soonest step first, but the first steps' chunks
  are asked for together, up to 8 fetches in parallel, and share moto's two
  cores; behind an object store's latency (the cold-start section) the hints
  win.
- Not measured here: a dataset larger than the cache, where a full shuffle
  needs a chunk per sample (a read amplification of about chunk_bytes / 4 KiB,
  1000x at 4 MiB); the streaming section measures that case, with
  shuffle="window"."""


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--worker":
        fn = {"epoch": worker_epoch, "wait": worker_wait}[sys.argv[2]]
        print(json.dumps(fn(json.loads(sys.argv[3]))))
    else:
        main()
