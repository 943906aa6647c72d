"""sentencepiece .model files give exactly the ids of PyPI `sentencepiece`,
the release users run (SentencePieceProcessor(model_file=...).encode(text)),
through tokpack.Tokenizer and in a built dataset.

The models are trained here with Debian's spm_train (nothing is downloaded)
on generated text that covers many scripts, digits, whitespace runs, CRLF,
emoji and combining marks, and on lines like Python source comments: on those,
Debian's sentencepiece 0.1.97, which tokpack linked before, gave unigram ids
that differ from the 0.2.x releases."""
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import sentencepiece as spm

import tokenizer_refs as refs

tokpack = pytest.importorskip("tokpack")

IDENTS = ("self value buffer offset num_tokens shard_index max_len ctx dtype np os sys "
          "ValueError KeyError Optional Dict List tokenizer encode decode __init__ "
          "_internal HTTPServer parse_args json_path utf8 fd tmp").split()
PHRASES = ("TODO: handle the case where", "NOTE(kudo):", "XXX", "FIXME -", "noqa: E501",
           "type: ignore[attr-defined]", "pragma: no cover", "pylint: disable=protected-access",
           "See https://docs.python.org/3/library/os.html#os.replace", "e.g.", "i.e.",
           "Returns None if", "Raises ValueError when", "O(n log n)", "-> Optional[int]",
           "x[i:j] == y[::-1]", "a != b and c >= 0", "0x7fff_ffff", "1e-9", "3.14159",
           "'utf-8'", '"\\n"', "r'\\s+'", "f\"{name!r}\"", "--flag=value", "~/.cache/tokpack",
           "C:\\Users\\name", "(see above)", "[1, 2, 3]", "{'a': 1}", "<= 2**31 - 1",
           "über-long naïve café", "日本語のコメント", "комментарий", "✓ done", "→ next",
           "🙂", "e\u0301", "\t", "  ", "...", "--", "---------------------------------",
           "#", "##", "#!/usr/bin/env python3", "# -*- coding: utf-8 -*-")


def python_comment_lines(n, seed):
    """`n` one-line documents like Python source comments and commented code."""
    rng = random.Random(seed)
    lines = []
    for _ in range(n):
        words = []
        for _ in range(rng.randint(1, 14)):
            r = rng.random()
            if r < 0.4:
                words.append(rng.choice(IDENTS) + rng.choice(["", "", "()", ".", ",", ":", "_"]))
            elif r < 0.75:
                words.append(rng.choice(PHRASES))
            elif r < 0.9:
                words.append(rng.choice(refs.WORDS))
            else:
                words.append(str(rng.randint(0, 10 ** rng.randint(1, 6))))
        indent = " " * rng.choice([0, 0, 4, 8, 12]) + rng.choice(["", "\t"] + [""] * 6)
        hashes = rng.choice(["# ", "#", "## ", "#: ", "# " * 2, ""])
        sep = rng.choice([" ", " ", " ", "  ", ""])
        lines.append(indent + hashes + sep.join(words) + rng.choice(["", "", " ", "\r\n"]))
    return lines


def stdlib_comment_lines(limit):
    """Real comments: the `#` lines of the running interpreter's standard
    library, in file order (the same on every machine with this Python)."""
    lines = []
    for path in sorted(Path(json.__file__).resolve().parents[1].glob("*.py")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lstrip().startswith("#") and len(line.strip()) > 1:
                lines.append(line)
                if len(lines) >= limit:
                    return lines
    return lines


@pytest.fixture(scope="module")
def texts():
    """(training text, held-out documents)."""
    comments = stdlib_comment_lines(6000)
    train = (refs.make_texts(3000, seed=11) + python_comment_lines(3000, seed=12)
             + comments[0::2])
    held_out = (refs.make_texts(1500, seed=21) + python_comment_lines(1500, seed=22)
                + comments[1::2][:1500])
    return train, held_out


@pytest.fixture(scope="module")
def models(tmp_path_factory, texts):
    """{"unigram": path, "bpe": path}, trained with Debian's spm_train. The
    unigram model covers 99.95% of characters (the rest are unknown pieces,
    which sentencepiece merges); the BPE model falls back to bytes."""
    if shutil.which("spm_train") is None:
        pytest.fail("spm_train not found (apt-get install sentencepiece)")
    train, _ = texts
    d = tmp_path_factory.mktemp("spm_exact")
    corpus = d / "train.txt"
    # spm_train reads lines: each document's own line breaks make more lines.
    corpus.write_text("\n".join(train), encoding="utf-8")
    paths = {}
    for kind, extra in (("unigram", ["--character_coverage=0.9995"]),
                        ("bpe", ["--character_coverage=1.0", "--byte_fallback=true"])):
        subprocess.run(
            ["spm_train", f"--input={corpus}", f"--model_prefix={d / kind}",
             "--vocab_size=2000", f"--model_type={kind}", "--hard_vocab_limit=false",
             "--minloglevel=2", "--num_threads=2", *extra],
            check=True, capture_output=True)
        paths[kind] = str(d / f"{kind}.model")
    return paths


def reference_ids(model, docs):
    sp = spm.SentencePieceProcessor(model_file=model)
    return [sp.encode(t) for t in docs]


@pytest.mark.parametrize("kind", ["unigram", "bpe"])
def test_tokenizer_ids_equal_pypi_sentencepiece(models, texts, kind):
    _, held_out = texts
    assert len(held_out) >= 4000
    tok = tokpack.Tokenizer(models[kind])
    assert tok.kind == "sentencepiece"
    expected = reference_ids(models[kind], held_out)
    bad = [i for i, (t, ids) in enumerate(zip(held_out, expected)) if tok.encode(t) != ids]
    assert not bad, (f"{len(bad)} of {len(held_out)} documents differ from sentencepiece "
                     f"{spm.__version__}; first: {held_out[bad[0]]!r}")
    # And the text comes back as sentencepiece decodes it.
    sp = spm.SentencePieceProcessor(model_file=models[kind])
    for ids in expected[:300]:
        assert tok.decode(ids) == sp.decode(ids)


@pytest.mark.parametrize("kind", ["unigram", "bpe"])
def test_built_dataset_holds_pypi_ids_plus_eos(tmp_path, models, texts, kind):
    _, held_out = texts
    docs = [t for t in held_out if t.strip()]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in docs), encoding="utf-8")
    ds = tokpack.build(src, tmp_path / "ds", models[kind], threads=2)
    eos = spm.SentencePieceProcessor(model_file=models[kind]).eos_id()
    assert ds.tokenizer_info["type"] == "sentencepiece" and ds.tokenizer_info["eos_id"] == eos
    assert len(ds) == len(docs)
    expected = reference_ids(models[kind], docs)
    bad = [i for i, ids in enumerate(expected) if ds.doc(i).tolist() != ids + [eos]]
    assert not bad, f"{len(bad)} of {len(docs)} documents differ; first: {docs[bad[0]]!r}"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
