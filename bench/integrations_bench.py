#!/usr/bin/env python3
"""Integrations benchmark (not a test): the data time per step of the
Hugging Face Trainer (tokpack.integrations.hf.TokpackTrainer) and of
Lightning (tokpack.integrations.lightning.TokpackDataModule) against the bare
`for batch in loader` loop over the same Loader, same run, interleaved.

Data time is the time the training loop spends inside the iterator it takes
batches from (`next()`), measured by a thin timing proxy around that
iterator: tokpack's glue and the Loader (with the release of the previous
batch, see Timed), not the trainer's own bookkeeping.
Each step's model work is a fixed busy wait (--work-ms, default 2 ms, in the
model's forward; in the bare loop after next()), so the Loader's threads are
ahead, as in real training, and the time measured is the per-batch overhead
of handing a ready batch over. The forward also checks that the tensors it
receives are the ones the Loader handed out (same data pointer): the
integrations copy nothing.

    .venv/bin/python bench/integrations_bench.py                  # prints the table
    .venv/bin/python bench/integrations_bench.py --report docs/benchmarks.md

Target (issue 17): the integrations add no copy per batch, and their data
time per step stays within a few microseconds of the bare loop's.
Workers (internal): integrations_bench.py --worker NAME --data DIR ... prints
one JSON line.
"""
import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import harness
from harness import REPO, fmt, median, ratio_rounds

WORKERS = ("bare", "hf", "lightning")


# --------------------------------------------------------------------------
# Workers: one measurement each, in a fresh process.

class Timed:
    """Iterates `inner`, timing each next() and remembering the data pointer
    of each batch's input_ids (to check that the model gets that tensor).

    It holds the previous batch until the next next(), inside the timed
    region, so that every loop pays the release of its batch (which returns
    the buffer to the ring and wakes an assembler thread) where it is timed:
    a loop whose own last reference goes inside next() (a generator's local)
    would otherwise look slower than one that drops it elsewhere."""

    def __init__(self, inner):
        self.inner = inner
        self.it = None
        self.seconds = []
        self.pointers = set()
        self.previous = None

    def __iter__(self):
        self.it = iter(self.inner)
        return self

    def __next__(self):
        t0 = time.perf_counter()
        self.previous = None
        batch = next(self.it)
        self.seconds.append(time.perf_counter() - t0)
        self.pointers.add(batch["input_ids"].data_ptr())
        self.previous = batch
        return batch

    def __len__(self):
        return len(self.inner)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def loader_options(a):
    return dict(seq_len=a.seq_len, batch_size=a.batch_size, seed=1, labels="same",
                threads=2, prefetch=4)


def make_model(a, timed):
    """A model whose forward is the fixed work, a one-parameter loss, and the
    check that the batch arrived uncopied."""
    import torch

    class Spin(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))
            self.copied = 0

        def forward(self, input_ids, labels=None, **_):
            if input_ids.data_ptr() not in timed().pointers:
                self.copied += 1
            spin(a.work_ms / 1000)
            return {"loss": (self.w ** 2).sum() + 1.0}

    return Spin()


