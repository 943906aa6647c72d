"""Document sources (docs/format.md 3.2), end to end with real files and
processes: builds from JSONL (ids, blank and bad lines, empty texts), text,
Parquet (written by pyarrow, with an id column) and a Python iterable; every document is traced
to its input record, whose text tokenizes to the document's tokens, and back
(`tokpack find`, Dataset.find); `--part` builds merged keep the origins of a
single build; verify catches a damaged .src and a hostile one is a clear
error, not a crash."""
import json
import os
import random
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import random_text
from doc_examples import DOCS_JSONL, doc_example, run_cli_example

tokpack = pytest.importorskip("tokpack")


def make_inputs(d, seed=0):
    """A JSONL file, a text file and a Parquet file, and the records of each:
    {input path: [(record number, text or None, id or None)]} (None text: a
    record that is no document: blank, bad)."""
    rng = random.Random(seed)
    records = {}
    jsonl = d / "a.jsonl"
    lines, recs = [], []
    for n in range(1, 301):
        kind = rng.random()
        if kind < 0.05:
            line, rec = "", (n, None, None)  # Blank: not a record.
        elif kind < 0.1:
            line, rec = "{not json", (n, None, None)  # Bad: skipped.
        elif kind < 0.15:
            line, rec = json.dumps({"text": "", "id": f"e{n}"}), (n, "", None)  # Empty.
        elif kind < 0.25:
            text = random_text(rng, 1, 30)
            line, rec = json.dumps({"text": text}), (n, text, None)  # No id.
        elif kind < 0.4:
            text = random_text(rng, 1, 30)
            line, rec = json.dumps({"id": 1000 + n, "text": text}), (n, text, str(1000 + n))
        else:
            text = random_text(rng, 1, 30)
            line, rec = json.dumps({"text": text, "id": f"doc-{n}"}), (n, text, f"doc-{n}")
        lines.append(line)
        recs.append(rec)
    jsonl.write_text("\n".join(lines) + "\n", encoding="utf-8")
    records[str(jsonl)] = recs
    txt = d / "b.txt"
    texts = [random_text(rng, 1, 20) if i % 7 else "" for i in range(120)]
    txt.write_text("\n".join(texts) + "\n", encoding="utf-8")
    records[str(txt)] = [(i + 1, t, None) for i, t in enumerate(texts)]
    parquet = d / "c.parquet"
    rows = [random_text(rng, 1, 25) if i % 11 else "" for i in range(200)]
    pq.write_table(pa.table({"text": rows, "id": [f"p{i}" for i in range(200)]}), parquet,
                   row_group_size=64)
    records[str(parquet)] = [(i + 1, t, f"p{i}") for i, t in enumerate(rows)]
    return records


def check_traced(ds, records, spm_model):
    """Every document's source names a record whose text tokenizes to the
    document's tokens, each document once and in input order, and every
    record that tokenizes to something is a document; ids are found back."""
    tok = tokpack.Tokenizer(spm_model)
    inputs = [x["path"] for x in ds.manifest["provenance"]["inputs"]]
    by_input = {path: {n: (t, i) for n, t, i in recs} for path, recs in records.items()}
    seen = []
    for doc in range(len(ds)):
        src = ds.source(doc)
        assert src.path == inputs[src.input]
        text, id_ = by_input[src.path][src.record]
        assert list(ds.doc(doc)) == tok.encode(text) + [tok.eos_id], (doc, src)
        assert src.id == id_, (doc, src)
        seen.append((src.input, src.record))
        assert ds.find(input=src.input, line=src.record) == [doc]
        assert ds.find(input=src.path, line=src.record) == [doc]
        if src.id is not None:
            assert ds.find(src.id) == [doc]
    assert seen == sorted(seen) and len(set(seen)) == len(seen)
    want = [(inputs.index(path), n) for path, recs in records.items() for n, t, _ in recs
            if t and tok.encode(t)]
    assert sorted(seen) == sorted(want)
    return seen


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("sources")
    return d, make_inputs(d)


