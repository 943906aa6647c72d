"""tokenizer.json and tiktoken files give exactly the ids of the reference
implementations users run: PyPI `tokenizers` (encode(text,
add_special_tokens=False).ids) and PyPI `tiktoken` (encode_ordinary). The
tokenizers are trained here on generated text that covers many scripts,
digits, whitespace runs, CRLF, emoji and combining marks."""
import json
import subprocess
import sys

import pytest
import tiktoken
from tokenizers import Regex, Tokenizer as HfTokenizer, models, pre_tokenizers, trainers

import tokenizer_refs as refs

tokpack = pytest.importorskip("tokpack")

STYLES = {
    "gpt2": refs.train_gpt2_style,
    "llama3": refs.train_llama3_style,
    "deepseek": refs.train_deepseek_style,
}


@pytest.fixture(scope="module")
def corpus():
    return refs.make_texts(2500, seed=1), refs.make_texts(1500, seed=2)


@pytest.fixture(scope="module")
def trained(tmp_path_factory, corpus):
    train, _ = corpus
    d = tmp_path_factory.mktemp("tok")
    return {name: (str(d / f"{name}.json"), fn(train, d / f"{name}.json"))
            for name, fn in STYLES.items()}


def mismatches(ours, reference, texts):
    return [(t, ours(t), reference(t)) for t in texts if ours(t) != reference(t)]


@pytest.mark.parametrize("style", sorted(STYLES))
def test_tokenizer_json_ids_equal_tokenizers(trained, corpus, style):
    path, ref = trained[style]
    tok = tokpack.Tokenizer(path)
    assert tok.kind == "huggingface"
    assert tok.vocab_size == ref.get_vocab_size(with_added_tokens=True)
    _, held_out = corpus
    bad = mismatches(tok.encode, lambda t: ref.encode(t, add_special_tokens=False).ids, held_out)
    assert not bad, bad[:3]
    # Decoding gives the text back as tokenizers' ByteLevel decoder does.
    for text in held_out[:200]:
        ids = ref.encode(text, add_special_tokens=False).ids
        assert tok.decode(ids) == ref.decode(ids, skip_special_tokens=False)


@pytest.mark.parametrize("preset", ["cl100k_base", "o200k_base"])
def test_tiktoken_ids_equal_tiktoken(tmp_path, trained, corpus, preset):
    _, gpt2 = trained["gpt2"]
    ranks = refs.tiktoken_from(gpt2, tmp_path / "t.tiktoken")
    ref = refs.tiktoken_reference(preset, ranks)
    tok = tokpack.Tokenizer(tmp_path / "t.tiktoken", pattern=preset)
    assert tok.kind == "tiktoken"
    # The preset brings tiktoken's own special tokens, EOS among them.
    assert tok.eos_id == ref.eot_token
    _, held_out = corpus
    bad = mismatches(tok.encode, ref.encode_ordinary, held_out)
    assert not bad, bad[:3]
    ids = ref.encode_ordinary(held_out[0])
    assert tok.decode_bytes(ids) == ref.decode_bytes(ids)


def test_tiktoken_with_a_regex_and_named_special_tokens(tmp_path, trained, corpus):
    _, gpt2 = trained["gpt2"]
    ranks = refs.tiktoken_from(gpt2, tmp_path / "t.tiktoken")
    eot = len(ranks)
    ref = tiktoken.Encoding("llama3-like", pat_str=refs.LLAMA3_PATTERN, mergeable_ranks=ranks,
                            special_tokens={"<|end_of_text|>": eot})
    for pattern in ("llama3", refs.LLAMA3_PATTERN):
        tok = tokpack.Tokenizer(tmp_path / "t.tiktoken", pattern=pattern,
                                special={"<|end_of_text|>": eot}, eos_token="<|end_of_text|>")
        assert tok.eos_id == eot
        bad = mismatches(tok.encode, ref.encode_ordinary, corpus[1])
        assert not bad, (pattern, bad[:3])


