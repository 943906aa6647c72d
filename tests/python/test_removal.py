"""Removing documents from a built dataset (docs/format.md 17, docs/reader.md
"Removing documents"), end to end with real files and processes: remove by id
through the CLI and Python; the Loader serves the batches of the dataset
without the list except that removed tokens read as pad with labels -100 and
loss_mask 0 (concat and best_fit, with document boundaries); a cursor saved
before the removal resumes to the same positions; merge carries the lists,
push uploads them, verify catches a tampered one; the docs' examples run."""
import json
import os
import random
import shutil
import subprocess

import numpy as np
import pytest

from conftest import random_text
from doc_examples import DOCS_JSONL, doc_example, run_cli_example

tokpack = pytest.importorskip("tokpack")

SEQ = 32


def write_records(path, n, seed=0, first=0):
    """`n` JSONL records with ids r<first + i> (a blank line among them)."""
    rng = random.Random(seed)
    lines = [json.dumps({"id": f"r{first + i}", "text": random_text(rng, 1, 90)})
             for i in range(n)]
    lines.insert(7, "")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def source(tmp_path_factory, tokpack_bin, spm_model):
    """A dataset of 400 documents in several shards, with ids: its path."""
    d = tmp_path_factory.mktemp("removal")
    write_records(d / "docs.jsonl", 400)
    subprocess.run([tokpack_bin, "build", "-i", d / "docs.jsonl", "-o", d / "ds", "-t", spm_model,
                    "--shard-tokens", "3000", "--quiet"], check=True, capture_output=True)
    return d / "ds"


@pytest.fixture
def pair(source, tmp_path):
    """Two copies of the dataset: (plain, to remove documents from)."""
    shutil.copytree(source, tmp_path / "plain")
    shutil.copytree(source, tmp_path / "ds")
    return tmp_path / "plain", tmp_path / "ds"


REMOVED_IDS = ["r0", "r1", "r2", "r57", "r120", "r121", "r122", "r399"]


def removed_tokens(ds):
    """Whether each stream token belongs to a removed document."""
    mask = np.zeros(ds.num_tokens, dtype=bool)
    for i in range(len(ds)):
        if ds.is_removed(i):
            offset, length = ds.document_extent(i)
            mask[offset:offset + length] = True
    return mask


def expected_window(plain, start, gone, pad, labels):
    """A concat row of the dataset with removals, from the plain row at
    stream offset `start`: pad where the input is removed, -100 where the
    label's token is."""
    shift = 1 if labels == "next" else 0
    inputs = np.where(gone[start:start + SEQ], pad, plain["input_ids"])
    want = np.where(gone[start + shift:start + shift + SEQ], -100, plain["labels"])
    return inputs, want


class Windows:
    """Finds a concat row's stream offset from its tokens (of the plain dataset)."""

    def __init__(self, plain, ds):
        del ds  # Rows are found by their plain tokens.
        tokens = plain.tokens(0, plain.num_tokens)
        n = plain.num_samples(SEQ)
        self.start = {tuple(tokens[i * SEQ:(i + 1) * SEQ]): i * SEQ for i in range(n)}
        assert len(self.start) == n  # Every window's tokens tell it apart.

    def __call__(self, inputs):
        return self.start[tuple(inputs)]


class Pieces:
    """Whether a packed row's piece is of a document removed in `ds`, from its
    tokens (of the plain dataset)."""

    def __init__(self, plain, ds):
        self.removed = {}
        for i in range(len(ds)):
            doc = plain.tokens(*plain.document_extent(i))
            for a in range(0, len(doc), SEQ):
                self.removed.setdefault(tuple(doc[a:a + SEQ]), set()).add(ds.is_removed(i))

    def __call__(self, tokens):
        """True or False, or None for a piece that documents of both kinds
        have (an EOS alone, the last piece of a document L tokens longer
        than another's)."""
        found = self.removed.get(tuple(tokens), {False})  # Padding is no piece.
        return next(iter(found)) if len(found) == 1 else None


def batches(loader, n=None):
    """The next `n` batches, or all that are left."""
    out = []
    for batch in loader:
        out.append({k: np.array(v) for k, v in batch.items()})  # Copies: buffers go back.
        if len(out) == n:
            break
    return out


