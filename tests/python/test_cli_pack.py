"""`tokpack pack` and `tokpack info --packing best_fit`: plans made ahead of
training, their numbers, and two processes planning at once."""
import json
import os
import random
import signal
import subprocess
from pathlib import Path

import pytest

from child import default_sigint, wait_until
from conftest import random_text, write_jsonl


@pytest.fixture
def dataset(tmp_path, run_tokpack, spm_model):
    rng = random.Random(5)
    texts = [random_text(rng, 1, 300) for _ in range(600)]
    src = write_jsonl(tmp_path / "c.jsonl", texts)
    run_tokpack("build", "--input", src, "-o", tmp_path / "ds", "-t", spm_model,
                "--shard-tokens", "5000")
    return tmp_path / "ds"


def info(run_tokpack, ds, *flags):
    return json.loads(run_tokpack("info", ds, "--json", *flags).stdout)


def test_pack_makes_the_plan_beside_the_shards_and_info_reads_it(run_tokpack, dataset):
    out = run_tokpack("pack", dataset, "--seq-len", 128, "--threads", 2).stdout
    assert "built now" in out and "bins" in out and "padding" in out
    plans = sorted((dataset / "packing").glob("*.plan"))
    got = info(run_tokpack, dataset, "--packing", "best_fit", "--seq-len", 128)
    p = got["packing"]
    assert len(plans) == got["shards"] == len(p["plan_files"])
    assert p["documents"] == got["documents"]
    assert p["tokens"] == got["tokens"]
    assert p["padding_tokens"] == p["bins"] * 128 - p["tokens"]
    assert p["padding_fraction"] == pytest.approx(p["padding_tokens"] / (p["bins"] * 128))
    # Every non-empty document is one piece, plus one per extra 128 tokens.
    assert p["pieces"] >= p["documents"] - p["empty_documents"] + p["truncated_documents"]
    assert p["max_pieces_per_bin"] >= p["mean_pieces_per_bin"] >= 1
    # Loaded, not rebuilt: the files are unchanged.
    before = {f: f.read_bytes() for f in plans}
    again = run_tokpack("pack", dataset, "--seq-len", 128)
    assert "(0 built now" in again.stdout
    assert {f: f.read_bytes() for f in plans} == before