def build_cli(run_tokpack, spm_model, paths, out, *extra):
    args = ["build", "-o", out, "-t", spm_model, "--skip-bad-lines", "--text-per-line",
            "--shard-tokens", "900", "--threads", "2", *extra]
    for p in paths:
        args += ["-i", p]
    return run_tokpack(*args)


def test_every_document_is_traced_to_its_record_and_back(inputs, run_tokpack, spm_model,
                                                         tmp_path):
    d, records = inputs
    out = tmp_path / "ds"
    build_cli(run_tokpack, spm_model, list(records), out)
    ds = tokpack.Dataset(out)
    assert ds.has_sources and ds.num_shards > 3
    check_traced(ds, records, spm_model)
    # Per input: documents written, and what was skipped and why.
    m = ds.manifest
    assert m["provenance"]["settings"]["doc_sources"] is True
    counts = m["provenance"]["input_counts"]
    assert sum(c["documents"] for c in counts) == len(ds)
    jsonl = records[str(d / "a.jsonl")]
    lines = (d / "a.jsonl").read_text().split("\n")[:-1]
    assert counts[0]["bad_lines"] == lines.count("{not json")
    assert counts[0]["skipped_empty"] == sum(1 for n, t, _ in jsonl if t == "")
    assert counts[1]["skipped_empty"] == sum(1 for n, t, _ in records[str(d / "b.txt")] if not t)
    assert counts[2]["skipped_empty"] == sum(
        1 for n, t, _ in records[str(d / "c.parquet")] if not t)
    for k, shard in enumerate(m["shards"]):
        assert os.path.exists(out / (shard["path"] + ".src"))
        assert shard["sources"]["bytes"] == os.path.getsize(out / (shard["path"] + ".src"))

    # The CLI: show --source, and find by id and by input and line.
    doc = next(i for i in range(len(ds)) if ds.source(i).id is not None)
    src = ds.source(doc)
    shown = run_tokpack("show", out, "--doc", doc, "--source").stdout
    assert shown == f"document {doc}: '{src.path}' line {src.record}, id '{src.id}'\n"
    assert run_tokpack("find", out, "--id", src.id).stdout == f"{doc}\n"
    assert run_tokpack("find", out, "--input", src.path, "--line",
                       src.record).stdout == f"{doc}\n"
    row = next(i for i in range(len(ds)) if ds.source(i).path.endswith(".parquet"))
    assert " row " in run_tokpack("show", out, "--doc", row, "--source").stdout
    blank = next(n for n, t, _ in jsonl if t is None)
    proc = run_tokpack("find", out, "--input", src.path, "--line", blank, check=False)
    assert proc.returncode == 1 and "no document" in proc.stderr
    proc = run_tokpack("find", out, "--id", "no-such-id", check=False)
    assert proc.returncode == 1 and proc.stdout == ""
    assert run_tokpack("verify", out).returncode == 0
    info = json.loads(run_tokpack("info", out, "--json").stdout)
    assert info["doc_sources"] is True
    assert info["source_bytes"] == sum(s["sources"]["bytes"] for s in m["shards"])
    assert "sources      " in run_tokpack("info", out).stdout


def test_parts_merged_keep_the_origins_of_one_build(inputs, run_tokpack, spm_model, tmp_path):
    d, records = inputs
    build_cli(run_tokpack, spm_model, list(records), tmp_path / "whole")
    for i in range(3):
        build_cli(run_tokpack, spm_model, list(records), tmp_path / f"p{i}", "--part", f"{i}/3")
    run_tokpack("merge", tmp_path / "merged", tmp_path / "p2", tmp_path / "p0", tmp_path / "p1")
    whole, merged = tokpack.Dataset(tmp_path / "whole"), tokpack.Dataset(tmp_path / "merged")
    assert len(merged) == len(whole) and merged.has_sources
    for i in range(len(whole)):
        assert merged.source(i) == whole.source(i), i
    check_traced(merged, records, spm_model)
    m = merged.manifest
    assert [s.get("sources_input_offset", 0) for s in m["shards"]][-1] > 0
    assert m["provenance"]["input_counts"] == whole.manifest["provenance"]["input_counts"]
    assert run_tokpack("verify", tmp_path / "merged").returncode == 0


