"""docs/format.md against the built tool.

The reader below is written from docs/format.md alone (struct, json, numpy and
xxh3); it imports no tokpack code. Each test builds small datasets with the real
CLI and checks that every file is exactly what the specification says: .idx
header and arrays, .bin sizes, chunk checksums, the fingerprint, the token stream
(against PyPI sentencepiece's own encode), shard rolling, BOS/EOS, int32 tokens,
parts and merge, import of foreign Megatron pairs, and the manifest validation
rules. The worked example of the specification is rebuilt and compared byte for
byte.
"""
import ctypes
import json
import os
import random
import re
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, random_text, write_jsonl
from doc_examples import doc_example

SPEC = REPO / "docs" / "format.md"

# --------------------------------------------------------------------------
# xxh3-64 (seed 0): the xxhash module when installed, else libxxhash itself.

try:
    import xxhash

    def xxh3(data):
        return xxhash.xxh3_64_intdigest(bytes(data))
except ImportError:  # pragma: no cover - depends on the environment
    _XXH = ctypes.CDLL("libxxhash.so.0")
    _XXH.XXH3_64bits.restype = ctypes.c_uint64
    _XXH.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]

    def xxh3(data):
        data = bytes(data)
        return _XXH.XXH3_64bits(data, len(data))


def hex16(h):
    return "%016x" % h


# zstd frames (section 3.2), through libzstd itself.
_ZSTD = ctypes.CDLL("libzstd.so.1")
_ZSTD.ZSTD_getFrameContentSize.restype = ctypes.c_ulonglong
_ZSTD.ZSTD_getFrameContentSize.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
_ZSTD.ZSTD_decompress.restype = ctypes.c_size_t
_ZSTD.ZSTD_decompress.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                                  ctypes.c_size_t]


def zstd_decompress(frame):
    frame = bytes(frame)
    size = _ZSTD.ZSTD_getFrameContentSize(frame, len(frame))
    assert size < 2**63, "a frame without its content size"
    out = ctypes.create_string_buffer(max(size, 1))
    assert _ZSTD.ZSTD_decompress(out, size, frame, len(frame)) == size
    return out.raw[:size]


