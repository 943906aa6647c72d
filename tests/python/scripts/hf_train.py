"""A real Hugging Face Trainer run on a tokpack.Loader: a tiny randomly
initialised Llama on CPU, one process or one per torchrun worker (gloo).
Used by test_hf_trainer.py (as a script, and in-process through run()).

    hf_train.py DATA OUT --steps N --save-steps K --accumulate G --batch-size B
                [--kill-at S] [--resume]

Writes OUT/rows-RANK.jsonl as the model sees its inputs (a forward pre-hook:
one line per forward with the Trainer's global_step, the rows and the keyword
names), and OUT/log_history.json (the Trainer's log, from the saving process)
when training ends. --kill-at S SIGKILLs every process right after checkpoint
S is on disk, as a crash would. --resume resumes from the last checkpoint.
"""
import argparse
import json
import os
import signal
from pathlib import Path

import torch
import torch.distributed as dist
from transformers import LlamaConfig, LlamaForCausalLM, TrainerCallback, TrainingArguments

import tokpack
from tokpack.integrations.hf import TokpackTrainer


class KillAfterCheckpoint(TrainerCallback):
    """SIGKILLs this process once checkpoint `step` is saved by every rank."""

    def __init__(self, step):
        self.step = step

    def on_save(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            if dist.is_initialized():
                dist.barrier()  # every rank has written its part of the checkpoint
            os.kill(os.getpid(), signal.SIGKILL)


def run(data, out, *, steps, save_steps, accumulate, batch_size, kill_at=-1, resume=False):
    """Trains; returns the Trainer. In-process callers (the 1-process test) get
    the same run as the command line, without its process-wide torch settings."""
    args = TrainingArguments(
        output_dir=str(out), max_steps=steps, per_device_train_batch_size=batch_size,
        gradient_accumulation_steps=accumulate, learning_rate=3e-3, warmup_steps=2,
        logging_steps=1, save_steps=save_steps, use_cpu=True, report_to=[], seed=0,
        disable_tqdm=True,
        ddp_backend="gloo" if int(os.environ.get("WORLD_SIZE", "1")) > 1 else None)
    loader = tokpack.Loader(data, seq_len=32, batch_size=batch_size, seed=1234,
                            labels="same", document_boundaries=True)
    torch.manual_seed(0)
    # Attention dropout draws from torch's RNG: an exact resume needs the
    # RNG state restored from the checkpoint as well as the data cursor.
    config = LlamaConfig(vocab_size=tokpack.Dataset(data).tokenizer_info["vocab_size"],
                         hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2,
                         max_position_embeddings=64, attention_dropout=0.1)
    model = LlamaForCausalLM(config)
    trainer = TokpackTrainer(model=model, args=args, train_dataset=loader)
    if kill_at > 0:
        trainer.add_callback(KillAfterCheckpoint(kill_at))

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"rows-{args.process_index}.jsonl", "a", encoding="utf-8") as rows:
        def record(module, positional, kwargs):
            if module.training:
                rows.write(json.dumps({"step": trainer.state.global_step,
                                       "keys": sorted(kwargs),
                                       "rows": kwargs["input_ids"].tolist()}) + "\n")
                rows.flush()

        hook = model.register_forward_pre_hook(record, with_kwargs=True)
        trainer.train(resume_from_checkpoint=True if resume else None)
        hook.remove()
    if args.should_save:
        (out / "log_history.json").write_text(json.dumps(trainer.state.log_history))
    return trainer


def main():
    p = argparse.ArgumentParser()
    p.add_argument("data")
    p.add_argument("out")
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--save-steps", type=int, required=True)
    p.add_argument("--accumulate", type=int, required=True)
    p.add_argument("--batch-size", type=int, required=True)
    p.add_argument("--kill-at", type=int, default=-1)
    p.add_argument("--resume", action="store_true")
    a = p.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    run(a.data, a.out, steps=a.steps, save_steps=a.save_steps, accumulate=a.accumulate,
        batch_size=a.batch_size, kill_at=a.kill_at, resume=a.resume)


if __name__ == "__main__":
    main()
