"""Ramps and caps from Python and the CLI: a phase that moves its weights
linearly over ramp_steps steps, a source capped at max_epochs whose weight
is shared out, both resumed exactly in another process at another world
size, and the phases file spelling of both.

The sources' tokens name them (phase_data.py), so each row says which
source it came from; the shares are checked against the ramp's integral
computed here."""
import json

import numpy as np
import pytest

from conftest import run_python
from doc_examples import doc_example
from phase_data import decode, make_sources

tokpack = pytest.importorskip("tokpack")

SEQ = 4
G = 8


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    d = tmp_path_factory.mktemp("ramps")
    return make_sources(d, {"web": 40001, "code": 8001, "math": 401})


def rows(loader, steps):
    out = []
    for _, batch in zip(range(steps), loader):
        out += [decode(row[0], SEQ)[0] for row in np.asarray(batch["input_ids"])]
    return out


def make(sources, **kw):
    kw = {"seq_len": SEQ, "batch_size": G, "shuffle": False, "as_": "numpy", **kw}
    return tokpack.Loader(sources, **kw)


RAMP = [(0, {"web": 1.0}), {"start_step": 10, "weights": {"code": 1.0}, "ramp_steps": 20}]


def test_a_ramp_moves_the_share_linearly_over_its_steps(sources):
    drawn = rows(make(sources, phases=RAMP), 40)
    assert set(drawn[:10 * G]) == {0}
    # Over the ramp (steps 10..29) code's share grows linearly from 0 to 1:
    # by position q of the ramp it has q^2 / (2 L) draws, within one.
    length = 20 * G
    for q in range(1, length + 1):
        code = sum(1 for s in drawn[10 * G:10 * G + q] if s == 1)
        assert abs(code - q * q / (2 * length)) < 1, q
    assert set(drawn[30 * G:]) == {1}


def test_phases_report_their_ramp_and_a_resume_elsewhere_finishes_it(sources, tmp_path):
    loader = make(sources, phases=RAMP, shuffle=True, seed=5)
    assert "'math': 0.0}, 20)]" in repr(loader)
    assert loader.phases == [(0, {"web": 1.0, "code": 0.0, "math": 0.0}),
                             (10, {"web": 0.0, "code": 1.0, "math": 0.0}, 20)]
    reference = [np.asarray(b["input_ids"]).tolist() for _, b in zip(range(40), loader)]
    saved = make(sources, phases=RAMP, shuffle=True, seed=5)
    for _, _b in zip(range(15), saved):
        pass
    state = saved.state_dict()
    assert state["tokpack_cursor"] == 4 and state["phases"][1]["ramp"] == 20 * G
    # Another process, 2 ranks of 2 rows: global batch 4, the same ramp positions.
    code = """if True:
        import json, sys, numpy as np, tokpack
        sources, state = json.loads(sys.argv[1]), json.loads(sys.argv[2])
        phases = [(0, {"web": 1.0}), (10, {"code": 1.0}, 20)]
        out = []
        for r in range(2):
            l = tokpack.Loader(sources, phases=phases, seq_len=4, seed=5, batch_size=2, rank=r,
                               world_size=2, shuffle=True, as_="numpy")
            l.load_state_dict(state)
            out.append([np.asarray(b["input_ids"]).tolist() for _, b in zip(range(20), l)])
        print(json.dumps(out))
    """
    proc = run_python(code, json.dumps(sources), json.dumps(state))
    assert proc.returncode == 0, proc.stderr
    a, b = json.loads(proc.stdout)
    resumed = [row for i in range(20) for row in a[i] + b[i]]
    whole = [row for batch in reference[15:25] for row in batch]
    assert resumed == whole
    # A resume that changes the begun ramp is refused, naming it.
    other = make(sources, phases=[(0, {"web": 1.0}), (10, {"code": 1.0}, 5)], shuffle=True,
                 seed=5)
    with pytest.raises(ValueError, match="ramp_steps 20"):
        other.load_state_dict(state)


