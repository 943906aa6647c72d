#!/usr/bin/env python3
"""Best-fit document packing (not a test): what packing="best_fit" costs and
what it saves, in one run.

1. The plan: `tokpack pack DATASET --seq-len L` on a dataset of --docs
   documents (default 10M) in --shards shards, for each L: wall time and
   peak RSS (the process's own ru_maxrss, forked from a small interpreter:
   scripts/peak_rss.py), with the plan files removed before every run.
2. Padding: bins and padding fraction of tokpack's plan (`tokpack info
   --packing best_fit --json`) side by side with OLMo-core's best-fit-
   decreasing packer (olmo_core.data.utils.InstancePacker, the segment tree
   its NumpyPackedFSLDataset uses) run on the same lengths, per shard as
   OLMo-core packs per source file, with its "fragment" strategy for long
   documents (the same L-token pieces as tokpack's) and, for reference, its
   default "truncate" (the excess of a long document is dropped); its time
   and peak RSS too. OLMo-core is optional (`pip install ai2-olmo-core` into
   the venv that runs this); without it the column says so.
3. Loader throughput: samples/s of packing="best_fit" against
   packing="concat" and concat with document_boundaries=True (the same
   outputs as packed rows) on one dataset of --loader-docs documents with
   real token bytes, through the Python loop (tokpack.Loader, as_="numpy")
   and the C++ loop (reader_bench run ... ROWS), each run a fresh process
   timed for --loader-seconds, interleaved rounds; ratios are taken within a
   round. Targets: best_fit >= 0.9x concat with document_boundaries and
   >= 0.8x plain concat. --loader-only runs this part alone and writes its
   own section (best-fit-loader).

Document lengths: lognormal, median --median tokens (default 512), sigma
--sigma (default 1.1), rounded, at least 1, at most 1,048,576, drawn with
numpy's default_rng(--seed): mean about 936, a long tail (10.3% of the
documents are longer than 2048 tokens, 2.9% longer than 4096, 0.6% longer
than 8192, p99 about 6,650). The plan reads only lengths, so the
big dataset's .bin files are sparse (all zero tokens, no disk space): the
.idx is written with numpy (Megatron MMIDIDX, uint16) and `tokpack import`
writes the manifest over it. The loader's dataset holds random tokens.

    .venv/bin/python bench/packing_bench.py --docs 200000 --rounds 1   # quick, ~1 minute
    .venv/bin/python bench/packing_bench.py --report docs/benchmarks.md  # 10M, ~10 minutes
    .venv/bin/python bench/packing_bench.py --loader-only --report docs/benchmarks.md

OLMo-core pins an older torch: to keep the venv's torch, install it as
`pip install --no-deps ai2-olmo-core` and then its light dependencies (bettermap
cached-path dataclass-extensions importlib_resources pandas pyyaml rich
safetensors filelock requests); only olmo_core.data.utils is used.
"""
import argparse
import json
import resource
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import harness
from harness import REPO, median

CLI = REPO / "build" / "tokpack"
READER_BENCH = REPO / "build" / "bench" / "reader_bench"
PEAK_RSS = REPO / "scripts" / "peak_rss.py"
IDX_MAGIC = b"MMIDIDX\x00\x00"
MAX_DOC = 1 << 20
BATCH = 8
MiB = 1 << 20


# --------------------------------------------------------------------------
# The dataset.

def doc_lengths(docs, median_len, sigma, seed):
    """The documents' lengths (int64), deterministic for the arguments."""
    rng = np.random.default_rng(seed)
    x = rng.lognormal(np.log(median_len), sigma, docs)
    return np.clip(np.rint(x), 1, MAX_DOC).astype(np.int64)


def write_prefix(prefix, lengths, tokens=None):
    """A Megatron uint16 .bin/.idx pair for `lengths`: the .bin is `tokens`
    (uint16) or, without them, sparse (zeros, no blocks on disk)."""
    pointers = np.zeros(len(lengths), np.int64)
    np.cumsum(lengths[:-1] * 2, out=pointers[1:])
    with open(str(prefix) + ".idx", "wb") as f:
        f.write(IDX_MAGIC + struct.pack("<QBQQ", 1, 8, len(lengths), len(lengths) + 1))
        f.write(lengths.astype("<i4").tobytes())
        f.write(pointers.astype("<i8").tobytes())
        f.write(np.arange(len(lengths) + 1, dtype="<i8").tobytes())
    with open(str(prefix) + ".bin", "wb") as f:
        if tokens is None:
            f.truncate(int(lengths.sum()) * 2)
        else:
            f.write(tokens.astype("<u2").tobytes())