def read_sources(data, documents, n_inputs, input_offset):
    """Section 3.2: a .src parsed and checked against every rule; per
    document (input, record, id or None)."""
    assert data[:8] == b"TPKSRC\0\0"
    assert struct.unpack_from("<II", data, 8) == (1, 0)
    N, R, I, B, H, Z, K = struct.unpack_from("<7Q", data, 16)
    assert N == documents and K == 256 and (1 <= R <= N or R == N == 0)
    assert B in (0, -(-N // K)) and H <= N and (B or not H)
    assert input_offset + I <= n_inputs
    assert len(data) == 80 + 24 * R + 8 * B + Z + 8 * H
    runs = [struct.unpack_from("<3Q", data, 72 + 24 * r) for r in range(R)]
    assert runs[0][0] == 0 if R else True
    origins = []
    for r, (first, inp, rec) in enumerate(runs):
        end = runs[r + 1][0] if r + 1 < R else N
        assert first < end and inp < I
        origins += [(input_offset + inp, rec + k) for k in range(end - first)]
    keys = [(i, rec) for i, rec in origins]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    ids = [None] * N
    off = struct.unpack_from(f"<{B + 1}Q", data, 72 + 24 * R)
    base = 80 + 24 * R + 8 * B
    assert off[0] == 0 and off[-1] == Z and list(off) == sorted(off)
    for b in range(B):
        raw = zstd_decompress(data[base + off[b]:base + off[b + 1]])
        pos = 0
        for d in range(b * K, min((b + 1) * K, N)):
            v, shift = 0, 0
            while True:
                byte = raw[pos]
                pos += 1
                v |= (byte & 0x7F) << shift
                shift += 7
                if byte < 0x80:
                    break
            if v:
                ids[d] = raw[pos:pos + v - 1].decode("utf-8")
                pos += v - 1
        assert pos == len(raw)
    index = [struct.unpack_from("<II", data, base + Z + 8 * e) for e in range(H)]
    assert index == sorted((xxh3(i.encode()) >> 32, d) for d, i in enumerate(ids) if i is not None)
    return [(i, rec, id_) for (i, rec), id_ in zip(origins, ids)]


# --------------------------------------------------------------------------
# The reader, from docs/format.md.

IDX_MAGIC = b"MMIDIDX\x00\x00"
IDX_HEADER = 34
DTYPES = {8: np.dtype("<u2"), 4: np.dtype("<i4")}  # Megatron dtype codes (section 4).
DTYPE_NAMES = {8: "uint16", 4: "int32"}
HEX16 = re.compile(r"[0-9a-f]{16}")


class Idx:
    """A parsed .idx (section 4)."""

    def __init__(self, data):
        assert len(data) >= IDX_HEADER, "shorter than the 34-byte header"
        assert data[:9] == IDX_MAGIC, "bad magic"
        (self.version,) = struct.unpack_from("<Q", data, 9)
        self.code = data[17]
        self.S, self.D = struct.unpack_from("<QQ", data, 18)
        assert self.version == 1
        assert self.code in DTYPES, f"dtype code {self.code}"
        assert len(data) == IDX_HEADER + 12 * self.S + 8 * self.D, "size != 34 + 12S + 8D"
        self.item = DTYPES[self.code].itemsize
        self.lengths = np.frombuffer(data, "<i4", self.S, IDX_HEADER)
        self.pointers = np.frombuffer(data, "<i8", self.S, IDX_HEADER + 4 * self.S)
        self.doc_index = np.frombuffer(data, "<i8", self.D, IDX_HEADER + 12 * self.S)

    def check_read_rules(self):
        """The rules of section 4.2 that every index tokpack writes or imports obeys."""
        assert self.D >= 1
        assert (self.lengths >= 0).all()
        running = np.concatenate([[0], np.cumsum(self.lengths.astype(np.int64) * self.item)])
        assert self.pointers.tolist() == running[:-1].tolist(), "pointers not contiguous"
        d = self.doc_index
        assert d[0] == 0 and d[-1] == self.S and (np.diff(d) >= 0).all() and (d <= self.S).all()

    def check_build_rules(self):
        """Section 4.1: what `build` writes."""
        self.check_read_rules()
        assert self.S >= 1
        assert self.D == self.S + 1
        assert self.doc_index.tolist() == list(range(self.S + 1))
        assert (self.lengths >= 1).all()


def chunk_hashes(data, chunk_bytes):
    """Section 6: one xxh3-64 per chunk, last chunk partial, none for an empty file."""
    return [hex16(xxh3(data[o:o + chunk_bytes])) for o in range(0, len(data), chunk_bytes)]


def fingerprint_preimage(m):
    """Section 7."""
    u64 = lambda v: struct.pack("<Q", v)  # noqa: E731
    pre = b"tokpack-fingerprint-v1"
    pre += u64(m["dtype_code"]) + u64(m["chunk_bytes"]) + u64(len(m["shards"]))
    for s in m["shards"]:
        pre += u64(s["tokens"]) + u64(s["documents"])
        for d in (s["bin"], s["idx"]):
            pre += u64(d["bytes"]) + b"".join(u64(int(h, 16)) for h in d["xxh3_64"])
    return pre


def fingerprint(m):
    return hex16(xxh3(fingerprint_preimage(m)))


def input_list_hash(inputs):
    """Section 5.5: xxh3-64 of the inputs' compact lines, sorted bytewise."""
    lines = sorted((json.dumps(i, ensure_ascii=False, separators=(",", ": ")) + "\n").encode()
                   for i in inputs)
    return hex16(xxh3(b"".join(lines)))


def check_dataset_path(path):
    """Section 5.6 rule 8: a path a manifest names stays beneath the dataset."""
    raw = path.encode("utf-8")
    assert 0 < len(raw) <= 1024
    assert not path.startswith("/") and "\\" not in path
    assert not any(ord(c) < 0x20 or ord(c) == 0x7F for c in path)
    parts = path.split("/")
    assert len(parts) <= 16
    for part in parts:
        assert part not in ("", ".", "..") and len(part.encode("utf-8")) <= 255


def check_manifest(m):
    """The load-time rules of section 5.6, as a reader would apply them."""
    assert m["format"] == "tokpack-dataset"
    assert m["format_version"] == 1
    assert m["dtype_code"] in DTYPES
    assert m["dtype"] == DTYPE_NAMES[m["dtype_code"]]
    item = DTYPES[m["dtype_code"]].itemsize
    assert isinstance(m["chunk_bytes"], int) and 1 <= m["chunk_bytes"] <= 2**30
    t = m["tokenizer"]
    for key in ("type", "file"):
        assert isinstance(t[key], str)
    assert HEX16.fullmatch(t["xxh3_64"])
    if t["file"]:
        check_dataset_path(t["file"])
        assert t["xxh3_64"] != "0" * 16  # A copy carries its hash.
    for key in ("vocab_size", "bos_id", "eos_id", "pad_id", "unk_id"):
        assert isinstance(t[key], int)
    for s in m["shards"]:
        check_dataset_path(s["path"])
        for d in (s["bin"], s["idx"]):
            assert all(HEX16.fullmatch(h) for h in d["xxh3_64"])
            assert len(d["xxh3_64"]) == -(-d["bytes"] // m["chunk_bytes"])
        assert s["bin"]["bytes"] == s["tokens"] * item
        assert s["idx"]["bytes"] >= 34 + 12 * s["documents"] + 8
    assert sum(s["bin"]["bytes"] + s["idx"]["bytes"] for s in m["shards"]) <= 2**63 - 1
    assert m["total_tokens"] == sum(s["tokens"] for s in m["shards"])
    assert m["total_documents"] == sum(s["documents"] for s in m["shards"])
    p = m["provenance"]
    assert p["kind"] in ("build", "merge", "import")
    assert set(p["settings"]) >= {"text_key", "input_format", "text_per_line", "bos", "eos",
                                  "invalid_utf8", "skip_bad_lines", "shard_tokens"}
    assert set(p["counts"]) >= {"documents", "tokens", "skipped_empty", "bad_lines",
                                "utf8_repaired", "skipped_invalid_utf8"}
    if "input_count" in p and "inputs_file" not in p:
        assert p["input_count"] == len(p["inputs"])
        assert p["inputs_xxh3"] == input_list_hash(p["inputs"])
    assert len({"sources" in s for s in m["shards"]}) <= 1  # Rule 14.
    n_inputs = p["input_count"] if "inputs_file" in p else len(p["inputs"])
    assert all(s.get("sources_input_offset", 0) <= n_inputs for s in m["shards"])
    assert "input_counts" not in p or len(p["input_counts"]) == n_inputs
    assert HEX16.fullmatch(m["fingerprint"])
    assert m["fingerprint"] == fingerprint(m)


class Dataset:
    """A dataset read and fully checked per docs/format.md."""

    def __init__(self, directory, built=True):
        self.dir = Path(directory)
        assert (self.dir / "manifest.json").exists(), "incomplete dataset (section 2)"
        self.manifest = m = json.loads((self.dir / "manifest.json").read_text("utf-8"))
        check_manifest(m)
        self.dtype = DTYPES[m["dtype_code"]]
        self.shards = []  # (idx, token array) per shard, in manifest order.
        self.sources = []  # (input, record, id) per document, with sources (3.2).
        for s in m["shards"]:
            # Relative to the manifest's directory; links (merge, import) followed.
            prefix = self.dir / s["path"]
            bin_bytes = Path(str(prefix) + ".bin").read_bytes()
            idx_bytes = Path(str(prefix) + ".idx").read_bytes()
            for data, digest in ((bin_bytes, s["bin"]), (idx_bytes, s["idx"])):
                assert len(data) == digest["bytes"]
                assert chunk_hashes(data, m["chunk_bytes"]) == digest["xxh3_64"]
            idx = Idx(idx_bytes)
            if built:
                idx.check_build_rules()
            else:
                idx.check_read_rules()
            assert idx.code == m["dtype_code"]
            assert idx.S == s["documents"]
            assert int(idx.lengths.sum()) == s["tokens"]
            assert len(bin_bytes) == s["tokens"] * idx.item
            self.shards.append((idx, np.frombuffer(bin_bytes, self.dtype)))
            if "sources" in s:
                data = Path(str(prefix) + ".src").read_bytes()
                assert len(data) == s["sources"]["bytes"]
                assert chunk_hashes(data, m["chunk_bytes"]) == s["sources"]["xxh3_64"]
                p = m["provenance"]
                n_inputs = p["input_count"] if "inputs_file" in p else len(p["inputs"])
                self.sources += read_sources(data, s["documents"], n_inputs,
                                             s.get("sources_input_offset", 0))

    def shard_documents(self, k):
        idx, tokens = self.shards[k]
        return [tokens[p // idx.item:p // idx.item + n].tolist()
                for p, n in zip(idx.pointers.tolist(), idx.lengths.tolist())]

    def documents(self):
        """Section 8: shards in manifest order, sequences in index order."""
        return [d for k in range(len(self.shards)) for d in self.shard_documents(k)]

    def stream(self):
        if not self.shards:
            return []
        return np.concatenate([t for _, t in self.shards]).tolist()


# --------------------------------------------------------------------------
# Helpers.

def spm_ids(model, texts):
    """Token ids from the sentencepiece release users run (PyPI's), per text."""
    import sentencepiece

    return sentencepiece.SentencePieceProcessor(model_file=model).encode(list(texts))


def build(run_tokpack, model, inputs, out, *extra, **kw):
    run_tokpack("build", "-i", *inputs, "-o", out, "-t", model, "--threads", "2", "--quiet",
                *extra, **kw)
    return Path(out)


def expected_docs(model, texts, bos=None, eos=None):
    return [([bos] if bos is not None else []) + ids + ([eos] if eos is not None else [])
            for ids in spm_ids(model, texts)]


# --------------------------------------------------------------------------
# Tests.

def test_xxh3_is_xxh3_64_seed_0():
    # Published XXH3_64bits test vector: the empty input, seed 0.
    assert xxh3(b"") == 0x2D06800538D394C2
    assert xxh3(b"abc") != xxh3(b"abd")


def test_build_output_follows_the_spec(tmp_path, run_tokpack, spm_model, corpus):
    path, texts = corpus(300)
    ds = build(run_tokpack, spm_model, [path], tmp_path / "ds", "--chunk-bytes", "64")
    d = Dataset(ds)
    m = d.manifest

    # Layout (section 1) and publication (section 2).
    assert sorted(p.name for p in ds.iterdir()) == [
        "manifest.json", "shard-00000.bin", "shard-00000.idx", "shard-00000.src",
        "tokenizer.model"]
    assert [p.name for p in tmp_path.iterdir() if ".tokpack-tmp-" in p.name] == []
    assert [s["path"] for s in m["shards"]] == ["shard-00000"]

    # Header fields, byte by byte.
    raw = (ds / "shard-00000.idx").read_bytes()
    assert raw[0:9] == b"MMIDIDX\0\0"
    assert struct.unpack_from("<Q", raw, 9)[0] == 1
    assert raw[17] == 8 and m["dtype_code"] == 8 and m["dtype"] == "uint16"
    assert struct.unpack_from("<Q", raw, 18)[0] == 300
    assert struct.unpack_from("<Q", raw, 26)[0] == 301
    assert len(raw) == 34 + 20 * 300 + 8

    # Many chunks per file, each recomputed by Dataset() above.
    shard = m["shards"][0]
    assert len(shard["bin"]["xxh3_64"]) > 20 and len(shard["idx"]["xxh3_64"]) > 20
    assert shard["bin"]["bytes"] % 64 != 0 or shard["idx"]["bytes"] % 64 != 0

    # Tokenizer identity (section 5.3).
    model_bytes = Path(spm_model).read_bytes()
    tok = m["tokenizer"]
    assert tok["type"] == "sentencepiece" and tok["file"] == "tokenizer.model"
    assert (ds / tok["file"]).read_bytes() == model_bytes
    assert tok["xxh3_64"] == hex16(xxh3(model_bytes))
    assert tok["vocab_size"] == 1000

    # Token stream (section 8): sentencepiece ids + EOS per document.
    want = expected_docs(spm_model, texts, eos=tok["eos_id"])
    assert d.documents() == want
    assert d.stream() == [t for doc in want for t in doc]
    assert m["total_documents"] == 300 and m["total_tokens"] == sum(map(len, want))

    # Provenance (section 5.5).
    p = m["provenance"]
    assert p["tool"] == "tokpack" and p["kind"] == "build"
    assert p["part"] == {"index": 0, "count": 1}
    assert p["inputs"] == [{"path": str(path), "bytes": path.stat().st_size}]
    assert p["sources"] == []
    assert p["settings"]["bos"] is False and p["settings"]["eos"] is True
    assert p["settings"]["shard_tokens"] == 2 ** 29
    assert p["counts"] == {"documents": 300, "tokens": m["total_tokens"], "skipped_empty": 0,
                           "bad_lines": 0, "utf8_repaired": 0, "skipped_invalid_utf8": 0,
                           "unknown_tokens": 0, "byte_fallback_tokens": 0}


@pytest.mark.parametrize("budget", [500, 20])
def test_shards_roll_at_the_token_budget(tmp_path, run_tokpack, spm_model, corpus, budget):
    path, texts = corpus(200, seed=budget)
    ds = build(run_tokpack, spm_model, [path], tmp_path / "ds", "--shard-tokens", str(budget),
               "--chunk-bytes", "64")
    d = Dataset(ds)
    m = d.manifest
    n = len(m["shards"])
    assert n > 3
    assert [s["path"] for s in m["shards"]] == ["shard-%05d" % k for k in range(n)]
    assert m["provenance"]["settings"]["shard_tokens"] == budget
    per_shard = [d.shard_documents(k) for k in range(n)]
    for k, docs in enumerate(per_shard):
        tokens = sum(map(len, docs))
        assert tokens == m["shards"][k]["tokens"]
        assert tokens <= budget or len(docs) == 1  # Only a lone oversize document exceeds it.
        if k + 1 < n:  # The next shard started because its first document did not fit.
            assert tokens + len(per_shard[k + 1][0]) > budget
    if budget == 20:
        assert any(len(docs) == 1 and len(docs[0]) > budget for docs in per_shard)
    # Documents are never split: the stream is still one document per text.
    assert d.documents() == expected_docs(spm_model, texts, eos=m["tokenizer"]["eos_id"])


@pytest.mark.parametrize("flags", [("--bos",), ("--bos", "--no-eos"), ("--no-eos",)])
def test_bos_and_eos_settings(tmp_path, run_tokpack, spm_model, corpus, flags):
    path, texts = corpus(50, seed=3)
    ds = build(run_tokpack, spm_model, [path], tmp_path / "ds", *flags)
    d = Dataset(ds)
    m = d.manifest
    bos, eos = "--bos" in flags, "--no-eos" not in flags
    assert m["provenance"]["settings"]["bos"] is bos
    assert m["provenance"]["settings"]["eos"] is eos
    tok = m["tokenizer"]
    assert tok["bos_id"] >= 0 and tok["eos_id"] >= 0
    want = expected_docs(spm_model, texts, bos=tok["bos_id"] if bos else None,
                         eos=tok["eos_id"] if eos else None)
    assert d.documents() == want
    assert m["provenance"]["counts"]["tokens"] == m["total_tokens"] == sum(map(len, want))


def test_blank_lines_and_empty_documents_are_not_written(tmp_path, run_tokpack, spm_model):
    texts = ["the data model", "", "token shard", "   ", "index"]
    f = tmp_path / "e.jsonl"
    with f.open("w", encoding="utf-8", newline="") as out:
        out.write(json.dumps({"text": texts[0]}) + "\r\n")   # CRLF line ending.
        out.write("\n \t \r\n")                               # Blank lines: no record.
        for t in texts[1:]:
            out.write(json.dumps({"text": t}) + "\n")
        out.write(json.dumps({"x": 1, "text": "memory"}))     # No final newline.
    ds = build(run_tokpack, spm_model, [f], tmp_path / "ds", "--chunk-bytes", "16")
    d = Dataset(ds)
    m = d.manifest
    kept = [t for t, ids in zip(texts + ["memory"], spm_ids(spm_model, texts + ["memory"]))
            if ids]
    assert len(kept) == 4
    assert d.documents() == expected_docs(spm_model, kept, eos=m["tokenizer"]["eos_id"])
    assert m["provenance"]["counts"]["skipped_empty"] == 2
    assert m["provenance"]["counts"]["bad_lines"] == 0
    # Section 3.2: records are numbered by line, blank lines included; the
    # skipped records leave gaps.
    assert d.sources == [(0, 1, None), (0, 5, None), (0, 7, None), (0, 8, None)]
    assert m["provenance"]["input_counts"] == [
        {"documents": 4, "skipped_empty": 2, "bad_lines": 0, "skipped_invalid_utf8": 0}]


def test_invalid_utf8_is_replaced_like_python(tmp_path, run_tokpack, spm_model):
    lines = [
        b'{"text": "caf\xc3\xa9 data"}',                  # Valid.
        b'{"text": "bad \xff byte"}',
        b'{"text": "cut \xe6\x97 short"}',                # Truncated 3-byte sequence.
        b'{"text": "surrogate \xed\xa0\x80 and overlong \xc0\xaf"}',
        b'{"text": "four \xf0\x9f\x99 \xf4\x90\x80\x80 end"}',
    ]
    f = tmp_path / "u.jsonl"
    f.write_bytes(b"\n".join(lines) + b"\n")
    ds = build(run_tokpack, spm_model, [f], tmp_path / "ds")
    d = Dataset(ds)
    m = d.manifest
    texts = [json.loads(line.decode("utf-8", errors="replace"))["text"] for line in lines]
    assert "\ufffd" in texts[1]
    assert d.documents() == expected_docs(spm_model, texts, eos=m["tokenizer"]["eos_id"])
    assert m["provenance"]["counts"]["utf8_repaired"] == 4


def test_int32_tokens_for_a_vocabulary_over_65535(tmp_path, run_tokpack):
    rng = random.Random(11)
    syl = "ka lo mi ne ru ta shi po ven dor al is um ex tra qui zo bel mar ton ga fe".split()
    words = set()
    while len(words) < 80000:
        words.add("".join(rng.choice(syl) for _ in range(rng.randint(3, 6))))
    words = sorted(words)
    train = tmp_path / "train.txt"
    train.write_text("\n".join(" ".join(words[i:i + 20]) for i in range(0, len(words), 20)))
    subprocess.run(["spm_train", f"--input={train}", f"--model_prefix={tmp_path / 'w'}",
                    "--vocab_size=70000", "--model_type=word", "--minloglevel=2"],
                   check=True, capture_output=True)
    model = str(tmp_path / "w.model")
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 30))) for _ in range(60)]
    f = write_jsonl(tmp_path / "t.jsonl", texts)
    ds = build(run_tokpack, model, [f], tmp_path / "ds", "--chunk-bytes", "64",
               "--shard-tokens", "300")
    d = Dataset(ds)
    m = d.manifest
    assert m["dtype_code"] == 4 and m["dtype"] == "int32"
    assert m["tokenizer"]["vocab_size"] == 70000
    assert len(m["shards"]) > 1
    for idx, tokens in d.shards:
        assert idx.code == 4 and idx.item == 4 and tokens.dtype == np.dtype("<i4")
    want = expected_docs(model, texts, eos=m["tokenizer"]["eos_id"])
    assert d.documents() == want
    assert max(d.stream()) > 65535 and min(d.stream()) >= 0


