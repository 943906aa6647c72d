"""Parquet inputs: the plugin (libtokpack_parquet.so, Arrow's C++ reader from the
pyarrow wheel) through the core's OpenParquetInput, driven by the test hook
parquet_dump_tool on files written here by pyarrow; then `tokpack build` on
Parquet against the same texts as JSONL."""
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import random_text, run_python, write_jsonl

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


@pytest.fixture(scope="session")
def dump_tool(tokpack_bin):
    path = Path(os.environ.get("TOKPACK_PARQUET_DUMP_TOOL",
                               Path(tokpack_bin).parent / "tests" / "parquet_dump_tool"))
    if not path.exists():
        pytest.fail(f"parquet_dump_tool not found at {path}; build the tests or set "
                    "TOKPACK_PARQUET_DUMP_TOOL")
    return str(path)


def dump(tool, path, *args, check=True):
    """Runs parquet_dump_tool: (groups [(rows, bytes)], rows [(row, text|None, bad|None)],
    error line or None)."""
    proc = subprocess.run([tool, str(path), *map(str, args)], capture_output=True, timeout=120)
    out = proc.stdout
    groups, rows, pos = [], [], 0

    def line():
        nonlocal pos
        end = out.index(b"\n", pos)
        text = out[pos:end].decode()
        pos = end + 1
        return text

    error = proc.stderr.decode().strip() or None
    if proc.returncode == 0 or out:
        n = int(line().split()[1])
        groups = [tuple(map(int, line().split()[2:])) for _ in range(n)]
        while pos < len(out):
            kind, rest = line().split(" ", 1)
            if kind == "row":
                row, size = map(int, rest.split())
                rows.append((row, out[pos:pos + size].decode(), None))
                pos += size + 1
            elif kind == "bad":
                row, why = rest.split(" ", 1)
                rows.append((int(row), None, why))
            else:
                assert kind == "end" and int(rest) == len(rows)
    if check:
        assert proc.returncode == 0, error
    else:
        assert proc.returncode == 1 and error, proc
    return groups, rows, error


def texts_of(rows):
    return [t for _, t, _ in rows]


def sample_texts(n, seed=0):
    rng = random.Random(seed)
    return [random_text(rng) for _ in range(n)]


@pytest.mark.parametrize("codec", ["snappy", "zstd", "gzip", "none"])
@pytest.mark.parametrize("dictionary", [True, False])
def test_codecs_and_encodings_read_every_row_in_order(tmp_path, dump_tool, codec, dictionary):
    texts = sample_texts(2500, seed=hash(codec) % 1000)
    texts[7] = texts[3]  # Repeats, which dictionary pages share.
    path = tmp_path / f"c-{codec}.parquet"
    pq.write_table(pa.table({"id": list(range(len(texts))), "text": texts}), path,
                   compression=codec, use_dictionary=dictionary, row_group_size=1000,
                   data_page_size=4096)
    groups, rows, _ = dump(dump_tool, path)
    assert [r for r, _ in groups] == [1000, 1000, 500]
    assert all(b > 0 for _, b in groups)
    assert texts_of(rows) == texts
    assert [r for r, _, _ in rows] == list(range(1, len(texts) + 1))


def test_data_page_v2_and_large_string_and_binary(tmp_path, dump_tool):
    texts = sample_texts(300, seed=5)
    path = tmp_path / "v2.parquet"
    table = pa.table({"text": pa.array(texts, pa.large_string()),
                      "raw": pa.array([t.encode() for t in texts], pa.binary())})
    pq.write_table(table, path, data_page_version="2.0", row_group_size=128)
    assert texts_of(dump(dump_tool, path)[1]) == texts
    # Untyped BYTE_ARRAY is text too: the packer checks the bytes themselves.
    assert texts_of(dump(dump_tool, path, "raw")[1]) == texts


def test_selected_row_groups_keep_their_file_row_numbers(tmp_path, dump_tool):
    texts = sample_texts(100, seed=2)
    path = tmp_path / "g.parquet"
    pq.write_table(pa.table({"text": texts}), path, row_group_size=30)
    groups, rows, _ = dump(dump_tool, path, "text", 1, 3)
    assert [r for r, _ in groups] == [30, 30, 30, 10]
    assert [r for r, _, _ in rows] == list(range(31, 91))
    assert texts_of(rows) == texts[30:90]
    assert dump(dump_tool, path, "text", 4, 4)[1] == []
    _, _, error = dump(dump_tool, path, "text", 2, 5, check=False)
    assert "row groups [2, 5)" in error


