"""Runs a training script, unchanged, as one torchrun process and records what
its model sees, so that a test can check docs/pytorch.md's recipe as written.
Used by test_pytorch_recipes.py.

    torchrun ... ddp_harness.py OUT_DIR KILL_AT SCRIPT [SCRIPT ARGS...]

The recording uses torch's global module hooks, so the script needs no test
code: the first module the script calls is taken as the model (the DDP
wrapper, or the FSDP root), and for each of its forward calls this rank
appends one JSON line to OUT_DIR/rank{RANK}.jsonl: the input rows and the
output's sum as an exact float (hex), which differs as soon as any weight
differs. When KILL_AT >= 0, rank 0 SIGKILLs itself as it starts forward
number KILL_AT (0-based): the script has finished everything before it,
checkpoints included, and torchrun then stops the other ranks, as on a crash.
"""
import json
import os
import runpy
import signal
import sys

import torch
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook


def main() -> None:
    out_dir, kill_at, script = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    rank = int(os.environ["RANK"])
    log = open(os.path.join(out_dir, f"rank{rank}.jsonl"), "a", encoding="utf-8")
    seen = {"model": None, "forwards": 0}

    def before(module, args):
        if seen["model"] is None:
            seen["model"] = module
        if module is seen["model"] and rank == 0 and seen["forwards"] == kill_at:
            log.close()
            os.kill(os.getpid(), signal.SIGKILL)

    def after(module, args, output):
        if module is not seen["model"]:
            return
        record = {"rows": args[0].tolist(), "out": output.detach().double().sum().item().hex()}
        log.write(json.dumps(record) + "\n")
        log.flush()  # a SIGKILL (of this rank or by torchrun) keeps what was written
        seen["forwards"] += 1

    register_module_forward_pre_hook(before)
    register_module_forward_hook(after)
    sys.argv = [script, *sys.argv[4:]]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
