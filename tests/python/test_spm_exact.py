"""sentencepiece .model files give exactly the ids of PyPI `sentencepiece`,
the release users run (SentencePieceProcessor(model_file=...).encode(text)),
through tokpack.Tokenizer and in a built dataset.

The models are trained here with Debian's spm_train (nothing is downloaded)
on generated text that covers many scripts, digits, whitespace runs, CRLF,
emoji and combining marks, and on lines like Python source comments: on those,
Debian's sentencepiece 0.1.97, which tokpack linked before, gave unigram ids
that differ from the 0.2.x releases.

tokpack encodes a text word by word through a cache where that gives the
whole text's ids (src/tokenizer/spm_word_encoder.h); the tests of that part train
a model for every setting that decides it and encode text that each wrong
shortcut would get wrong: pieces that span words, whitespace runs, unknown
characters, near-ties of the unigram Viterbi at large running scores, and
documents long enough that it rescales them."""
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


# --- Word-by-word encoding: one model per setting that decides it.

# Symbols inside words, and a run of spaces (which no cut splits).
USER_SYMBOLS = "--user_defined_symbols=<sep>,C++,\u2581\u2581\u2581\u2581"
# (model type, spm_train flags); a name ending in "_edited" is edited after
# training (edit_model).
VARIANTS = {
    "unigram_identity": ("unigram", ["--normalization_rule_name=identity"]),
    "unigram_nfkc_cf_raw_spaces": ("unigram", ["--normalization_rule_name=nmt_nfkc_cf",
                                               "--remove_extra_whitespaces=false",
                                               "--allow_whitespace_only_pieces=true"]),
    "unigram_no_dummy_prefix": ("unigram", ["--add_dummy_prefix=false"]),
    "unigram_byte_fallback": ("unigram", ["--byte_fallback=true",
                                          "--character_coverage=0.98"]),
    "unigram_user_symbols": ("unigram", [USER_SYMBOLS, "--remove_extra_whitespaces=false"]),
    "unigram_phrase_symbol": ("unigram", ["--user_defined_symbols=New\u2581York"]),
    "unigram_no_split_by_whitespace": ("unigram", ["--split_by_whitespace=false"]),
    "unigram_suffix": ("unigram", ["--treat_whitespace_as_suffix=true"]),
    "unigram_and_rule": ("unigram", ["--normalization_rule_tsv={and_rule}"]),
    "unigram_unk_space_edited": ("unigram", ["--character_coverage=0.98"]),
    "unigram_unescaped_edited": ("unigram", []),
    "bpe_default": ("bpe", []),
    "bpe_user_symbols": ("bpe", [USER_SYMBOLS, "--remove_extra_whitespaces=false",
                                 "--byte_fallback=true"]),
    "bpe_no_split_by_whitespace": ("bpe", ["--split_by_whitespace=false"]),
    "bpe_suffix": ("bpe", ["--treat_whitespace_as_suffix=true",
                           "--character_coverage=0.98"]),
}

SPECIAL_TEXTS = [
    "", " ", "   ", "\t", "\n\n", "a", " a", "a ", "  two  spaces  ", "tab\tand\nnewline\r\n",
    "New York, New  York", "C++ and <sep> and C++<sep>C++", "a    b    c        d",
    "東京都は日本の首都です。" * 3, "東京都は日本の首都です。" * 40, "🙂👍🏽🇩🇪 emoji 🙂", "ℌ𝔢𝔩𝔩𝔬 ☃ ☃☃ ⛄ ☃",
    "x" * 30, "y" * 300, "z " + "z" * 70000, "supercalifragilisticexpialidocious" * 5,
    "fish & chips & peas",
    "\u2581 already \u2581\u2581 escaped\u2581", "trailing\u3000ideographic\u3000space",
    "e\u0301 a\u0308 ﬁ ｆｕｌｌ", "Grüße, naïve café!",
]


def syllable_text(rng, n_words):
    """Words of letters that repeat ("ll", "ee"): segmentations of a word with
    equal or nearly equal scores, whose order the unigram Viterbi decides by
    float rounding at the running score of the text before them."""
    parts = "l ll e ee s ss o oo n a t th r ea in".split()
    words = ["".join(rng.choice(parts) for _ in range(rng.randint(1, 7)))
             for _ in range(n_words)]
    return " ".join(words)


def read_varint(b, i):
    v = shift = 0
    while True:
        v, shift, i = v | (b[i] & 0x7f) << shift, shift + 7, i + 1
        if b[i - 1] < 0x80:
            return v, i


def length_delimited(number, payload):
    n, out = len(payload), bytearray([number << 3 | 2])
    while n >= 0x80:
        out.append(n & 0x7f | 0x80)
        n >>= 7
    return bytes(out) + bytes([n]) + payload


def edit_model(path, name):
    """Rewrites a trained model for the variants that spm_train cannot make:
    "unk_space": the piece "\u2581" becomes UNUSED, so spaces are unknown and a
    run of unknown pieces (one id) crosses words; "unescaped": the normalizer
    keeps spaces as " " (escape_whitespaces = false). ModelProto's fields are
    all length-delimited (pieces = 1, trainer_spec = 2, normalizer_spec = 3, ...)."""
    model, out, i = Path(path).read_bytes(), b"", 0
    while i < len(model):
        key, j = read_varint(model, i)
        assert key & 7 == 2, "ModelProto has only message fields"
        n, j = read_varint(model, j)
        payload = model[j:j + n]
        field = model[i:j + n]
        i = j + n
        # SentencePiece: piece = 1 ("\u2581", 3 bytes), score = 2 (fixed32).
        if name == "unk_space" and key >> 3 == 1 and payload[:6] == b"\x0a\x03\xe2\x96\x81\x15":
            field = length_delimited(1, payload[:10] + b"\x18\x05")  # type = UNUSED.
        if name == "unescaped" and key >> 3 == 3:
            field = length_delimited(3, payload + b"\x28\x00")  # escape_whitespaces = false.
        out += field
    Path(path).write_bytes(out)