def test_nested_fields_by_dotted_path_and_pointer_and_nulls(tmp_path, dump_tool):
    meta = pa.struct([("text", pa.string()), ("n", pa.int64()), ("a.b", pa.string())])
    rows_in = [
        ("top 1", {"text": "inner 1", "n": 1, "a.b": "x"}),
        (None, {"text": None, "n": 2, "a.b": "y"}),   # Null text; null field.
        ("top 3", None),                               # Null parent struct.
        ("top 4", {"text": "inner 4", "n": 4, "a.b": None}),
    ]
    table = pa.table({"text": [r[0] for r in rows_in],
                      "meta": pa.array([r[1] for r in rows_in], meta)})
    path = tmp_path / "nested.parquet"
    pq.write_table(table, path, row_group_size=3)

    _, rows, _ = dump(dump_tool, path)
    assert rows == [(1, "top 1", None), (2, None, "text is null"), (3, "top 3", None),
                    (4, "top 4", None)]
    want = [(1, "inner 1", None), (2, None, "text is null"), (3, None, "text is null"),
            (4, "inner 4", None)]
    assert dump(dump_tool, path, "meta.text")[1] == want
    assert dump(dump_tool, path, "/meta/text")[1] == want
    # A field whose name holds a dot: only a JSON pointer can name it.
    assert texts_of(dump(dump_tool, path, "/meta/a.b")[1]) == ["x", "y", None, None]


def test_non_string_columns_are_bad_rows_not_errors(tmp_path, dump_tool):
    table = pa.table({"n": pa.array([1, None, 3], pa.int64()),
                      "f": pa.array([b"ab", b"cd", None], pa.binary(2)),
                      "d": pa.array([1.5, 2.5, 3.5], pa.float64())})
    path = tmp_path / "types.parquet"
    pq.write_table(table, path)
    assert dump(dump_tool, path, "n")[1] == [(1, None, "text is INT64, not a string"),
                                              (2, None, "text is null"),
                                              (3, None, "text is INT64, not a string")]
    assert [b for _, _, b in dump(dump_tool, path, "f")[1]] == [
        "text is FIXED_LEN_BYTE_ARRAY, not a string"] * 2 + ["text is null"]
    assert {b for _, _, b in dump(dump_tool, path, "d")[1]} == {"text is DOUBLE, not a string"}


def test_list_struct_and_missing_columns_are_errors_at_open(tmp_path, dump_tool):
    table = pa.table({"text": ["a", "b"], "tags": [["x"], []],
                      "meta": [{"lang": "en", "n": 1}, {"lang": "fr", "n": 2}]})
    path = tmp_path / "cols.parquet"
    pq.write_table(table, path)

    groups, rows, error = dump(dump_tool, path, "tags", check=False)
    assert (groups, rows) == ([], [])
    assert error == (f"error invalid_argument: {path}: text column 'tags' is a list; tokpack "
                     "reads one string per row, from a string column or a struct's field")
    _, _, error = dump(dump_tool, path, "body", check=False)
    assert error == (f"error invalid_argument: {path}: text column 'body' not found; the "
                     "file's columns are: text, tags.list.element, meta.lang, meta.n")
    _, _, error = dump(dump_tool, path, "meta", check=False)
    assert "'meta' is a struct; name one of its fields instead: meta.lang, meta.n" in error
    _, _, error = dump(dump_tool, path, "meta.lang.x", check=False)
    assert "'meta.lang.x' not found" in error


def test_many_columns_are_listed_up_to_a_limit(tmp_path, dump_tool):
    path = tmp_path / "wide.parquet"
    pq.write_table(pa.table({f"c{i}": [i] for i in range(100)}), path)
    _, _, error = dump(dump_tool, path, "text", check=False)
    assert "c0, c1," in error and "c39, ... (60 more)" in error and "c40" not in error


