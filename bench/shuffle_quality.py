#!/usr/bin/env python3
"""Shuffle quality (not a test, no timing): order statistics of the batches
tokpack's own Loader serves, for each shuffle mode, on a synthetic local
dataset whose samples are recognized by their first tokens.

For every mode (none as the scale's end, full, block with its defaults,
window when the installed tokpack has it) one epoch of global batches
(world_size * batch_size samples) is read and each row mapped back to its
sample index i (the sample starting at stream token i * seq_len). Reported:

- consecutive batches: the mean absolute Spearman rank correlation between
  the sample indices of global batch t and t + 1, slot by slot (a random
  order gives the noise level of a correlation of B pairs, about
  sqrt(2 / (pi * (B - 1)))); and the same between stream position and sample
  index over each span of `--span` consecutive positions (does the order
  still run forwards locally?);
- spread within a batch: how far apart in the stream two samples of one
  batch are (median pairwise distance, and the median and largest
  max - min over batches, in samples and as a fraction of the dataset), and
  the number of distinct fetch chunks a global batch touches (what a remote
  read pays for);
- the fraction of the dataset's samples served in the epoch.

    .venv/bin/python bench/shuffle_quality.py [--tokens 64000000] [--report docs/benchmarks.md]
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

import harness
from harness import REPO
from remote_bench import make_chunked_copy

BENCH = REPO / "build" / "bench" / "reader_bench"
KEY_TOKENS = 4  # First tokens of a sample that identify it (random uint16: ~62 bits).


def stream_of(ds_dir):
    """The dataset's token stream (shards in manifest order) and its manifest."""
    m = json.loads((ds_dir / "manifest.json").read_text())
    parts = [np.fromfile(ds_dir / (s["path"] + ".bin"), dtype=np.uint16) for s in m["shards"]]
    return np.concatenate(parts), m


def keys_of(tokens):
    """A 64-bit key per row of the first KEY_TOKENS tokens of each row."""
    t = tokens[:, :KEY_TOKENS].astype(np.uint64)
    k = np.zeros(len(t), dtype=np.uint64)
    for j in range(KEY_TOKENS):
        k |= t[:, j] << np.uint64(16 * j)
    return k


class SampleIndex:
    """Maps a row's first tokens back to its sample index."""

    def __init__(self, stream, seq_len):
        self.n = (len(stream) - 1) // seq_len
        starts = np.arange(self.n, dtype=np.int64) * seq_len
        rows = np.stack([stream[starts + j] for j in range(KEY_TOKENS)], axis=1)
        keys = keys_of(rows)
        self.order = np.argsort(keys, kind="stable")
        self.sorted = keys[self.order]
        if np.any(self.sorted[1:] == self.sorted[:-1]):
            raise SystemExit("two samples share their first tokens; use another dataset")

    def __call__(self, rows):
        keys = keys_of(rows)
        at = np.searchsorted(self.sorted, keys)
        if np.any(at >= len(self.sorted)) or np.any(self.sorted[np.minimum(
                at, len(self.sorted) - 1)] != keys):
            raise SystemExit("a served row is not a sample of the dataset")
        return self.order[at]


