"""`tokpack pack` and `tokpack info --packing best_fit`: plans made ahead of
training, their numbers, and two processes planning at once."""
import json
import subprocess
from pathlib import Path

import pytest

from conftest import random_text, write_jsonl
import random


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
