"""tokpack.build from Python sources: any iterable of str and any object with
__arrow_c_stream__ (pyarrow, polars, duckdb), packed exactly as the same
texts from a JSONL file."""
import itertools
import json
import platform
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from child import Child, wait_until
from conftest import random_text, write_jsonl

tokpack = pytest.importorskip("tokpack")
pa = pytest.importorskip("pyarrow")

# Texts with what could differ between the paths: non-ASCII, an empty text
# (no tokens: skipped), whitespace only, a long one, newlines and quotes.
def make_texts(n=400, seed=5):
    rng = random.Random(seed)
    texts = [random_text(rng, 1, 120) for _ in range(n)]
    texts[3] = ""
    texts[7] = "   "
    texts[11] = "line one\nline \"two\"\ttabbed \\ backslash"
    texts[13] = " ".join(random_text(rng, 50, 80) for _ in range(40))
    return texts


TEXTS = make_texts()


def files_of(path):
    return sorted(p.name for p in Path(path).iterdir())


def assert_same_dataset(a, b, settings_differ=()):
    """Every file byte for byte, except the manifest's record of the inputs
    (and of `settings_differ`)."""
    assert files_of(a) == files_of(b)
    for name in files_of(a):
        if name == "manifest.json":
            continue
        assert (Path(a) / name).read_bytes() == (Path(b) / name).read_bytes(), name
    ma, mb = (json.loads((Path(p) / "manifest.json").read_text()) for p in (a, b))
    for m in (ma, mb):
        for key in ("inputs", "sources", "input_count", "inputs_xxh3"):
            m["provenance"].pop(key, None)
        for name in settings_differ:
            del m["provenance"]["settings"][name]
    assert ma == mb


def no_leftovers(tmp_path, name="out"):
    return [p.name for p in tmp_path.iterdir() if p.name.startswith(f".{name}")] == []


@pytest.fixture(scope="module")
def reference(tmp_path_factory, tokpack_bin, spm_model):
    """TEXTS as JSONL, built by the CLI: the dataset every source must equal."""
    d = tmp_path_factory.mktemp("reference")
    src = write_jsonl(d / "texts.jsonl", TEXTS)
    subprocess.run([tokpack_bin, "build", "-i", str(src), "-o", str(d / "data"), "-t", spm_model,
                    "--shard-tokens", "4000", "--threads", "2", "--quiet"], check=True)
    return d / "data"


def build(inputs, out, model, **kw):
    kw.setdefault("shard_tokens", 4000)
    kw.setdefault("threads", 2)
    return tokpack.build(inputs, out, model, **kw)


# --- Iterables of str -------------------------------------------------------

@pytest.mark.parametrize("kind", ["list", "tuple", "generator", "map", "iter", "bytes"])
def test_an_iterable_of_texts_equals_the_same_texts_from_jsonl(tmp_path, spm_model, reference,
                                                                 kind):
    inputs = {
        "list": lambda: list(TEXTS),
        "tuple": lambda: tuple(TEXTS),
        "generator": lambda: (t for t in TEXTS),
        "map": lambda: map(str, TEXTS),
        "iter": lambda: iter(TEXTS),
        "bytes": lambda: (t.encode() if i % 2 else bytearray(t.encode())
                          for i, t in enumerate(TEXTS)),
    }[kind]()
    ds = build(inputs, tmp_path / "out", spm_model)
    assert ds.num_shards > 1
    assert_same_dataset(reference, tmp_path / "out")
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert "<python iterable>" in json.dumps(manifest)


def test_threads_do_not_change_the_output(tmp_path, spm_model):
    build((t for t in TEXTS), tmp_path / "one", spm_model, threads=1)
    build((t for t in TEXTS), tmp_path / "four", spm_model, threads=4)
    assert_same_dataset(tmp_path / "one", tmp_path / "four")
    assert (tmp_path / "one" / "manifest.json").read_bytes() == \
        (tmp_path / "four" / "manifest.json").read_bytes()


def test_items_that_are_not_texts_are_bad_records(tmp_path, spm_model):
    items = ["fine text", 42, "more text", None, "last"]
    with pytest.raises(ValueError, match=r"<python iterable>:2: item is int, not str"):
        build(iter(items), tmp_path / "out", spm_model)
    assert not (tmp_path / "out").exists() and no_leftovers(tmp_path)
    with pytest.raises(ValueError, match=r"<python iterable>:3: item is None, not str"):
        build(iter([t for t in items if t != 42]), tmp_path / "out", spm_model)
    ds = build(iter(items), tmp_path / "out", spm_model, skip_bad_lines=True)
    assert len(ds) == 3 and ds.manifest["provenance"]["counts"]["bad_lines"] == 2
    assert ds.tokenizer().decode(ds.doc(2)[:-1]) == "last"