def make_dataset(work, name, lengths, shards, real_tokens, seed):
    """A tokpack dataset (manifest over Megatron prefixes, via `tokpack
    import`) of the documents `lengths` in `shards` equal shards; made once
    and reused (the directory's name holds every parameter)."""
    ds = Path(work) / name
    if (ds / "manifest.json").exists():
        return ds
    raw = Path(work) / (name + ".raw")
    shutil.rmtree(raw, ignore_errors=True)
    shutil.rmtree(ds, ignore_errors=True)
    raw.mkdir(parents=True)
    rng = np.random.default_rng(seed + 1)
    prefixes = []
    t0 = time.perf_counter()
    for k, part in enumerate(np.array_split(lengths, shards)):
        tokens = (rng.integers(1, 32000, int(part.sum()), dtype=np.uint16)
                  if real_tokens else None)
        prefixes.append(str(raw / f"shard-{k:05d}"))
        write_prefix(prefixes[-1], part, tokens)
    subprocess.run([str(CLI), "import", *prefixes, "-o", str(ds)], check=True,
                   capture_output=True)
    print(f"wrote {name}: {len(lengths):,} documents, {int(lengths.sum()):,} tokens in "
          f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return ds


def shard_lengths(ds):
    """Each shard's document lengths, read from its .idx as a reader would."""
    m = json.loads((Path(ds) / "manifest.json").read_text())
    out = []
    for s in m["shards"]:
        p = Path(s["path"])
        p = p if p.is_absolute() else Path(ds) / p
        buf = open(str(p) + ".idx", "rb").read()
        (n,) = struct.unpack_from("<Q", buf, 18)
        out.append(np.frombuffer(buf, "<i4", n, 34).astype(np.int64))
    return out


# --------------------------------------------------------------------------
# Children: one measurement per process, result as one JSON line.

def child_olmo(a):
    """OLMo-core's packer over the dataset's lengths, per shard."""
    t0 = time.perf_counter()
    from olmo_core.data.utils import InstancePacker
    t_import = time.perf_counter() - t0
    import_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # torch, numpy: KiB.
    L, fragment = a["seq_len"], a["strategy"] == "fragment"
    bins = tokens = items = 0
    t0 = time.perf_counter()
    pack_s = 0.0
    for lengths in shard_lengths(a["ds"]):
        # The document indices OLMo-core's doc_idx_gen yields (fragment:
        # pieces of L tokens and the remainder; truncate: the first L).
        if fragment:
            full = lengths // L
            rest = lengths % L
            piece_lens = np.concatenate([np.full(int(full.sum()), L, np.int64), rest[rest > 0]])
        else:
            piece_lens = np.minimum(lengths, L)
        ends = np.cumsum(piece_lens)
        idx = np.stack([ends - piece_lens, ends], axis=1).astype(np.uint64)
        t1 = time.perf_counter()
        instances, _, total = InstancePacker(L).pack_documents(idx)
        pack_s += time.perf_counter() - t1
        bins += len(instances)
        tokens += total
        items += len(piece_lens)
    return {"bins": bins, "tokens": tokens, "pieces": items, "seconds": time.perf_counter() - t0,
            "pack_seconds": pack_s, "import_seconds": t_import, "import_rss_kb": import_rss,
            "padding_fraction": 1 - tokens / (bins * L) if bins else 0.0}


def child_loader(a):
    """Samples/s of tokpack.Loader's Python loop over a["seconds"], after a
    warm-up of a["warmup"] seconds (the first batch opens the plan)."""
    import tokpack
    ds = tokpack.Dataset(a["ds"])
    kw = dict(seq_len=a["seq_len"], batch_size=BATCH, seed=1, shuffle="full", as_="numpy")
    if a["mode"] == "best_fit":
        kw["packing"] = "best_fit"
    elif a["mode"] == "concat+boundaries":
        kw["document_boundaries"] = True
    it = iter(tokpack.Loader(ds, **kw))
    check = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < a["warmup"]:
        next(it)
    steps = 0
    t0 = time.perf_counter()
    while True:
        batch = next(it)
        check += int(batch["input_ids"][0, steps % a["seq_len"]])
        steps += 1
        took = time.perf_counter() - t0
        if took >= a["seconds"]:
            break
    return {"samples_per_s": steps * BATCH / took, "steps": steps, "seconds": took,
            "checksum": check}


def cpp_loader(a):
    """The same through the C++ loop (reader_bench run), default threads and
    prefetch as the Loader's (2, 4)."""
    rows = {"concat": "concat", "concat+boundaries": "boundaries", "best_fit": "best_fit"}
    return harness.run_child([READER_BENCH, "run", a["ds"], a["seconds"], 2, 4, a["seq_len"],
                              BATCH, rows[a["mode"]]]).result


def run_self(kind, a, env=None):
    return harness.run_child([sys.executable, __file__, "--child", kind, json.dumps(a)],
                             env).result


# --------------------------------------------------------------------------
# Parent side.

def tokpack_plan(ds, L, threads):
    """`tokpack pack` from scratch (plan files removed first): {seconds,
    maxrss_kb}."""
    shutil.rmtree(Path(ds) / "packing", ignore_errors=True)
    cmd = [sys.executable, "-S", PEAK_RSS, CLI, "pack", ds, "--seq-len", L]
    if threads:
        cmd += ["--threads", threads]
    child = harness.run_child(cmd)
    return {"seconds": child.wall, "maxrss_kb": child.result["maxrss_kb"]}


def tokpack_info(ds, L):
    out = subprocess.run([str(CLI), "info", str(ds), "--packing", "best_fit", "--seq-len",
                          str(L), "--json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["packing"]


def plan_bytes(ds):
    return sum(f.stat().st_size for f in (Path(ds) / "packing").rglob("*") if f.is_file())


def olmo_available(env_python):
    r = subprocess.run([env_python, "-c", "import olmo_core.data.utils as u; "
                        "u.InstancePacker; import importlib.metadata as m; "
                        "print(m.version('ai2-olmo-core'))"], capture_output=True, text=True)
    if r.returncode == 0:
        return r.stdout.strip(), None
    return None, harness.last_line(r.stderr)


def span(values, spec):
    """"a" or "a to b" (smallest to largest) of numbers formatted with `spec`."""
    lo, hi = min(values), max(values)
    return spec.format(lo) if spec.format(lo) == spec.format(hi) else (
        f"{spec.format(lo)} to {spec.format(hi)}")


def reading_prose(args, dist, plan_res, olmo_res, info, same):
    """The bullets under the tables, every claim computed from this run's numbers."""
    out = []
    seq_lens = [L for L in info]
    if seq_lens:
        pads = [info[L]["padding_fraction"] for L in seq_lens]
        text = (f"- Padding: best-fit decreasing leaves {span(pads, '{:.4%}')} padding on "
                "this long-tailed distribution")
        if same:
            agree = [L for L, v in same.items() if v]
            where = ("every L" if len(agree) == len(same) else
                     "L = " + ", ".join(f"{L:,}" for L in agree) if agree else "no L")
            text += (f"; tokpack's bins equal OLMo-core's with the same pieces at {where} "
                     f"({len(agree)} of {len(same)})")
        drops = [1 - r[0]["tokens"] / dist["tokens"] for k, r in olmo_res.items()
                 if k.startswith("olmo-truncate") and r]
        if drops:
            text += (f". OLMo-core's default `truncate` gives fewer bins by dropping the tail "
                     f"of every document longer than L: {span(drops, '{:.2%}')} of the tokens; "
                     "tokpack never drops a token (a long document's pieces are packed like "
                     "documents)")
        out.append(text + ".")
        t = {L: median([r["seconds"] for r in plan_res[f"tokpack:{L}"]]) for L in seq_lens}
        rss = {L: median([r["maxrss_kb"] for r in plan_res[f"tokpack:{L}"]]) * 1024
               for L in seq_lens}
        per_doc = span([b / args.docs for b in rss.values()], "{:.0f}")
        mib = span([b / MiB for b in rss.values()], "{:,.0f}")
        text = (f"- Plan: `tokpack pack` takes {span(t.values(), '{:.1f}')} s for "
                f"{args.docs:,} documents, peak RSS {mib} MiB "
                f"({per_doc} bytes per document: the whole plan is held in memory, as the "
                "loader needs it)")
        frag = {L: olmo_res.get(f"olmo-fragment:{L}") for L in seq_lens}
        frag = {L: r for L, r in frag.items() if r}
        if frag:
            ratios = [median([x["seconds"] for x in r]) / t[L] for L, r in frag.items()]
            extra = [(median([x["maxrss_kb"] for x in r]) - median(
                [x["import_rss_kb"] for x in r])) * 1024 / args.docs for r in frag.values()]
            faster = min(ratios) >= 1
            text += (f"; OLMo-core's packer (`fragment`) on the same lengths takes "
                     f"{span(ratios, '{:.1f}')}x "
                     f"{'as long' if faster else 'the time (it is faster here)'}, and "
                     f"{span(extra, '{:.0f}')} bytes per document on top of its import")
        out.append(text + ".")
    return "\n".join(out)


LOOPS = {"py": "Python loop (`for batch in loader`)", "cpp": "C++ loop (`Next()`)"}
MODES = {"concat": '`packing="concat"` (default)',
         "concat+boundaries": '`packing="concat"`, `document_boundaries=True`',
         "best_fit": '`packing="best_fit"`'}
TARGETS = {"concat": 0.8, "concat+boundaries": 0.9}  # best_fit's samples/s against these.


def loader_rounds(args, lds):
    """The loader part: {"py:mode" or "cpp:mode": [result per round]}, failures."""
    loops = ["py"] + (["cpp"] if READER_BENCH.exists() else [])
    names = [f"{loop}:{m}" for loop in loops for m in MODES]

    def measure(name):
        loop, mode = name.split(":")
        a = {"ds": str(lds), "seq_len": args.loader_seq_len, "mode": mode,
             "seconds": args.loader_seconds, "warmup": 1.0}
        return run_self("loader", a) if loop == "py" else cpp_loader(a)

    return harness.interleaved(names, args.loader_rounds, measure,
                               log=lambda r: f"{r['samples_per_s']:,.0f} samples/s")


def loader_table(load_res, load_failed, Ls, pad):
    """Samples/s per loop and packing, and best_fit's ratios within each round."""
    rows = ["| loop | packing | samples/s (median) | tokens/s (non-padding) | best_fit vs this "
            "(per round) |", "|---|---|---:|---:|---|"]
    for loop in LOOPS:
        for m, label in MODES.items():
            rs = load_res.get(f"{loop}:{m}")
            if rs is None:
                continue
            if not rs:
                rows.append(f"| {LOOPS[loop]} | {label} | failed: "
                            f"{load_failed.get(f'{loop}:{m}')} | | |")
                continue
            sps = [r["samples_per_s"] for r in rs]
            eff = (1 - pad) if m == "best_fit" else 1.0
            vs = ""
            packed = [r["samples_per_s"] for r in load_res.get(f"{loop}:best_fit", [])]
            if m != "best_fit" and packed:
                per = [x / y for x, y in zip(packed, sps) if y]
                vs = (f"**{harness.ratio_rounds(packed, sps):.2f}x** (target >= "
                      f"{TARGETS[m]:.1f}x; {', '.join(f'{x:.2f}' for x in per)})")
            rows.append(f"| {LOOPS[loop]} | {label} | {median(sps):,.0f} | "
                        f"{median(sps) * Ls * eff:,.0f} | {vs} |")
    return "\n".join(rows)


def loader_prose(load_res):
    """The bullets under the loader table, made from its numbers."""
    out = []
    for loop, name in LOOPS.items():
        packed = [r["samples_per_s"] for r in load_res.get(f"{loop}:best_fit", [])]
        if not packed:
            continue
        parts = []
        for m in ("concat+boundaries", "concat"):
            base = [r["samples_per_s"] for r in load_res.get(f"{loop}:{m}", [])]
            if base:
                r = harness.ratio_rounds(packed, base)
                what = "concat with `document_boundaries`" if m != "concat" else "plain concat"
                parts.append(f"{r:.2f}x {what} ({'meets' if r >= TARGETS[m] else 'below'} "
                             f"the {TARGETS[m]:.1f}x target)")
        out.append(f"- {name}: best_fit serves {' and '.join(parts)}.")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=10_000_000)
    ap.add_argument("--shards", type=int, default=16)
    ap.add_argument("--median", type=float, default=512)
    ap.add_argument("--sigma", type=float, default=1.1)
    ap.add_argument("--seed", type=int, default=20)
    ap.add_argument("--seq-lens", default="2048,4096,8192")
    ap.add_argument("--threads", type=int, default=0, help="tokpack pack --threads (0: its default)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of the plan timing")
    ap.add_argument("--olmo-rounds", type=int, default=1,
                    help="rounds of OLMo-core's packer (pure Python: minutes at 10M)")
    ap.add_argument("--no-olmo", action="store_true", help="skip OLMo-core's column")
    ap.add_argument("--olmo-strategies", default="fragment,truncate",
                    help="OLMo-core's long-document strategies to run (fragment is tokpack's)")
    ap.add_argument("--loader-docs", type=int, default=100_000)
    ap.add_argument("--loader-seq-len", type=int, default=2048)
    ap.add_argument("--loader-seconds", type=float, default=3)
    ap.add_argument("--loader-rounds", type=int, default=7)
    ap.add_argument("--loader-only", action="store_true",
                    help="only the loader part (3), and only its section of the report")
    ap.add_argument("--workdir", default="/tmp/tokpack-packing-bench")
    ap.add_argument("--report", help="write the best-fit-packing and best-fit-loader "
                                      "sections of this report")
    args = ap.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    if not args.loader_only:
        plan_part(args, work)
    loader_part(args, work)


def loader_part(args, work):
    """3: the loader, packed against concat, on a dataset with real tokens."""
    t_start, load_before = time.perf_counter(), harness.loadavg()
    ll = doc_lengths(args.loader_docs, args.median, args.sigma, args.seed + 7)
    lds = make_dataset(work, f"loader-{args.loader_docs}-m{args.median:g}-g{args.sigma:g}"
                       f"-r{args.seed}", ll, 2, True, args.seed)
    Ls = args.loader_seq_len
    shutil.rmtree(lds / "packing", ignore_errors=True)
    tokpack_plan(lds, Ls, args.threads)
    load_res, load_failed = loader_rounds(args, lds)
    loader_info = tokpack_info(lds, Ls)
    took = time.perf_counter() - t_start
    pad = loader_info.get("padding_fraction", 0.0)
    table = loader_table(load_res, load_failed, Ls, pad)
    prose = loader_prose(load_res)
    print(table, prose, f"took {took:.0f} s", sep="\n\n")
    (work / f"results-loader-{args.loader_docs}.json").write_text(json.dumps(
        {"loader": load_res, "loader_info": loader_info, "failed": load_failed,
         "seconds": took}, indent=1, default=str))
    if args.report:
        doc = LOADER_DOC.format(
            cmd=".venv/bin/python bench/packing_bench.py --loader-only --report "
            "docs/benchmarks.md", machine=harness.machine_line(),
            load=f"{load_before:.1f} before, {harness.loadavg():.1f} after", took=took / 60,
            loader_docs=args.loader_docs, loader_tokens=int(ll.sum()), Ls=Ls,
            seconds=args.loader_seconds, loader_rounds=args.loader_rounds,
            loader_bins=loader_info.get("bins", 0), loader_pad=pad, loader_table=table,
            reading=prose)
        harness.write_section("best-fit-loader", doc, Path(args.report))


def plan_part(args, work):
    """1 and 2: the plan's time, memory and padding, against OLMo-core's."""
    t_start = time.perf_counter()
    seq_lens = [int(x) for x in args.seq_lens.split(",") if x]
    load_before = harness.loadavg()

    key = f"{args.docs}-s{args.shards}-m{args.median:g}-g{args.sigma:g}-r{args.seed}"
    lengths = doc_lengths(args.docs, args.median, args.sigma, args.seed)
    dist = {"tokens": int(lengths.sum()), "mean": float(lengths.mean()),
            "p50": int(np.percentile(lengths, 50)), "p99": int(np.percentile(lengths, 99)),
            "max": int(lengths.max()),
            "over": {L: float((lengths > L).mean()) for L in seq_lens}}
    ds = make_dataset(work, f"lengths-{key}", lengths, args.shards, False, args.seed)
    del lengths

    # 1 and 2: tokpack's plan against OLMo-core's packer, interleaved per L.
    olmo_version, olmo_why = (None, "--no-olmo") if args.no_olmo else olmo_available(
        sys.executable)
    if olmo_why:
        print(f"OLMo-core's column is skipped: {olmo_why}", file=sys.stderr)
    names = [f"tokpack:{L}" for L in seq_lens]
    if olmo_version:
        names += [f"olmo-{s}:{L}" for L in seq_lens for s in args.olmo_strategies.split(",") if s]

    def measure(name):
        kind, L = name.split(":")
        L = int(L)
        if kind == "tokpack":
            return tokpack_plan(ds, L, args.threads)
        child = harness.run_child(
            [sys.executable, __file__, "--child", "olmo",
             json.dumps({"ds": str(ds), "seq_len": L, "strategy": kind.split("-")[1]})])
        return dict(child.result, maxrss_kb=child.usage.ru_maxrss)

    def log(r):
        return f"{r['seconds']:.1f} s, peak RSS {r['maxrss_kb'] / 1024:,.0f} MiB"

    plan_res, plan_failed = harness.interleaved(
        [n for n in names if not n.startswith("olmo")], args.rounds, measure, log=log)
    olmo_res, olmo_failed = harness.interleaved(
        [n for n in names if n.startswith("olmo")], args.olmo_rounds, measure, log=log)
    info = {}
    for L in seq_lens:
        if plan_res.get(f"tokpack:{L}"):
            tokpack_plan(ds, L, args.threads)  # The plan info reads (left in place).
            info[L] = dict(tokpack_info(ds, L), plan_bytes=plan_bytes(ds))

    took = time.perf_counter() - t_start

    # ----------------------------------------------------------------------
    # Tables.
    rows = ["| L | packer | bins | padding fraction | pieces (documents split at L) "
            "| plan time, s | peak RSS, MiB | plan files, MiB |",
            "|---:|---|---:|---:|---:|---:|---:|---:|"]
    same = {}
    for L in seq_lens:
        t = plan_res.get(f"tokpack:{L}", [])
        i = info.get(L)
        if t and i:
            rows.append(
                f"| {L:,} | tokpack `pack` (C++, per shard) | {i['bins']:,} | "
                f"{i['padding_fraction']:.4%} | {i['pieces']:,} ({i['truncated_documents']:,} "
                f"documents > L) | {median([r['seconds'] for r in t]):.2f} | "
                f"{median([r['maxrss_kb'] for r in t]) / 1024:,.0f} | "
                f"{i['plan_bytes'] / MiB:,.1f} |")
        else:
            rows.append(f"| {L:,} | tokpack `pack` | failed: {plan_failed.get(f'tokpack:{L}')} "
                        "| | | | | |")
        for s in [s for s in args.olmo_strategies.split(",") if s]:
            o = olmo_res.get(f"olmo-{s}:{L}", [])
            if not o:
                why = olmo_failed.get(f"olmo-{s}:{L}") or olmo_why
                rows.append(f"| {L:,} | OLMo-core `InstancePacker`, {s} | not run: {why} "
                            "| | | | | |")
                continue
            r = o[0]
            if s == "fragment" and i:
                same[L] = r["bins"] == i["bins"]
            dropped = "" if s == "fragment" else (
                f"; drops {1 - r['tokens'] / dist['tokens']:.2%} of the tokens")
            rows.append(
                f"| {L:,} | OLMo-core `InstancePacker`, {s}{dropped} | {r['bins']:,} | "
                f"{r['padding_fraction']:.4%} | {r['pieces']:,} | "
                f"{median([x['seconds'] for x in o]):.1f} (packing "
                f"{median([x['pack_seconds'] for x in o]):.1f}) | "
                f"{median([x['maxrss_kb'] for x in o]) / 1024:,.0f} (after the import: "
                f"{median([x['import_rss_kb'] for x in o]) / 1024:,.0f}) | |")
    plan_table = "\n".join(rows)

    reading = reading_prose(args, dist, plan_res, olmo_res, info, same)
    print(plan_table, reading, f"took {took:.0f} s", sep="\n\n")
    results = {"dist": dist, "plan": plan_res, "olmo": olmo_res, "info": info,
               "failed": {**plan_failed, **olmo_failed}, "seconds": took}
    (work / f"results-{key}.json").write_text(json.dumps(results, indent=1, default=str))

    if args.report:
        quick = "" if args.docs == 10_000_000 else f" --docs {args.docs}"
        doc = DOC.format(
            cmd=f".venv/bin/python bench/packing_bench.py{quick} --report docs/benchmarks.md",
            machine=harness.machine_line(), docs=args.docs, shards=args.shards,
            median=args.median, sigma=args.sigma, seed=args.seed, tokens=dist["tokens"],
            mean=dist["mean"], p50=dist["p50"], p99=dist["p99"], max=dist["max"],
            over=", ".join(f"{v:.1%} > {L:,}" for L, v in dist["over"].items()),
            threads=args.threads or "default", rounds=args.rounds,
            olmo=f"ai2-olmo-core {olmo_version}" if olmo_version else
            f"not run: {olmo_why}", olmo_rounds=args.olmo_rounds,
            same=", ".join(f"L={L:,}: {'yes' if v else 'NO'}" for L, v in same.items()) or "n/a",
            plan_table=plan_table, reading=reading, took=took / 60,
            load=f"{load_before:.1f} before, "
            f"{harness.loadavg():.1f} after")
        harness.write_section("best-fit-packing", doc, Path(args.report))


DOC = """Measured with

    {cmd}

on {machine} (shared with other work, so noisy; 1-minute load average {load}). The
whole run took {took:.0f} minutes.

Documents: {docs:,} lengths drawn from a lognormal distribution (median {median:g} tokens,
sigma {sigma:g}, numpy `default_rng({seed})`, rounded, clipped to [1, 1,048,576]): {tokens:,}
tokens, mean {mean:,.0f}, p50 {p50:,}, p99 {p99:,}, max {max:,}; {over}. They are
{shards} shards (Megatron uint16 `.bin`/`.idx` written with numpy, sparse `.bin` files:
the plan reads only the lengths, then `tokpack import`).

### Plan time, peak memory and padding

tokpack: `tokpack pack DATASET --seq-len L` (threads: {threads}), wall time of the
process with the plan files removed before each run, and its own peak RSS (`ru_maxrss`,
`scripts/peak_rss.py`); median of {rounds} rounds; bins, pieces and padding from
`tokpack info DATASET --packing best_fit --seq-len L --json`. OLMo-core ({olmo}):
`olmo_core.data.utils.InstancePacker(L).pack_documents(indices)`, the optimized
best-fit-decreasing packer (segment tree over remaining capacities) that its
`NumpyPackedFSLDataset` runs per source file, here per shard on the same lengths
(read from the same `.idx` files), with its `fragment` strategy for documents
longer than L (the same L-token pieces as tokpack's) and its default `truncate`
(the rest of a long document is dropped); time of the whole process's work
(reading the lengths, the pieces, packing; {olmo_rounds} round(s)), packing alone
in parentheses; its peak RSS includes the import of olmo_core (torch), given
in parentheses. Padding fraction = padding tokens / (bins x L).

{plan_table}

Same number of bins as OLMo-core's with the same pieces (best-fit decreasing is
deterministic up to ties between equal lengths or equal capacities, which do not
change the bins' fill): {same}.

Reading the tables (these words are made from the numbers above by the script):

{reading}
"""

LOADER_DOC = """Measured with

    {cmd}

on {machine} (shared with other work, so noisy; 1-minute load average {load}); the run
took {took:.0f} minutes.

One dataset of {loader_docs:,} documents of the distribution above ({loader_tokens:,}
random tokens, 2 shards), L = {Ls:,}, batch 8, `shuffle="full"`, seed 1, threads 2 and
prefetch 4 (the defaults); the plan made by `tokpack pack` before the rounds
({loader_bins:,} bins, padding {loader_pad:.4%}). Each configuration is a fresh process
timed for {seconds:g} s after 1 s of warm-up, {loader_rounds} rounds interleaved (the
order rotated each round). The Python loop is `for batch in tokpack.Loader(...,
as_="numpy")`, reading one token of each batch; the C++ loop is `reader_bench run DIR
SECONDS 2 4 {Ls} 8 ROWS` (`Loader::Create`, then `Next()`). A packed row carries
`position_ids` and `cu_seqlens` (built per row from its pieces) and labels -100 at every
piece end; concat with `document_boundaries=True` builds the same outputs from the
documents a window crosses, so that ratio compares like with like. Ratios are
best_fit's samples/s over the other configuration's of the same loop in the same round,
then the median (every round's in parentheses). Targets: best_fit >= 0.9x concat with
`document_boundaries`, >= 0.8x plain concat.

{loader_table}

{reading}
"""


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--child":
        fn = {"olmo": child_olmo, "loader": child_loader}[sys.argv[2]]
        print(json.dumps(fn(json.loads(sys.argv[3]))))
    else:
        main()
