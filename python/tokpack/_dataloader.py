"""tokpack.Loader inside torch's DataLoader: refusing automatic batching.

A Loader yields whole batches. torch.utils.data.DataLoader collates
batch_size items into one (batch_size defaults to 1, and the Hugging Face
Trainer sets it from per_device_train_batch_size), so DataLoader(loader)
would silently train on batches of batches. Only batch_size=None is right;
any other setting is refused when iteration starts. Stateless, so
thread-safe.
"""
from __future__ import annotations

import sys
from typing import Any

_COLLATION_MESSAGE = (
    "torch.utils.data.DataLoader was given a tokpack.Loader with batch_size set (its default "
    "is 1), so it would stack N of tokpack's batches into a batch of batches (input_ids of "
    "shape [N, batch_size, seq_len]). A tokpack.Loader yields whole batches: use "
    "DataLoader(loader, batch_size=None), or iterate the loader directly. With the Hugging "
    "Face Trainer (which sets batch_size from per_device_train_batch_size), use "
    "tokpack.integrations.hf.TokpackTrainer."
)


def refuse_auto_collation(loader: Any) -> None:
    """TypeError when iteration is started by torch's DataLoader fetcher with
    automatic batching on, over this loader itself or a wrapper whose
    ``dataset`` is it (accelerate's IterableDatasetShard, used by the HF
    Trainer on several processes). torch tells a dataset nothing about the
    DataLoader iterating it, so the fetcher is found on the call stack.
    Called once per iter(), so batches pay nothing; torch is not imported
    here (no fetcher without it)."""
    fetch = sys.modules.get("torch.utils.data._utils.fetch")
    if fetch is None:
        return
    fetcher_type = fetch._IterableDatasetFetcher
    codes = (fetcher_type.__init__.__code__, fetcher_type.fetch.__code__)
    frame = sys._getframe(1).f_back  # the caller of Loader.__iter__
    # The fetcher calls iter(dataset) itself, or a wrapper's generator does on
    # the fetcher's first next(): one frame between them at most.
    for _ in range(2):
        if frame is None:
            return
        if frame.f_code in codes:
            fetcher = frame.f_locals.get("self")
            dataset = getattr(fetcher, "dataset", None)
            wraps_loader = dataset is loader or getattr(dataset, "dataset", None) is loader
            if wraps_loader and getattr(fetcher, "auto_collation", False):
                raise TypeError(_COLLATION_MESSAGE)
            return
        frame = frame.f_back
