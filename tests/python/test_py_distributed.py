"""torch.distributed with the gloo backend, 2 to 4 real processes on
loopback: ranks read disjoint slices that together are each global batch,
take equal numbers of steps, and a 4-rank run resumes on 2 ranks in the same
global order."""
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

tokpack = pytest.importorskip("tokpack")
torch = pytest.importorskip("torch")
if not torch.distributed.is_available():
    pytest.skip("torch.distributed is not available", allow_module_level=True)

WORKER = Path(__file__).parent / "scripts" / "dist_worker.py"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(world, data, out, *args):
    port = free_port()
    procs = []
    for rank in range(world):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                   WORLD_SIZE=str(world), OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen([sys.executable, str(WORKER), data, str(out),
                                       *map(str, args)], env=env, stderr=subprocess.PIPE,
                                      text=True))
    errors = []
    for p in procs:
        try:
            _, err = p.communicate(timeout=240)
        finally:
            p.kill()
        if p.returncode != 0:
            errors.append(err)
    assert not errors, errors
    return json.loads(Path(out).read_text())


def reference_rows(data, global_batch, steps, state=None):
    loader = tokpack.Loader(data, seq_len=16, batch_size=global_batch, seed=77, rank=0,
                            world_size=1)
    if state:
        loader.load_state_dict(state)
    return [next(loader)["input_ids"].tolist() for _ in range(steps)]


@pytest.mark.parametrize("world", [2, 3, 4])
def test_ranks_split_every_global_batch_disjointly_with_equal_steps(packed, tmp_path, world):
    data, _ = packed
    got = launch(world, data, tmp_path / "out.json", "--batch-size", 3, "--steps", 8)
    assert got["steps"] == [8] * world
    assert got["batches"] == reference_rows(data, 3 * world, 8)
    rows = [tuple(r) for b in got["batches"] for r in b]
    assert len(set(rows)) == len(rows)  # no sample twice (one epoch holds far more)


def test_a_four_rank_run_resumes_on_two_ranks_in_the_same_global_order(packed, tmp_path):
    data, _ = packed
    state = tmp_path / "state.json"
    first = launch(4, data, tmp_path / "a.json", "--batch-size", 3, "--steps", 5,
                   "--save", state)
    second = launch(2, data, tmp_path / "b.json", "--batch-size", 3, "--steps", 6,
                    "--load", state)
    assert second["steps"] == [6, 6]
    # one stream of samples: 4 x 3 x 5 = 60 samples, then 2 x 3 x 6 = 36 more
    stream = [r for b in reference_rows(data, 12, 8) for r in b]
    assert [r for b in first["batches"] for r in b] == stream[:60]
    assert [r for b in second["batches"] for r in b] == stream[60:96]