def check_batches(plain_batches, got_batches, plain, ds, labels, packing):
    """`got_batches` (of `ds`) are `plain_batches` (of `plain`, the same
    dataset without a list) with the removed tokens blanked. Returns the
    inputs blanked."""
    assert len(got_batches) == len(plain_batches)
    plain, ds = tokpack.Dataset(plain), tokpack.Dataset(ds)
    gone, pad = removed_tokens(ds), ds.pad_token
    locate = (Windows if packing == "concat" else Pieces)(plain, ds)
    blanked = 0
    for plain, got in zip(plain_batches, got_batches):
        assert np.array_equal(got["position_ids"], plain["position_ids"])
        assert np.array_equal(got["cu_seqlens"], plain["cu_seqlens"])
        for r in range(len(plain["input_ids"])):
            row = {k: plain[k][r] for k in ("input_ids", "labels")}
            if packing == "concat":
                inputs, want = expected_window(row, locate(row["input_ids"]), gone, pad, labels)
            else:
                inputs, want = row["input_ids"].copy(), row["labels"].copy()
                cu = plain["cu_seqlens"] - r * SEQ
                for a, b in zip(cu[:-1], cu[1:]):
                    gone_here = locate(inputs[a:b]) if 0 <= a < SEQ else False
                    if gone_here is None:  # Either, as long as it is whole.
                        gone_here = (got["labels"][r][a:b] == -100).all()
                    if gone_here:
                        inputs[a:b], want[a:b] = pad, -100
            assert np.array_equal(got["input_ids"][r], inputs)
            assert np.array_equal(got["labels"][r], want)
            assert np.array_equal(got["loss_mask"][r], (want != -100).astype(np.uint8))
            blanked += int((inputs != row["input_ids"]).sum())
    return blanked


def loader(path, packing, labels, **kw):
    return tokpack.Loader(str(path), seq_len=SEQ, batch_size=4, seed=5, packing=packing,
                          labels=labels, document_boundaries=True, loss_mask=True, as_="numpy",
                          **kw)


def test_remove_by_id_from_the_cli_and_from_python(pair, run_tokpack, tmp_path):
    _, ds = pair
    out = run_tokpack("remove", ds, "--id", "r5", "--id", "r6", "--doc", 10).stdout
    assert out == f"removed 3 document(s) (0 already removed); 3 on the removal list of {ds}\n"
    assert tokpack.remove_documents(ds, ids=["r6", "r9"], documents=[0]) == 5
    (tmp_path / "ids.txt").write_text("r11\n\nr12\r\n")
    (tmp_path / "docs.txt").write_text("13\n14\n")
    run_tokpack("remove", ds, "--ids-file", tmp_path / "ids.txt", "--docs-file",
                tmp_path / "docs.txt", "--input", 0, "--line", 3)
    d = tokpack.Dataset(ds)
    want = {0, 5, 6, 9, 10, 11, 12, 13, 14, 2}  # Line 3 is document 2.
    assert {i for i in range(len(d)) if d.is_removed(i)} == want and d.num_removed == len(want)
    assert d.find("r5") == [5]  # Still found, to be audited or restored.
    assert (d.doc(5) == d.pad_token).all() and len(d.doc(5)) == d.document_extent(5)[1]
    info = run_tokpack("info", ds).stdout
    assert f"removed      {len(want)} documents" in info
    assert json.loads(run_tokpack("info", ds, "--json").stdout)["removed_documents"] == len(want)
    show = run_tokpack("show", ds, "--doc", 5, "--count", 2).stdout.splitlines()
    assert show[0].startswith("--- document 5 (") and show[0].endswith(
        f"tokens, removed: read as pad token {d.pad_token}, no loss)")
    assert show[1].startswith("--- document 6 (")
    assert run_tokpack("show", ds, "--doc", 5, "--source").stdout.endswith("id 'r5' (removed)\n")
    # Restored documents read as they were.
    assert tokpack.remove_documents(ds, ids=["r5"], restore=True) == len(want) - 1
    assert list(tokpack.Dataset(ds).doc(5)) == list(tokpack.Dataset(pair[0]).doc(5))
    # A bad request changes nothing and names what is wrong.
    before = (ds / "removed.json").read_text()
    bad = run_tokpack("remove", ds, "--id", "r1", "--id", "nope", check=False)
    assert bad.returncode == 1 and "no document of" in bad.stderr and "'nope'" in bad.stderr
    with pytest.raises(FileNotFoundError, match="has the id 'nope'; nothing was changed"):
        tokpack.remove_documents(ds, ids=["nope"])
    with pytest.raises(ValueError, match="document 400 is past the last of the 400"):
        tokpack.remove_documents(ds, documents=[1, 400])
    with pytest.raises(TypeError, match="not one id"):
        tokpack.remove_documents(ds, ids="r1")
    assert (ds / "removed.json").read_text() == before


@pytest.mark.parametrize("packing,labels", [("concat", "next"), ("concat", "same"),
                                            ("best_fit", "next"), ("best_fit", "same")])