def part_of(sizes, i, count):
    """Section 10: the part holding file i's byte midpoint."""
    total = sum(sizes)
    if total == 0:
        return i * count // len(sizes)
    return min(count - 1, (2 * sum(sizes[:i]) + sizes[i]) * count // (2 * total))


def test_parts_merge_into_the_single_build_stream(tmp_path, run_tokpack, spm_model):
    src = tmp_path / "corpus"
    (src / "sub").mkdir(parents=True)
    rng = random.Random(7)
    all_texts = {}
    for name, n in [("b.jsonl", 30), ("a.jsonl", 5), ("sub/c.jsonl", 12), ("d.ndjson", 2),
                    ("e.jsonl", 25), ("a-x.jsonl", 8)]:
        texts = [random_text(rng) for _ in range(n)]
        write_jsonl(src / name, texts)
        all_texts[str(src / name)] = texts
    write_jsonl(src / ".hidden.jsonl", ["never read"])   # Hidden: skipped.
    (src / "notes.md").write_text("not a corpus file")   # Unknown format: left out.

    order = sorted(all_texts)                            # Full paths, bytewise.
    sizes = [os.path.getsize(p) for p in order]
    single = Dataset(build(run_tokpack, spm_model, [src], tmp_path / "single",
                           "--skip-unknown-files"))
    assert [i["path"] for i in single.manifest["provenance"]["inputs"]] == order
    eos = single.manifest["tokenizer"]["eos_id"]
    want = expected_docs(spm_model, [t for p in order for t in all_texts[p]], eos=eos)
    assert single.documents() == want

    count = 3
    parts = []
    for i in range(count):
        out = build(run_tokpack, spm_model, [src], tmp_path / "parts" / f"p{i}",
                    "--part", f"{i}/{count}", "--shard-tokens", "400", "--skip-unknown-files")
        part = Dataset(out)
        p = part.manifest["provenance"]
        assert p["part"] == {"index": i, "count": count}
        assert [x["path"] for x in p["inputs"]] == [
            f for k, f in enumerate(order) if part_of(sizes, k, count) == i]
        parts.append(out)

    merged_dir = tmp_path / "out" / "merged"
    run_tokpack("merge", merged_dir, *reversed(parts))   # Ordered by part index anyway.
    merged = Dataset(merged_dir)
    m = merged.manifest
    assert m["provenance"]["kind"] == "merge"
    assert m["provenance"]["part"] == {"index": 0, "count": 1}
    # Each part through a link in the output (section 10), never "..".
    for s in m["shards"]:
        link = s["path"].split("/")[0]
        i = int(link[len("part-"):])
        assert link == "part-%05d" % i
        assert os.readlink(merged_dir / link) == f"../../parts/p{i}"
    assert merged.documents() == want
    # Section 3.2: each part's sources, its inputs numbered after the parts
    # before it, are the single build's.
    assert merged.sources == single.sources and len(single.sources) == len(want)
    assert m["total_tokens"] == single.manifest["total_tokens"]
    # Same stream, different shard layout: a different fingerprint (section 7).
    assert m["fingerprint"] != single.manifest["fingerprint"]


def test_fingerprint_ignores_paths_and_provenance(tmp_path, run_tokpack, spm_model, corpus):
    path, _ = corpus(120, seed=5)
    ds = build(run_tokpack, spm_model, [path], tmp_path / "ds", "--shard-tokens", "700",
               "--chunk-bytes", "64")
    m = json.loads((ds / "manifest.json").read_text())
    assert len(m["shards"]) > 1
    prefixes = [ds / s["path"] for s in m["shards"]]
    run_tokpack("import", *prefixes, "-o", tmp_path / "imp" / "same", "--chunk-bytes", "64")
    same = Dataset(tmp_path / "imp" / "same").manifest
    assert same["provenance"]["kind"] == "import"
    assert same["shards"][0]["path"] == "shard-00000"
    assert os.readlink(tmp_path / "imp" / "same" / "shard-00000.bin") == "../../ds/shard-00000.bin"
    assert same["fingerprint"] == m["fingerprint"]
    run_tokpack("import", *prefixes, "-o", tmp_path / "imp" / "other", "--chunk-bytes", "128")
    other = Dataset(tmp_path / "imp" / "other").manifest
    assert other["fingerprint"] != m["fingerprint"]
    assert len(fingerprint_preimage(m)) == 46 + sum(
        32 + 8 * len(s["bin"]["xxh3_64"]) + 8 * len(s["idx"]["xxh3_64"]) for s in m["shards"])


def test_optional_fields_may_be_absent(tmp_path, run_tokpack, spm_model, corpus):
    # Section 5.5: the lost-text counts are optional (manifests written before
    # tokpack read other tokenizers lack them); 5.3: pattern and special_tokens
    # appear for tiktoken only.
    path, _ = corpus(30, seed=6)
    ds = build(run_tokpack, spm_model, [path], tmp_path / "ds")
    m = json.loads((ds / "manifest.json").read_text())
    assert "pattern" not in m["tokenizer"] and "special_tokens" not in m["tokenizer"]
    for key in ("unknown_tokens", "byte_fallback_tokens"):
        del m["provenance"]["counts"][key]
    (ds / "manifest.json").write_text(json.dumps(m))
    info = json.loads(run_tokpack("info", ds, "--json").stdout)
    assert info["documents"] == m["total_documents"]
    assert run_tokpack("verify", ds).returncode == 0


def write_megatron(prefix, dtype_code, sequences, doc_index):
    """A Megatron MMIDIDX pair, written from section 4's table."""
    dt = DTYPES[dtype_code]
    lengths = [len(s) for s in sequences]
    pointers = np.concatenate([[0], np.cumsum(np.array(lengths, np.int64) * dt.itemsize)])[:-1]
    idx = (IDX_MAGIC + struct.pack("<QBQQ", 1, dtype_code, len(sequences), len(doc_index))
           + np.array(lengths, "<i4").tobytes() + np.array(pointers, "<i8").tobytes()
           + np.array(doc_index, "<i8").tobytes())
    Path(str(prefix) + ".idx").write_bytes(idx)
    Path(str(prefix) + ".bin").write_bytes(
        b"".join(np.array(s, dt).tobytes() for s in sequences))


def test_import_counts_one_document_per_sequence(tmp_path, run_tokpack):
    (tmp_path / "mega").mkdir()
    prefix = tmp_path / "mega" / "web_text_document"
    sequences = [[5, 6, 7], [], [9, 10], [11, 12, 13, 14]]
    # Megatron groups sequences 0-1 into document 0, repeats an entry for an empty
    # document, and puts sequences 2-3 in the last document.
    write_megatron(prefix, 8, sequences, [0, 2, 2, 4])
    run_tokpack("import", str(prefix) + ".idx", "-o", tmp_path / "imp" / "ds",
                "--chunk-bytes", "16")
    d = Dataset(tmp_path / "imp" / "ds", built=False)
    m = d.manifest
    assert m["total_documents"] == 4 and m["total_tokens"] == 9
    assert m["shards"][0]["path"] == "shard-00000"
    assert os.readlink(tmp_path / "imp" / "ds" / "shard-00000.idx") == \
        "../../mega/web_text_document.idx"
    assert m["shards"][0]["idx"]["bytes"] == 34 + 12 * 4 + 8 * 4
    assert d.documents() == sequences
    assert m["tokenizer"]["type"] == "" and m["tokenizer"]["vocab_size"] == -1
    assert m["tokenizer"]["xxh3_64"] == "0" * 16
    p = m["provenance"]
    assert p["inputs"] == [] and p["sources"] == [str(prefix) + ".idx"]
    assert p["counts"]["documents"] == 4 and p["counts"]["tokens"] == 9
    run_tokpack("verify", tmp_path / "imp" / "ds")


def _mutations():
    def edit(fn, refingerprint=True):
        return fn, refingerprint

    def set_(path, value):
        def fn(m):
            obj = m
            for key in path[:-1]:
                obj = obj[key]
            obj[path[-1]] = value
        return fn

    def delete(path):
        def fn(m):
            obj = m
            for key in path[:-1]:
                obj = obj[key]
            del obj[path[-1]]
        return fn

    def drop_chunk(m):
        m["shards"][0]["idx"]["xxh3_64"].pop()

    def more_tokens(m):
        m["shards"][0]["tokens"] += 1
        m["total_tokens"] += 1

    def flip_fingerprint(m):
        m["fingerprint"] = ("1" if m["fingerprint"][0] == "0" else "0") + m["fingerprint"][1:]

    return {
        # name: (mutation, recompute the fingerprint, error text or None if accepted)
        "format": (*edit(set_(["format"], "other")), "not 'tokpack-dataset'"),
        "format_version": (*edit(set_(["format_version"], 2)), "format_version 2"),
        "dtype_code": (*edit(set_(["dtype_code"], 5)), "unsupported dtype_code 5"),
        "chunk_bytes_zero": (*edit(set_(["chunk_bytes"], 0)), "chunk_bytes"),
        "chunk_count": (*edit(drop_chunk), "checksums, expected"),
        "bin_bytes": (*edit(more_tokens), "tokens but bin.bytes"),
        "absolute_path": (*edit(set_(["shards", 0, "path"], "/tmp/x")),
                          "field 'shards[0].path' ('/tmp/x') is absolute"),
        "parent_path": (*edit(set_(["shards", 0, "path"], "../ds/shard-00000")),
                        "has a '..' component"),
        "dot_path": (*edit(set_(["shards", 0, "path"], "./shard-00000")), "has a '.' component"),
        "backslash_path": (*edit(set_(["shards", 0, "path"], "a\\shard-00000")), "backslash"),
        "control_path": (*edit(set_(["shards", 0, "path"], "shard\n00000")),
                         "control character 0x0a"),
        "deep_path": (*edit(set_(["shards", 0, "path"], "a/" * 16 + "s")),
                      "more than 16 components"),
        "tokenizer_file": (*edit(set_(["tokenizer", "file"], "../../victim")),
                           "field 'tokenizer.file' ('../../victim') has a '..' component"),
        "tokenizer_hash_zero": (*edit(set_(["tokenizer", "xxh3_64"], "0" * 16)),
                                "'tokenizer.xxh3_64' is 0000000000000000"),
        "chunk_bytes_huge": (*edit(set_(["chunk_bytes"], 2**64 - 1)), "is not in 1..1073741824"),
        "chunk_bytes_over": (*edit(set_(["chunk_bytes"], 2**30 + 1)), "is not in 1..1073741824"),
        "total_documents": (*edit(set_(["total_documents"], 0)), "total_documents"),
        "uppercase_hash": (*edit(set_(["tokenizer", "xxh3_64"], "ABCDEF0123456789")),
                           "16 lowercase hex"),
        "missing_count": (*edit(delete(["provenance", "counts", "bad_lines"])), "bad_lines"),
        "fingerprint": (*edit(flip_fingerprint, refingerprint=False), "does not match"),
        "sources_on_some_shards": (*edit(delete(["shards", 1, "sources"])),
                                   "is given for some shards and not others"),
        "sources_input_offset": (*edit(set_(["shards", 0, "sources_input_offset"], 2)),
                                 "sources_input_offset is past the 1 inputs"),
        "input_counts_length": (*edit(set_(["provenance", "input_counts"], [])),
                                "has 0 entries for 1 inputs"),
        "unknown_field": (*edit(set_(["comment"], "extra fields are ignored")), None),
        "provenance_edit": (*edit(set_(["provenance", "version"], "9.9.9"),
                                  refingerprint=False), None),
    }


MUTATIONS = _mutations()


@pytest.fixture(scope="module")
def small_dataset(tmp_path_factory, tokpack_bin, spm_model):
    d = tmp_path_factory.mktemp("valid")
    texts = [random_text(random.Random(i)) for i in range(20)]
    f = write_jsonl(d / "in.jsonl", texts)
    subprocess.run([tokpack_bin, "build", "-i", f, "-o", d / "ds", "-t", spm_model, "--quiet",
                    "--chunk-bytes", "64", "--shard-tokens", "300"], check=True,
                   capture_output=True)
    return d / "ds"


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_manifest_validation_rules(tmp_path, run_tokpack, small_dataset, name):
    mutate, refingerprint, error = MUTATIONS[name]
    ds = tmp_path / "ds"
    shutil.copytree(small_dataset, ds)
    m = json.loads((ds / "manifest.json").read_text())
    check_manifest(m)
    mutate(m)
    if refingerprint:
        m["fingerprint"] = fingerprint(m)  # So only the rule under test is broken.
    # The independent reader agrees with tokpack on every rule.
    if error is None:
        check_manifest(m)
    else:
        with pytest.raises((AssertionError, KeyError)):
            check_manifest(m)
    (ds / "manifest.json").write_text(json.dumps(m, indent=2))
    proc = run_tokpack("info", ds, "--json", check=False)
    if error is None:
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["fingerprint"] == m["fingerprint"]
    else:
        assert proc.returncode == 1
        assert error in proc.stderr, proc.stderr


def xxd_blocks(text):
    """The indented `xxd` dumps of a markdown text, as bytes, in order."""
    blocks, current = [], None
    line_re = re.compile(r"^    ([0-9a-f]{8}): ((?:[0-9a-f]{2,4} )*[0-9a-f]{2,4})  ")
    for line in text.splitlines():
        match = line_re.match(line)
        if not match:
            current = None
            continue
        if current is None or int(match.group(1), 16) == 0:
            current = bytearray()
            blocks.append(current)
        assert int(match.group(1), 16) == len(current)
        current += bytes.fromhex(match.group(2).replace(" ", ""))
    return [bytes(b) for b in blocks]


def test_worked_example_of_the_spec(tmp_path, run_tokpack, spm_model):
    spec = SPEC.read_text(encoding="utf-8")
    example = spec[spec.index("## 13. Worked example"):spec.index("## 14.")]
    doc_json = example[example.index("```json") + 8:example.index("\n```\n") + 1]
    doc_manifest = json.loads(doc_json)
    assert f"ds/manifest.json       {len(doc_json.encode())} bytes" in example
    check_manifest(doc_manifest)
    # The fixture model is trained here like the example's; its file differs (it
    # records the training paths) but its pieces are the same unless sentencepiece
    # itself trains differently.
    if spm_ids(spm_model, ["the data", "token model train", "shard index"]) != [
            [98, 68], [96, 97, 94], [66, 56]]:
        pytest.skip("this sentencepiece trains a model that tokenizes the example differently")

    shutil.copy(spm_model, tmp_path / "tok.model")
    (tmp_path / "docs.jsonl").write_text(
        '{"text": "the data"}\n\n{"text": "token model train"}\n{"text": ""}\n'
        '{"text": "shard index", "id": 7}\n')
    run_tokpack("build", "-i", "docs.jsonl", "-o", "ds", "-t", "tok.model", "--chunk-bytes",
                "32", "--shard-tokens", "7", "--threads", "2", "--quiet", cwd=tmp_path)
    ds = tmp_path / "ds"
    d = Dataset(ds)
    built = d.manifest
    built["provenance"]["version"] = doc_manifest["provenance"]["version"]  # Tool version.
    assert built["tokenizer"]["xxh3_64"] == hex16(xxh3((ds / "tokenizer.model").read_bytes()))
    built["tokenizer"]["xxh3_64"] = doc_manifest["tokenizer"]["xxh3_64"]  # Another model file.
    assert built == doc_manifest

    idx0, bin0, idx1, bin1, preimage, src1 = xxd_blocks(example)
    assert (ds / "shard-00001.src").read_bytes() == src1
    assert d.sources == [(0, 1, None), (0, 3, None), (0, 5, "7")]
    assert (ds / "shard-00000.idx").read_bytes() == idx0
    assert (ds / "shard-00000.bin").read_bytes() == bin0
    assert (ds / "shard-00001.idx").read_bytes() == idx1
    assert (ds / "shard-00001.bin").read_bytes() == bin1
    assert fingerprint_preimage(doc_manifest) == preimage
    assert len(preimage) == 166
    assert hex16(xxh3(preimage)) == doc_manifest["fingerprint"]
    assert d.documents() == [[98, 68, 2], [96, 97, 94, 2], [66, 56, 2]]
    # Section 17's list, as `tokpack remove` writes it for this dataset.
    run_tokpack("remove", "ds", "--doc", 0, "--doc", 2, cwd=tmp_path)
    assert (ds / "removed.json").read_text() == doc_example("format.md", "removed-json")


def read_removed(ds, m):
    """Section 17: the removal list of a dataset, checked by its rules (None
    without one)."""
    path = Path(ds) / "removed.json"
    if not path.exists():
        return None
    assert path.is_file() and not path.is_symlink() and path.stat().st_size <= 256 << 20
    listed = json.loads(path.read_text("utf-8"))
    assert set(listed) == {"format", "version", "fingerprint", "documents"}
    assert listed["format"] == "tokpack-removed" and listed["version"] == 1
    assert re.fullmatch(r"[0-9a-f]{16}", listed["fingerprint"])
    assert listed["fingerprint"] == fingerprint(m)
    docs = listed["documents"]
    assert all(type(d) is int for d in docs)
    assert all(a < b for a, b in zip(docs, docs[1:]))
    assert all(0 <= d < m["total_documents"] for d in docs)
    return docs


def test_removal_lists_follow_the_spec(tmp_path, run_tokpack, spm_model):
    """Section 17: the list names whole-dataset indices bound to the fingerprint,
    changes nothing the manifest says, and merge renumbers the parts' lists."""
    rng = random.Random(17)
    records = [json.dumps({"text": random_text(rng), "id": f"x{i}"}) for i in range(60)]
    (tmp_path / "a.jsonl").write_text("\n".join(records[:30]) + "\n")
    (tmp_path / "b.jsonl").write_text("\n".join(records[30:]) + "\n")
    parts = [build(run_tokpack, spm_model, [tmp_path / "a.jsonl", tmp_path / "b.jsonl"],
                   tmp_path / f"p{i}", "--part", f"{i}/2", "--shard-tokens", "300")
             for i in range(2)]
    before = (parts[0] / "manifest.json").read_bytes()
    run_tokpack("remove", parts[0], "--id", "x29", "--id", "x3", "--doc", 10)
    run_tokpack("remove", parts[1], "--id", "x30")
    assert (parts[0] / "manifest.json").read_bytes() == before  # Not part of the dataset.
    p0 = Dataset(parts[0])
    assert read_removed(parts[0], p0.manifest) == [3, 10, 29]
    assert read_removed(parts[1], Dataset(parts[1]).manifest) == [0]
    run_tokpack("merge", tmp_path / "m", parts[1], parts[0])
    merged = Dataset(tmp_path / "m")
    assert read_removed(tmp_path / "m", merged.manifest) == [3, 10, 29, 30]