def chunk_ids(manifest, seq_len):
    """A function: sample indices -> (first, last) global fetch chunk id of
    each sample's seq_len + 1 tokens (chunks are per shard file)."""
    item = 2
    c = manifest["chunk_bytes"]
    tokens = np.array([s["bin"]["bytes"] // item for s in manifest["shards"]], dtype=np.int64)
    first_token = np.concatenate([[0], np.cumsum(tokens)[:-1]])
    chunks = -(-tokens * item // c)
    first_chunk = np.concatenate([[0], np.cumsum(chunks)[:-1]])

    def at(token):
        shard = np.searchsorted(first_token, token, side="right") - 1
        return first_chunk[shard] + (token - first_token[shard]) * item // c

    return lambda i: (at(i * seq_len), at(i * seq_len + seq_len))


def spearman_rows(a, b):
    """Spearman correlation of each row pair of a and b (2-D, same shape)."""
    ra = np.argsort(np.argsort(a, axis=1), axis=1).astype(np.float64)
    rb = np.argsort(np.argsort(b, axis=1), axis=1).astype(np.float64)
    ra -= ra.mean(axis=1, keepdims=True)
    rb -= rb.mean(axis=1, keepdims=True)
    den = np.sqrt((ra * ra).sum(axis=1) * (rb * rb).sum(axis=1))
    return (ra * rb).sum(axis=1) / np.where(den == 0, 1, den)


def epoch_order(path, mode, seq_len, global_batch, index):
    """The sample indices of one epoch, [steps, global_batch]. mode: a
    shuffle mode, or "window:N" for window_chunks=N."""
    import tokpack
    mode, _, chunks = mode.partition(":")
    extra = {"window_chunks": int(chunks)} if chunks else {}
    loader = tokpack.Loader(str(path), seq_len=seq_len, batch_size=global_batch, seed=1,
                            shuffle=mode, epochs=1, as_="numpy", dtype="int32",
                            lookahead_steps=0, **extra)
    batches = [index(b["input_ids"]) for b in loader]
    return np.stack(batches)


def statistics(order, n, span, chunks_of):
    steps, b = order.shape
    flat = order.reshape(-1)
    consecutive = np.abs(spearman_rows(order[:-1], order[1:])).mean()
    k = len(flat) // span
    spans = flat[:k * span].reshape(k, span)
    pos = np.broadcast_to(np.arange(span), spans.shape)
    local = np.abs(spearman_rows(pos, spans)).mean() if k else float("nan")
    srt = np.sort(order, axis=1)
    extent = srt[:, -1] - srt[:, 0]
    # Median pairwise distance within each batch (all pairs), then the median of those.
    diffs = np.abs(order[:, :, None] - order[:, None, :])
    iu = np.triu_indices(b, 1)
    pairwise = np.median(diffs[:, iu[0], iu[1]], axis=1)
    first, last = chunks_of(order)
    touched = [len(set(f.tolist()) | set(l.tolist())) for f, l in zip(first, last)]
    return {"steps": steps, "consecutive_abs_spearman": float(consecutive),
            "span_abs_spearman": float(local),
            "pairwise_median": float(np.median(pairwise)),
            "extent_median": float(np.median(extent)), "extent_max": int(extent.max()),
            "chunks_per_batch": float(np.median(touched)),
            "served": len(np.unique(flat)) / n, "duplicates": int(len(flat) - len(np.unique(flat)))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=64_000_000)
    ap.add_argument("--shard-tokens", type=int, default=8_000_000)
    ap.add_argument("--chunk-bytes", type=int, default=1 << 20)
    ap.add_argument("--seq-len", type=int, default=2048)
    ap.add_argument("--global-batch", type=int, default=32, help="world_size * batch_size")
    ap.add_argument("--span", type=int, default=1024,
                    help="positions per span for the position-vs-index correlation")
    ap.add_argument("--window-chunks", default="6,32",
                    help="window_chunks values for shuffle=window (6: what a 16 MiB cache "
                         "of 1 MiB chunks derives, as in the streaming benchmark)")
    ap.add_argument("--workdir", default="/tmp/tokpack-shuffle-quality")
    ap.add_argument("--report", help="write the shuffle-quality section of this report")
    args = ap.parse_args()

    work = Path(args.workdir)
    base = work / f"ds-{args.tokens}-s{args.shard_tokens}"
    if not (base / "manifest.json").exists():
        subprocess.run([str(BENCH), "make", str(base), str(args.tokens), str(args.shard_tokens)],
                       check=True)
    ds = work / f"{base.name}-c{args.chunk_bytes}"
    make_chunked_copy(base, ds, args.chunk_bytes)
    stream, manifest = stream_of(ds)
    index = SampleIndex(stream, args.seq_len)
    chunks_of = chunk_ids(manifest, args.seq_len)
    windows = [f"window:{w}" for w in args.window_chunks.split(",") if w]
    modes = ["none", "full", "block"] + windows
    results = {}
    for mode in modes:
        order = epoch_order(ds, mode, args.seq_len, args.global_batch, index)
        results[mode] = statistics(order, index.n, args.span, chunks_of)
        print(mode, json.dumps(results[mode]), file=sys.stderr)

    b = args.global_batch
    noise = (2 / (np.pi * (b - 1))) ** 0.5
    rows = ["| shuffle | mean abs. Spearman, consecutive batches | mean abs. Spearman, "
            f"position vs index per {args.span} positions | median pairwise distance in a batch "
            "| batch extent (max - min), median / largest | fetch chunks per batch (median) "
            "| samples served per epoch |", "|---|---:|---:|---:|---:|---:|---:|"]
    for mode in modes:
        r = results[mode]
        label = {"block": "block (defaults)"}.get(mode, mode).replace(
            "window:", "window, window_chunks=")
        rows.append(
            f"| {label} | {r['consecutive_abs_spearman']:.3f} | {r['span_abs_spearman']:.3f} | "
            f"{r['pairwise_median']:,.0f} ({r['pairwise_median'] / index.n:.1%}) | "
            f"{r['extent_median']:,.0f} / {r['extent_max']:,} "
            f"({r['extent_median'] / index.n:.0%} / {r['extent_max'] / index.n:.0%}) | "
            f"{r['chunks_per_batch']:,.0f} | {r['served']:.2%} |")
    table = "\n".join(rows)
    window_note = ("" if windows[0] in modes else
                   "\n\nThe installed tokpack has no `shuffle=\"window\"`: its row is missing.")
    print(table)
    if args.report:
        doc = DOC.format(
            cmd=".venv/bin/python bench/shuffle_quality.py --report docs/benchmarks.md",
            machine=harness.machine_line(), tokens=args.tokens, n=index.n,
            mb=len(stream) * 2 / 1e6, chunk_kib=args.chunk_bytes // 1024,
            shards=len(manifest["shards"]), seq_len=args.seq_len, b=b, noise=noise,
            table=table, window_note=window_note,
            unit=-(-257 * args.seq_len * 2 // args.chunk_bytes))
        harness.write_section("shuffle-quality", doc, Path(args.report))


DOC = """Measured with

    {cmd}

on {machine}. No timing: these are properties of the order, the same on
any machine. Dataset: {tokens:,} random uint16 tokens ({mb:,.0f} MB, {shards}
shards, `chunk_bytes` {chunk_kib:,} KiB) made by `build/bench/reader_bench make`;
seq_len {seq_len}, so {n:,} samples; one epoch of global batches of {b}
(`world_size * batch_size`; the order does not depend on how they are split
into ranks), seed 1. Each served row is mapped back to its sample index by
its first tokens. A window unit is {unit} chunk(s) here (the fewest that
serve 256 samples); `window_chunks` 6 is the window a 16 MiB cache derives
(as in the streaming benchmark).

{table}

Reading:

- Consecutive batches: a random order's correlation is noise, about
  sqrt(2 / (pi * (B - 1))) = {noise:.3f} for B = {b}; `none` (the stream in
  order) is the other end of the scale, 1. Every shuffle mode sits at the
  noise level: no mode carries the order of one batch into the next.
- Position against index over spans of positions: also noise for `full`
  and `block`; `window` is a little above it, mostly from spans that
  straddle a window's end: they pass from one window's units to the next one's (a step
  in the sample index), not because the order inside a window runs
  forwards.
- Spread: a batch of `full` spans nearly the whole dataset. A window's
  batches come from the units of one window, scattered over the dataset by
  the unit permutation, so they still span much of it, but they touch only
  the window's fetch chunks, which is what keeps a remote epoch at about
  one download per chunk; a larger window mixes more units into each
  batch. `block`'s 64-sample blocks are not aligned to fetch chunks: a
  chunk's blocks fall in different windows, and each of them fetches it.
- Served: `full`, `block` and `none` lose only the remainder of the last
  global batch; `window` also leaves out the samples that cross a unit's
  edge (one or two per unit).{window_note}
"""


if __name__ == "__main__":
    main()
