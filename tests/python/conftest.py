"""Shared fixtures for tokpack's Python tests: the CLI binary, a sentencepiece
model trained here on generated text (nothing is downloaded), and corpora."""
import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

WORDS = (
    "the of and to in is was for on that with as by at from his her an were which "
    "this be are have had not but one all been they their more when who will "
    "data token model train shard index memory sequence batch layer attention "
    "über café naïve résumé 東京 データ 🙂 привет мир"
).split()


SYLLABLES = "ka lo mi ne ru ta shi po ven dor al is um ex tra qui zo bel mar ton".split()


def random_word(rng):
    if rng.random() < 0.35:
        return rng.choice(WORDS)
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 3)))


def random_text(rng, min_words=1, max_words=80):
    n = rng.randint(min_words, max_words)
    words = [random_word(rng) for _ in range(n)]
    # Sprinkle punctuation and digits so the tokenizer sees varied pieces.
    for i in range(0, n, 7):
        words[i] = words[i] + rng.choice([",", ".", "!", "?", "", str(rng.randint(0, 999))])
    return " ".join(words)


def write_jsonl(path, texts, key="text"):
    path = Path(path)
    with path.open("w", encoding="utf-8") as f:
        for t in texts:
            f.write(json.dumps({key: t, "meta": {"n": len(t)}}, ensure_ascii=False) + "\n")
    return path


@pytest.fixture(scope="session")
def tokpack_bin():
    # Absolute: tests run it from other working directories.
    path = Path(os.environ.get("TOKPACK_BIN", REPO / "build" / "tokpack")).resolve()
    if not path.exists():
        pytest.fail(f"tokpack binary not found at {path}; build it or set TOKPACK_BIN")
    return str(path)


@pytest.fixture(scope="session")
def spm_model(tmp_path_factory):
    """A small unigram sentencepiece model (vocab 1000) trained on generated text."""
    if shutil.which("spm_train") is None:
        pytest.fail("spm_train not found (apt-get install sentencepiece)")
    d = tmp_path_factory.mktemp("spm")
    rng = random.Random(1234)
    corpus = d / "train.txt"
    corpus.write_text("\n".join(random_text(rng, 5, 60) for _ in range(3000)), encoding="utf-8")
    subprocess.run(
        ["spm_train", f"--input={corpus}", f"--model_prefix={d / 'm'}", "--vocab_size=1000",
         "--model_type=unigram", "--character_coverage=1.0", "--minloglevel=2",
         "--num_threads=1"],
        check=True, capture_output=True)
    return str(d / "m.model")


@pytest.fixture
def run_tokpack(tokpack_bin):
    """run_tokpack(*args, check=True, **kw) -> CompletedProcess (text mode)."""
    def run(*args, check=True, **kw):
        proc = subprocess.run([tokpack_bin, *map(str, args)], capture_output=True, text=True,
                              **kw)
        if check and proc.returncode != 0:
            raise AssertionError(
                f"tokpack {' '.join(map(str, args))} exited {proc.returncode}\n"
                f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
        return proc
    return run


@pytest.fixture
def corpus(tmp_path):
    """A factory: corpus(n_docs, seed=0, name='c.jsonl') -> (path, texts)."""
    def make(n_docs, seed=0, name="c.jsonl"):
        rng = random.Random(seed)
        texts = [random_text(rng) for _ in range(n_docs)]
        return write_jsonl(tmp_path / name, texts), texts
    return make


@pytest.fixture(scope="session")
def packed(tmp_path_factory, spm_model):
    """A dataset of 1500 generated documents packed with tokpack.build into
    several shards: (path, texts)."""
    tokpack = pytest.importorskip("tokpack")
    d = tmp_path_factory.mktemp("packed")
    rng = random.Random(99)
    texts = [random_text(rng, 1, 120) for _ in range(1500)]
    src = write_jsonl(d / "corpus.jsonl", texts)
    tokpack.build(src, d / "data", spm_model, shard_tokens=20000, threads=2)
    return str(d / "data"), texts


@pytest.fixture(scope="session")
def packed_small(tmp_path_factory, spm_model):
    """A second, smaller dataset for blending: (path, texts)."""
    tokpack = pytest.importorskip("tokpack")
    d = tmp_path_factory.mktemp("packed_small")
    rng = random.Random(7)
    texts = [random_text(rng, 1, 60) for _ in range(400)]
    src = write_jsonl(d / "corpus.jsonl", texts)
    tokpack.build(src, d / "data", spm_model, threads=1)
    return str(d / "data"), texts


def run_python(code, *args, timeout=120, **kw):
    """Runs `code` in a fresh interpreter (this one's), returns CompletedProcess."""
    import sys
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, **kw)


# Under scripts/test.sh (TOKPACK_NO_SKIPS=1) every test must run: setup.sh test
# installs each test's dependencies, so a skip there is a missing install or a
# test that can never run in CI. Only the GPU tests may skip (CI has no GPU).
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("TOKPACK_NO_SKIPS") != "1" or not report.skipped:
        return
    if hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    if "GPU" in reason or "CUDA" in reason:
        return
    report.outcome = "failed"
    report.longrepr = (f"skipped under scripts/test.sh, where every test must run: {reason} "
                       "(install the dependency in scripts/setup.sh test, or delete the test)")