@pytest.fixture(scope="module")
def variant_texts(texts):
    """(training lines, documents to encode)."""
    train, held_out = texts
    rng = random.Random(31)
    syllables = [syllable_text(rng, 60) for _ in range(300)]
    docs = (SPECIAL_TEXTS + held_out[::4] + [syllable_text(rng, rng.randint(1, 400))
                                              for _ in range(300)]
            # Over 12k tokens: EncodeOptimized rescales its running score.
            + [syllable_text(rng, 30000), "\n".join(held_out[:2500])])
    return train[::9] + syllables, docs


@pytest.fixture(scope="module")
def variant_models(tmp_path_factory, variant_texts):
    if shutil.which("spm_train") is None:
        pytest.fail("spm_train not found (apt-get install sentencepiece)")
    train, _ = variant_texts
    d = tmp_path_factory.mktemp("spm_variants")
    corpus = d / "train.txt"
    corpus.write_text("\n".join(train), encoding="utf-8")
    and_rule = d / "and_rule.tsv"
    and_rule.write_text("26\t20 61 6E 64 20\n", encoding="ascii")  # "&" -> " and ".
    paths = {}
    for name, (kind, flags) in VARIANTS.items():
        subprocess.run(
            ["spm_train", f"--input={corpus}", f"--model_prefix={d / name}",
             "--vocab_size=1500", f"--model_type={kind}", "--hard_vocab_limit=false",
             "--minloglevel=2", "--num_threads=2",
             *[f.format(and_rule=and_rule) for f in flags]],
            check=True, capture_output=True)
        paths[name] = str(d / f"{name}.model")
        if name.endswith("_edited"):
            edit_model(paths[name], name[len("unigram_"):-len("_edited")])
    return paths


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_word_by_word_ids_equal_pypi_sentencepiece(variant_models, variant_texts, name):
    _, docs = variant_texts
    sp = spm.SentencePieceProcessor(model_file=variant_models[name])
    tok = tokpack.Tokenizer(variant_models[name])
    # Twice: the second time the words come from the cache.
    for round_ in range(2):
        bad = [i for i, t in enumerate(docs) if tok.encode(t) != sp.encode(t)]
        assert not bad, (f"{name}, round {round_}: {len(bad)} of {len(docs)} documents differ "
                         f"from sentencepiece {spm.__version__}; first: {docs[bad[0]][:200]!r}")


@pytest.mark.parametrize("name", ["unigram_byte_fallback", "unigram_unk_space_edited",
                                  "bpe_user_symbols", "bpe_suffix"])
def test_word_by_word_builds_count_lost_text_exactly(tmp_path, variant_models, variant_texts,
                                                     name):
    """A build on two threads (a cache each) stores the reference ids, and
    counts the unknown and byte-fallback tokens among them."""
    _, docs = variant_texts
    docs = [t for t in docs if t.strip()]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in docs), encoding="utf-8")
    ds = tokpack.build(src, tmp_path / "ds", variant_models[name], threads=2)
    sp = spm.SentencePieceProcessor(model_file=variant_models[name])
    expected = [sp.encode(t) for t in docs]
    bad = [i for i, ids in enumerate(expected) if ds.doc(i).tolist() != ids + [sp.eos_id()]]
    assert not bad, f"{len(bad)} of {len(docs)} documents differ; first: {docs[bad[0]][:200]!r}"
    counts = json.loads((tmp_path / "ds" / "manifest.json").read_text())["provenance"]["counts"]
    flat = [i for ids in expected for i in ids]
    assert counts["unknown_tokens"] == sum(sp.is_unknown(i) for i in flat)
    assert counts["byte_fallback_tokens"] == sum(sp.is_byte(i) for i in flat)
    assert counts["unknown_tokens"] + counts["byte_fallback_tokens"] > 0


def test_variants_exercise_what_they_are_for(variant_models):
    """The edits took, and the models have the pieces that make their cases."""
    unk_space = spm.SentencePieceProcessor(model_file=variant_models["unigram_unk_space_edited"])
    ids = unk_space.encode("a ☃ ☃ b")
    assert ids.count(unk_space.unk_id()) == 1, "a run of unknowns across words is one id"
    unescaped = spm.SentencePieceProcessor(model_file=variant_models["unigram_unescaped_edited"])
    assert " " in unescaped.normalize("a b")
    phrase = spm.SentencePieceProcessor(model_file=variant_models["unigram_phrase_symbol"])
    assert phrase.piece_to_id("New\u2581York") in phrase.encode("New York")
    for name in ("unigram_no_split_by_whitespace", "bpe_no_split_by_whitespace"):
        sp = spm.SentencePieceProcessor(model_file=variant_models[name])
        assert any("\u2581" in sp.id_to_piece(i)[1:] for i in range(sp.get_piece_size()))
    suffix = spm.SentencePieceProcessor(model_file=variant_models["bpe_suffix"])
    assert any(suffix.id_to_piece(i).endswith("\u2581") for i in range(suffix.get_piece_size()))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
