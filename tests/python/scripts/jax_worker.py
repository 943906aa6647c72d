"""One process of a JAX multi-process job (jax.distributed on CPU) reading a
tokpack.Loader whose rank and world size come from JAX. Used by
test_py_jax.py; its environment has no RANK / WORLD_SIZE.

    jax_worker.py DATA PORT PROCESS_ID OUT

Writes OUT (JSON): this process's rank and world size as the loader saw them,
its rows of each step, and whether torch was ever imported.
"""
import json
import sys

import jax
import numpy as np

import tokpack


def main():
    data, port, process_id, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=2,
                               process_id=process_id)
    loader = tokpack.Loader(data, seq_len=16, batch_size=3, seed=77, max_steps=6, as_="jax")
    rows = [np.asarray(batch["input_ids"]).tolist() for batch in loader]
    with open(out, "w") as f:
        json.dump({"rank": loader.rank, "world_size": loader.world_size,
                   "process_index": jax.process_index(), "rows": rows,
                   "torch_imported": "torch" in sys.modules}, f)
    jax.distributed.shutdown()


if __name__ == "__main__":
    main()