def test_a_capped_source_stops_at_its_epochs_and_its_weight_is_shared_out(sources):
    # math: 100 samples per epoch, capped at 2 epochs; weight 0.5 of each step.
    phases = [(0, {"web": 0.25, "code": 0.25, "math": 0.5})]
    loader = make(sources, phases=phases, max_epochs={"math": 2})
    drawn = rows(loader, 100)
    math = [i for i, s in enumerate(drawn) if s == 2]
    assert len(math) == 200 and math[-1] < 420
    after = drawn[math[-1] + 1:]
    assert abs(after.count(0) - after.count(1)) <= 1
    stats = loader.stats()
    assert stats["sources"][2]["samples"] == 200 and stats["sources"][2]["epochs"] == 2.0
    assert len(stats["phases"]) == 1 and stats["phases"][0]["samples"]["math"] == 200
    state = loader.state_dict()
    # One phase; the run since math's cap is the cursor's "run".
    assert state["sources"][2]["cap"] == 200 and len(state["phases"]) == 1
    assert state["run"][2] == 0 and 0 < sum(state["run"]) < 800
    resumed = make(sources, phases=phases, max_epochs={"math": 2})
    resumed.load_state_dict(state)
    assert rows(resumed, 5) == rows(loader, 5)
    with pytest.raises(ValueError, match="cap of 200 draws"):
        make(sources, phases=phases).load_state_dict(state)


def test_a_phase_left_with_capped_sources_only_is_a_named_error(sources):
    loader = make(sources, phases=[(0, {"math": 1.0})], max_epochs={"math": 1})
    with pytest.raises(IndexError, match=r"phase 0 \(start_step 0\) has no source left"):
        rows(loader, 20)


@pytest.mark.parametrize("caps, error", [
    ({"nope": 1}, "unknown source 'nope'"),
    ({"math": -1}, "max_epochs: the cap of 'math' is -1.0"),
    ({"math": "x"}, "must be a number"),
    ([1, 2], "must be a dict"),
])
def test_bad_caps_are_named_errors(sources, caps, error):
    with pytest.raises((ValueError, TypeError), match=error):
        make(sources, phases=[(0, {"web": 1.0})], max_epochs=caps)


def test_bad_ramps_are_named_errors(sources):
    with pytest.raises(ValueError, match=r"phases\[0\] \(start_step 0\): ramp_steps is 3"):
        make(sources, phases=[(0, {"web": 1.0}, 3)])
    with pytest.raises(ValueError, match="ramp_steps is -2"):
        make(sources, phases=[(0, {"web": 1.0}), (4, {"code": 1.0}, -2)])
    with pytest.raises(TypeError, match="ramp_steps must be an integer"):
        make(sources, phases=[(0, {"web": 1.0}), {"start_step": 4, "weights": {"code": 1.0},
                                                   "ramp_steps": 1.5}])


def test_the_phases_file_takes_ramps_and_caps(sources, tmp_path, run_tokpack):
    mix = {"sources": {"web": sources["web"], "math": {"path": sources["math"], "max_epochs": 1}},
           "phases": [{"start_step": 0, "weights": {"web": 1}},
                      {"start_step": 2, "weights": {"web": 1, "math": 1}, "ramp_steps": 4}]}
    path = tmp_path / "mix.json"
    path.write_text(json.dumps(mix))
    out = run_tokpack("sample", "--phases", path, "--seq-len", 4, "--batch-size", 8,
                      "--shuffle", "none", "--steps", 40, "--summary")
    # Its one epoch of 100 samples, then capped.
    assert "source math: samples 100," in out.stdout
    bad = dict(mix, phases=[{"start_step": 0, "weights": {"web": 1}, "ramp_steps": "x"}])
    path.write_text(json.dumps(bad))
    out = run_tokpack("sample", "--phases", path, "--seq-len", 4, "--steps", 1, check=False)
    assert out.returncode == 1 and "field 'phases[0].ramp_steps'" in out.stderr
    bad = dict(mix, sources={"web": {"path": sources["web"], "max_epochs": 0}})
    path.write_text(json.dumps(bad))
    out = run_tokpack("sample", "--phases", path, "--seq-len", 4, "--steps", 1, check=False)
    assert out.returncode == 1 and "field 'sources.web.max_epochs' is not a cap" in out.stderr


def test_the_docs_phases_file_with_a_ramp_and_a_cap_runs(sources, tmp_path, run_tokpack):
    mix = json.loads(doc_example("cli.md", "cli-phases-ramp-cap"))
    assert mix["phases"][1]["ramp_steps"] == 1000 and mix["sources"]["math"]["max_epochs"] == 4
    mix["sources"] = {"web": sources["web"], "math": {"path": sources["math"], "max_epochs": 4}}
    for phase in mix["phases"]:  # The docs' steps, a hundred times shorter.
        phase["start_step"] //= 100
        phase["ramp_steps"] = phase.get("ramp_steps", 0) // 100
    (tmp_path / "mix.json").write_text(json.dumps(mix))
    out = run_tokpack("sample", "--phases", tmp_path / "mix.json", "--seq-len", 4,
                      "--batch-size", 8, "--shuffle", "none", "--steps", 400, "--summary")
    # math's 100 samples per epoch, 4 epochs, then web alone.
    assert "source math: samples 400," in out.stdout