def test_build_with_a_tokenizer_json_writes_reference_ids_and_its_copy(tmp_path, trained, corpus,
                                                                       run_tokpack):
    path, ref = trained["llama3"]
    texts = corpus[1][:400]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    ds = tokpack.build(src, tmp_path / "ds", path, threads=2)
    eos = ref.token_to_id("<|endoftext|>")
    assert ds.tokenizer_info["type"] == "huggingface" and ds.tokenizer_info["eos_id"] == eos
    for i, text in enumerate(texts):
        assert ds.doc(i).tolist() == ref.encode(text, add_special_tokens=False).ids + [eos], i
    assert (tmp_path / "ds" / "tokenizer.json").read_bytes() == open(path, "rb").read()
    assert ds.tokenizer().encode(texts[3]) == ref.encode(texts[3], add_special_tokens=False).ids
    # The CLI builds the same bytes and decodes with the dataset's copy.
    run_tokpack("build", "-t", path, "-i", src, "-o", tmp_path / "cli", "--threads", "1", "-q")
    for name in ("shard-00000.bin", "shard-00000.idx"):
        assert (tmp_path / "cli" / name).read_bytes() == (tmp_path / "ds" / name).read_bytes()
    shown = run_tokpack("show", tmp_path / "cli", "--doc", "1", "--decode").stdout
    assert texts[1].strip()[:20] in shown


def test_build_with_tiktoken_records_pattern_and_specials(tmp_path, trained, corpus, run_tokpack):
    _, gpt2 = trained["gpt2"]
    ranks = refs.tiktoken_from(gpt2, tmp_path / "t.tiktoken")
    ref = refs.tiktoken_reference("cl100k_base", ranks)
    src = tmp_path / "in.jsonl"
    texts = corpus[1][:200]
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    run_tokpack("build", "-t", tmp_path / "t.tiktoken", "--pattern", "cl100k_base",
                "-i", src, "-o", tmp_path / "ds", "-q")
    manifest = json.loads((tmp_path / "ds" / "manifest.json").read_text())
    info = manifest["tokenizer"]
    assert info["type"] == "tiktoken" and info["file"] == "tokenizer.tiktoken"
    assert info["pattern"] == ref._pat_str
    assert {"text": "<|endoftext|>", "id": ref.eot_token} in info["special_tokens"]
    assert manifest["dtype"] == "int32"  # ids reach 100276
    ds = tokpack.Dataset(tmp_path / "ds")
    for i, text in enumerate(texts):
        assert ds.doc(i).tolist() == ref.encode_ordinary(text) + [ref.eot_token]
    # The dataset's copy reloads with the recorded pattern and specials.
    again = ds.tokenizer()
    assert again.encode(texts[0]) == ref.encode_ordinary(texts[0])
    assert again.eos_id == ref.eot_token
    # show decodes with the copy as recorded, or with a file given with its pattern.
    want = ref.decode(ds.doc(0).tolist()[:-1])
    assert want in run_tokpack("show", tmp_path / "ds", "--decode").stdout
    assert want in run_tokpack("show", tmp_path / "ds", "--decode", "--tokenizer",
                               tmp_path / "t.tiktoken", "--pattern", "cl100k_base").stdout


def test_merge_refuses_parts_read_with_another_eos_or_pattern(tmp_path, trained, corpus,
                                                              run_tokpack):
    # The same file is a different tokenizer with another EOS choice (tokenizer.json)
    # or another split pattern (tiktoken): parts made so must not merge.
    path, _ = trained["gpt2"]
    _, gpt2 = trained["gpt2"]
    refs.tiktoken_from(gpt2, tmp_path / "t.tiktoken")
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in corpus[1][:50]))
    for name, args in [("a", ["-t", path]), ("b", ["-t", path, "--eos", "<tool>"]),
                       ("c", ["-t", tmp_path / "t.tiktoken", "--pattern", "cl100k_base"]),
                       ("d", ["-t", tmp_path / "t.tiktoken", "--pattern", "o200k_base"])]:
        run_tokpack("build", *args, "-i", src, "-o", tmp_path / name, "-q")
    for a, b in (("a", "b"), ("c", "d")):
        proc = run_tokpack("merge", tmp_path / f"m{a}{b}", tmp_path / a, tmp_path / b,
                           check=False)
        assert proc.returncode == 1 and "different tokenizers" in proc.stderr, proc.stderr
    run_tokpack("merge", tmp_path / "maa", tmp_path / "a", tmp_path / "a")


