"""A tiny causal LM trained by a real Lightning Trainer from a
TokpackDataModule on CPU. Used by test_lightning.py.

One run, in this process (as each torchrun worker does; strategy="ddp" with
gloo when WORLD_SIZE > 1):

    lightning_train.py DATA OUT [--trainer-steps N | --loader-steps N]
        [--accumulate A] [--every K] [--kill-at S] [--resume CKPT]

--trainer-steps: an endless loader and Trainer(max_steps=N); --loader-steps:
a finite loader (max_steps=N batches) and Trainer(max_epochs=1). Checkpoints
every K optimizer steps into OUT/ckpt ("step=S.ckpt"). Each rank appends a
JSON line per batch to OUT/rank{R}.jsonl: the rows the model's forward
received (a forward pre-hook) and the loss as float.hex(); at the end it
writes OUT/done{R}. --kill-at S: SIGKILL the process right after the
checkpoint of optimizer step S is written.

Many runs, each in fresh processes forked from this one (Lightning takes
seconds of CPU to import; the runs share one import):

    lightning_train.py --plan PLAN.json RESULT.json

PLAN.json: [{"world": W, "argv": [DATA, OUT, ...]}, ...], run in order;
each rank is a forked process with RANK/LOCAL_RANK/WORLD_SIZE/MASTER_* set.
RESULT.json: per run, each rank's exit status (-9: killed by SIGKILL), or
"timeout" for a rank still alive after 300 s (a hung collective).
"""
import argparse
import json
import os
import signal
import socket
import sys
import time
import traceback

import lightning.pytorch as pl
import torch
import torch.nn as nn

import tokpack
from tokpack.integrations.lightning import TokpackDataModule
from train_tiny import TinyLM


class Module(pl.LightningModule):
    def __init__(self, vocab, log_path):
        super().__init__()
        self.model = TinyLM(vocab, dropout=0.0)  # No dropout: resumed losses are exact.
        self.log_path = log_path
        self.rows = None
        self.model.register_forward_pre_hook(self._capture)

    def _capture(self, _module, args):
        self.rows = args[0].tolist()

    def training_step(self, batch, batch_idx):
        logits = self.model(batch["input_ids"])
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten())
        with open(self.log_path, "a") as log:
            log.write(json.dumps({"rows": self.rows, "loss": loss.item().hex()}) + "\n")
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=3e-3)


class KillAfterSaving(pl.callbacks.ModelCheckpoint):
    """A ModelCheckpoint whose process dies by SIGKILL right after it wrote
    the checkpoint of optimizer step `kill_at` (on every rank; the save ends
    with a barrier, so the file is complete)."""

    def __init__(self, kill_at, **kw):
        super().__init__(**kw)
        self.kill_at = kill_at

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        super().on_train_batch_end(trainer, pl_module, outputs, batch, batch_idx)
        if trainer.global_step == self.kill_at and os.path.exists(
                os.path.join(self.dirpath, f"step={self.kill_at}.ckpt")):
            os.kill(os.getpid(), signal.SIGKILL)


def train(argv):
    p = argparse.ArgumentParser()
    p.add_argument("data")
    p.add_argument("out")
    p.add_argument("--trainer-steps", type=int, default=-1)
    p.add_argument("--loader-steps", type=int, default=0)
    p.add_argument("--accumulate", type=int, default=1)
    p.add_argument("--every", type=int, default=0)
    p.add_argument("--kill-at", type=int, default=-1)
    p.add_argument("--resume")
    a = p.parse_args(argv)

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    pl.seed_everything(0, verbose=False)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    os.makedirs(a.out, exist_ok=True)
    vocab = tokpack.Dataset(a.data).tokenizer_info["vocab_size"]
    module = Module(vocab, os.path.join(a.out, f"rank{rank}.jsonl"))
    data = TokpackDataModule(a.data, seq_len=32, batch_size=2, seed=1234,
                             max_steps=a.loader_steps, step_unit="loader")  # batches
    callbacks = []
    if a.every:
        callbacks.append(KillAfterSaving(a.kill_at, dirpath=os.path.join(a.out, "ckpt"),
                                         filename="{step}", every_n_train_steps=a.every,
                                         save_top_k=-1))
    trainer = pl.Trainer(
        accelerator="cpu", devices=world, strategy="ddp" if world > 1 else "auto",
        max_steps=a.trainer_steps, max_epochs=1 if a.loader_steps else None,
        accumulate_grad_batches=a.accumulate, callbacks=callbacks,
        enable_checkpointing=bool(a.every), logger=False, enable_progress_bar=False,
        enable_model_summary=False, deterministic=True, default_root_dir=a.out)
    trainer.fit(module, datamodule=data, ckpt_path=a.resume)
    with open(os.path.join(a.out, f"done{rank}"), "w") as f:
        json.dump({"global_step": trainer.global_step, "loader_step": data.loader.step}, f)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fork_rank(env, argv):
    pid = os.fork()
    if pid == 0:
        os.environ.update(env)
        code = 0
        try:
            train(argv)
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return pid


def run_plan(plan_path, result_path, deadline_s=300):
    """Runs each planned run in forked processes, one per rank, and waits for
    them (a rank still alive after deadline_s is killed: a hung collective)."""
    results = []
    with open(plan_path) as f:
        plan = json.load(f)
    for run in plan:
        world = run["world"]
        port = str(free_port())
        pids = [fork_rank({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port, "RANK": str(r),
                           "LOCAL_RANK": str(r), "WORLD_SIZE": str(world), "NODE_RANK": "0"},
                          run["argv"]) for r in range(world)]
        codes = {}
        deadline = time.monotonic() + deadline_s
        while len(codes) < world:
            for pid in pids:
                if pid not in codes:
                    done, status = os.waitpid(pid, os.WNOHANG)
                    if done:
                        codes[pid] = os.waitstatus_to_exitcode(status)
            if time.monotonic() > deadline:
                for pid in set(pids) - set(codes):
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    codes[pid] = "timeout"
            time.sleep(0.05)
        results.append([codes[pid] for pid in pids])
    with open(result_path, "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    if sys.argv[1] == "--plan":
        run_plan(sys.argv[2], sys.argv[3])
    else:
        train(sys.argv[1:])
