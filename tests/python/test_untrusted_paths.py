"""Datasets whose manifests name paths outside themselves, files that are not
files, impossible chunk sizes, or a tokenizer other than the one they record
(docs/format.md 5.6): tokpack refuses them, reads nothing outside the dataset
and writes nothing outside its output. Real files, FIFOs, symbolic links, a
loopback HTTP server and a local S3 (moto); CLI runs are subprocesses."""
import json
import os
import random
import resource
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import random_text, run_python, write_jsonl
from remote_servers import MotoServer, RangeServer
from test_format_spec import fingerprint

tokpack = pytest.importorskip("tokpack")

# Generous: a refusal takes milliseconds; only the unfixed code would run out.
DEADLINE = 120


@pytest.fixture(scope="module")
def built(tmp_path_factory, spm_model):
    """A small dataset of several shards, built once; tests copy it."""
    root = tmp_path_factory.mktemp("untrusted")
    rng = random.Random(16)
    src = write_jsonl(root / "c.jsonl", [random_text(rng, 5, 80) for _ in range(200)])
    tokpack.build(src, root / "ds", spm_model, shard_tokens=3000, chunk_bytes=4096, threads=1)
    return root / "ds"


def copy_of(built, where):
    where.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(built, where)
    return where


def edit_manifest(ds, edit):
    path = Path(ds) / "manifest.json"
    m = json.loads(path.read_text())
    edit(m)
    path.write_text(json.dumps(m, indent=2))
    return m