def test_a_part_without_sources_drops_them_from_the_merge(inputs, run_tokpack, spm_model,
                                                          tmp_path):
    d, records = inputs
    build_cli(run_tokpack, spm_model, list(records), tmp_path / "p0", "--part", "0/2")
    build_cli(run_tokpack, spm_model, list(records), tmp_path / "p1", "--part", "1/2",
              "--no-doc-sources")
    run_tokpack("merge", tmp_path / "merged", tmp_path / "p0", tmp_path / "p1")
    merged = tokpack.Dataset(tmp_path / "merged")
    assert not merged.has_sources
    m = merged.manifest
    assert all("sources" not in s for s in m["shards"]) and "input_counts" not in m["provenance"]
    assert "doc_sources" not in m["provenance"]["settings"]
    with pytest.raises(RuntimeError, match="has no document sources"):
        merged.source(0)
    proc = run_tokpack("show", tmp_path / "merged", "--source", check=False)
    assert proc.returncode != 0 and "no document sources" in proc.stderr


def test_python_iterable_items_and_dict_ids(spm_model, tmp_path):
    items = []
    for i in range(500):
        if i % 3 == 0:
            items.append({"text": f"record number {i} of the iterable", "id": f"it-{i}"})
        elif i % 3 == 1:
            items.append(f"plain text item {i}")
        else:
            items.append("" if i % 9 == 2 else {"text": f"dict without id {i}"})
    ds = tokpack.build(iter(items), tmp_path / "ds", spm_model, shard_tokens=300, threads=2)
    tok = tokpack.Tokenizer(spm_model)
    n = 0
    for doc in range(len(ds)):
        src = ds.source(doc)
        item = items[src.record - 1]
        text = item["text"] if isinstance(item, dict) else item
        assert list(ds.doc(doc)) == tok.encode(text) + [tok.eos_id]
        assert src.path == "<python iterable>" and src.input == 0
        assert src.id == (item.get("id") if isinstance(item, dict) else None)
        n += 1
    assert n == len(ds) == sum(1 for i in items if i)
    assert ds.find("it-99") == [ds.find(input=0, line=100)[0]]
    assert ds.manifest["provenance"]["input_counts"] == [
        {"documents": n, "skipped_empty": len(items) - n, "bad_lines": 0,
         "skipped_invalid_utf8": 0}]


def test_parquet_integer_ids_are_their_decimal_text(spm_model, tmp_path):
    """An integer id column (signed or unsigned, 32 or 64 bits) gives each row
    its value as decimal text, a null none; a date column is no id column."""
    n = 40
    texts = [f"row {i} " + "text " * (i % 5) for i in range(n)]
    columns = {
        "i64": pa.array([None if i == 7 else (i - 20) * 10**15 for i in range(n)], pa.int64()),
        "u64": pa.array([2**64 - 1 - i for i in range(n)], pa.uint64()),
        "i32": pa.array([-(2**31) + i for i in range(n)], pa.int32()),
        "u32": pa.array([2**32 - 1 - i for i in range(n)], pa.uint32()),
        "day": pa.array([i for i in range(n)], pa.date32()),
    }
    path = tmp_path / "ints.parquet"
    pq.write_table(pa.table({"text": texts, **columns}), path, row_group_size=16)
    for key, col in columns.items():
        out = tmp_path / key
        tokpack.build(str(path), out, spm_model, id_key=key)
        ds = tokpack.Dataset(out)
        assert len(ds) == n
        want = [None if v is None or key == "day" else str(v) for v in col.to_pylist()]
        assert [ds.source(i).id for i in range(n)] == want, key
        if want[3] is not None:
            assert ds.find(want[3]) == [3]