def test_broken_files_fail_clearly(tmp_path, dump_tool):
    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"text": sample_texts(2000, seed=3)}), good, row_group_size=500)
    data = good.read_bytes()

    cases = {
        "empty.parquet": b"",
        "tiny.parquet": b"PAR1PAR1",
        "jsonl.parquet": b'{"text": "this is not parquet"}\n' * 10,
        "truncated.parquet": data[:len(data) // 2],
        "no-footer.parquet": data[:-1],
    }
    for name, content in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        _, _, error = dump(dump_tool, path, check=False)
        assert error.startswith(f"error invalid_argument: {path}: not a Parquet file"), error

    # A footer that holds but data pages that do not: an error naming the file
    # while reading, never a crash.
    corrupt = bytearray(data)
    for i in range(8, len(data) // 2, 97):
        corrupt[i] ^= 0x5A
    path = tmp_path / "corrupt.parquet"
    path.write_bytes(bytes(corrupt))
    proc = subprocess.run([dump_tool, str(path)], capture_output=True, timeout=120)
    assert proc.returncode == 1, proc
    assert str(path) in proc.stderr.decode()

    _, _, error = dump(dump_tool, tmp_path / "missing.parquet", check=False)
    assert error.startswith("error not_found: cannot open") and "missing.parquet" in error
    _, _, error = dump(dump_tool, tmp_path, check=False)
    assert "is not a regular file" in error


def test_large_texts_and_empty_files(tmp_path, dump_tool):
    rng = random.Random(8)
    big = "".join(random_text(rng, 50, 80) + "\n" for _ in range(14000))
    assert len(big.encode()) > 5_000_000
    texts = ["small", big, "after"]
    path = tmp_path / "big.parquet"
    pq.write_table(pa.table({"text": texts}), path, compression="zstd")
    assert texts_of(dump(dump_tool, path)[1]) == texts

    empty = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"text": pa.array([], pa.string())}), empty)
    groups, rows, _ = dump(dump_tool, empty)
    assert sum(r for r, _ in groups) == 0 and rows == []


def peak_rss_kib(cmd):
    """Peak resident memory of `cmd` (KiB), measured in a fresh interpreter so
    that no earlier child of this one counts."""
    code = ("import resource, subprocess, sys\n"
            "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    out = subprocess.run([sys.executable, "-c", code, *cmd], check=True, capture_output=True,
                         text=True, timeout=300).stdout
    return int(out)


def test_memory_is_bounded_by_a_row_group_not_the_file(tmp_path, dump_tool):
    # 96 MiB of incompressible text in 24 row groups of four 1 MiB rows.
    rows = [os.urandom(2**19).hex() for _ in range(16)]
    path = tmp_path / "large.parquet"
    with pq.ParquetWriter(path, pa.schema([("text", pa.string())]), compression="none",
                          use_dictionary=False) as w:
        for g in range(24):
            w.write_table(pa.table({"text": rows[g % 4 * 4:g % 4 * 4 + 4]}))
    assert path.stat().st_size > 90 * 2**20
    small = tmp_path / "small.parquet"
    pq.write_table(pa.table({"text": ["x"]}), small)
    baseline = peak_rss_kib([dump_tool, str(small)])
    peak = peak_rss_kib([dump_tool, str(path)])
    # One row group's column chunk, its decoded page and a row being printed.
    assert peak - baseline < 24 * 1024, (baseline, peak)


def test_without_the_plugin_loadable_the_error_says_what_to_install(tmp_path, dump_tool):
    # The plugin is looked for first next to the code that loads it: a broken
    # one there stands in for a plugin whose pyarrow is missing.
    tool = tmp_path / "parquet_dump_tool"
    shutil.copy(dump_tool, tool)
    (tmp_path / "libtokpack_parquet.so").write_bytes(b"not a shared object")
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"text": ["a"]}), path)
    _, _, error = dump(str(tool), path, check=False)
    major, minor = pa.__version__.split(".")[:2]
    assert error.startswith(
        f"error failed_precondition: reading Parquet needs pyarrow {major}.{minor} (the version "
        f"tokpack was built against): pip install 'pyarrow=={major}.{minor}.*' (dlopen error: ")


def test_cli_without_parquet_inputs_does_not_load_arrow(tmp_path, tokpack_bin, spm_model):
    src = write_jsonl(tmp_path / "c.jsonl", sample_texts(20))
    env = dict(os.environ, LD_DEBUG="files", LD_DEBUG_OUTPUT=str(tmp_path / "ld"))
    subprocess.run([tokpack_bin, "build", "-i", str(src), "-o", str(tmp_path / "out"), "-t",
                    spm_model], check=True, capture_output=True, env=env, timeout=120)
    loaded = "".join(p.read_text() for p in tmp_path.glob("ld.*"))
    assert "file=" in loaded  # LD_DEBUG worked,
    assert "libarrow" not in loaded and "libtokpack_parquet" not in loaded


def test_import_tokpack_does_not_load_arrow():
    pytest.importorskip("tokpack")
    proc = run_python("import tokpack\nprint(open('/proc/self/maps').read())")
    assert proc.returncode == 0, proc.stderr
    assert "libtokpack_parquet" not in proc.stdout and "libarrow" not in proc.stdout