def run_cli(tokpack_bin, *args, limit_memory=False, **kw):
    """tokpack in a subprocess with a deadline; with limit_memory, an address
    space of 4 GiB, so that reading an endless file fails instead of filling
    the machine."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    return subprocess.run([tokpack_bin, *map(str, args)], capture_output=True, text=True,
                          timeout=DEADLINE, preexec_fn=limit if limit_memory else None, **kw)


def test_merge_writes_nothing_outside_its_output_through_tokenizer_file(built, tmp_path,
                                                                        tokpack_bin):
    part = copy_of(built, tmp_path / "p" / "part")
    (tmp_path / "p" / "victim").write_text("EVIL")  # What part/../victim reads.
    victim = tmp_path / "o" / "victim"  # Where <staging>/../victim writes.
    victim.parent.mkdir()
    victim.write_text("precious")
    edit_manifest(part, lambda m: m["tokenizer"].update(file="../victim"))
    r = run_cli(tokpack_bin, "merge", tmp_path / "o" / "out", part)
    assert r.returncode != 0
    assert "field 'tokenizer.file' ('../victim') has a '..' component" in r.stderr, r.stderr
    assert victim.read_text() == "precious"
    assert not (tmp_path / "o" / "out").exists()


def test_push_uploads_no_file_from_outside_the_dataset(built, tmp_path, tokpack_bin,
                                                       monkeypatch):
    (tmp_path / "secret.txt").write_text("SECRET")
    escapes = {"up": "../secret.txt", "other_bucket": "../../../../other/secret.txt"}
    with MotoServer() as moto:
        moto.setenv(monkeypatch)
        s3 = moto.client()
        for bucket in ("tokens", "other"):
            s3.create_bucket(Bucket=bucket)
        for name, file in escapes.items():
            ds = copy_of(built, tmp_path / name / "ds")
            shutil.copy(tmp_path / "secret.txt", tmp_path / name / "secret.txt")
            edit_manifest(ds, lambda m: m["tokenizer"].update(file=file))
            r = run_cli(tokpack_bin, "push", ds, f"s3://tokens/web/{name}", env=dict(os.environ))
            assert r.returncode != 0
            assert "field 'tokenizer.file'" in r.stderr, r.stderr
        for bucket in ("tokens", "other"):
            assert s3.list_objects_v2(Bucket=bucket).get("KeyCount", 0) == 0


@pytest.mark.parametrize("kind", ["fifo", "device_link", "device_path"])
def test_verify_refuses_a_tokenizer_that_is_not_a_file(built, tmp_path, tokpack_bin, kind):
    ds = copy_of(built, tmp_path / "ds")
    model = ds / "tokenizer.model"
    model.unlink()
    if kind == "fifo":
        os.mkfifo(model)  # verify used to wait for a writer forever
        want = "is a FIFO"
    elif kind == "device_link":
        model.symlink_to("/dev/zero")  # ... or read until memory ran out
        want = "is a symbolic link"
    else:
        edit_manifest(ds, lambda m: m["tokenizer"].update(file="/dev/zero"))
        want = "field 'tokenizer.file' ('/dev/zero') is absolute"
    r = run_cli(tokpack_bin, "verify", ds, limit_memory=True)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert want in r.stdout + r.stderr, r.stdout + r.stderr


def test_chunk_bytes_near_2_64_is_refused_not_a_pass(built, tmp_path, tokpack_bin):
    """Near 2^64 the chunk count wrapped to 0: verify passed a damaged dataset,
    and a remote read indexed checksums that did not exist (SIGSEGV)."""
    ds = copy_of(built, tmp_path / "root" / "ds")

    def huge(m):
        m["chunk_bytes"] = 2**64 - 1
        for s in m["shards"]:
            s["bin"]["xxh3_64"] = s["idx"]["xxh3_64"] = []
        m["fingerprint"] = fingerprint(m)
    edit_manifest(ds, huge)
    want = "chunk_bytes 18446744073709551615 is not in 1..1073741824"
    with RangeServer(tmp_path / "root") as server:
        r = run_python("import sys, tokpack\n"
                       "print(tokpack.Dataset(sys.argv[1]).tokens(0, 8))",
                       f"{server.url}/ds", timeout=DEADLINE)
    assert r.returncode == 1, (r.returncode, r.stderr)  # Not -11.
    assert want in r.stderr, r.stderr
    with open(ds / "shard-00000.bin", "r+b") as f:
        f.seek(10)
        byte = f.read(1)
        f.seek(10)
        f.write(bytes([byte[0] ^ 0xFF]))
    r = run_cli(tokpack_bin, "verify", ds)
    assert r.returncode != 0 and "OK" not in r.stdout, r.stdout
    assert want in r.stderr, r.stderr


def test_remote_shard_paths_stay_under_the_prefix(built, tmp_path):
    copy_of(built, tmp_path / "root" / "other")
    ds = copy_of(built, tmp_path / "root" / "ds")
    for f in ds.glob("shard-*"):
        f.unlink()
    edit_manifest(ds, lambda m: [s.update(path="../other/" + s["path"]) for s in m["shards"]])
    with RangeServer(tmp_path / "root") as server:
        with pytest.raises(ValueError, match=r"field 'shards\[0\].path' \('../other/shard-00000'\)"
                                             r" has a '..' component"):
            tokpack.Dataset(f"{server.url}/ds")
        with server.lock:
            asked = [path for path, _ in server.requests]
    assert asked == ["/ds/manifest.json"]


def serve_two_datasets(built, root):
    """root/honest, and root/hostile: the same manifest (so the same recorded
    tokenizer hash) over another file."""
    copy_of(built, root / "honest")
    hostile = copy_of(built, root / "hostile")
    (hostile / "tokenizer.model").write_bytes(b"not the recorded model")
    return RangeServer(root)


def test_a_hostile_remote_tokenizer_does_not_poison_later_datasets(built, tmp_path, spm_model,
                                                                   monkeypatch):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # Where a cache used to go.
    with serve_two_datasets(built, tmp_path / "root") as server:
        with pytest.raises(Exception) as hostile:
            tokpack.Dataset(f"{server.url}/hostile").tokenizer()
        tok = tokpack.Dataset(f"{server.url}/honest").tokenizer()
    assert hostile.type is RuntimeError
    assert "does not match the hash its manifest records" in str(hostile.value)
    text = "the data token model"
    assert tok.encode(text) == tokpack.Tokenizer(spm_model).encode(text)
    assert tok.path == f"{server.url}/honest/tokenizer.model"
    assert list(scratch.iterdir()) == []  # Nothing cached on disk to poison.


def test_a_remote_tokenizer_without_a_recorded_hash_is_refused(built, tmp_path):
    ds = copy_of(built, tmp_path / "root" / "ds")
    edit_manifest(ds, lambda m: m["tokenizer"].update(xxh3_64="0" * 16))
    with RangeServer(tmp_path / "root") as server:
        with pytest.raises(ValueError, match="'tokenizer.xxh3_64' is 0000000000000000"):
            tokpack.Dataset(f"{server.url}/ds")


def test_local_tokenizer_is_checked_and_read_without_links(built, tmp_path, spm_model,
                                                           tokpack_bin):
    """The symlink rule (src/base/file_system.h): the tokenizer copy is a plain
    file; a link, even to the right model, is refused by every reader and by
    merge and push, so a link planted in a dataset copies nothing elsewhere."""
    ds = copy_of(built, tmp_path / "ds")
    text = "the data token model"
    assert tokpack.Dataset(str(ds)).tokenizer().encode(text) == \
        tokpack.Tokenizer(spm_model).encode(text)
    (ds / "tokenizer.model").unlink()
    (ds / "tokenizer.model").symlink_to(spm_model)
    with pytest.raises(ValueError, match="is a symbolic link"):
        tokpack.Dataset(str(ds)).tokenizer()
    r = run_cli(tokpack_bin, "verify", ds)
    assert r.returncode == 1 and "tokenizer.model' is a symbolic link" in r.stdout, r.stdout
    r = run_cli(tokpack_bin, "merge", tmp_path / "merged", ds)
    assert r.returncode != 0 and "is a symbolic link" in r.stderr, r.stderr
    assert not (tmp_path / "merged").exists()
    r = run_cli(tokpack_bin, "push", ds, "s3://tokens/x")
    assert r.returncode != 0 and "is a symbolic link" in r.stderr, r.stderr
    # Another file with the recorded name fails the hash before it is parsed.
    (ds / "tokenizer.model").unlink()
    (ds / "tokenizer.model").write_bytes(b"\x00" * 64)
    with pytest.raises(RuntimeError, match="does not match the hash its manifest records"):
        tokpack.Dataset(str(ds)).tokenizer()


def test_merged_and_imported_datasets_reach_other_directories_by_links(built, tmp_path,
                                                                        tokpack_bin, run_tokpack):
    """A manifest never names '..': a local merge or import links to the data
    it does not copy, and readers follow those links (shards only)."""
    parts = tmp_path / "parts"
    a, b = copy_of(built, parts / "a"), copy_of(built, parts / "b")
    merged = tmp_path / "out" / "merged"
    run_tokpack("merge", merged, a, b)
    m = json.loads((merged / "manifest.json").read_text())
    assert [s["path"] for s in m["shards"]][:1] == ["part-00000/shard-00000"]
    assert os.readlink(merged / "part-00001") == "../../parts/b"
    assert (merged / "tokenizer.model").is_file() and not (merged / "tokenizer.model").is_symlink()
    r = run_cli(tokpack_bin, "verify", merged)
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout + r.stderr
    assert tokpack.Dataset(str(merged)).num_tokens == 2 * tokpack.Dataset(str(a)).num_tokens
    # push uploads plain files only: a merge's links are refused, as before.
    r = run_cli(tokpack_bin, "push", merged, "s3://tokens/x")
    assert r.returncode != 0 and "is a symbolic link" in r.stderr, r.stderr

    imported = tmp_path / "out" / "imported"
    run_tokpack("import", a / "shard-00000", a / "shard-00001", "-o", imported)
    m = json.loads((imported / "manifest.json").read_text())
    assert [s["path"] for s in m["shards"]] == ["shard-00000", "shard-00001"]
    assert os.readlink(imported / "shard-00001.idx") == "../../parts/a/shard-00001.idx"
    r = run_cli(tokpack_bin, "verify", imported)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("content", ["evil", "tokenizer"])
def test_merge_writes_no_tokenizer_through_a_part_link(built, tmp_path, tokpack_bin, content):
    """A first part whose tokenizer.file lies under another part's link name:
    the copy must not go through the link into that part (with bytes other
    than the tokenizer's, or the real ones under a name of the merge's own)."""
    hostile, other = copy_of(built, tmp_path / "h"), copy_of(built, tmp_path / "a")
    (hostile / "part-00001").mkdir()
    bytes_ = b"EVIL" if content == "evil" else (built / "tokenizer.model").read_bytes()
    (hostile / "part-00001" / "manifest.json").write_bytes(bytes_)
    edit_manifest(hostile, lambda m: m["tokenizer"].update(file="part-00001/manifest.json"))
    before = (other / "manifest.json").read_bytes()
    r = run_cli(tokpack_bin, "merge", tmp_path / "out", hostile, other)
    assert r.returncode != 0
    assert ("does not match the hash" if content == "evil" else
            "cannot name its tokenizer copy 'manifest.json'") in r.stderr, r.stderr
    assert (other / "manifest.json").read_bytes() == before
    assert not (tmp_path / "out").exists()


def test_remote_merge_writes_no_tokenizer_over_another_part(built, tmp_path, tokpack_bin,
                                                            monkeypatch):
    with MotoServer() as moto:
        moto.setenv(monkeypatch)
        s3 = moto.client()
        s3.create_bucket(Bucket="tokens")
        env = dict(os.environ)
        for i in range(2):
            r = run_cli(tokpack_bin, "push", built, f"s3://tokens/m/part-{i}", env=env)
            assert r.returncode == 0, r.stderr
        # Part 0 names a tokenizer at part-0/part-1/manifest.json, which the
        # merge copied to m/part-1/manifest.json: part 1's manifest.
        key = "m/part-0/manifest.json"
        m = json.loads(s3.get_object(Bucket="tokens", Key=key)["Body"].read())
        m["tokenizer"]["file"] = "part-1/manifest.json"
        s3.put_object(Bucket="tokens", Key=key, Body=json.dumps(m).encode())
        s3.put_object(Bucket="tokens", Key="m/part-0/part-1/manifest.json", Body=b"EVIL")
        before = s3.get_object(Bucket="tokens", Key="m/part-1/manifest.json")["Body"].read()
        r = run_cli(tokpack_bin, "merge", "s3://tokens/m", "s3://tokens/m/part-0",
                    "s3://tokens/m/part-1", env=env)
        assert r.returncode != 0 and "does not match the hash" in r.stderr, r.stderr
        assert s3.get_object(Bucket="tokens", Key="m/part-1/manifest.json")["Body"].read() == before


def test_merge_and_import_links_reach_their_targets_under_a_symlinked_parent(
        built, tmp_path, tokpack_bin, run_tokpack):
    """The output's parent is a link to a directory elsewhere: the links are
    made from where the output really lies, so readers reach the parts."""
    a = copy_of(built, tmp_path / "parts" / "a")
    (tmp_path / "deep" / "x").mkdir(parents=True)
    os.symlink(tmp_path / "deep" / "x", tmp_path / "via")
    run_tokpack("merge", tmp_path / "via" / "merged", a)
    run_tokpack("import", a / "shard-00000", "-o", tmp_path / "via" / "imported")
    for out in ("merged", "imported"):
        r = run_cli(tokpack_bin, "verify", tmp_path / "via" / out)
        assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "deep" / "x" / "merged" / "part-00000" / "manifest.json").is_file()


def test_remote_merge_refuses_a_part_prefix_outside_the_path_rule(built, tokpack_bin,
                                                                    monkeypatch):
    """The merged manifest names each part's files by its prefix under the
    output: one with a "." component would publish a manifest that readers
    refuse."""
    with MotoServer() as moto:
        moto.setenv(monkeypatch)
        s3 = moto.client()
        s3.create_bucket(Bucket="tokens")
        env = dict(os.environ)
        r = run_cli(tokpack_bin, "push", built, "s3://tokens/m/part-0", env=env)
        assert r.returncode == 0, r.stderr
        r = run_cli(tokpack_bin, "merge", "s3://tokens/m", "s3://tokens/m/./part-0", env=env)
        assert r.returncode != 0 and "must lie under the merge output" in r.stderr, r.stderr
        assert "m/manifest.json" not in [o["Key"] for o in s3.list_objects_v2(
            Bucket="tokens")["Contents"]]
