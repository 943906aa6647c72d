"""Mixture phases from Python: tokpack.Loader(phases=...), set_phases,
start_phase, load_state_dict(state, phases=...), the per-source and
per-phase counts of stats(), resumes across a phase boundary (in another
process, at another world size), and the errors a user meets.

The sources hold tokens that name them (phase_data.py), so every row is
checked against the phase rule of docs/reader.md computed here."""
import json
import math

import numpy as np
import pytest

from conftest import run_python
from phase_data import decode, expected_rows, make_sources, phase_sources

tokpack = pytest.importorskip("tokpack")

SEQ = 4
NAMES = ["web", "code", "math"]
# web joins with 0.9, math joins at step 5, code leaves at step 12.
PHASES = [(0, {"web": 0.9, "code": 0.1}),
          (5, {"web": 0.5, "code": 0.2, "math": 0.3}),
          (12, {"web": 0.7, "math": 0.3})]


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    d = tmp_path_factory.mktemp("phases")
    return make_sources(d, {"web": 4001, "code": 801, "math": 401})


def weight_lists(phases):
    return [[w.get(n, 0.0) for n in NAMES] for _, w in phases]


def run_rows(loader, steps):
    """(source, sample) of the rows of `steps` batches."""
    out = []
    for _, batch in zip(range(steps), loader):
        out += [decode(row[0], SEQ) for row in np.asarray(batch["input_ids"])]
    return out


def make(sources, **kw):
    kw = {"seq_len": SEQ, "batch_size": 4, "shuffle": False, "as_": "numpy", **kw}
    return tokpack.Loader(sources, **kw)


def test_each_phase_follows_its_weights_from_its_step(sources):
    loader = make(sources, phases=PHASES)
    per_epoch = loader.samples_per_source
    got = run_rows(loader, 30)
    starts = [s * 4 for s, _ in PHASES]
    assert got == expected_rows(weight_lists(PHASES), starts, 120, per_epoch)
    # Within every phase, every prefix stays within one draw of its weights.
    for j, (start, weights) in enumerate(PHASES):
        end = starts[j + 1] if j + 1 < len(starts) else len(got)
        total = sum(weights.values())
        counts = [0, 0, 0]
        for q, (s, _) in enumerate(got[starts[j]:end]):
            counts[s] += 1
            for k, name in enumerate(NAMES):
                assert abs(counts[k] - weights.get(name, 0) / total * (q + 1)) < 1 + 1e-9
        # A source absent from a phase is never drawn in it.
        for k, name in enumerate(NAMES):
            if weights.get(name, 0) == 0:
                assert counts[k] == 0
    assert loader.phases == [(s, {n: float(w.get(n, 0)) for n in NAMES}) for s, w in PHASES]


def test_stats_count_samples_per_source_and_phase(sources):
    loader = make(sources, phases=PHASES)
    got = run_rows(loader, 15)
    s = loader.stats()
    per_epoch = loader.samples_per_source
    for k, src in enumerate(s["sources"]):
        n = sum(1 for x, _ in got if x == k)
        assert src["name"] == NAMES[k] and src["samples"] == n and src["tokens"] == n * SEQ
        assert src["epochs_completed"] == n // per_epoch[k]
        assert src["epoch_samples"] == n % per_epoch[k]
        assert math.isclose(src["epochs"], n / per_epoch[k])
    # Begun phases only: at step 15, phases 0, 1 and 2 (from step 12).
    assert [(p["start_step"], p["start_position"]) for p in s["phases"]] == [(0, 0), (5, 20),
                                                                            (12, 48)]
    bounds = [0, 20, 48, 60]
    for j, p in enumerate(s["phases"]):
        assert p["weights"] == {n: float(PHASES[j][1].get(n, 0)) for n in NAMES}
        part = got[bounds[j]:bounds[j + 1]]
        assert p["samples"] == {n: sum(1 for x, _ in part if x == k) for k, n in enumerate(NAMES)}


