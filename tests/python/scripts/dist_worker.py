"""One rank of a torch.distributed (gloo) job reading a tokpack.Loader whose
rank and world size come from torch.distributed. Used by test_py_distributed.py.

    dist_worker.py DATA OUT --batch-size B --steps N [--load STATE] [--save STATE]

Rank 0 writes OUT (JSON): every step's global batch (all ranks' rows,
gathered in rank order) and each rank's step count.
"""
import argparse
import json

import torch
import torch.distributed as dist

import tokpack


def main():
    p = argparse.ArgumentParser()
    p.add_argument("data")
    p.add_argument("out")
    p.add_argument("--batch-size", type=int, required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--load")
    p.add_argument("--save")
    a = p.parse_args()

    dist.init_process_group("gloo")  # rank, world size and rendezvous from the environment
    world = dist.get_world_size()
    loader = tokpack.Loader(a.data, seq_len=16, batch_size=a.batch_size, seed=77)
    assert (loader.rank, loader.world_size) == (dist.get_rank(), world)
    if a.load:
        with open(a.load) as f:
            loader.load_state_dict(json.load(f))
    global_batches = []
    steps = 0
    for _, batch in zip(range(a.steps), loader):
        steps += 1
        parts = [torch.empty_like(batch["input_ids"]) for _ in range(world)]
        dist.all_gather(parts, batch["input_ids"])
        global_batches.append(torch.cat(parts).tolist())
    counts = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(counts, torch.tensor([steps]))
    if dist.get_rank() == 0:
        with open(a.out, "w") as f:
            json.dump({"batches": global_batches, "steps": [int(c) for c in counts]}, f)
        if a.save:
            with open(a.save, "w") as f:
                json.dump(loader.state_dict(), f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