def test_no_doc_sources_writes_none(corpus, run_tokpack, spm_model, tmp_path):
    path, _ = corpus(50)
    run_tokpack("build", "-i", path, "-o", tmp_path / "ds", "-t", spm_model, "--no-doc-sources")
    assert not any(name.endswith(".src") for name in os.listdir(tmp_path / "ds"))
    assert not tokpack.Dataset(tmp_path / "ds").has_sources


@pytest.fixture
def built(corpus, run_tokpack, spm_model, tmp_path):
    path, _ = corpus(400)
    out = tmp_path / "ds"
    run_tokpack("build", "-i", path, "-o", out, "-t", spm_model, "--shard-tokens", "3000")
    return out, json.loads((out / "manifest.json").read_text())


def test_verify_catches_a_damaged_sidecar(built, run_tokpack):
    out, m = built
    src = out / (m["shards"][1]["path"] + ".src")
    data = bytearray(src.read_bytes())
    data[len(data) // 2] ^= 0x40
    src.write_bytes(bytes(data))
    proc = run_tokpack("verify", out, check=False)
    assert proc.returncode == 1
    assert f"BAD  {src}" in proc.stdout


def test_a_hostile_sidecar_is_a_clear_error(built, run_tokpack):
    out, m = built
    src = out / (m["shards"][0]["path"] + ".src")
    size = src.stat().st_size
    # Same size, garbage: the dataset opens (tokens are fine), lookups fail
    # naming the file.
    src.write_bytes(bytes(random.Random(1).randrange(256) for _ in range(size)))
    ds = tokpack.Dataset(out)
    with pytest.raises(RuntimeError, match=r"data_loss: .*shard-00000\.src"):
        ds.source(0)
    with pytest.raises(RuntimeError, match=r"shard-00000\.src"):
        ds.find("x")
    proc = run_tokpack("show", out, "--source", check=False)
    assert proc.returncode != 0 and "shard-00000.src" in proc.stderr
    # A header that claims more than the file holds.
    header = bytearray(b"TPKSRC\0\0" + bytes(64))
    header[8] = 1
    header[16:24] = m["shards"][0]["documents"].to_bytes(8, "little")
    header[24:32] = (2**40).to_bytes(8, "little")
    header[64:72] = (256).to_bytes(8, "little")
    src.write_bytes(bytes(header) + bytes(size - len(header)))
    with pytest.raises(RuntimeError, match=r"shard-00000\.src: .*counts"):
        tokpack.Dataset(out).source(0)
    # Truncated: the manifest's size no longer matches, named at open.
    src.write_bytes(src.read_bytes()[:10])
    with pytest.raises(RuntimeError, match=r"shard-00000\.src: 10 bytes, but manifest.json"):
        tokpack.Dataset(out)


def test_the_cli_example_runs_as_written(tokpack_bin, spm_model, tmp_path):
    """docs/cli.md, cli-doc-sources: each command prints what its comment says."""
    (tmp_path / "docs.jsonl").write_text(DOCS_JSONL)
    shutil.copy(spm_model, tmp_path / "tok.model")
    run_cli_example(tokpack_bin, "cli.md", "cli-doc-sources", tmp_path)


def test_the_python_example_runs_as_written(spm_model, tmp_path, monkeypatch):
    """docs/python.md, doc-sources, over the same dataset."""
    (tmp_path / "docs.jsonl").write_text(DOCS_JSONL)
    monkeypatch.chdir(tmp_path)
    tokpack.build("docs.jsonl", "ds", spm_model, skip_bad_lines=True)
    code = doc_example("python.md", "doc-sources")
    scope = {"tokpack": tokpack}
    exec(compile(code, "docs/python.md", "exec"), scope)
    assert repr(scope["src"]) == ("DocumentSource(input=0, path='docs.jsonl', record=4, "
                                  "id='a-17')")


def test_push_keeps_sources_and_remote_lookups_read_them(built, run_tokpack, monkeypatch):
    from remote_servers import MotoServer
    out, m = built
    local = tokpack.Dataset(out)
    with MotoServer() as moto:
        moto.setenv(monkeypatch)
        monkeypatch.setenv("TOKPACK_CACHE_DIR", str(out.parent / "cache"))
        moto.client().create_bucket(Bucket="prov")
        run_tokpack("push", out, "s3://prov/v1", env=dict(os.environ))
        keys = [o["Key"] for o in moto.client().list_objects_v2(Bucket="prov")["Contents"]]
        assert sum(k.endswith(".src") for k in keys) == len(m["shards"])
        assert run_tokpack("verify", "s3://prov/v1", env=dict(os.environ)).returncode == 0
        remote = tokpack.Dataset("s3://prov/v1")
        assert remote.has_sources
        for i in range(0, len(local), 37):
            src = remote.source(i)
            assert src == local.source(i)
            assert remote.find(input=src.input, line=src.record) == [i]
        assert run_tokpack("show", "s3://prov/v1", "--doc", 5, "--source",
                           env=dict(os.environ)).stdout == run_tokpack(
                               "show", out, "--doc", 5, "--source").stdout


def test_nested_merges_and_split_views_keep_origins(inputs, run_tokpack, spm_model, tmp_path):
    d, records = inputs
    paths = list(records)
    for name, path in zip("abc", paths):
        build_cli(run_tokpack, spm_model, [path], tmp_path / name)
    run_tokpack("merge", tmp_path / "ab", tmp_path / "a", tmp_path / "b")
    run_tokpack("merge", tmp_path / "abc", tmp_path / "ab", tmp_path / "c")
    nested = tokpack.Dataset(tmp_path / "abc")
    assert [s.get("sources_input_offset", 0) for s in nested.manifest["shards"]][-1] == 2
    check_traced(nested, records, spm_model)
    assert run_tokpack("verify", tmp_path / "abc").returncode == 0
    # A held-out split's documents keep their origins, and are found in it.
    part = tokpack.Dataset(tmp_path / "abc", split="3,1", split_index=1)
    assert 0 < len(part) < len(nested)
    for i in range(len(part)):
        src = part.source(i)
        [j] = nested.find(input=src.input, line=src.record)
        assert nested.source(j) == src and list(part.doc(i)) == list(nested.doc(j))
        assert part.find(input=src.input, line=src.record) == [i]
        if src.id is not None:
            assert part.find(src.id) == [i]


def test_inputs_listed_apart_are_named(run_tokpack, spm_model, tmp_path, monkeypatch):
    """Past 1000 inputs the list lies in inputs.jsonl: sources still name the
    file, locally and once pushed, and find --input takes its path."""
    src = tmp_path / "many"
    src.mkdir()
    for k in range(1003):
        (src / f"f{k:04d}.jsonl").write_text(json.dumps({"text": f"file {k} text", "id": k}) + "\n")
    out = tmp_path / "ds"
    run_tokpack("build", "-i", src, "-o", out, "-t", spm_model)
    ds = tokpack.Dataset(out)
    assert "inputs_file" in ds.manifest["provenance"] and len(ds) == 1003
    src_ = ds.source(1002)
    assert src_ == tokpack.DocumentSource(1002, str(src / "f1002.jsonl"), 1, "1002")
    assert ds.find(input=str(src / "f0500.jsonl"), line=1) == [500]
    assert run_tokpack("find", out, "--input", src / "f0007.jsonl", "--line", 1).stdout == "7\n"
    assert "f0003.jsonl' line 1, id '3'" in run_tokpack("show", out, "--doc", 3,
                                                        "--source").stdout
    from remote_servers import MotoServer
    with MotoServer() as moto:
        moto.setenv(monkeypatch)
        monkeypatch.setenv("TOKPACK_CACHE_DIR", str(tmp_path / "cache"))
        moto.client().create_bucket(Bucket="many")
        run_tokpack("push", out, "s3://many/v1", env=dict(os.environ))
        remote = tokpack.Dataset("s3://many/v1")
        assert remote.source(1002) == src_
        assert remote.find(input=str(src / "f0500.jsonl"), line=1) == [500]
