"""tokpack profile: a simulated training loop per loader setting, a
recommendation that names the Loader's keywords, JSON output with the
per-step timelines, and a PNG drawn by tokpack.profile_plot."""
import json
import os
import sys

import pytest


@pytest.fixture
def dataset(tmp_path, run_tokpack, spm_model, corpus):
    path, _ = corpus(400)
    run_tokpack("build", "-i", path, "-o", tmp_path / "ds", "-t", spm_model, "--quiet")
    return tmp_path / "ds"


def test_profile_reports_every_setting_and_recommends_one(dataset, run_tokpack, tmp_path):
    pytest.importorskip("matplotlib")
    # --plot runs `python3 -m tokpack.profile_plot`: this interpreter's.
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    out = run_tokpack("profile", dataset, "--step-time", "10ms", "--steps", "15", "--warmup",
                      "2", "--seq-len", "64", "--batch-size", "4", "--threads", "1,2",
                      "--prefetch", "2,4", "--plot", tmp_path / "p.png", env=env).stdout
    rows = [line.split() for line in out.splitlines() if line[:1].isdigit()]
    assert [(r[0], r[1]) for r in rows] == [("1", "2"), ("1", "4"), ("2", "2"), ("2", "4")]
    # CPU per step is measured for every setting: the assemblers did work.
    assert all(float(r[7].removesuffix("ms")) > 0 for r in rows)
    assert "tokpack.Loader(..., threads=" in out and "of the 10.0 ms step" in out
    png = (tmp_path / "p.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    assert not (tmp_path / "p.png.json").exists()


def test_profile_json_and_a_data_bound_loop(dataset, run_tokpack):
    out = run_tokpack("profile", dataset, "--step-time", "0ms", "--steps", "10", "--seq-len",
                      "64", "--batch-size", "4", "--threads", "1", "--prefetch", "2",
                      "--json").stdout
    report = json.loads(out)
    (config,) = report["configurations"]
    assert config["threads"] == 1 and config["prefetch"] == 2
    assert 0 <= config["wait_p50_seconds"] <= config["wait_p99_seconds"] <= config["wait_max_seconds"]
    assert config["samples_per_second"] > 0 and config["cpu_seconds_per_step"] > 0
    assert len(config["request_seconds"]) == len(config["ready_seconds"]) == 10
    assert all(r <= d for r, d in zip(config["ready_seconds"], config["done_seconds"]))
    # With no time to hide in, the data path is the bottleneck.
    assert report["recommended"]["within_budget"] is False
    assert report["recommended"]["advice"].startswith("the data path is the bottleneck")


def test_profile_plot_says_what_it_needs_when_python_cannot_draw(dataset, run_tokpack,
                                                                 tmp_path):
    # No python3 on PATH: the measurements are kept for a later plot.
    env = dict(os.environ, PATH=str(tmp_path / "empty"))
    bad = run_tokpack("profile", dataset, "--step-time", "1ms", "--steps", "3", "--seq-len",
                      "64", "--batch-size", "4", "--threads", "1", "--prefetch", "2",
                      "--plot", tmp_path / "p.png", env=env, check=False)
    assert bad.returncode == 1 and "tokpack.profile_plot" in bad.stderr
    assert json.loads((tmp_path / "p.png.json").read_text())["configurations"]


def test_profile_refuses_bad_arguments_clearly(dataset, run_tokpack):
    bad = run_tokpack("profile", dataset, "--step-time", "fast", check=False)
    assert bad.returncode == 1 and "--step-time 'fast'" in bad.stderr
    bad = run_tokpack("profile", dataset, "--threads", "0", check=False)
    assert bad.returncode == 1 and "--threads" in bad.stderr