def test_a_source_drawn_past_its_epoch_repeats_nothing_within_the_epoch(sources):
    # math is small (100 samples): over many steps of phase 2 it wraps.
    loader = make(sources, phases=PHASES, batch_size=8)
    got = run_rows(loader, 150)
    per_epoch = loader.samples_per_source
    for k in range(3):
        drawn = [sample for s, sample in got if s == k]
        for e in range(0, len(drawn), per_epoch[k]):
            epoch = drawn[e:e + per_epoch[k]]
            assert len(set(epoch)) == len(epoch)
    assert loader.stats()["sources"][2]["epochs_completed"] >= 1


def test_resume_across_a_phase_boundary_at_world_size_4_then_2_is_identical(sources, tmp_path):
    # 4 ranks of 2 rows, then 2 ranks of 4: the same global batch of 8, so the
    # resumed run must serve the uninterrupted run's rows (shuffled too).
    kw = dict(seq_len=SEQ, seed=3, as_="numpy")
    whole = tokpack.Loader(sources, phases=PHASES, batch_size=8, **kw)
    reference = [np.asarray(b["input_ids"]).copy() for _, b in zip(range(10), whole)]
    ranks = [tokpack.Loader(sources, phases=PHASES, batch_size=2, rank=r, world_size=4, **kw)
             for r in range(4)]
    for step in range(4):
        rows = np.concatenate([np.asarray(next(l)["input_ids"]) for l in ranks])
        assert (rows == reference[step]).all()
    state = ranks[0].state_dict()
    assert state == ranks[3].state_dict() and state["step"] == 4
    (tmp_path / "state.json").write_text(json.dumps(state))
    code = """if True:
        import json, sys, numpy as np, tokpack
        sources, phases, state = (json.loads(a) for a in sys.argv[1:4])
        phases = [tuple(p) for p in phases]
        out = []
        for r in range(2):
            l = tokpack.Loader(sources, phases=phases, seq_len=4, seed=3, batch_size=4, rank=r,
                               world_size=2, as_="numpy")
            l.load_state_dict(state)
            out.append([np.asarray(b["input_ids"]).tolist() for _, b in zip(range(6), l)])
        print(json.dumps(out))
    """
    proc = run_python(code, json.dumps(sources), json.dumps(PHASES), json.dumps(state))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    for i in range(6):
        assert out[0][i] + out[1][i] == reference[4 + i].tolist()


def test_resume_with_a_smaller_global_batch_continues_the_steps(sources):
    # Saved at position 24 with G = 8 (step 3); resumed with G' = 4, the step
    # count continues at 3, so phase 1 (step 5) starts two batches of 4 on,
    # at 32, and phase 2 (step 12) nine batches on, at 60.
    first = make(sources, phases=PHASES, batch_size=8)
    head = run_rows(first, 3)
    state = first.state_dict()
    resumed = make(sources, phases=PHASES, batch_size=2, world_size=2, rank=0)
    other = make(sources, phases=PHASES, batch_size=2, world_size=2, rank=1)
    resumed.load_state_dict(state)
    other.load_state_dict(state)
    assert resumed.step == 3
    tail = []
    for _ in range(20):
        tail += run_rows(resumed, 1) + run_rows(other, 1)
    assert resumed.step == 23
    starts = [0, 24 + 2 * 4, 24 + 9 * 4]
    want = expected_rows(weight_lists(PHASES), starts, 24 + 80, first.samples_per_source)
    assert head + tail == want
    s = resumed.stats()
    assert [p["start_position"] for p in s["phases"]] == starts
    assert [sum(p["samples"].values()) for p in s["phases"]] == [32, 28, 104 - 60]
    # A phase started "now" after the resume begins with the next batch.
    fresh = make(sources, phases=PHASES, batch_size=2, world_size=2, rank=0)
    fresh.load_state_dict(state, phases=[*PHASES[:1], (3, {"math": 1.0})])
    assert all(src == 2 for src, _ in run_rows(fresh, 1))