def test_batches_are_the_plain_ones_with_removed_tokens_blanked(pair, packing, labels):
    plain, ds = pair
    assert tokpack.remove_documents(ds, ids=REMOVED_IDS) == len(REMOVED_IDS)
    # A whole epoch: every removed document is served.
    want = batches(loader(plain, packing, labels, epochs=1))
    served = loader(ds, packing, labels, epochs=1)
    got = batches(served)
    blanked = check_batches(want, got, plain, ds, labels, packing)
    assert blanked >= 0.9 * removed_tokens(tokpack.Dataset(ds)).sum()
    trainable = sum(int((b["labels"] != -100).sum()) for b in got)
    assert served.stats()["sources"][0]["trainable_tokens"] == trainable


@pytest.mark.parametrize("packing", ["concat", "best_fit"])
def test_a_cursor_saved_before_the_removal_resumes_to_the_same_positions(pair, packing):
    plain, ds = pair
    before = loader(ds, packing, "next")
    batches(before, 7)
    state = before.state_dict()
    reference = loader(plain, packing, "next")
    batches(reference, 7)
    tokpack.remove_documents(ds, ids=REMOVED_IDS)
    resumed = loader(ds, packing, "next")
    resumed.load_state_dict(state)
    assert resumed.step == reference.step == 7
    check_batches(batches(reference, 200), batches(resumed, 200), plain, ds, "next", packing)


def test_merge_carries_the_parts_lists(tmp_path, run_tokpack, spm_model):
    write_records(tmp_path / "a.jsonl", 150, seed=1)
    write_records(tmp_path / "b.jsonl", 150, seed=2, first=150)
    for i in range(2):
        run_tokpack("build", "-i", tmp_path / "a.jsonl", "-i", tmp_path / "b.jsonl", "-o",
                    tmp_path / f"p{i}", "-t", spm_model, "--part", f"{i}/2", "--quiet")
    run_tokpack("remove", tmp_path / "p0", "--id", "r3", "--id", "r149")
    run_tokpack("remove", tmp_path / "p1", "--id", "r150", "--id", "r299")
    run_tokpack("merge", tmp_path / "m", tmp_path / "p1", tmp_path / "p0")
    merged = tokpack.Dataset(tmp_path / "m")
    gone = [merged.find(f"r{n}")[0] for n in (3, 149, 150, 299)]
    assert gone == [3, 149, 150, 299]
    assert {i for i in range(len(merged)) if merged.is_removed(i)} == set(gone)
    assert run_tokpack("verify", tmp_path / "m").returncode == 0


def test_a_replacement_with_the_same_tokens_keeps_the_list(tmp_path, run_tokpack, spm_model):
    """build --force and merge --force of identical data keep the takedowns
    made on the dataset they replace; other data starts with no list."""
    docs = write_records(tmp_path / "a.jsonl", 120, seed=4)
    build = ["build", "-i", docs, "-o", tmp_path / "ds", "-t", spm_model, "--quiet"]
    run_tokpack(*build)
    run_tokpack("remove", tmp_path / "ds", "--id", "r5", "--id", "r77")
    run_tokpack(*build, "--force")
    ds = tokpack.Dataset(tmp_path / "ds")
    assert sorted(i for i in range(len(ds)) if ds.is_removed(i)) == ds.find("r5") + ds.find("r77")
    write_records(tmp_path / "b.jsonl", 60, seed=5)
    run_tokpack("build", "-i", tmp_path / "b.jsonl", "-o", tmp_path / "ds", "-t", spm_model,
                "--quiet", "--force")
    assert tokpack.Dataset(tmp_path / "ds").num_removed == 0
    for i in range(2):
        run_tokpack("build", "-i", docs, "-o", tmp_path / f"p{i}", "-t", spm_model, "--part",
                    f"{i}/2", "--quiet")
    run_tokpack("merge", tmp_path / "m", tmp_path / "p0", tmp_path / "p1")
    run_tokpack("remove", tmp_path / "m", "--id", "r9")
    run_tokpack("merge", tmp_path / "m", tmp_path / "p0", tmp_path / "p1", "--force")
    merged = tokpack.Dataset(tmp_path / "m")
    assert merged.num_removed == 1 and merged.is_removed(merged.find("r9")[0])


