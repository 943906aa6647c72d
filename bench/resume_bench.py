#!/usr/bin/env python3
"""Resume benchmark (not a test): wall time from process start to the first
batch after resuming at step 1,000,000 (seq_len 2048, batch 8: 8,000,000
samples consumed, about 164 epochs of the 100M-token dataset).

Each loader resumes the way its own documentation says:

  * tokpack: tokpack.Loader(...).load_state_dict(state), then next(). The state
    is a real state_dict() whose `position`/`consumed` are set to 8,000,000
    (docs/reader.md: the cursor is the count of global positions); the edit is
    checked against a loader that really consumed 800 positions.
  * Megatron-Core: GPTDataset (its index files for the whole run, 16,000,000
    samples, built once and cached, as a training run finds them on restart)
    through a DataLoader whose batch sampler starts at consumed_samples, as
    Megatron-LM's MegatronPretrainingSampler does (megatron/training is not in
    the megatron-core wheel; the sampler's few lines are repeated here).
  * LitData: StreamingDataLoader.load_state_dict(state): a real state_dict()
    with current_epoch / num_samples_yielded set to step 1e6.
  * MosaicML Streaming: StreamingDataLoader.load_state_dict(state): a real
    state_dict() with epoch / sample_in_epoch set to step 1e6.
  * nanoGPT-style: random offsets have nothing to resume (train.py restores only
    iter_num from its checkpoint), so its row is a fresh start.
  * reference: a Python process that imports torch and exits: the floor that
    every row above pays.

The parent times each child from Popen until the child prints that its first
batch arrived (time.perf_counter on both sides); the child also reports its own
phases. Children run interleaved, rotated each round.

    build/bench-venv/bin/python bench/resume_bench.py --json-out build/bench-all/resume.json
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import harness

T_START = time.perf_counter()
REPO = Path(__file__).resolve().parents[1]
STEP = 1_000_000


def emit(phases):
    print("FIRST " + json.dumps(phases), flush=True)
    os._exit(0)


def child(a):
    ph = {}
    t = time.perf_counter()

    def mark(name):
        nonlocal t
        now = time.perf_counter()
        ph[name] = now - t
        t = now

    state = json.loads(Path(a.state).read_text()) if a.state else None
    if a.child == "floor":
        import torch  # noqa: F401
        mark("import")
        emit(ph)
    if a.child == "tokpack":
        import tokpack
        import torch  # noqa: F401  (batches are torch tensors)
        mark("import")
        loader = tokpack.Loader(a.data, seq_len=a.seq_len, batch_size=a.batch_size, seed=1)
        mark("construct")
        loader.load_state_dict(state)
        mark("load_state")
        batch = next(iter(loader))
        assert batch["input_ids"].shape == (a.batch_size, a.seq_len)
        mark("first_batch")
        emit(ph)
    if a.child == "megatron":
        import torch
        sys.path.insert(0, str(REPO / "bench"))
        import python_bench
        from megatron.core.datasets import gpt_dataset  # noqa: F401
        mark("import")
        a.megatron_samples = a.megatron_run_samples
        train = python_bench.megatron_dataset(a, a.megatron_run_samples)
        mark("construct")
        sampler = PretrainingSampler(len(train), STEP * a.batch_size, a.batch_size)
        loader = torch.utils.data.DataLoader(train, batch_sampler=sampler,
                                             num_workers=a.workers,
                                             persistent_workers=a.workers > 0)
        mark("load_state")
        batch = next(iter(loader))
        assert batch["tokens"].shape == (a.batch_size, a.seq_len)
        mark("first_batch")
        emit(ph)
    if a.child == "litdata":
        from litdata import StreamingDataLoader, StreamingDataset, TokensLoader
        mark("import")
        ds = StreamingDataset(str(Path(a.workdir) / "litdata"),
                              item_loader=TokensLoader(block_size=a.seq_len + 1),
                              shuffle=True, drop_last=True, seed=1)
        loader = StreamingDataLoader(ds, batch_size=a.batch_size, num_workers=a.workers,
                                     drop_last=True)
        mark("construct")
        loader.load_state_dict(state)
        mark("load_state")
        batch = next(iter(loader))
        assert batch.shape == (a.batch_size, a.seq_len + 1)
        mark("first_batch")
        emit(ph)
    if a.child == "mosaic":
        sys.path.insert(0, str(REPO / "bench"))
        import python_bench
        import streaming  # noqa: F401
        mark("import")
        loader = python_bench.mosaic_loader(a, a.workers)
        mark("construct")
        loader.load_state_dict(state)
        mark("load_state")
        batch = next(iter(loader))
        assert batch["tokens"].shape == (a.batch_size, a.seq_len + 1)
        mark("first_batch")
        emit(ph)
    if a.child == "nanogpt":
        import numpy as np
        import torch
        mark("import")
        path = str(sorted(Path(a.data).glob("shard-*.bin"))[0])
        torch.manual_seed(1)
        data = np.memmap(path, dtype=np.uint16, mode="r")
        ix = torch.randint(len(data) - a.seq_len, (a.batch_size,))
        x = torch.stack([torch.from_numpy(data[i:i + a.seq_len].astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy(data[i + 1:i + 1 + a.seq_len].astype(np.int64))
                         for i in ix])
        assert x.shape == y.shape == (a.batch_size, a.seq_len)
        mark("first_batch")
        emit(ph)
    raise SystemExit(f"unknown child {a.child}")


class PretrainingSampler:
    """Megatron-LM's MegatronPretrainingSampler (megatron/training/datasets/
    data_samplers.py) for one data-parallel rank: consecutive indices from
    consumed_samples on, in micro-batches."""

    def __init__(self, total_samples, consumed_samples, micro_batch_size):
        self.total, self.consumed, self.mbs = total_samples, consumed_samples, micro_batch_size

    def __len__(self):
        return self.total

    def __iter__(self):
        batch = []
        for idx in range(self.consumed, self.total):
            batch.append(idx)
            if len(batch) == self.mbs:
                yield batch
                batch = []


# --------------------------------------------------------------------------
# States at step 1e6, made from each loader's own state_dict().

def make_states(a):
    """Runs in the bench venv: writes one state file per configuration."""
    out = Path(a.workdir) / "resume-states"
    out.mkdir(parents=True, exist_ok=True)
    samples = STEP * a.batch_size
    notes = {}
    import tokpack

    loader = tokpack.Loader(a.data, seq_len=a.seq_len, batch_size=a.batch_size, seed=1,
                            as_="numpy")
    next(iter(loader))
    st = loader.state_dict()
    # Check the edit on a small case: 800 positions really consumed.
    real = tokpack.Loader(a.data, seq_len=a.seq_len, batch_size=800, seed=1, as_="numpy")
    next(iter(real))
    edited = json.loads(json.dumps(st))
    edited["position"] = 800
    edited["sources"][0]["consumed"] = 800
    assert edited == real.state_dict(), (edited, real.state_dict())
    st["position"] = samples
    st["sources"][0]["consumed"] = samples
    (out / "tokpack.json").write_text(json.dumps(st))
    notes["tokpack"] = {"position": samples}

    from litdata import StreamingDataLoader, StreamingDataset, TokensLoader
    for w in sorted({0, a.workers}):
        ds = StreamingDataset(str(Path(a.workdir) / "litdata"),
                              item_loader=TokensLoader(block_size=a.seq_len + 1),
                              shuffle=True, drop_last=True, seed=1)
        n = len(ds)
        dl = StreamingDataLoader(ds, batch_size=a.batch_size, num_workers=w, drop_last=True)
        it = iter(dl)
        for _ in range(2):
            next(it)
        st = dl.state_dict()
        del it, dl
        epoch0 = samples // n
        within = (samples - epoch0 * n) // (a.batch_size * max(w, 1)) * a.batch_size * max(w, 1)
        st["current_epoch"] = st["dataset"]["current_epoch"] = epoch0 + 1  # 1-based
        st["num_samples_yielded"] = st["dataset"]["num_samples_yielded"] = within
        st["dataset"]["sample_in_epoch"] = within
        st["latest_worker_idx"] = (within // a.batch_size) % max(w, 1)
        (out / f"litdata-w{w}.json").write_text(json.dumps(st))
        notes[f"litdata-w{w}"] = {"epoch": epoch0 + 1, "samples_in_epoch": within,
                                  "epoch_samples": n}

    sys.path.insert(0, str(REPO / "bench"))
    import python_bench
    for w in sorted({0, a.workers}):
        dl = python_bench.mosaic_loader(a, w)
        n = dl.dataset.num_samples
        it = iter(dl)
        for _ in range(2):
            next(it)
        st = dl.state_dict()
        del it, dl
        st["epoch"] = samples // n
        st["sample_in_epoch"] = samples - st["epoch"] * n
        (out / f"mosaic-w{w}.json").write_text(json.dumps(st))
        notes[f"mosaic-w{w}"] = {"epoch": st["epoch"], "sample_in_epoch": st["sample_in_epoch"],
                                 "epoch_samples": n}
    print(json.dumps(notes))


def megatron_index(a):
    sys.path.insert(0, str(REPO / "bench"))
    import python_bench
    t0 = time.perf_counter()
    a.megatron_samples = a.megatron_run_samples
    train = python_bench.megatron_dataset(a, a.megatron_run_samples)
    print(json.dumps({"seconds": time.perf_counter() - t0, "samples": len(train)}))


# --------------------------------------------------------------------------
# Driver.

def configs(w):
    c = {"tokpack": ("tokpack", None, "tokpack.Loader + load_state_dict"),
         f"megatron-w{w}": ("megatron", w, f"Megatron-Core GPTDataset + sampler at "
                                           f"consumed_samples, num_workers={w}"),
         "megatron-w0": ("megatron", 0, "Megatron-Core GPTDataset + sampler at "
                                        "consumed_samples, num_workers=0"),
         f"litdata-w{w}": ("litdata", w, f"LitData StreamingDataLoader.load_state_dict, "
                                         f"num_workers={w}"),
         "litdata-w0": ("litdata", 0, "LitData StreamingDataLoader.load_state_dict, "
                                      "num_workers=0"),
         f"mosaic-w{w}": ("mosaic", w, f"MosaicML StreamingDataLoader.load_state_dict, "
                                       f"num_workers={w}"),
         "mosaic-w0": ("mosaic", 0, "MosaicML StreamingDataLoader.load_state_dict, "
                                    "num_workers=0"),
         "nanogpt": ("nanogpt", None, "nanoGPT-style get_batch (nothing to resume)"),
         "floor": ("floor", None, "reference: `python -c 'import torch'`")}
    return c


def base_args(a):
    return ["--data", a.data, "--workdir", a.workdir, "--seq-len", a.seq_len,
            "--batch-size", a.batch_size, "--vocab-size", a.vocab_size,
            "--megatron-run-samples", a.megatron_run_samples]


def run_child(a, name, kind, workers, timeout=300):
    state = Path(a.workdir) / "resume-states" / (
        "tokpack.json" if kind == "tokpack" else f"{kind}-w{workers}.json")
    cmd = [sys.executable, __file__, "--child", kind, "--workers", workers or 0,
           *base_args(a)]
    if kind in ("tokpack", "litdata", "mosaic"):
        cmd += ["--state", state]
    t0 = time.perf_counter()
    p = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    phases = None
    for line in p.stdout:
        if line.startswith("FIRST "):
            wall = time.perf_counter() - t0
            phases = json.loads(line[6:])
            break
    p.wait(timeout=timeout)
    if phases is None:
        raise harness.ChildFailed(harness.last_line(p.stderr.read()))
    return {"wall": wall, "phases": phases}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--child")
    ap.add_argument("--state")
    ap.add_argument("--data", default="/tmp/tokpack-python-bench/data")
    ap.add_argument("--workdir", default="/tmp/tokpack-python-bench")
    ap.add_argument("--seq-len", type=int, default=2048)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--vocab-size", type=int, default=50000)
    ap.add_argument("--megatron-run-samples", type=int, default=2 * STEP * 8,
                    help="Megatron's index covers the whole run: 2e6 steps of 8 samples")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--setup", choices=["states", "megatron-index"])
    ap.add_argument("--json-out")
    a = ap.parse_args()
    if a.child:
        child(a)
        return
    if a.setup == "states":
        make_states(a)
        return
    if a.setup == "megatron-index":
        megatron_index(a)
        return

    table = configs(a.workers)
    names = list(table)
    failed, setup = {}, {}
    for step in ("states", "megatron-index"):
        try:
            setup[step] = harness.run_child([sys.executable, __file__, "--setup", step,
                                             "--workers", a.workers, *base_args(a)]).result
        except harness.ChildFailed as e:
            print(f"resume setup {step}: FAILED: {e}", file=sys.stderr)
            kinds = ("megatron",) if step == "megatron-index" else ("tokpack", "litdata",
                                                                     "mosaic")
            failed.update({n: str(e) for n in names if table[n][0] in kinds})
    load = [harness.loadavg()]
    t_all = time.perf_counter()
    results, run_failed = harness.interleaved(
        [n for n in names if n not in failed], a.rounds,
        lambda n: run_child(a, n, table[n][0], table[n][1]),
        log=lambda res: f"{res['wall']:.2f} s")
    results.update({n: [] for n in failed})
    failed.update(run_failed)
    load.append(harness.loadavg())
    out = {"configs": table, "results": results, "failed": failed, "setup": setup,
           "rounds": a.rounds, "step": STEP, "batch_size": a.batch_size,
           "seq_len": a.seq_len, "wall": time.perf_counter() - t_all, "loadavg": load,
           "workers": a.workers}
    print(json.dumps(out, indent=1))
    if a.json_out:
        Path(a.json_out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