def test_start_phase_and_load_state_dict_with_phases(sources):
    loader = make(sources, phases=PHASES[:1])
    run_rows(loader, 3)
    assert loader.start_phase({"code": 1.0}) == 3
    assert loader.phases == [(0, {"web": 0.9, "code": 0.1, "math": 0.0}),
                             (3, {"web": 0.0, "code": 1.0, "math": 0.0})]
    nxt = run_rows(loader, 2)
    assert all(s == 1 for s, _ in nxt)
    state = loader.state_dict()
    # Resumed with the phases it ran: identical.
    again = make(sources, phases=loader.phases)
    again.load_state_dict(state)
    more = run_rows(again, 2)
    assert all(s == 1 for s, _ in more)
    # Resume and change the mixture from now on, in one call.
    fresh = make(sources, phases=PHASES[:1])
    fresh.load_state_dict(state, phases=[*loader.phases, (state["step"], {"math": 1})])
    assert fresh.step == 5 and all(s == 2 for s, _ in run_rows(fresh, 2))
    assert [p["start_step"] for p in fresh.stats()["phases"]] == [0, 3, 5]
    # A refused load leaves the loader's phases as they were.
    other = make(sources, phases=PHASES[:1])
    with pytest.raises(ValueError):
        other.load_state_dict(state, phases=[(0, {"web": 0.5, "code": 0.5})])
    assert other.phases == [(0, {"web": 0.9, "code": 0.1, "math": 0.0})]


def test_a_changed_past_phase_is_refused_readably(sources):
    loader = make(sources, phases=PHASES)
    run_rows(loader, 7)
    state = loader.state_dict()
    changed = [PHASES[0], (5, {"web": 0.4, "code": 0.3, "math": 0.3}), PHASES[2]]
    with pytest.raises(ValueError) as e:
        make(sources, phases=changed).load_state_dict(state)
    msg = str(e.value)
    assert "phase 1" in msg and "5" in msg and "0.5" in msg and "0.4" in msg
    assert "0.90000000000000002" not in msg and "0.40000000000000002" not in msg
    # What to pass, by the loader's names.
    assert ("phases=[(0, {'web': 0.9, 'code': 0.1}), (5, {'web': 0.5, 'code': 0.2, "
            "'math': 0.3}), ...]") in msg
    # A change after the saved step is fine and applies from its step.
    later = [*PHASES[:2], (9, {"math": 1})]
    resumed = make(sources, phases=later)
    resumed.load_state_dict(state)
    rows = run_rows(resumed, 3)
    assert all(s == 2 for s, _ in rows[8:])
    # set_phases checks the same against the loader's own position.
    with pytest.raises(ValueError):
        loader.set_phases(changed)
    loader.set_phases(later)
    assert loader.phases[2] == (9, {"web": 0.0, "code": 0.0, "math": 1.0})


def test_names_come_from_a_mapping_a_list_or_the_phases(sources):
    by_path = [(0, {sources["web"]: 1, sources["code"]: 1})]
    a = make(None, phases=by_path)
    assert [d.path for d in a.datasets] == [sources["web"], sources["code"]]
    assert a.phases == [(0, {sources["web"]: 1.0, sources["code"]: 1.0})]
    b = make([sources["code"], sources["web"]], phases=by_path)
    assert list(b.phases[0][1]) == [sources["code"], sources["web"]]
    ds = tokpack.Dataset(sources["math"])
    c = make({"m": ds, "w": sources["web"]}, phases=[{"start_step": 0, "weights": {ds: 1, "w": 3}}])
    assert c.phases == [(0, {"m": 1.0, "w": 3.0})]
    assert [x["name"] for x in c.stats()["sources"]] == ["m", "w"]
    # The single-mixture forms are as they were: one phase at step 0.
    d = make({sources["web"]: 0.7, sources["code"]: 0.3})
    assert d.phases == [(0, {sources["web"]: 0.7, sources["code"]: 0.3})]


@pytest.mark.parametrize("phases, error, words", [
    ([(0, {"web": 0.9, "cod": 0.1})], ValueError, ["phases[0]", "'cod'", "unknown source"]),
    ([(0, {"web": -0.5})], ValueError, ["phases[0]", "'web'", "-0.5"]),
    ([(0, {"web": float("nan")})], ValueError, ["phases[0]", "'web'", "nan"]),
    ([(0, {"web": "0.5"})], TypeError, ["'web'", "number"]),
    ([(0, {"web": 1}), (7, {"web": 0, "code": 0.0})], ValueError,
     ["phases[1] (start_step 7)", "every weight is 0", "'web': 0.0"]),
    ([(0, {"web": 1}), (-1, {"web": 1})], ValueError, ["phases[1]", "start_step", ">= 0"]),
    ([(0.5, {"web": 1})], TypeError, ["phases[0]", "start_step", "integer"]),
    ([{"start": 0, "weights": {"web": 1}}], ValueError, ["phases[0]", "'start_step'"]),
    ([(0, {"web": 1}, 3, 4)], TypeError, ["phases[0]", "(start_step, {source: weight}"]),
    ([], ValueError, ["phases is empty"]),
    ({"web": 1}, TypeError, ["list of (start_step"]),
])
def test_bad_phases_are_named_errors(sources, phases, error, words):
    with pytest.raises(error) as e:
        make(sources, phases=phases)
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_core_rules_on_phases_are_value_errors(sources):
    for phases in ([(3, {"web": 1})], [(0, {"web": 1}), (4, {"code": 1}), (4, {"web": 1})]):
        with pytest.raises(ValueError, match="phase"):
            make(sources, phases=phases)


