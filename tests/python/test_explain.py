"""Loader.explain and `tokpack sample --explain` (a step traced to the
documents it trained on), end to end: datasets built from JSONL, Parquet
and a Python iterable, mixed in two phases; every row each rank was served
is rebuilt from the spans explain gives, each span's origin is its
document's source, after a resume onto another world size too; the CLI
prints what Python returns; the docs' examples run."""
import json
import shlex
import shutil
import subprocess

import numpy as np
import pytest

from doc_examples import DOCS_JSONL, doc_example
from test_doc_sources import make_inputs

tokpack = pytest.importorskip("tokpack")

L = 24


@pytest.fixture(scope="module")
def sources(tmp_path_factory, spm_model, tokpack_bin):
    """Two datasets: JSONL + text + Parquet inputs, and a Python iterable."""
    d = tmp_path_factory.mktemp("explain")
    records = make_inputs(d, seed=3)
    files = d / "files"
    subprocess.run([tokpack_bin, "build", "-o", str(files), "-t", spm_model, "--skip-bad-lines",
                    "--text-per-line", "--shard-tokens", "900", *sum(
                        (["-i", p] for p in records), [])], check=True, capture_output=True)
    items = [{"text": f"item number {i} " + "word " * (i % 17), "id": f"it-{i}"}
             for i in range(150)]
    tokpack.build(items, d / "items", spm_model)
    return files, d / "items"


def rebuild(loader, row):
    """The row the spans describe, as input_ids (pad where none reaches)."""
    ds = loader.datasets[[n for n in loader._names].index(row["source"])]
    out = np.full(L, -1, dtype=np.int64)
    column = 0
    for span in row["spans"]:
        assert span["column"] == column and span["length"] > 0
        doc = np.asarray(ds.doc(span["document"]), dtype=np.int64)
        part = doc[span["offset"]:span["offset"] + span["length"]]
        assert len(part) == span["length"]
        stop = min(L, column + len(part))
        out[column:stop] = part[:stop - column]
        column += len(part)
        if ds.has_sources:
            assert span["origin"] == ds.source(span["document"])
    return out, column


def take(loader, n):
    """The next n batches' (step, input_ids), copied: the ring is reused."""
    out = []
    for _ in range(n):
        step = loader.step
        out.append((step, next(loader)["input_ids"].numpy().copy()))
    return out


def check_served(loader, rows, rank, batches):
    mine = [r for r in rows if r["rank"] == rank]
    assert [r["row"] for r in mine] == list(range(loader.batch_size)) * len(batches)
    for i, (step, ids) in enumerate(batches):
        for r in range(loader.batch_size):
            row = mine[i * loader.batch_size + r]
            assert row["step"] == step
            got, columns = rebuild(loader, row)
            if loader.options["packing"] == "concat":
                assert columns == L + 1
                assert np.array_equal(got, ids[r])
            else:
                assert columns <= L
                assert np.array_equal(got[:columns], ids[r][:columns])


PHASES = [(0, {"files": 3, "items": 1}), (3, {"files": 1, "items": 2}, 2)]


@pytest.mark.parametrize("packing", ["concat", "best_fit"])
def test_every_rank_row_is_rebuilt_from_its_spans(sources, packing):
    files, items = sources
    world = 2
    for rank in range(world):
        loader = tokpack.Loader({"files": files, "items": items}, phases=PHASES, seq_len=L,
                                batch_size=3, world_size=world, rank=rank, seed=7,
                                packing=packing)
        rows = loader.explain(0, 7)
        assert len(rows) == 7 * 3 * world
        assert {r["source"] for r in rows} == {"files", "items"}
        assert rows == loader.explain(0, 7)  # Pure: asking again changes nothing.
        check_served(loader, rows, rank, take(loader, 7))
        assert loader.explain(2, 1, rank=rank) == [r for r in rows if r["step"] == 2
                                                   and r["rank"] == rank]


def test_explains_from_the_cursor_after_an_elastic_resume(sources):
    files, items = sources
    run = tokpack.Loader({"files": files, "items": items}, phases=PHASES, seq_len=L,
                         batch_size=2, world_size=3, rank=0, seed=1)
    for _ in range(4):
        next(run)
    state = run.state_dict()
    resumed = tokpack.Loader({"files": files, "items": items}, phases=PHASES, seq_len=L,
                             batch_size=3, world_size=2, rank=1, seed=1)
    resumed.load_state_dict(state)
    rows = resumed.explain(4, 3)
    check_served(resumed, rows, 1, take(resumed, 3))
    with pytest.raises(ValueError, match="step 3 comes before step 4, where this loader "
                                         "resumed"):
        resumed.explain(3)
    with pytest.raises(ValueError, match="rank 2 is not a rank of world_size 2"):
        resumed.explain(4, rank=2)
    ended = tokpack.Loader(files, seq_len=L, batch_size=2, max_steps=5)
    assert len(ended.explain(4)) == 2
    with pytest.raises(IndexError, match="last step this loader serves is 4"):
        ended.explain(5)