# `tokpack build` on Parquet inputs.

def build(run_tokpack, inputs, out, model, *extra, check=True):
    return run_tokpack("build", "-i", *map(str, inputs), "-o", str(out), "-t", model,
                       "--threads", "2", *extra, check=check)


def shard_files(ds):
    return {p.name: p.read_bytes() for p in sorted(Path(ds).iterdir())
            if p.suffix in (".bin", ".idx")}


@pytest.mark.parametrize("codec", ["snappy", "zstd", "gzip"])
def test_parquet_and_jsonl_of_the_same_texts_give_identical_shards(tmp_path, run_tokpack,
                                                                    spm_model, codec):
    texts = sample_texts(3000, seed=11)
    jsonl = write_jsonl(tmp_path / "c.jsonl", texts)
    parquet = tmp_path / "c.parquet"
    pq.write_table(pa.table({"id": list(range(len(texts))), "text": texts}), parquet,
                   compression=codec, row_group_size=700)
    build(run_tokpack, [jsonl], tmp_path / "from-jsonl", spm_model, "--shard-tokens", "20000")
    build(run_tokpack, [parquet], tmp_path / "from-parquet", spm_model, "--shard-tokens",
          "20000")
    want = shard_files(tmp_path / "from-jsonl")
    assert len(want) >= 4  # Several shards.
    assert shard_files(tmp_path / "from-parquet") == want


def test_nested_text_key_matches_jsonl(tmp_path, run_tokpack, spm_model):
    texts = sample_texts(500, seed=12)
    jsonl = tmp_path / "n.jsonl"
    jsonl.write_text("".join(json.dumps({"meta": {"text": t}}, ensure_ascii=False) + "\n"
                             for t in texts), encoding="utf-8")
    parquet = tmp_path / "n.parquet"
    pq.write_table(pa.table({"meta": [{"text": t, "n": i} for i, t in enumerate(texts)]}),
                   parquet, row_group_size=128)
    build(run_tokpack, [jsonl], tmp_path / "a", spm_model, "--text-key", "/meta/text")
    build(run_tokpack, [parquet], tmp_path / "b", spm_model, "--text-key", "meta.text")
    build(run_tokpack, [parquet], tmp_path / "c", spm_model, "--text-key", "/meta/text")
    want = shard_files(tmp_path / "a")
    assert shard_files(tmp_path / "b") == want and shard_files(tmp_path / "c") == want


def test_null_and_non_string_rows_are_bad_rows(tmp_path, run_tokpack, spm_model):
    texts = sample_texts(50, seed=13)
    with_nulls = [None if i in (4, 30) else t for i, t in enumerate(texts)]
    path = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"text": with_nulls, "n": list(range(50))}), path,
                   row_group_size=20)
    proc = build(run_tokpack, [path], tmp_path / "out", spm_model, check=False)
    assert proc.returncode == 1
    assert f"{path}:5: text is null" in proc.stderr
    assert "--skip-bad-lines" in proc.stderr
    assert not (tmp_path / "out").exists()

    proc = build(run_tokpack, [path], tmp_path / "out", spm_model, "--skip-bad-lines")
    assert "2 bad lines" in proc.stderr
    jsonl = write_jsonl(tmp_path / "ok.jsonl", [t for t in with_nulls if t is not None])
    build(run_tokpack, [jsonl], tmp_path / "want", spm_model)
    assert shard_files(tmp_path / "out") == shard_files(tmp_path / "want")

    proc = build(run_tokpack, [path], tmp_path / "ints", spm_model, "--text-key", "n",
                 check=False)
    assert proc.returncode == 1 and f"{path}:1: text is INT64, not a string" in proc.stderr
    proc = build(run_tokpack, [path], tmp_path / "ints", spm_model, "--text-key", "n",
                 "--skip-bad-lines", check=False)
    assert "50 bad lines" in proc.stderr


def test_open_errors_name_the_file(tmp_path, run_tokpack, spm_model):
    path = tmp_path / "x.parquet"
    pq.write_table(pa.table({"body": ["a"]}), path)
    proc = build(run_tokpack, [path], tmp_path / "out", spm_model, check=False)
    assert proc.returncode == 1
    assert f"{path}: text column 'text' not found; the file's columns are: body" in proc.stderr
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 not really")
    proc = build(run_tokpack, [bad], tmp_path / "out", spm_model, check=False)
    assert proc.returncode == 1
    assert f"{bad}: not a Parquet file, or truncated (bad magic)" in proc.stderr