def test_weights_in_sources_and_phases_is_an_error(sources):
    with pytest.raises(ValueError, match="weights in the phases only"):
        make({sources["web"]: 0.5}, phases=[(0, {sources["web"]: 1})])
    with pytest.raises(ValueError, match="weights in the phases only"):
        make([(sources["web"], 0.5)], phases=[(0, {sources["web"]: 1})])
    with pytest.raises(ValueError, match="goes with phases="):
        make({"web": sources["web"]})
    with pytest.raises(TypeError, match="needs sources"):
        tokpack.Loader(seq_len=4)


def test_phase_sources_reference_is_the_documented_rule():
    # The Python copy of the rule used above: 0.9/0.1 draws code at q = 9 and 19,
    # when web is not behind its share and code's draw is due.
    got = phase_sources([0.9, 0.1], 20)
    assert got.count(1) == 2 and got[9] == 1 and got[19] == 1


def test_the_documented_annealing_run_resumes_across_its_phase(sources, tmp_path):
    from doc_examples import doc_example

    def example(name):
        code = doc_example("python.md", name)
        for n, path in sources.items():
            code = code.replace(f'"data/{n}"', repr(path))
        assert "seq_len=512" in code
        return code.replace("seq_len=512", f"seq_len={SEQ}")  # the test's sources are small

    first = run_python(example("annealing-train"), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert json.loads((tmp_path / "ckpt.json").read_text())["step"] == 40
    second = run_python(example("annealing-resume"), cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    lines = second.stdout.splitlines()
    assert lines[0] == "50 {'web': 40, 'code': 16, 'math': 24}"
    # 50 steps at 0.9/0.1 (40 before the checkpoint), then 10 at 0.5/0.2/0.3.
    counts = {name: n for name, n, _ in eval(lines[1])}
    assert counts == {"web": 360 + 40, "code": 40 + 16, "math": 24}


def test_the_integrations_pass_phases_and_named_sources_through(sources):
    pytest.importorskip("torch")
    pytest.importorskip("lightning.pytorch")
    from tokpack.integrations.lightning import TokpackDataModule

    dm = TokpackDataModule(sources, phases=PHASES, seq_len=SEQ, batch_size=4, shuffle=False)
    dm.setup("fit")
    assert dm.loader.phases == make(sources, phases=PHASES).phases
    first = [decode(r[0], SEQ) for r in next(dm.loader)["input_ids"].tolist()]
    assert first == expected_rows(weight_lists(PHASES), [0, 20, 48], 4,
                                  dm.loader.samples_per_source)


def test_a_resume_may_add_a_source_for_its_new_phases(sources):
    two = {n: sources[n] for n in ("web", "code")}
    loader = make(two, phases=PHASES[:1])
    head = run_rows(loader, 3)
    state = loader.state_dict()
    resumed = make(sources, phases=[PHASES[0], (3, {"math": 1})])
    resumed.load_state_dict(state)
    assert all(s == 2 for s, _ in run_rows(resumed, 2))
    s = resumed.stats()
    assert [x["samples"] for x in s["sources"]] == [sum(1 for x, _ in head if x == k)
                                                   for k in (0, 1)] + [8]
    # Fewer sources than the saved run is refused, naming what is missing.
    with pytest.raises(ValueError, match="missing"):
        make({"web": sources["web"]}, phases=[(0, {"web": 1})]).load_state_dict(
            resumed.state_dict())