def test_a_str_with_a_lone_surrogate_is_a_bad_record_as_in_jsonl(tmp_path, spm_model, tokpack_bin):
    with pytest.raises(ValueError, match=r"<python iterable>:2: .*lone surrogate \(U\+D800\)"):
        build(iter(["ok", "a\ud800b", "fine"]), tmp_path / "out", spm_model)
    build(iter(["ok", "a\ud800b", "fine"]), tmp_path / "py", spm_model, skip_bad_lines=True)
    # The same text in a JSONL line ("\ud800" escaped) is a bad line too.
    src = tmp_path / "s.jsonl"
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in ["ok", "a\ud800b", "fine"]))
    proc = subprocess.run([tokpack_bin, "build", "-i", str(src), "-o", str(tmp_path / "cli"),
                           "-t", spm_model, "--skip-bad-lines", "--shard-tokens", "4000",
                           "--quiet"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert_same_dataset(tmp_path / "cli", tmp_path / "py")


class Boom(Exception):
    pass


def test_an_exception_from_the_iterable_reaches_the_caller_unchanged(tmp_path, spm_model):
    raised = Boom("the source broke")

    def texts():
        yield from TEXTS[:50]
        raise raised

    with pytest.raises(Boom) as info:
        build(texts(), tmp_path / "out", spm_model)
    assert info.value is raised
    assert not (tmp_path / "out").exists() and no_leftovers(tmp_path)


def test_progress_is_reported_while_the_iterable_is_read(tmp_path, spm_model):
    reported = threading.Event()
    reports = []

    def progress(p):
        reports.append(p)
        reported.set()

    def texts():
        yield from TEXTS[:100]
        # The iterable runs on the caller's thread, which delivers reports
        # between its items: texts keep coming until one was delivered.
        deadline = time.monotonic() + 60
        for text in itertools.cycle(TEXTS[100:]):
            if reported.is_set():
                break
            assert time.monotonic() < deadline, "no progress report while reading"
            time.sleep(0.001)
            yield text

    build(texts(), tmp_path / "out", spm_model, progress=progress)
    assert reports and all(r["elapsed_seconds"] >= 0 for r in reports)


def interrupt_and_check(child, out, tmp_path):
    """Sends Ctrl-C to a child running tokpack.build() on a generator: the
    build must end in KeyboardInterrupt, leaving neither output nor staging."""
    child.send_signal(signal.SIGINT)
    line = child.stdout.line().strip()
    returncode, _, stderr = child.finish()
    assert line == "interrupted", stderr
    assert returncode == 0, stderr
    assert not out.exists() and no_leftovers(tmp_path)


def test_ctrl_c_during_a_slow_generator_cancels_and_leaves_nothing(tmp_path, spm_model):
    code = textwrap.dedent("""
        import itertools, sys, time, tokpack
        def texts():
            for i in itertools.count():
                yield f"document number {i}"
                if i == 10:
                    print("generating", flush=True)
                time.sleep(0.005)  # endless: only Ctrl-C ends this build
        try:
            tokpack.build(texts(), sys.argv[1], sys.argv[2], threads=2)
            print("finished", flush=True)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
    """)
    out = tmp_path / "out"
    with Child([sys.executable, "-c", code, str(out), spm_model]) as child:
        assert child.stdout.line().strip() == "generating"
        interrupt_and_check(child, out, tmp_path)


def test_ctrl_c_during_a_generator_blocked_in_a_read_cancels_and_leaves_nothing(
        tmp_path, spm_model):
    """A generator blocked in a network read: Python delivers Ctrl-C only to
    the main thread, so the generator must run there (it used to run on a
    packer thread: three SIGINTs were ignored and the staging directory
    stayed)."""
    code = textwrap.dedent("""
        import socket, sys, tokpack
        server = socket.create_server(("127.0.0.1", 0))
        def texts():
            yield from (f"document number {i}" for i in range(100))
            # The kernel completes the connection; nobody ever sends.
            with socket.create_connection(server.getsockname()) as conn:
                print("blocked", flush=True)
                yield conn.recv(1 << 16).decode()
        try:
            tokpack.build(texts(), sys.argv[1], sys.argv[2], threads=2)
            print("finished", flush=True)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
    """)
    recvfrom = {"x86_64": "45", "aarch64": "207"}.get(platform.machine())
    if recvfrom is None:
        pytest.skip(f"the recvfrom syscall number of {platform.machine()} is not listed here")
    out = tmp_path / "out"
    with Child([sys.executable, "-c", code, str(out), spm_model]) as child:
        assert child.stdout.line().strip() == "blocked"
        # The build began: its staging directory is there to be removed.
        wait_until(lambda: not no_leftovers(tmp_path), "the staging directory")
        # A SIGINT between the print and the read would be handled only when
        # the read returns (Python's own race, for any blocking call): send it
        # once the main thread is in the system call.
        syscall = Path(f"/proc/{child.proc.pid}/syscall")
        wait_until(lambda: syscall.read_text().split()[0] == recvfrom, "the blocking read")
        interrupt_and_check(child, out, tmp_path)


# --- Lists: paths or texts --------------------------------------------------

def test_a_list_of_existing_inputs_is_paths(tmp_path, spm_model, reference):
    src = write_jsonl(tmp_path / "texts.jsonl", TEXTS)
    build([str(src)], tmp_path / "a", spm_model)
    build([src], tmp_path / "b", spm_model)
    build([str(tmp_path / "*.jsonl")], tmp_path / "c", spm_model)
    for out in "abc":
        assert_same_dataset(reference, tmp_path / out)


def test_a_list_that_may_be_either_is_refused_with_advice(tmp_path, spm_model):
    src = write_jsonl(tmp_path / "texts.jsonl", TEXTS[:5])
    for items in ([str(src), "missing.jsonl"], ["missing.jsonl.zst"], [str(src), "a text"],
                  ["a text", "shard.parquet"]):
        with pytest.raises(FileNotFoundError, match=r"iter\(the_list\)") as info:
            build(items, tmp_path / "out", spm_model)
        first = next(i for i in items if i != str(src))
        assert repr(first) in str(info.value)
    assert not (tmp_path / "out").exists()
    # as an iterator, the same strings are texts
    ds = build(iter(["a text", "shard.parquet"]), tmp_path / "out", spm_model)
    assert len(ds) == 2


def test_a_mistyped_path_is_refused_not_packed_as_its_text(tmp_path, spm_model):
    # No suffix, no such file: the commonest typo, once a one-document dataset.
    for items in (["/data/fineweb/part-00001"], [str(tmp_path / "part-00001")],
                  ["data/part-00001"], ["x/y"]):
        with pytest.raises(FileNotFoundError, match=r"is not an existing input") as info:
            build(items, tmp_path / "out", spm_model)
        assert repr(items[0]) in str(info.value)
    assert not (tmp_path / "out").exists()
    # Texts with a slash between words stay texts; as an iterator anything is a text.
    assert len(build(["either and/or both", "a text"], tmp_path / "t", spm_model)) == 2
    assert len(build(iter(["/data/fineweb/part-00001"]), tmp_path / "u", spm_model)) == 1


# --- Arrow streams ----------------------------------------------------------

def test_a_pyarrow_table_equals_the_same_texts_from_jsonl(tmp_path, spm_model, reference):
    table = pa.table({"id": list(range(len(TEXTS))), "text": TEXTS})
    ds = build(table, tmp_path / "out", spm_model)
    assert len(ds) == len(tokpack.Dataset(reference))
    assert_same_dataset(reference, tmp_path / "out")
    assert "<arrow stream>" in (tmp_path / "out" / "manifest.json").read_text()


@pytest.mark.parametrize("type_", ["string", "large_string", "string_view", "binary"])
def test_a_record_batch_reader_of_sliced_batches_and_any_string_type(tmp_path, spm_model,
                                                                     reference, type_):
    if type_ == "string_view" and not hasattr(pa, "string_view"):
        pytest.skip("this pyarrow has no string_view")
    arrow_type = getattr(pa, type_)()
    column = pa.array(TEXTS, type=pa.string()).cast(arrow_type)
    # Slices of one array: every batch but the first starts at an offset.
    cuts = [0, 1, 90, 91, 250, len(TEXTS)]
    batches = [pa.record_batch({"text": column.slice(a, b - a)}) for a, b in zip(cuts, cuts[1:])]
    assert batches[2].column(0).offset == 90
    reader = pa.RecordBatchReader.from_batches(batches[0].schema, iter(batches))
    build(reader, tmp_path / "out", spm_model)
    assert_same_dataset(reference, tmp_path / "out")


def test_a_reader_fed_by_a_python_generator(tmp_path, spm_model, reference):
    # Its get_next runs Python (taking the GIL) on the packer's reader thread.
    schema = pa.schema([("text", pa.string())])

    def batches():
        for i in range(0, len(TEXTS), 37):
            yield pa.record_batch({"text": TEXTS[i:i + 37]}, schema=schema)

    build(pa.RecordBatchReader.from_batches(schema, batches()), tmp_path / "out", spm_model,
          threads=4)
    assert_same_dataset(reference, tmp_path / "out")


def test_a_chunked_array_is_its_texts(tmp_path, spm_model, reference):
    chunked = pa.chunked_array([TEXTS[:100], TEXTS[100:]])
    if not hasattr(chunked, "__arrow_c_stream__"):
        pytest.skip("this pyarrow's ChunkedArray has no __arrow_c_stream__")
    build(chunked, tmp_path / "out", spm_model)
    assert_same_dataset(reference, tmp_path / "out")


def test_a_nested_text_field(tmp_path, spm_model, reference):
    meta = pa.StructArray.from_arrays([pa.array(TEXTS), pa.array(["en"] * len(TEXTS))],
                                      names=["text", "lang"])
    table = pa.table({"id": list(range(len(TEXTS))), "meta": meta})
    build(table, tmp_path / "a", spm_model, text_key="meta.text")
    build(table, tmp_path / "b", spm_model, text_key="/meta/text")
    assert_same_dataset(reference, tmp_path / "a", settings_differ=["text_key"])
    assert_same_dataset(reference, tmp_path / "b", settings_differ=["text_key"])


def test_arrow_nulls_are_bad_records_named_by_row(tmp_path, spm_model):
    texts = ["one", None, "three", "four", None]
    meta = pa.StructArray.from_arrays([pa.array(["x"] * 5)], names=["text"],
                                      mask=pa.array([False, False, False, True, False]))
    table = pa.table({"text": texts, "meta": meta})
    with pytest.raises(ValueError, match=r"<arrow stream>:2: text is null"):
        build(table, tmp_path / "out", spm_model)
    assert not (tmp_path / "out").exists() and no_leftovers(tmp_path)
    ds = build(table, tmp_path / "out", spm_model, skip_bad_lines=True)
    assert len(ds) == 3
    # a null parent struct is a null text
    with pytest.raises(ValueError, match=r"<arrow stream>:4: text is null"):
        build(table, tmp_path / "meta", spm_model, text_key="meta.text")
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["provenance"]["counts"]["bad_lines"] == 2


def test_arrow_columns_that_are_not_texts(tmp_path, spm_model):
    table = pa.table({"id": [1, 2], "body": ["a", "b"]})
    with pytest.raises(ValueError, match=r"no column 'text' in the Arrow stream "
                                         r"\(its columns: id, body\)"):
        build(table, tmp_path / "out", spm_model)
    with pytest.raises(ValueError, match=r"<arrow stream>:1: text is int64, not a string"):
        build(table, tmp_path / "out", spm_model, text_key="id")
    assert not (tmp_path / "out").exists() and no_leftovers(tmp_path)


def test_an_error_inside_an_arrow_producer_fails_the_build(tmp_path, spm_model):
    schema = pa.schema([("text", pa.string())])

    def batches():
        yield pa.record_batch({"text": TEXTS[:10]}, schema=schema)
        raise Boom("the reader broke")

    with pytest.raises(RuntimeError, match="the reader broke"):
        build(pa.RecordBatchReader.from_batches(schema, batches()), tmp_path / "out", spm_model)
    assert not (tmp_path / "out").exists() and no_leftovers(tmp_path)


def test_polars_data_frame(tmp_path, spm_model, reference):
    pl = pytest.importorskip("polars")
    build(pl.DataFrame({"id": range(len(TEXTS)), "text": TEXTS}), tmp_path / "out", spm_model)
    assert_same_dataset(reference, tmp_path / "out")


def test_duckdb_result(tmp_path, spm_model, reference):
    duckdb = pytest.importorskip("duckdb")
    # duckdb finds the Arrow table by its variable's name ("table" is a keyword).
    docs = pa.table({"n": list(range(len(TEXTS))), "text": TEXTS})  # noqa: F841 (queried)
    result = duckdb.sql("SELECT text FROM docs ORDER BY n")
    build(result, tmp_path / "out", spm_model)
    assert_same_dataset(reference, tmp_path / "out")


def test_a_datasets_column(tmp_path, spm_model, reference):
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_dict({"text": TEXTS})
    build(ds["text"], tmp_path / "out", spm_model)
    assert_same_dataset(reference, tmp_path / "out")


# --- docs/python.md ---------------------------------------------------------

def test_the_docs_python_sources_example_runs(tmp_path, spm_model):
    from conftest import REPO

    doc = (REPO / "docs" / "python.md").read_text()
    section = doc.split("\n### Texts from Python: iterables and Arrow streams\n", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "data").mkdir()
    (tmp_path / "tok.model").write_bytes(Path(spm_model).read_bytes())
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("2 [{'path': '<arrow stream>'"), proc.stdout
    assert len(tokpack.Dataset(tmp_path / "data" / "from-python")) == 1000
