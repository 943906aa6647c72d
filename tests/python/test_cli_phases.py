"""`tokpack sample --phases FILE --summary` and `tokpack profile --phases`:
a mixture that changes during the run from the command line, the counts
it prints, and the errors for bad phases files (naming file and field)."""
import json
import re

import pytest

from phase_data import decode, expected_rows, make_sources

SEQ = 4
NAMES = ["web", "code", "math"]
PHASES = [{"start_step": 0, "weights": {"web": 0.9, "code": 0.1}},
          {"start_step": 5, "weights": {"web": 0.5, "code": 0.2, "math": 0.3}},
          {"start_step": 12, "weights": {"web": 0.7, "math": 0.3}}]


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    return make_sources(tmp_path_factory.mktemp("cli_phases"),
                        {"web": 4001, "code": 801, "math": 401})


@pytest.fixture
def phases_file(tmp_path, sources):
    path = tmp_path / "mix.json"
    path.write_text(json.dumps({"sources": sources, "phases": PHASES}))
    return path


COMMON = ["--seq-len", SEQ, "--batch-size", 4, "--shuffle", "none"]


def rows(stdout):
    return [decode(line.split(":", 1)[1].split()[0], SEQ)
            for line in stdout.splitlines() if line.startswith("step ")]


def test_sample_follows_the_phases_and_summarizes_the_counts(run_tokpack, phases_file, sources):
    out = run_tokpack("sample", "--phases", phases_file, *COMMON, "--steps", 15,
                      "--summary").stdout
    got = rows(out)
    per_epoch = [(4001 - 1) // SEQ, (801 - 1) // SEQ, (401 - 1) // SEQ]
    weights = [[p["weights"].get(n, 0) for n in NAMES] for p in PHASES]
    assert got == expected_rows(weights, [0, 20, 48], 60, per_epoch)
    summary = out.split("summary (global counts, all ranks", 1)[1].splitlines()[1:]
    for k, name in enumerate(NAMES):
        n = sum(1 for s, _ in got if s == k)
        line = f"source {name}: samples {n}, tokens {n * SEQ}, epochs {n / per_epoch[k]:.4f} " \
               f"({n // per_epoch[k]} completed, {n % per_epoch[k]} samples into the current one)"
        assert line in summary
    bounds = [0, 20, 48, 60]
    for j, p in enumerate(PHASES):
        part = got[bounds[j]:bounds[j + 1]]
        w = " ".join(f"{n}={p['weights'].get(n, 0):g}" for n in NAMES)
        c = " ".join(f"{n}={sum(1 for s, _ in part if s == k)}" for k, n in enumerate(NAMES))
        assert (f"phase {j}: start_step {p['start_step']}, start_position {bounds[j]}, "
                f"weights {w}, samples {c}") in summary
    # The Python loader serves the same rows from the same phases.
    tokpack = pytest.importorskip("tokpack")
    import numpy as np
    loader = tokpack.Loader(sources, phases=[(p["start_step"], p["weights"]) for p in PHASES],
                            seq_len=SEQ, batch_size=4, shuffle=False, as_="numpy")
    py = [decode(r[0], SEQ) for _, b in zip(range(15), loader) for r in np.asarray(b["input_ids"])]
    assert py == got


def test_sample_resumes_across_a_phase_with_its_cursor(run_tokpack, phases_file, tmp_path):
    whole = rows(run_tokpack("sample", "--phases", phases_file, *COMMON, "--steps", 14).stdout)
    state = tmp_path / "state.json"
    head = rows(run_tokpack("sample", "--phases", phases_file, *COMMON, "--steps", 4,
                            "--state-out", state).stdout)
    tail = rows(run_tokpack("sample", "--phases", phases_file, *COMMON, "--steps", 10,
                            "--state-in", state).stdout)
    assert head + tail == whole
    # Positional datasets keep working, with a summary of their one phase.
    out = run_tokpack("sample", json.loads(phases_file.read_text())["sources"]["web"], *COMMON,
                      "--steps", 2, "--summary").stdout
    assert re.search(r"phase 0: start_step 0, start_position 0, weights \S+web=1, samples \S+web=8",
                     out)


def test_profile_reports_the_mixture(run_tokpack, phases_file):
    report = json.loads(run_tokpack("profile", "--phases", phases_file, "--step-time", "0ms",
                                    "--steps", 8, "--warmup", 2, "--seq-len", SEQ,
                                    "--batch-size", 4, "--threads", 1, "--prefetch", 2,
                                    "--json").stdout)
    mix = report["mixture"]
    assert [s["name"] for s in mix["sources"]] == NAMES
    assert sum(s["samples"] for s in mix["sources"]) == 40
    assert [p["start_step"] for p in mix["phases"]] == [0, 5]
    assert mix["phases"][1]["weights"] == {"web": 0.5, "code": 0.2, "math": 0.3}
    assert sum(mix["phases"][1]["samples"].values()) == 20
    assert report["phases_file"] == str(phases_file)


def bad(tmp_path, run_tokpack, content, command="sample"):
    path = tmp_path / "bad.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    extra = ["--step-time", "0ms", "--steps", 1] if command == "profile" else []
    proc = run_tokpack(command, "--phases", path, "--seq-len", SEQ, *extra, check=False)
    assert proc.returncode == 1, proc.stderr
    assert str(path) in proc.stderr, proc.stderr
    return proc.stderr


@pytest.mark.parametrize("edit, words", [
    (lambda f: f["phases"][1]["weights"].update(mathh=1), ["'phases[1].weights.mathh'",
                                                           "names no source", "web, code, math"]),
    (lambda f: f["phases"][0]["weights"].update(web=-0.5), ["'phases[0].weights.web'", "-0.5"]),
    (lambda f: f["phases"][1]["weights"].update(web="a lot"), ["'phases[1].weights.web'",
                                                               "not a number"]),
    (lambda f: f["phases"][2].update(start_step=5), ["'phases[2].start_step'", "not after"]),
    (lambda f: f["phases"][0].update(start_step=2), ["'phases[0].start_step'", "starts at 0"]),
    (lambda f: f["phases"][1].update(start_step=-3), ["'phases[1].start_step'", ">= 0"]),
    (lambda f: f["phases"][1].update(weights={"web": 0}), ["'phases[1].weights'",
                                                           "no positive weight"]),
    (lambda f: f["phases"][1].update(weight={}), ["'phases[1].weight'", "not a field"]),
    (lambda f: f.pop("sources"), ["'sources'", "missing"]),
    (lambda f: f["sources"].update(web=3), ["'sources.web'", "path or URL"]),
    (lambda f: f.update(phases=[]), ["'phases'", "empty"]),
    (lambda f: f.update(phase=[]), ["'phase'", "not a field"]),
])
def test_bad_phases_files_name_the_file_and_the_field(tmp_path, run_tokpack, sources, edit,
                                                      words):
    content = {"sources": dict(sources), "phases": json.loads(json.dumps(PHASES))}
    edit(content)
    err = bad(tmp_path, run_tokpack, content)
    for w in words:
        assert w in err, (w, err)


def test_other_phases_file_errors(tmp_path, run_tokpack, sources, phases_file):
    assert "not JSON" in bad(tmp_path, run_tokpack, '{"sources": {')
    assert "not a JSON object" in bad(tmp_path, run_tokpack, "[1, 2]")
    err = bad(tmp_path, run_tokpack, '{"sources": {"a": "x", "a": "y"}, "phases": []}')
    assert "'sources.a' is given twice" in err
    err = bad(tmp_path, run_tokpack, json.dumps({"sources": sources, "phases": PHASES})[:-1]
              + ', "sources": {"web": "elsewhere"}}')
    assert "field 'sources' is given twice" in err
    assert "field 'phases[0].weights.web'" in bad(
        tmp_path, run_tokpack, {"sources": sources,
                                "phases": [{"start_step": 0, "weights": {"web": -1}}]},
        command="profile")
    missing = run_tokpack("sample", "--phases", tmp_path / "nope.json", check=False)
    assert missing.returncode == 1 and "nope.json" in missing.stderr
    # Datasets as arguments and in the file, or neither: which to give.
    both = run_tokpack("sample", sources["web"], "--phases", phases_file, check=False)
    assert both.returncode == 1 and "not both" in both.stderr
    neither = run_tokpack("sample", check=False)
    assert neither.returncode == 1 and "--phases FILE" in neither.stderr
    prof = run_tokpack("profile", sources["web"], "--phases", phases_file, check=False)
    assert prof.returncode == 1 and "not both" in prof.stderr
    # A dataset that does not open is named.
    err = bad(tmp_path, run_tokpack, {"sources": {"web": str(tmp_path / "gone")},
                                      "phases": [{"start_step": 0, "weights": {"web": 1}}]})
    assert "gone" in err


def test_held_out_splits_from_the_command_line_and_the_phases_file(run_tokpack, sources,
                                                                  tmp_path):
    # web: 42 documents of 97 tokens (the last of 24), each token its stream
    # position; "9,1" deals 5 of its 42 runs (one document each) to part 1.
    tokpack = pytest.importorskip("tokpack")
    held = tokpack.Dataset(sources["web"], split="9,1", split_index=1)
    assert len(held) == 5
    held_tokens = set(held.tokens(0, held.num_tokens).tolist())
    tokens = [[int(t) for t in line.split(":", 1)[1].split()]
              for line in run_tokpack("sample", sources["web"], *COMMON, "--steps", 3,
                                      "--split", "9,1", "--split-index", 1).stdout.splitlines()
              if line.startswith("step ")]
    assert len(tokens) == 12 and all(t in held_tokens for row in tokens for t in row)
    mix = {"sources": {"train": {"path": sources["web"], "split": "9,1"},
                       "valid": {"path": sources["web"], "split": "9,1", "split_index": 1}},
           "phases": [{"start_step": 0, "weights": {"train": 1, "valid": 1}}]}
    path = tmp_path / "splits.json"
    path.write_text(json.dumps(mix))
    out = run_tokpack("sample", "--phases", path, *COMMON, "--steps", 4, "--summary").stdout
    rows_tokens = [[int(t) for t in line.split(":", 1)[1].split()]
                   for line in out.splitlines() if line.startswith("step ")]
    # The blend alternates train, valid, train, ...: position p is part p % 2.
    for p, row in enumerate(rows_tokens):
        assert all((t in held_tokens) == (p % 2 == 1) for t in row), (p, row)
    assert "source valid: samples 8," in out
    # A bad dataset option in the file names its field.
    mix["sources"]["valid"]["split"] = "9,x"
    path.write_text(json.dumps(mix))
    err = run_tokpack("sample", "--phases", path, *COMMON, check=False).stderr
    assert "'sources.valid.split'" in err and "9,x" in err, err
    mix["sources"]["valid"] = {"path": sources["web"], "splitt": "9,1"}
    path.write_text(json.dumps(mix))
    err = run_tokpack("sample", "--phases", path, *COMMON, check=False).stderr
    assert "'sources.valid.splitt'" in err, err
