"""Files tokpack reads as configuration (a tokenizer and the
tokenizer_config.json beside it, a phases file, a cursor) that are not
regular files of a sane size, and cursors at the top of the positions
(issue 32): each is refused at once with an error naming the path and what
it is, never waited on, read until memory runs out, or wrapped. CLI runs are
subprocesses with a deadline and a 4 GiB address space; large files are
sparse (truncate), so they take no disk."""
import json
import os
import resource
import subprocess

import pytest

from conftest import run_python, write_jsonl

tokpack = pytest.importorskip("tokpack")

# Generous: a refusal takes milliseconds; only the unfixed code would block
# (a FIFO) or run out of memory.
DEADLINE = 120
TOP = 2**63 - 1


def run_cli(tokpack_bin, *args):
    """tokpack in a subprocess with a deadline, in an address space of 4 GiB,
    so that reading an endless file fails instead of filling the machine."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    return subprocess.run([tokpack_bin, *map(str, args)], capture_output=True, text=True,
                          timeout=DEADLINE, preexec_fn=limit)


def not_a_file(tmp_path, kind):
    """A path in tmp_path that is `kind`, and how the error calls it."""
    path = tmp_path / kind
    if kind == "fifo":
        os.mkfifo(path)  # Opened plainly, waits for a writer forever.
        return path, "is a FIFO"
    if kind == "directory":
        path.mkdir()
        return path, "is a directory"
    if kind == "link_to_dev_zero":
        path.symlink_to("/dev/zero")  # Endless: read until memory ran out.
        return path, "is a device"
    assert kind == "dev_zero"
    return "/dev/zero", "is a device"


def sparse(path, size):
    with open(path, "wb") as f:
        f.truncate(size)
    return path


@pytest.fixture
def corpus_file(tmp_path):
    return write_jsonl(tmp_path / "c.jsonl", ["a b a b", "b a"])


@pytest.fixture
def tokenizer_json(tmp_path):
    """A minimal byte-less BPE tokenizer.json, alone in its directory."""
    d = tmp_path / "tok"
    d.mkdir()
    (d / "tokenizer.json").write_text(json.dumps({
        "version": "1.0", "truncation": None, "padding": None, "normalizer": None,
        "pre_tokenizer": None, "post_processor": None, "decoder": None,
        "added_tokens": [{"id": 4, "content": "<|endoftext|>", "single_word": False,
                          "lstrip": False, "rstrip": False, "normalized": False,
                          "special": True}],
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": {"a": 0, "b": 1, " ": 2, "ab": 3, "<|endoftext|>": 4},
                  "merges": ["a b"]}}))
    return d / "tokenizer.json"


@pytest.mark.parametrize("kind", ["dev_zero", "link_to_dev_zero", "fifo", "directory"])
def test_a_tokenizer_that_is_not_a_file_is_refused_naming_it(tmp_path, tokpack_bin, corpus_file,
                                                             kind):
    path, what = not_a_file(tmp_path, kind)
    r = run_cli(tokpack_bin, "build", "-t", path, "-i", corpus_file, "-o", tmp_path / "out")
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert f"'{path}' {what}, not a regular file (a tokenizer file must be one)" in r.stderr, \
        r.stderr
    assert not (tmp_path / "out").exists()
    # tokpack.Tokenizer reads it through the same rule.
    r = run_python("import resource, sys\n"
                   "resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))\n"
                   "import tokpack\n"
                   "tokpack.Tokenizer(sys.argv[1])\n", path, timeout=DEADLINE)
    assert r.returncode == 1 and f"ValueError: '{path}' {what}" in r.stderr, r.stderr


def test_a_sparse_tokenizer_over_the_cap_is_refused_before_it_is_read(tmp_path, tokpack_bin,
                                                                      corpus_file):
    big = sparse(tmp_path / "tokenizer.json", 1_100_000_000)  # 1.1 GB, no disk.
    r = run_cli(tokpack_bin, "build", "-t", big, "-i", corpus_file, "-o", tmp_path / "out")
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert (f"'{big}' is 1100000000 bytes, more than the 1073741824-byte cap for a tokenizer "
            "file") in r.stderr, r.stderr


@pytest.mark.parametrize("kind", ["link_to_dev_zero", "fifo", "directory"])
def test_a_tokenizer_config_that_is_not_a_file_is_refused_naming_it(tmp_path, tokpack_bin,
                                                                    corpus_file, tokenizer_json,
                                                                    kind):
    """The tokenizer_config.json beside a tokenizer.json names its EOS: one
    that is a link to /dev/zero was read until memory ran out, a FIFO blocked
    the build; a missing one is still fine."""
    out = tmp_path / "out"
    r = run_cli(tokpack_bin, "build", "-t", tokenizer_json, "-i", corpus_file, "-o", out)
    assert r.returncode == 0, r.stderr  # No config: the well-known EOS name.
    config, what = not_a_file(tmp_path, kind)
    os.replace(config, tokenizer_json.parent / "tokenizer_config.json")
    config = tokenizer_json.parent / "tokenizer_config.json"
    r = run_cli(tokpack_bin, "build", "-t", tokenizer_json, "-i", corpus_file, "-o", out,
                "--force")
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert f"'{config}' {what}, not a regular file (a tokenizer_config.json must be one)" \
        in r.stderr, r.stderr


@pytest.fixture
def phases_sources(packed):
    return {"sources": {"web": packed[0]}, "phases": [{"start_step": 0, "weights": {"web": 1}}]}


@pytest.mark.parametrize("kind", ["fifo", "directory", "dev_zero"])
def test_a_phases_file_that_is_not_a_file_is_refused_naming_it(tmp_path, tokpack_bin, kind):
    """A directory used to say "Empty: no JSON found", a FIFO blocked."""
    path, what = not_a_file(tmp_path, kind)
    for command in (["sample"], ["profile", "--step-time", "0ms", "--steps", 1]):
        r = run_cli(tokpack_bin, *command, "--phases", path, "--seq-len", 8)
        assert r.returncode == 1, (r.returncode, r.stderr)
        assert f"'{path}' {what}, not a regular file (a phases file must be one)" in r.stderr, \
            r.stderr


def test_a_phases_file_over_the_cap_is_refused_naming_the_cap(tmp_path, tokpack_bin,
                                                              phases_sources):
    path = tmp_path / "mix.json"
    path.write_text(json.dumps(phases_sources))
    r = run_cli(tokpack_bin, "sample", "--phases", path, "--seq-len", 8, "--steps", 1)
    assert r.returncode == 0, r.stderr
    sparse(path, 2 << 20)
    r = run_cli(tokpack_bin, "sample", "--phases", path, "--seq-len", 8)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert f"'{path}' is 2097152 bytes, more than the 1048576-byte cap for a phases file" \
        in r.stderr, r.stderr


@pytest.mark.parametrize("kind", ["fifo", "directory", "dev_zero", "sparse"])
def test_a_cursor_file_that_is_not_a_small_file_is_refused_naming_it(tmp_path, tokpack_bin,
                                                                     packed, kind):
    if kind == "sparse":
        path = sparse(tmp_path / "cursor.json", 4 << 30)  # Was read whole: 4 GiB.
        want = f"'{path}' is 4294967296 bytes, more than the 16777216-byte cap for a cursor file"
    else:
        path, what = not_a_file(tmp_path, kind)
        want = f"'{path}' {what}, not a regular file (a cursor file must be one)"
    r = run_cli(tokpack_bin, "sample", packed[0], "--seq-len", 8, "--state-in", path)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert want in r.stderr, r.stderr


def cursor_at(state, position, step):
    """`state` (one source, one phase) moved to `position` and `step`."""
    c = json.loads(state)
    c.update(position=position, step=step)
    c["sources"][0]["consumed"] = position
    c["phases"][0]["counts"] = [position]
    return json.dumps(c)


def test_a_cursor_at_the_top_of_the_positions_is_refused_or_stops_cleanly(tmp_path, tokpack_bin,
                                                                          packed):
    """A cursor at 2^63 - 1 used to load; steps from it wrapped the step
    count negative and saved cursors no loader resumed. Now an endless loader
    refuses it at load, and one close below the top serves the steps that fit
    and then fails naming the position."""
    common = ["--seq-len", 8, "--batch-size", 4]
    saved = tmp_path / "saved.json"
    r = run_cli(tokpack_bin, "sample", packed[0], *common, "--steps", 1, "--state-out", saved)
    assert r.returncode == 0, r.stderr
    top = tmp_path / "top.json"
    top.write_text(cursor_at(saved.read_text(), TOP, TOP // 4))
    r = run_cli(tokpack_bin, "sample", packed[0], *common, "--state-in", top)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert (f"{top}: at position {TOP} (step {TOP // 4}) there is no room for another step of "
            "4 positions") in r.stderr, r.stderr
    near = tmp_path / "near.json"
    near.write_text(cursor_at(saved.read_text(), TOP - 9, TOP // 4 - 3))  # Room for 2 steps.
    r = run_cli(tokpack_bin, "sample", packed[0], *common, "--state-in", near, "--steps", 5)
    assert r.returncode == 1, (r.returncode, r.stderr)
    steps = {line.split()[1] for line in r.stdout.splitlines() if line.startswith("step ")}
    assert steps == {str(TOP // 4 - 3), str(TOP // 4 - 2)}, r.stdout
    assert (f"the loader is at position {TOP - 1} (step {TOP // 4 - 1}), and another step of 4 "
            "positions (batch_size * world_size) would pass 2^63 - 1") in r.stderr, r.stderr

    # The Python loader: the same refusal and the same stop, as ValueError and
    # IndexError (OutOfRange).
    loader = tokpack.Loader(packed[0], seq_len=8, batch_size=4, as_="numpy")
    with pytest.raises(ValueError, match=f"at position {TOP} .* no room for another step"):
        loader.load_state_dict(json.loads(top.read_text()))
    loader.load_state_dict(json.loads(near.read_text()))
    next(loader), next(loader)
    with pytest.raises(IndexError, match="would pass 2\\^63 - 1"):
        next(loader)
    assert loader.state_dict()["position"] == TOP - 1


@pytest.mark.parametrize("kind", ["fifo", "sparse"])
def test_a_trainer_checkpoints_cursor_file_follows_the_same_rule(tmp_path, kind):
    """TokpackTrainer reads checkpoint-N/tokpack_cursor.json through the
    core's rule, as --state-in: a FIFO there was reported as a missing
    cursor, a huge file read whole."""
    pytest.importorskip("transformers")
    checkpoint = tmp_path / "checkpoint-3"
    checkpoint.mkdir()
    path = checkpoint / "tokpack_cursor.json"
    if kind == "fifo":
        os.mkfifo(path)
        want = f"ValueError: '{path}' is a FIFO, not a regular file (a cursor file must be one)"
    else:
        sparse(path, 64 << 20)
        want = f"ValueError: '{path}' is 67108864 bytes, more than the 16777216-byte cap"
    r = run_python("import sys\nfrom tokpack.integrations import hf\nhf._read_cursor(sys.argv[1])",
                   checkpoint, timeout=DEADLINE)
    assert r.returncode == 1 and want in r.stderr, r.stderr