def test_the_cli_prints_what_python_returns(sources, tokpack_bin, tmp_path):
    files, items = sources
    phases = tmp_path / "mix.json"
    phases.write_text(json.dumps({
        "sources": {"files": {"path": str(files)}, "items": {"path": str(items)}},
        "phases": [{"start_step": 0, "weights": {"files": 3, "items": 1}},
                   {"start_step": 3, "weights": {"files": 1, "items": 2}, "ramp_steps": 2}]}))
    loader = tokpack.Loader({"files": files, "items": items}, phases=PHASES, seq_len=L,
                            batch_size=3, world_size=2, seed=7)
    args = [tokpack_bin, "sample", "--phases", str(phases), "--seq-len", str(L),
            "--batch-size", "3", "--world-size", "2", "--seed", "7", "--explain", "2",
            "--steps", "3"]
    out = subprocess.run([*args, "--json"], capture_output=True, text=True, check=True).stdout
    cli = [json.loads(line) for line in out.splitlines()]
    want = loader.explain(2, 3)
    assert len(cli) == len(want)
    for c, w in zip(cli, want):
        assert c["source"] == w["source"]
        for key in ("step", "rank", "row", "sample"):
            assert c[key] == w[key]
        assert len(c["spans"]) == len(w["spans"])
        for cs, ws in zip(c["spans"], w["spans"]):
            for key in ("column", "document", "offset", "length"):
                assert cs[key] == ws[key]
            origin = ws["origin"]
            assert (cs["input"], cs["path"], cs["record"], cs.get("id")) == tuple(origin)
    text = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    assert text.count(": 'files' sample ") + text.count(": 'items' sample ") == len(want)
    bad = subprocess.run([*args[:-4], "--max-steps", "2", "--explain", "2"], capture_output=True,
                         text=True)
    assert bad.returncode != 0 and "last step this loader serves is 1" in bad.stderr
    for extra, message in ((["--plan-json"], "--plot/--plan-json"), (["--json"], None)):
        cmd = [*args, *extra] if message else [*args[:-4], *extra]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode != 0 and (message or "give --explain STEP") in proc.stderr


def test_the_docs_examples_run(spm_model, tmp_path, monkeypatch, tokpack_bin, capsys):
    (tmp_path / "docs.jsonl").write_text(DOCS_JSONL)
    shutil.copy(spm_model, tmp_path / "tok.model")
    monkeypatch.chdir(tmp_path)
    tokpack.build("docs.jsonl", "ds", spm_model, skip_bad_lines=True)
    exec(compile(doc_example("python.md", "explain-step"), "docs/python.md", "exec"),
         {"tokpack": tokpack})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("0 0 0 0 0 9 ")
    assert lines[0].endswith("DocumentSource(input=0, path='docs.jsonl', record=1, id='a-16')")
    assert any("record=4, id='a-17'" in line for line in lines)
    text, js = doc_example("cli.md", "cli-explain").splitlines()
    for command in (text, js):
        args = shlex.split(command)
        assert args[0] == "tokpack"
        out = subprocess.run([tokpack_bin, *args[1:]], capture_output=True, text=True,
                             check=True).stdout
        if command is text:
            assert out.startswith("step 0 rank 0 row 0: 'ds' sample 0\n  columns [0, 9)")
            assert "'docs.jsonl' line 1, id 'a-16'" in out
        else:
            first = json.loads(out.splitlines()[0])
            assert first["spans"][0]["id"] == "a-16" and first["spans"][0]["record"] == 1


def test_removed_documents_are_marked(spm_model, tmp_path, tokpack_bin):
    """A step's spans say which documents the removal list blanked, and the
    served row holds the pad token exactly there."""
    (tmp_path / "docs.jsonl").write_text(DOCS_JSONL)
    ds_path = tmp_path / "ds"
    tokpack.build(str(tmp_path / "docs.jsonl"), ds_path, spm_model, skip_bad_lines=True)
    tokpack.remove_documents(ds_path, ids=["a-16"])
    loader = tokpack.Loader(ds_path, seq_len=8, batch_size=2, shuffle="none")
    rows = loader.explain(0)
    ids = next(loader)["input_ids"].numpy()
    pad = tokpack.Dataset(ds_path).pad_token
    for row in rows:
        for span in row["spans"]:
            assert span["removed"] == (span["origin"].id == "a-16")
            cols = ids[row["row"]][span["column"]:span["column"] + span["length"]]
            if span["removed"]:
                assert (cols == pad).all()
    text = subprocess.run([tokpack_bin, "sample", str(ds_path), "--seq-len", "8", "--batch-size",
                           "2", "--shuffle", "none", "--explain", "0"], capture_output=True,
                          text=True, check=True).stdout
    assert "document 0 (removed: served as padding)" in text
    assert "document 1 (removed" not in text
