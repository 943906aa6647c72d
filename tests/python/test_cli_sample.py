"""`tokpack sample`: the reader seen from the command line, with its cursor."""
import json

from conftest import write_jsonl


def batches(stdout):
    return [line for line in stdout.splitlines() if line.startswith("step ")]


def test_sample_resumes_exactly_and_refuses_other_settings(tmp_path, run_tokpack, spm_model,
                                                          corpus):
    path, _ = corpus(400)
    ds = tmp_path / "ds"
    run_tokpack("build", "-i", path, "-o", ds, "-t", spm_model)
    common = ["--seq-len", "32", "--batch-size", "4", "--seed", "7"]
    full = batches(run_tokpack("sample", ds, *common, "--steps", "10").stdout)
    assert len(full) == 40
    state = tmp_path / "state.json"
    first = batches(run_tokpack("sample", ds, *common, "--steps", "4", "--state-out",
                                state).stdout)
    cursor = json.loads(state.read_text())
    assert cursor["position"] == 16 and len(state.read_bytes()) < 1024
    rest = batches(run_tokpack("sample", ds, *common, "--steps", "6", "--state-in",
                               state).stdout)
    assert first + rest == full

    # Two ranks of 2 rows see exactly the rows of one rank of 4, in order.
    ranks = [batches(run_tokpack("sample", ds, "--seq-len", "32", "--batch-size", "2",
                                 "--seed", "7", "--world-size", "2", "--rank", r,
                                 "--steps", "10").stdout) for r in (0, 1)]
    strip = lambda line: line.split(":", 1)[1]
    for step in range(10):
        joined = [strip(l) for l in ranks[0][2 * step:2 * step + 2] + ranks[1][2 * step:2 * step + 2]]
        assert joined == [strip(l) for l in full[4 * step:4 * step + 4]]

    bad = run_tokpack("sample", ds, "--seq-len", "32", "--seed", "8", "--state-in", state,
                      check=False)
    assert bad.returncode == 1 and "seed 7" in bad.stderr


def test_sample_refuses_a_sequence_longer_than_the_data(tmp_path, run_tokpack, spm_model):
    f = write_jsonl(tmp_path / "t.jsonl", ["a few words"])
    run_tokpack("build", "-i", f, "-o", tmp_path / "ds", "-t", spm_model)
    proc = run_tokpack("sample", tmp_path / "ds", "--seq-len", "4096", check=False)
    assert proc.returncode == 1 and "too long" in proc.stderr
