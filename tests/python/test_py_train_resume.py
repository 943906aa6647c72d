"""A real training run SIGKILLed after a checkpoint and resumed gives, step
for step, exactly the losses of the run that was never interrupted."""
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from child import Child

pytest.importorskip("tokpack")
pytest.importorskip("torch")

SCRIPT = Path(__file__).parent / "scripts" / "train_tiny.py"


def losses(path):
    return dict(line.split() for line in Path(path).read_text().splitlines())


def train(*args, **kw):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True,
                          text=True, timeout=300, **kw)


def test_killed_and_resumed_training_matches_the_uninterrupted_run(packed, tmp_path):
    data, _ = packed
    steps, every = 30, 5
    full = train(data, tmp_path / "full.pt", tmp_path / "full.log", "--steps", steps,
                 "--every", every)
    assert full.returncode == 0, full.stderr
    want = losses(tmp_path / "full.log")
    assert sorted(map(int, want)) == list(range(1, steps + 1))

    # Killed two steps after the checkpoint at step 15: steps 16-17 are redone.
    with Child([sys.executable, str(SCRIPT), data, tmp_path / "run.pt", tmp_path / "run.log",
                "--steps", str(steps), "--every", str(every), "--hang-after", "17"]) as child:
        assert child.stdout.line(timeout=300).strip() == "hanging"
        child.send_signal(signal.SIGKILL)
        returncode, _, _ = child.finish()
    assert returncode == -signal.SIGKILL
    before = losses(tmp_path / "run.log")
    assert sorted(map(int, before)) == list(range(1, 18))

    (tmp_path / "run.log").unlink()
    resumed = train(data, tmp_path / "run.pt", tmp_path / "run.log", "--steps", steps,
                    "--every", every, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    after = losses(tmp_path / "run.log")
    assert sorted(map(int, after)) == list(range(16, steps + 1))
    for step in range(1, 18):
        assert before[str(step)] == want[str(step)], step
    for step in range(16, steps + 1):
        assert after[str(step)] == want[str(step)], step
    # the run learned something (the comparison is not between constants)
    assert float.fromhex(want[str(steps)]) < float.fromhex(want["1"])
