"""Loss masks for the Python tests: adds <shard>.mask files (docs/format.md
3.1) to a copy of a dataset, with their digests and trainable_tokens in its
manifest, as `tokpack build` writes them from records with loss spans."""
import json
import shutil
from pathlib import Path

import numpy as np
import pytest


def prompt_half(ids):
    """A document's loss: its first half is a prompt (no loss), the rest an answer."""
    loss = np.ones(len(ids), dtype=bool)
    loss[: len(ids) // 2] = False
    return loss


def with_loss_masks(src, dst, loss=prompt_half):
    """Copies dataset `src` to `dst` and gives it loss masks: loss(ids) is
    each document's per-token flags. Returns dst as a string."""
    xxhash = pytest.importorskip("xxhash")
    tokpack = pytest.importorskip("tokpack")
    shutil.copytree(src, dst)
    manifest = json.loads((Path(dst) / "manifest.json").read_text())
    chunk = manifest["chunk_bytes"]
    ds = tokpack.Dataset(src)
    doc = 0
    for shard in manifest["shards"]:
        flags = []
        for _ in range(shard["documents"]):
            ids = ds.doc(doc)
            flags.append(np.asarray(loss(ids), dtype=bool))
            doc += 1
        bits = np.concatenate(flags) if flags else np.zeros(0, dtype=bool)
        assert len(bits) == shard["tokens"]
        data = np.packbits(bits, bitorder="little").tobytes()
        (Path(dst) / (shard["path"] + ".mask")).write_bytes(data)
        shard["mask"] = {"bytes": len(data),
                         "xxh3_64": [xxhash.xxh3_64_hexdigest(data[i:i + chunk])
                                     for i in range(0, len(data), chunk)]}
        shard["trainable_tokens"] = int(bits.sum())
    (Path(dst) / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return str(dst)