def result(timed, copied):
    """The times after a warm-up (the first fifth, at most 50 steps)."""
    s = timed.seconds[min(len(timed.seconds) // 5, 50):]
    return {"steps": len(s), "data_us_median": statistics.median(s) * 1e6,
            "data_us_mean": statistics.fmean(s) * 1e6, "copied": copied}


def worker_bare(a):
    import tokpack

    timed = Timed(tokpack.Loader(a.data, max_steps=a.steps, **loader_options(a)))
    it = iter(timed)
    for _ in range(a.steps):
        next(it)  # Timed holds the batch: its release is timed, as in the trainers' loops
        spin(a.work_ms / 1000)
    return result(timed, 0)


def worker_hf(a):
    import tokpack
    from transformers import TrainingArguments
    from tokpack.integrations.hf import TokpackTrainer

    holder = {}

    class Trainer(TokpackTrainer):
        def get_train_dataloader(self):
            holder["timed"] = Timed(super().get_train_dataloader())
            return holder["timed"]

    model = make_model(a, lambda: holder["timed"])
    args = TrainingArguments(output_dir=str(Path(a.work) / "hf"), max_steps=a.steps,
                             per_device_train_batch_size=a.batch_size, use_cpu=True,
                             report_to=[], save_strategy="no", logging_strategy="no",
                             disable_tqdm=True)
    Trainer(model=model, args=args,
            train_dataset=tokpack.Loader(a.data, **loader_options(a))).train()
    return result(holder["timed"], model.copied)


def worker_lightning(a):
    import lightning.pytorch as pl
    import torch
    from tokpack.integrations.lightning import TokpackDataModule

    holder = {}

    class Data(TokpackDataModule):
        def train_dataloader(self):
            holder["timed"] = Timed(super().train_dataloader())
            return holder["timed"]

    inner = make_model(a, lambda: holder["timed"])

    class Module(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.inner = inner

        def training_step(self, batch, batch_idx):
            return self.inner(**batch)["loss"]

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    trainer = pl.Trainer(accelerator="cpu", devices=1, max_steps=a.steps, logger=False,
                         enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, default_root_dir=a.work)
    trainer.fit(Module(), datamodule=Data(a.data, **loader_options(a)))
    return result(holder["timed"], inner.copied)


# --------------------------------------------------------------------------
# The driver.

def make_dataset(work):
    """A dataset of synthetic English (packer_bench's generator and an 8k
    sentencepiece model trained on it), built with tokpack."""
    import tokpack
    from packer_bench import generate_corpus, train_model

    corpus = str(work / "corpus.jsonl")
    generate_corpus(corpus, 20 << 20, seed=3)
    model = train_model(corpus, str(work / "spm"), 8000, 8 << 20)
    tokpack.build(corpus, work / "data", model, threads=2, force=True)
    return work / "data"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=400, help="steps per measurement")
    p.add_argument("--work-ms", type=float, default=2.0, help="model work per step")
    p.add_argument("--seq-len", type=int, default=2048)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--report", type=Path, help="replace this report's section")
    p.add_argument("--worker", choices=WORKERS, help=argparse.SUPPRESS)
    p.add_argument("--data", help=argparse.SUPPRESS)
    p.add_argument("--work", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        print(json.dumps(globals()[f"worker_{a.worker}"](a)))
        return
    with tempfile.TemporaryDirectory(prefix="tokpack-integrations-") as tmp:
        work = Path(tmp)
        data = make_dataset(work)

        def measure(name):
            cmd = [sys.executable, __file__, "--worker", name, "--data", data, "--work", work,
                   "--steps", a.steps, "--work-ms", a.work_ms, "--seq-len", a.seq_len,
                   "--batch-size", a.batch_size]
            return harness.run_child(cmd, timeout=1200).result

        results, failed = harness.interleaved(
            WORKERS, a.rounds, measure,
            log=lambda r: f"{r['data_us_median']:.1f} us/step, copied {r['copied']}")
    body = report(a, results, failed)
    print(body)
    if a.report:
        harness.write_section("integrations", body, a.report)


def report(a, results, failed):
    bare = [r["data_us_median"] for r in results["bare"]]
    rows = []
    for name, label in [("bare", "bare `for batch in loader`"),
                        ("hf", "Hugging Face `TokpackTrainer`"),
                        ("lightning", "Lightning `TokpackDataModule`")]:
        if name in failed:
            rows.append(f"| {label} | failed: {failed[name]} | | |")
            continue
        us = [r["data_us_median"] for r in results[name]]
        copied = max(r["copied"] for r in results[name])
        rows.append(f"| {label} | {fmt(median(us), '{:,.1f}')} | "
                    f"{fmt(ratio_rounds(us, bare), '{:.2f}x')} | {copied} |")
    versions = harness.versions(["torch", "transformers", "accelerate", "lightning"])
    return "\n".join([
        f"Data time per step (the trainer inside `next()` of the iterator it takes batches "
        f"from, the release of the previous batch included), median of {a.rounds} "
        f"interleaved rounds of {a.steps} steps; "
        f"seq_len {a.seq_len}, batch {a.batch_size}, labels=\"same\", {a.work_ms:g} ms of "
        f"model work per step; \"batches copied\" counts batches whose input_ids reached "
        f"the model at another address than the Loader gave.",
        "",
        "| loop | data time per step (us) | vs bare | batches copied |",
        "|---|---|---|---|",
        *rows,
        "",
        f"Machine: {harness.machine_line()}; "
        + ", ".join(f"{k} {v}" for k, v in versions.items()) + ".",
        "Regenerate: `.venv/bin/python bench/integrations_bench.py --report docs/benchmarks.md`.",
    ])


if __name__ == "__main__":
    main()
