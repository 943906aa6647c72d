"""A mixture must have one token identity (docs/reader.md, "Blending and
phases"): tokpack.Loader, `tokpack sample` and `tokpack profile` refuse
datasets whose tokenizers differ, as `tokpack merge` does, unless
allow_mixed_tokenizers, which the cursor records."""
import json

import pytest

tokpack = pytest.importorskip("tokpack")

# The sentencepiece model's own EOS is id 2; "<s>" is id 1.
DIFFERENCE = "different tokenizers (eos_id 2 vs 1)"


@pytest.fixture
def pair(tmp_path, spm_model, corpus, run_tokpack):
    """Two datasets of one text and one model file, one ending documents with
    the model's EOS, the other with another token: (path, path)."""
    src, _ = corpus(60)
    run_tokpack("build", "-t", spm_model, "-i", src, "-o", tmp_path / "a", "-q")
    run_tokpack("build", "-t", spm_model, "--eos-token", "<s>", "-i", src, "-o", tmp_path / "b",
                "-q")
    return str(tmp_path / "a"), str(tmp_path / "b")


def rows(stdout):
    return [line for line in stdout.splitlines() if line.startswith("step ")]


def refusal(a, b):
    return f"'{a}' and '{b}' have {DIFFERENCE}"


def test_loader_refuses_weights_or_phases_over_two_tokenizers_naming_both(pair):
    a, b = pair
    for sources, phases in [({a: 1.0, b: 1.0}, None),
                            ({"a": a, "b": b}, [(0, {"a": 1.0}), (2, {"a": 1.0, "b": 1.0})])]:
        with pytest.raises(ValueError) as e:
            tokpack.Loader(sources, phases=phases, seq_len=8, batch_size=2)
        assert refusal(a, b) in str(e.value) and "allow_mixed_tokenizers=true" in str(e.value)


def test_the_override_serves_the_mixture_and_is_in_its_state(pair):
    a, b = pair
    for sources, phases in [({a: 1.0, b: 1.0}, None), ({"a": a, "b": b}, [(0, {"a": 1, "b": 1})])]:
        loader = tokpack.Loader(sources, phases=phases, seq_len=8, batch_size=2, as_="numpy",
                                allow_mixed_tokenizers=True)
        next(loader)
        state = loader.state_dict()
        assert state["allow_mixed_tokenizers"] is True
        assert loader.options["allow_mixed_tokenizers"] is True
        # The first dataset's tokenizer.
        assert loader.tokenizer_info == tokpack.Dataset(a).tokenizer_info
        assert loader.tokenizer_info["eos_id"] == 2
        want = next(loader)["input_ids"].tolist()
        again = tokpack.Loader(sources, phases=phases, seq_len=8, batch_size=2, as_="numpy",
                               allow_mixed_tokenizers=True)
        again.load_state_dict(state)
        assert next(again)["input_ids"].tolist() == want


def test_a_resume_needs_the_setting_it_was_saved_with(pair):
    a, _ = pair
    mixed = tokpack.Loader(a, seq_len=8, batch_size=2, allow_mixed_tokenizers=True)
    plain = tokpack.Loader(a, seq_len=8, batch_size=2)
    next(mixed), next(plain)
    assert "allow_mixed_tokenizers" not in plain.state_dict()
    with pytest.raises(ValueError, match="pass allow_mixed_tokenizers=true to resume it"):
        plain.load_state_dict(mixed.state_dict())
    with pytest.raises(ValueError, match="pass allow_mixed_tokenizers=false to resume it"):
        mixed.load_state_dict(plain.state_dict())


def test_tokenizer_info_is_the_mixtures_one(pair, tmp_path, spm_model, corpus, run_tokpack):
    a, _ = pair
    src, _ = corpus(30, seed=5, name="other.jsonl")
    run_tokpack("build", "-t", spm_model, "-i", src, "-o", tmp_path / "c", "-q")
    loader = tokpack.Loader({a: 1.0, str(tmp_path / "c"): 2.0}, seq_len=8, batch_size=2)
    assert loader.tokenizer_info == tokpack.Dataset(a).tokenizer_info
    assert loader.tokenizer_info["vocab_size"] == 1000 and loader.tokenizer_info["eos_id"] == 2


def test_sample_and_profile_refuse_a_mixture_over_two_tokenizers(pair, tmp_path, run_tokpack):
    a, b = pair
    mix = tmp_path / "mix.json"
    mix.write_text(json.dumps({"sources": {"a": a, "b": b},
                               "phases": [{"start_step": 0, "weights": {"a": 1}},
                                          {"start_step": 2, "weights": {"a": 1, "b": 1}}]}))
    # profile takes one dataset or a phases file.
    for args in (["sample", f"{a}:1", f"{b}:1"], ["sample", "--phases", mix],
                 ["profile", "--phases", mix]):
        proc = run_tokpack(*args, "--seq-len", 8, "--batch-size", 2, "--steps", 2, check=False)
        assert proc.returncode == 1, proc.stderr
        assert refusal(a, b) in proc.stderr and "allow_mixed_tokenizers" in proc.stderr


def test_sample_with_the_override_records_it_in_the_cursor(pair, tmp_path, run_tokpack):
    a, b = pair
    state = tmp_path / "state.json"
    common = ["--seq-len", 8, "--batch-size", 2, "--seed", 3]
    whole = run_tokpack("sample", f"{a}:1", f"{b}:1", *common, "--steps", 3,
                        "--allow-mixed-tokenizers").stdout
    run_tokpack("sample", f"{a}:1", f"{b}:1", *common, "--steps", 1, "--allow-mixed-tokenizers",
                "--state-out", state)
    assert json.loads(state.read_text())["allow_mixed_tokenizers"] is True
    tail = run_tokpack("sample", f"{a}:1", f"{b}:1", *common, "--steps", 2,
                       "--allow-mixed-tokenizers", "--state-in", state).stdout
    assert rows(tail) == [row for row in rows(whole) if not row.startswith("step 0 ")]
    one = tmp_path / "one.json"
    run_tokpack("sample", a, *common, "--steps", 1, "--allow-mixed-tokenizers", "--state-out", one)
    proc = run_tokpack("sample", a, *common, "--state-in", one, check=False)
    assert proc.returncode == 1 and "pass allow_mixed_tokenizers=true" in proc.stderr, proc.stderr


def test_merge_refuses_the_same_pair_with_the_same_rule(pair, tmp_path, run_tokpack):
    a, b = pair
    proc = run_tokpack("merge", tmp_path / "m", a, b, check=False)
    assert proc.returncode == 1 and "cannot merge: " + refusal(a, b) in proc.stderr, proc.stderr
