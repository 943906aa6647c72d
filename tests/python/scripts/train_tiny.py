"""A tiny causal transformer trained on CPU from a tokpack.Loader, as a real
training script would: checkpoints hold the model, the optimizer, the RNG and
the loader's state_dict. Used by test_py_train_resume.py.

    train_tiny.py DATA CKPT LOSSES --steps N --every K [--resume] [--hang-after S]

Appends "step loss.hex()" lines to LOSSES. --hang-after S stops making progress
after step S (so the test can SIGKILL it at a known point, after a checkpoint).
"""
import argparse
import os
import time

import torch
import torch.nn as nn

import tokpack


class TinyLM(nn.Module):
    """Embedding, one causal self-attention layer, linear head (also used by
    lightning_train.py, without dropout)."""

    def __init__(self, vocab, dim=32, seq_len=32, dropout=0.1):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(seq_len, dim)
        layer = nn.TransformerEncoderLayer(dim, nhead=2, dim_feedforward=64, dropout=dropout,
                                           batch_first=True)
        self.body = nn.TransformerEncoder(layer, num_layers=1, enable_nested_tensor=False)
        self.head = nn.Linear(dim, vocab)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq_len))

    def forward(self, x):
        h = self.embed(x) + self.pos(torch.arange(x.shape[1]))
        return self.head(self.body(h, mask=self.mask, is_causal=True))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("data")
    p.add_argument("ckpt")
    p.add_argument("losses")
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--every", type=int, required=True)
    p.add_argument("--resume", action="store_true")
    p.add_argument("--hang-after", type=int, default=-1)
    a = p.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    ds = tokpack.Dataset(a.data)
    model = TinyLM(ds.tokenizer_info["vocab_size"])
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    loader = tokpack.Loader(a.data, seq_len=32, batch_size=4, seed=1234, max_steps=a.steps)
    if a.resume:
        ckpt = torch.load(a.ckpt, weights_only=True)
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optim"])
        torch.set_rng_state(ckpt["rng"])
        loader.load_state_dict(ckpt["data"])

    with open(a.losses, "a") as log:
        for batch in loader:
            step = loader.step  # the number of batches consumed so far
            logits = model(batch["input_ids"])
            loss = nn.functional.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten())
            opt.zero_grad()
            loss.backward()
            opt.step()
            log.write(f"{step} {loss.item().hex()}\n")
            log.flush()
            if step % a.every == 0:
                tmp = a.ckpt + ".tmp"
                torch.save({"model": model.state_dict(), "optim": opt.state_dict(),
                            "rng": torch.get_rng_state(), "data": loader.state_dict()}, tmp)
                os.replace(tmp, a.ckpt)
            if step == a.hang_after:
                print("hanging", flush=True)
                while True:
                    time.sleep(1)


if __name__ == "__main__":
    main()