def test_lost_text_is_counted_in_the_summary_and_info(tmp_path, corpus, run_tokpack):
    # A character-level BPE with a small alphabet: rare characters become [UNK].
    tok = HfTokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"\s+"), behavior="removed")
    tok.train_from_iterator(corpus[0], trainers.BpeTrainer(
        vocab_size=300, special_tokens=["[UNK]", "</s>"], limit_alphabet=40,
        show_progress=False))
    tok.save(str(tmp_path / "unk.json"))
    texts = corpus[1][:300]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    want = sum(tok.encode(t).ids.count(tok.token_to_id("[UNK]")) for t in texts)
    assert want > 0
    proc = run_tokpack("build", "-t", tmp_path / "unk.json", "-i", src, "-o", tmp_path / "ds")
    assert f"tokens that lost text: {want} unknown" in proc.stderr
    info = json.loads(run_tokpack("info", tmp_path / "ds", "--json").stdout)
    manifest = json.loads((tmp_path / "ds" / "manifest.json").read_text())
    assert manifest["provenance"]["counts"]["unknown_tokens"] == want
    assert info["documents"] == len([t for t in texts if tok.encode(t).ids])


def write_json(path, doc):
    path.write_text(json.dumps(doc))
    return path


def test_unsupported_and_unreadable_tokenizer_files_are_clear_errors(tmp_path, trained,
                                                                     run_tokpack):
    path, _ = trained["gpt2"]
    doc = json.loads(open(path).read())
    wordpiece = write_json(tmp_path / "wp.json", dict(doc, model={"type": "WordPiece",
                                                                  "vocab": {"a": 0}}))
    metaspace = write_json(tmp_path / "ms.json", dict(doc, pre_tokenizer={
        "type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}))
    (tmp_path / "ranks.tiktoken").write_text("YQ== 0\nYg== 1\n")
    (tmp_path / "junk.bin").write_bytes(b"\x00\x01not a tokenizer")
    cases = [
        (wordpiece, {}, "WordPiece"),
        (metaspace, {}, "Metaspace is not supported"),
        (tmp_path / "ranks.tiktoken", {}, "does not carry its split pattern"),
        (tmp_path / "junk.bin", {}, "not a tokenizer file tokpack reads"),
        (path, {"eos_token": "<|nope|>"}, "has no token '<|nope|>'"),
        (path, {"pattern": "cl100k_base"}, "apply to tiktoken files only"),
    ]
    for file, kw, message in cases:
        with pytest.raises(ValueError, match=message.replace("|", r"\|")):
            tokpack.Tokenizer(file, **kw)
    proc = run_tokpack("build", "-t", metaspace, "-i", path, "-o", tmp_path / "out", check=False)
    assert proc.returncode == 1 and "Metaspace" in proc.stderr
    assert not (tmp_path / "out").exists()
    proc = run_tokpack("build", "-t", tmp_path / "ranks.tiktoken", "--special", "oops",
                       "-i", path, "-o", tmp_path / "out", check=False)
    assert proc.returncode == 1 and "TEXT=ID" in proc.stderr


def test_a_long_run_without_boundaries_is_not_quadratic(trained):
    # 2 MB of one letter and of spaces: one pre-token each. Quadratic work
    # would take minutes; the test's timeout is the bound.
    path, ref = trained["gpt2"]
    tok = tokpack.Tokenizer(path)
    for text in ("a" * (2 << 20), " " * (2 << 20)):
        ids = tok.encode(text)
        assert tok.decode(ids) == text
        assert ids[:50] == ref.encode(text[:4096], add_special_tokens=False).ids[:50]


def test_the_cli_reads_a_tokenizer_json_from_stdin_build(tmp_path, trained, tokpack_bin):
    path, ref = trained["deepseek"]
    text = "東京 2024年 hello\r\nworld 🙂"
    proc = subprocess.run([tokpack_bin, "build", "-t", path, "-i", "-", "-o",
                           str(tmp_path / "ds"), "-q"],
                          input=json.dumps({"text": text}) + "\n", capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    ds = tokpack.Dataset(tmp_path / "ds")
    assert ds.doc(0).tolist()[:-1] == ref.encode(text, add_special_tokens=False).ids


def test_every_supported_component_matches_the_references():
    """tests/tokenizer/compare_reference.py: 18 tokenizer.json variants (every
    normalizer, pre-tokenizer, Split behaviour and added-token option tokpack
    reads) and 5 tiktoken patterns, through the C++ core's test tool."""
    from conftest import REPO

    tool = REPO / "build" / "tests" / "bpe_encode_tool"
    if not tool.exists():
        pytest.fail(f"{tool} is missing: build the C++ tests (scripts/build.sh)")
    proc = subprocess.run([sys.executable, str(REPO / "tests" / "tokenizer" /
                                               "compare_reference.py"), str(tool),
                           "--docs", "400", "--seed", "7"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "0 mismatches" in proc.stdout.splitlines()[-1]
