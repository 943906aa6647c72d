"""Tokenizer files written by a hostile publisher (issue 32): loading is
linear in the file, every regex and normalizer is bounded per document, and a
failure names the document (file:line) and the tokenizer component, where it
used to hang for seconds to minutes or fill memory. CLI runs are subprocesses
with a deadline far below what the unfixed code took."""
import base64
import json
import subprocess
import time

import pytest

from conftest import write_jsonl

tokpack = pytest.importorskip("tokpack")


def run_cli(tokpack_bin, *args, timeout=60):
    return subprocess.run([tokpack_bin, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def char_level(tmp_path, normalizer=None, pre_tokenizer=None):
    """A character-level BPE tokenizer.json over a-h and space, EOS included."""
    d = tmp_path / "tok"
    d.mkdir()
    vocab = {c: i for i, c in enumerate("abcdefgh ")}
    vocab["<|endoftext|>"] = len(vocab)
    (d / "tokenizer.json").write_text(json.dumps({
        "version": "1.0", "added_tokens": [], "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer,
        "model": {"type": "BPE", "vocab": vocab, "merges": []}}))
    return d / "tokenizer.json"


def test_a_split_regex_that_backtracks_without_end_fails_the_build_naming_the_record(
        tmp_path, tokpack_bin):
    # With PCRE2's limits at their maximum this gave up after 17 s per
    # document; tokenizers' Oniguruma stops at 10,000,000 retries, and so does this.
    split = {"type": "Split", "pattern": {"Regex": r"(\p{L}+\s?)+$"}, "behavior": "Isolated",
             "invert": False}
    tok = char_level(tmp_path, pre_tokenizer=split)
    corpus = write_jsonl(tmp_path / "c.jsonl", ["ab ab"] + ["a" * 40 + "!"] * 20)
    start = time.monotonic()
    r = run_cli(tokpack_bin, "build", "-t", tok, "-i", corpus, "-o", tmp_path / "ds", "-q")
    assert r.returncode == 1
    assert time.monotonic() - start < 5
    assert (f"{corpus}:2: regex '(\\p{{L}}+\\s?)+$' gave up on a 41-byte text after 10000328 "
            "backtracking steps at one position") in r.stderr, r.stderr
    assert not (tmp_path / "ds").exists()


def test_a_normalizer_that_grows_without_end_fails_the_build_naming_the_step(tmp_path,
                                                                            tokpack_bin):
    # 40 steps that double the text: 64 bytes became terabytes (the build ran
    # out of memory).
    double = {"type": "Replace", "pattern": {"Regex": "(?s)."}, "content": "aa"}
    tok = char_level(tmp_path, normalizer={"type": "Sequence", "normalizers": [double] * 40})
    corpus = write_jsonl(tmp_path / "c.jsonl", ["a" * 64])
    r = run_cli(tokpack_bin, "build", "-t", tok, "-i", corpus, "-o", tmp_path / "ds", "-q")
    assert r.returncode == 1
    assert (f"{corpus}:1: normalizer step normalizer.normalizers[10] (Replace) made more than "
            "65792 bytes of a 64-byte text, past the cap of 4 times the text plus 64 KiB"
            ) in r.stderr, r.stderr


def test_a_ranks_file_with_a_long_token_loads_for_build_show_and_verify(tmp_path, tokpack_bin):
    # One 1 MB token: cutting it everywhere and hashing both halves took 25 s
    # per load, for the build and again for `show --decode`.
    ranks = [base64.b64encode(bytes([b])).decode() + f" {b}" for b in range(256)]
    ranks.append(base64.b64encode(b"ab" * 500_000).decode() + " 256")
    tok = tmp_path / "long.tiktoken"
    tok.write_text("\n".join(ranks) + "\n")
    corpus = write_jsonl(tmp_path / "c.jsonl", ["ab" * 500_000, "hello"])
    args = ["-t", tok, "--pattern", r"(?:ab)+|[^ab]+", "--special", "<|endoftext|>=257"]
    r = run_cli(tokpack_bin, "build", *args, "-i", corpus, "-o", tmp_path / "ds", "-q",
                timeout=20)
    assert r.returncode == 0, r.stderr
    r = run_cli(tokpack_bin, "show", tmp_path / "ds", "--count", "2", "--decode", timeout=20)
    assert r.returncode == 0, r.stderr
    assert "hello" in r.stdout
    r = run_cli(tokpack_bin, "verify", tmp_path / "ds", timeout=20)
    assert r.returncode == 0, r.stderr
    assert tokpack.Dataset(tmp_path / "ds").doc(0).tolist() == [256, 257]


def test_an_error_quotes_only_the_head_of_a_long_eos_name(tmp_path):
    # A 300 MB EOS name was echoed into a 314 MB message.
    tok = char_level(tmp_path)
    with pytest.raises(ValueError) as e:
        tokpack.Tokenizer(tok, eos_token="x" * (32 << 20))
    assert len(str(e.value)) < 1000
    assert "... (33554432 bytes)' to use as EOS" in str(e.value)


@pytest.mark.parametrize("pattern", [r"\C", "(*LIMIT_MATCH=1)a", "(*UTF)a", "(?C1)a"])
def test_regex_syntax_only_pcre2_has_is_refused_at_load(tmp_path, pattern):
    split = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated",
         "invert": False}]}
    tok = char_level(tmp_path, pre_tokenizer=split)
    with pytest.raises(ValueError, match=r"pre_tokenizer\.pretokenizers\[0\]\.pattern: regex "
                                         r".* which only PCRE2 has"):
        tokpack.Tokenizer(tok)