def full_pipe():
    """(read end, write end) of a pipe whose buffer is full: a process given
    the write end blocks in its first write until the read end is read."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    # Pages first, then byte by byte: a pipe takes a small write only whole.
    for size in (4096, 1):
        try:
            while True:
                os.write(write_end, b"." * size)
        except BlockingIOError:
            pass
    os.set_blocking(write_end, True)  # Shared with the child: its writes must wait.
    return read_end, write_end


def test_ctrl_c_while_planning_exits_130_and_leaves_no_plan(tokpack_bin, dataset):
    """SIGINT while planning used to be ignored: pack wrote every plan file
    and exited 0. Its stderr is a full pipe, so its first progress line
    (after a few shards are planned) holds it mid-planning until the test,
    having seen a plan file appear, has sent SIGINT and reads the pipe."""
    read_end, write_end = full_pipe()
    with os.fdopen(read_end, "rb") as err:
        proc = subprocess.Popen([tokpack_bin, "pack", dataset, "--seq-len", "128", "--threads",
                                 "1"], stdout=subprocess.PIPE, stderr=write_end,
                                preexec_fn=default_sigint)
        os.close(write_end)
        try:
            wait_until(lambda: list((dataset / "packing").glob("s*.plan")), "a plan file")
            proc.send_signal(signal.SIGINT)
            stderr = err.read().lstrip(b".").decode()  # Unblocks it; ends when it exits.
            proc.wait(timeout=60)
        finally:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    assert "planning cancelled" in stderr, stderr
    # The plans it had written are gone; only the lock file stays.
    assert sorted(p.name for p in (dataset / "packing").iterdir()) == ["plan.lock"]


def test_the_cap_bounds_pieces_per_bin(run_tokpack, dataset):
    p = info(run_tokpack, dataset, "--packing", "best_fit", "--seq-len", 256,
             "--max-docs-per-sequence", 2)["packing"]
    assert p["max_pieces_per_bin"] <= 2
    assert p["max_docs_per_sequence"] == 2


def test_a_cap_without_best_fit_is_refused_naming_it(run_tokpack, dataset):
    proc = run_tokpack("info", dataset, "--max-docs-per-sequence", 2, check=False)
    assert proc.returncode == 1
    assert "max_docs_per_sequence" in proc.stderr


def test_two_processes_packing_at_once_build_each_shard_once(tokpack_bin, dataset):
    procs = [subprocess.Popen([tokpack_bin, "pack", str(dataset), "--seq-len", "64"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    built = [int(o.split("plan files")[1].split("(")[1].split()[0]) for o, _ in outs]
    shards = len(list((dataset / "packing").glob("s*.L64.*.plan")))
    assert sum(built) == shards and 0 in built


def test_info_with_best_fit_needs_the_sequence_length(run_tokpack, dataset):
    proc = run_tokpack("info", dataset, "--packing", "best_fit", check=False)
    assert proc.returncode == 1
    assert "--seq-len" in proc.stderr
    assert not (Path(dataset) / "packing").exists()  # Refused before any plan is made.


def test_sample_and_profile_take_best_fit_and_the_cursor_resumes(run_tokpack, dataset, tmp_path):
    flags = ["--seq-len", 64, "--batch-size", 2, "--seed", 3, "--packing", "best_fit"]
    whole = run_tokpack("sample", dataset, *flags, "--steps", 4).stdout.splitlines()
    tokpack = pytest.importorskip("tokpack")
    loader = tokpack.Loader(str(dataset), seq_len=64, batch_size=2, seed=3, packing="best_fit",
                            as_="numpy")
    rows = [r for _, b in zip(range(4), loader) for r in b["input_ids"].tolist()]
    assert [list(map(int, line.split(": ")[1].split())) for line in whole] == rows
    state = tmp_path / "state.json"
    first = run_tokpack("sample", dataset, *flags, "--steps", 2, "--state-out", state).stdout
    assert json.loads(state.read_text())["tokpack_cursor"] == 3  # Packed: refused by old readers.
    rest = run_tokpack("sample", dataset, *flags, "--steps", 2, "--state-in", state).stdout
    assert (first + rest).splitlines() == whole
    concat = run_tokpack("sample", dataset, "--seq-len", 64, "--seed", 3, "--state-in", state,
                         check=False)
    assert concat.returncode == 1 and 'packing="best_fit"' in concat.stderr
    report = json.loads(run_tokpack("profile", dataset, *flags, "--steps", 3, "--warmup", 1,
                                    "--json").stdout)
    assert report["configurations"]


def run_with_small_tmpfs(directory, argv, env):
    """Runs `argv` with a 4 KiB tmpfs mounted on `directory`, gone afterwards:
    in a mount namespace of its own where `unshare -rm` gives one (an
    unprivileged user), else, as root (a chroot refuses namespaces), mounted
    directly and unmounted after. Skips only where neither works."""
    try:
        userns = subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode == 0
    except FileNotFoundError:
        userns = False
    if userns:
        script = 'mount -t tmpfs -o size=4k tmpfs "$1" && shift && exec "$@"'
        return subprocess.run(["unshare", "-rm", "sh", "-c", script, "sh", directory, *argv],
                              capture_output=True, text=True, env=env, timeout=300)
    if os.geteuid() != 0:
        pytest.skip("neither user and mount namespaces (unshare -rm) nor root to mount a tmpfs")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", str(directory)], check=True)
    try:
        return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    finally:
        subprocess.run(["umount", str(directory)], check=True)


def test_plans_the_full_dataset_disk_cannot_take_go_to_the_cache(tmp_path, tokpack_bin, dataset):
    """A full disk under the dataset (a 4 KiB tmpfs on its packing/, which
    takes one plan file) used to fail `sample --packing best_fit`; the
    plans it cannot store now go to the cache, and the batches are those of
    plans stored beside the shards."""
    (dataset / "packing").mkdir()
    cache = tmp_path / "cache"
    flags = ["--packing", "best_fit", "--seq-len", "128", "--steps", "3", "--batch-size", "4"]
    full = run_with_small_tmpfs(dataset / "packing", [tokpack_bin, "sample", dataset, *flags],
                                env={**os.environ, "TOKPACK_CACHE_DIR": str(cache)})
    assert full.returncode == 0, full.stderr
    assert f"cannot store packing plans of {dataset} in {dataset / 'packing'} (" in full.stderr
    assert "No space left on device" in full.stderr, full.stderr
    assert list(cache.glob("packing/*/s*.plan"))
    # The tmpfs is gone: here the plans go beside the shards.
    assert list((dataset / "packing").iterdir()) == []
    plain = subprocess.run([tokpack_bin, "sample", dataset, *flags], capture_output=True,
                           text=True, env={**os.environ, "TOKPACK_CACHE_DIR": str(tmp_path / "c2")})
    assert plain.returncode == 0, plain.stderr
    assert full.stdout == plain.stdout
