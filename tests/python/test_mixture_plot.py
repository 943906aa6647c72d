"""Seeing the mixture: tokpack.mixture_plan (the loader's schedule, step by
step, without reading data), `tokpack sample --plan-json` and `--plot`
(drawn by tokpack.mixture_plot), with 5 sources and with 200, and the
examples of docs/reader.md ("Seeing the mixture") and docs/cli.md as written."""
import json
import os
import shlex
import sys

import numpy as np
import pytest

from conftest import run_python
from doc_examples import doc_example
from phase_data import make_sources

tokpack = pytest.importorskip("tokpack")

SEQ = 4
NAMES = ["web", "code", "math", "books", "wiki"]
PHASES = [{"start_step": 0, "weights": {"web": 0.6, "code": 0.2, "books": 0.2}},
          {"start_step": 30, "weights": {"web": 0.4, "code": 0.2, "math": 0.2, "wiki": 0.2}},
          {"start_step": 70, "weights": {"web": 0.2, "math": 0.5, "wiki": 0.3}}]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    sizes = {name: 2001 + 400 * k for k, name in enumerate(NAMES)}
    return make_sources(tmp_path_factory.mktemp("mixture_plot"), sizes)


@pytest.fixture
def phases_file(tmp_path, sources):
    path = tmp_path / "mix.json"
    path.write_text(json.dumps({"sources": sources, "phases": PHASES}))
    return path


@pytest.fixture
def python_path_env():
    # --plot runs `python3 -m tokpack.mixture_plot` from PATH: this interpreter's.
    return dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])


def assert_png(path):
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 5000, len(data)


def test_the_plan_is_what_the_loader_serves(sources):
    phases = [(p["start_step"], p["weights"]) for p in PHASES]
    plan = tokpack.mixture_plan(sources, phases, global_batch=8, steps=90)
    assert plan.names == NAMES and plan.planned.shape == plan.drawn.shape == (90, 5)
    assert list(plan.steps) == list(range(90))
    # Every step draws the global batch; the phase changes where it starts.
    per_step = np.diff(np.vstack([np.zeros((1, 5), np.uint64), plan.drawn]).astype(np.int64),
                       axis=0)
    assert (per_step.sum(axis=1) == 8).all()
    assert list(plan.phase[[0, 29, 30, 69, 70, 89]]) == [0, 0, 1, 1, 2, 2]
    np.testing.assert_allclose(plan.planned[40], [0.4, 0.2, 0.2, 0, 0.2])
    assert [(e["kind"], e["step"], e["phase"]) for e in plan.events] == [
        ("phase_start", 0, 0), ("phase_start", 30, 1), ("phase_start", 70, 2)]
    loader = tokpack.Loader(sources, phases=phases, seq_len=SEQ, batch_size=4, world_size=2,
                            rank=0, shuffle=False, as_="numpy")
    for _, _batch in zip(range(90), loader):
        pass
    served = [s["samples"] for s in loader.stats()["sources"]]
    assert served == [int(x) for x in plan.drawn[-1]]


def test_caps_stride_and_plot_from_python(sources, tmp_path):
    pytest.importorskip("matplotlib")
    from tokpack import mixture_plot

    phases = [(0, {"web": 1, "code": 1})]
    plan = tokpack.mixture_plan(["web", "code"], phases, global_batch=4, steps=1000,
                                stride=3, max_epochs={"code": 1}, samples=[500, 30])
    cap = [e for e in plan.events if e["kind"] == "cap"]
    assert cap == [{"kind": "cap", "step": 14, "phase": 0, "source": "code"}]
    assert list(plan.steps[:4]) == [0, 3, 6, 9] and plan.steps[-1] == 999
    # web draws alone after code's 30th draw: its cap is never reached.
    assert plan.drawn[-1].tolist() == [4000 - 30, 30]
    np.testing.assert_allclose(plan.planned[plan.steps.tolist().index(15)], [1, 0])
    mixture_plot.plot(plan, str(tmp_path / "caps.png"))
    assert_png(tmp_path / "caps.png")
    with pytest.raises(ValueError, match="max_epochs needs samples"):
        tokpack.mixture_plan(["a"], [(0, {"a": 1})], global_batch=1, steps=1, max_epochs=[1])
    with pytest.raises(ValueError, match="start at step 0|first phase"):
        tokpack.mixture_plan(["a"], [(3, {"a": 1})], global_batch=1, steps=1)


def test_a_ramped_capped_plan_is_what_a_ramped_capped_loader_serves(sources, run_tokpack,
                                                                    tmp_path):
    phases = [(0, {"web": 0.5, "code": 0.5}), (10, {"web": 0.2, "math": 0.8}, 20)]
    loader = tokpack.Loader(sources, phases=phases, max_epochs={"math": 0.1, "code": 0.05},
                            seq_len=SEQ, batch_size=8, shuffle=False, as_="numpy")
    samples = dict(zip(NAMES, loader.samples_per_source))
    plan = tokpack.mixture_plan(sources, phases, global_batch=8, steps=120,
                                max_epochs={"math": 0.1, "code": 0.05}, samples=samples)
    for _, _batch in zip(range(120), loader):
        pass
    served = [s["samples"] for s in loader.stats()["sources"]]
    assert served == [int(x) for x in plan.drawn[-1]]
    assert {e["source"] for e in plan.events if e["kind"] == "cap"} == {"code", "math"}
    # The phases file's caps and ramps reach the CLI's plan.
    mix = {"sources": {**sources, "math": {"path": sources["math"], "max_epochs": 0.1},
                       "code": {"path": sources["code"], "max_epochs": 0.05}},
           "phases": [{"start_step": 0, "weights": {"web": 0.5, "code": 0.5}},
                      {"start_step": 10, "weights": {"web": 0.2, "math": 0.8},
                       "ramp_steps": 20}]}
    (tmp_path / "mix.json").write_text(json.dumps(mix))
    cli = json.loads(run_tokpack("sample", "--phases", tmp_path / "mix.json", "--seq-len", SEQ,
                                 "--batch-size", 8, "--steps", 120, "--plan-json").stdout)
    assert [int(s["drawn"][-1]) for s in cli["sources"]] == served