def test_verify_and_readers_catch_a_tampered_list(pair, run_tokpack):
    _, ds = pair
    tokpack.remove_documents(ds, documents=[4, 8])
    assert run_tokpack("verify", ds).returncode == 0
    listed = json.loads((ds / "removed.json").read_text())
    listed["documents"] = [8, 4]
    (ds / "removed.json").write_text(json.dumps(listed))
    bad = run_tokpack("verify", ds, check=False)
    assert bad.returncode == 1
    assert f"BAD  {ds}/removed.json: field 'documents[1]' is 4, not above" in bad.stdout
    with pytest.raises(ValueError, match="removed.json: field 'documents"):
        tokpack.Dataset(ds)
    # A list left from another version of the dataset (here: another build).
    listed["documents"], listed["fingerprint"] = [4], "0123456789abcdef"
    (ds / "removed.json").write_text(json.dumps(listed))
    with pytest.raises(RuntimeError, match="made for another version of the dataset"):
        tokpack.Dataset(ds)
    assert "another version" in run_tokpack("verify", ds, check=False).stdout


def test_push_uploads_the_list_and_remote_removals_apply(pair, run_tokpack, monkeypatch):
    from remote_servers import MotoServer
    plain, ds = pair
    tokpack.remove_documents(ds, ids=["r57"])
    with MotoServer() as moto:
        moto.setenv(monkeypatch)
        monkeypatch.setenv("TOKPACK_CACHE_DIR", str(ds.parent / "cache"))
        moto.client().create_bucket(Bucket="removals")
        run_tokpack("push", ds, "s3://removals/v1", env=dict(os.environ))
        remote = tokpack.Dataset("s3://removals/v1")
        assert remote.num_removed == 1 and remote.is_removed(57)
        assert run_tokpack("verify", "s3://removals/v1", env=dict(os.environ)).returncode == 0
        # Removed remotely, in one PUT; a reader opened afterwards sees it.
        assert tokpack.remove_documents("s3://removals/v1", ids=["r58"]) == 2
        assert tokpack.Dataset("s3://removals/v1").is_removed(58)
        out = run_tokpack("remove", "s3://removals/v1", "--doc", 59, env=dict(os.environ)).stdout
        assert out.endswith("3 on the removal list of s3://removals/v1\n")
        # Pushing the same tokens again without a list keeps the takedowns
        # made remotely (the replaced list names the same fingerprint).
        run_tokpack("push", plain, "s3://removals/v1", "--force", env=dict(os.environ))
        assert tokpack.Dataset("s3://removals/v1").num_removed == 3
        # Another dataset's push replaces it: that list named other tokens.
        other = plain.parent / "other"
        write_records(plain.parent / "other.jsonl", 50, seed=9)
        run_tokpack("build", "-i", plain.parent / "other.jsonl", "-o", other, "-t",
                    plain / tokpack.Dataset(plain).manifest["tokenizer"]["file"], "--quiet")
        run_tokpack("push", other, "s3://removals/v1", "--force", env=dict(os.environ))
        assert tokpack.Dataset("s3://removals/v1").num_removed == 0


def test_the_cli_example_runs_as_written(tokpack_bin, spm_model, tmp_path):
    """docs/cli.md, cli-removal: each command prints what its comment says."""
    (tmp_path / "docs.jsonl").write_text(DOCS_JSONL)
    shutil.copy(spm_model, tmp_path / "tok.model")
    run_cli_example(tokpack_bin, "cli.md", "cli-removal", tmp_path)


def test_the_python_example_runs_as_written(spm_model, tmp_path, monkeypatch):
    """docs/python.md, removal and removal-resume, over the same dataset."""
    (tmp_path / "docs.jsonl").write_text(DOCS_JSONL)
    monkeypatch.chdir(tmp_path)
    tokpack.build("docs.jsonl", "ds", spm_model, skip_bad_lines=True)
    scope = {"tokpack": tokpack}
    exec(compile(doc_example("python.md", "removal"), "docs/python.md", "exec"), scope)
    assert (scope["batch"]["labels"] == -100).any()
    exec(compile(doc_example("python.md", "removal-resume"), "docs/python.md", "exec"), scope)


def test_a_store_that_denies_missing_keys_opens_datasets_without_a_list(pair, monkeypatch):
    """S3 without s3:ListBucket (and CloudFront) answers 403, not 404, for a
    missing key: that is no removal list, not a dataset that cannot open."""
    import remote_servers

    class DeniesMissing(remote_servers.RangeServer):
        def _handler(self):
            base = super()._handler()

            class Handler(base):
                def send_body_response(self, status, headers, body, head=False):
                    super().send_body_response(403 if status == 404 else status, headers, body,
                                               head)
            return Handler

    plain, ds = pair
    tokpack.remove_documents(ds, ids=["r57"])
    monkeypatch.setenv("TOKPACK_CACHE_DIR", str(plain.parent / "cache"))
    with DeniesMissing(plain.parent) as server:
        assert tokpack.Dataset(f"{server.url}/plain").num_removed == 0
        listed = tokpack.Dataset(f"{server.url}/ds")
        assert listed.num_removed == 1 and listed.is_removed(57)