def test_sample_plan_json_counts_match_the_summary(run_tokpack, phases_file):
    common = ["--phases", phases_file, "--seq-len", SEQ, "--batch-size", 4, "--world-size", 2,
              "--shuffle", "none"]
    plan = json.loads(run_tokpack("sample", *common, "--steps", 80, "--plan-json").stdout)
    assert plan["global_batch"] == 8 and plan["steps"][-1] == 79
    assert [s["name"] for s in plan["sources"]] == NAMES
    assert [(e["kind"], e["step"]) for e in plan["events"]] == [
        ("phase_start", 0), ("phase_start", 30), ("phase_start", 70)]
    summary = run_tokpack("sample", *common, "--steps", 80, "--summary").stdout
    for s in plan["sources"]:
        assert f"source {s['name']}: samples {int(s['drawn'][-1])}," in summary
    # Without --steps, the plan runs past the last phase (70 + 100 steps).
    plan = json.loads(run_tokpack("sample", *common, "--plan-json").stdout)
    assert plan["steps"][-1] == 169


def test_sample_plot_with_5_sources(run_tokpack, phases_file, tmp_path, python_path_env):
    pytest.importorskip("matplotlib")
    out = run_tokpack("sample", "--phases", phases_file, "--seq-len", SEQ, "--batch-size", 8,
                      "--plot", tmp_path / "mix.png", env=python_path_env).stdout
    assert out.strip() == f"plot: {tmp_path / 'mix.png'}"
    assert_png(tmp_path / "mix.png")
    assert not (tmp_path / "mix.png.json").exists()


def test_sample_plot_with_200_sources(run_tokpack, sources, tmp_path, python_path_env):
    pytest.importorskip("matplotlib")
    # One dataset under 200 names: the plan needs names and sample counts only.
    names = [f"s{k:03d}" for k in range(200)]
    weights = {n: 1 + k % 7 for k, n in enumerate(names)}
    later = {n: 1 + (k * 13) % 5 for k, n in enumerate(names) if k % 3}
    mix = tmp_path / "mix200.json"
    mix.write_text(json.dumps({"sources": {n: sources["web"] for n in names},
                               "phases": [{"start_step": 0, "weights": weights},
                                          {"start_step": 400, "weights": later}]}))
    run_tokpack("sample", "--phases", mix, "--seq-len", SEQ, "--batch-size", 64, "--steps",
                3000, "--plot", tmp_path / "mix200.png", env=python_path_env)
    assert_png(tmp_path / "mix200.png")
    plan = json.loads(run_tokpack("sample", "--phases", mix, "--seq-len", SEQ, "--batch-size",
                                  64, "--steps", 3000, "--plan-json").stdout)
    # About 2000 recorded steps at most: every second step, and the last.
    assert plan["steps"][:3] == [0, 2, 4] and plan["steps"][-1] == 2999
    assert len(plan["sources"]) == 200


def test_sample_plot_says_what_it_needs_when_python_cannot_draw(run_tokpack, phases_file,
                                                                tmp_path):
    env = dict(os.environ, PATH=str(tmp_path / "empty"))
    bad = run_tokpack("sample", "--phases", phases_file, "--seq-len", SEQ, "--plot",
                      tmp_path / "p.png", env=env, check=False)
    assert bad.returncode == 1 and "tokpack.mixture_plot" in bad.stderr
    assert "pip install 'tokpack[plots]'" in bad.stderr
    assert json.loads((tmp_path / "p.png.json").read_text())["sources"]


def test_the_docs_examples_run(run_tokpack, sources, tmp_path, python_path_env):
    pytest.importorskip("matplotlib")
    (tmp_path / "data").mkdir()
    for name in ["web", "code", "math"]:
        for ext in (".bin", ".idx"):
            os.symlink(sources[name] + ext, tmp_path / "data" / (name + ext))
    (tmp_path / "mix.json").write_text(json.dumps({
        "sources": {n: f"data/{n}" for n in ["web", "code", "math"]},
        "phases": [{"start_step": 0, "weights": {"web": 0.9, "code": 0.1}},
                   {"start_step": 900, "weights": {"web": 0.5, "code": 0.2, "math": 0.3}}]}))
    command = shlex.split(doc_example("reader.md", "mixture-plot-cli"))
    assert command[:2] == ["tokpack", "sample"] and "--plot" in command
    run_tokpack(*command[1:], cwd=tmp_path, env=python_path_env)
    assert_png(tmp_path / "mix.png")
    (tmp_path / "mix.png").unlink()
    command = shlex.split(doc_example("cli.md", "cli-mixture-plot"))
    assert command[:2] == ["build/tokpack", "sample"] and "--plot" in command
    run_tokpack(*command[1:], cwd=tmp_path, env=python_path_env)
    assert_png(tmp_path / "mix.png")
    code = doc_example("reader.md", "mixture-plan-python")
    proc = run_python(code, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_png(tmp_path / "plan.png")
