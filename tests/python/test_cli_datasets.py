"""`info`, `verify` and `show` on every kind of dataset Dataset::Open takes: a
local directory, a bare Megatron prefix, s3:// (moto, signatures checked) and
http:// (a loopback Range server); what they say about missing paths; and
tokpack.build to an s3:// output."""
import json
import os
import random
import shutil

import pytest

from conftest import random_text, write_jsonl
from remote_servers import MotoServer, RangeServer

CHUNK = 4096


@pytest.fixture
def local_ds(tmp_path, run_tokpack, spm_model):
    """A dataset of several shards of many checksum chunks, at tmp_path/root/ds."""
    rng = random.Random(3)
    src = write_jsonl(tmp_path / "c.jsonl", [random_text(rng, 5, 120) for _ in range(400)])
    ds = tmp_path / "root" / "ds"
    run_tokpack("build", "-i", src, "-o", ds, "-t", spm_model, "--quiet", "--chunk-bytes",
                CHUNK, "--shard-tokens", 8000, "--threads", 2)
    assert (ds / "shard-00003.bin").exists()  # The tests damage shards 0 to 2.
    return ds


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKPACK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TOKPACK_HTTP_ATTEMPTS", "2")


def info(run_tokpack, path, **kw):
    out = json.loads(run_tokpack("info", path, "--json", **kw).stdout)
    del out["dataset"]
    return out


def show(run_tokpack, path, *args, **kw):
    return run_tokpack("show", path, *args, **kw).stdout


def flip_byte(path, offset):
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x40
    path.write_bytes(bytes(data))


def test_commands_take_a_bare_megatron_prefix(tmp_path, run_tokpack, local_ds):
    mega = tmp_path / "mega"
    mega.mkdir()
    for ext in ("bin", "idx"):
        shutil.copy(local_ds / f"shard-00001.{ext}", mega / f"web_text_document.{ext}")
    prefix = mega / "web_text_document"
    shard = json.loads((local_ds / "manifest.json").read_text())["shards"][1]
    got = info(run_tokpack, prefix)
    assert got["has_manifest"] is False and info(run_tokpack, local_ds)["has_manifest"] is True
    assert (got["tokens"], got["documents"], got["shards"]) == (
        shard["tokens"], shard["documents"], 1)
    assert "bare Megatron prefix" in run_tokpack("info", prefix).stdout
    # The prefix's first document is the dataset's first one of shard 1.
    first = sum(s["documents"] for s in json.loads(
        (local_ds / "manifest.json").read_text())["shards"][:1])
    assert (show(run_tokpack, prefix, "--doc", 0).splitlines()[1]
            == show(run_tokpack, local_ds, "--doc", first).splitlines()[1])
    # verify checks what it can and says what it could not.
    v = run_tokpack("verify", str(prefix) + ".bin")
    assert "OK" in v.stdout and "NOT CHECKED" in v.stdout and "no checksums" in v.stdout
    with open(str(prefix) + ".bin", "r+b") as f:
        f.truncate(100)
    v = run_tokpack("verify", prefix, check=False)
    assert v.returncode == 1 and "web_text_document.idx: describes" in v.stdout
    # push needs checksums; it says so instead of uploading.
    p = run_tokpack("push", prefix, "s3://bucket/x", check=False)
    assert p.returncode == 1 and "bare Megatron prefix" in p.stderr


def test_a_missing_path_does_not_exist(tmp_path, run_tokpack, local_ds):
    missing = tmp_path / "nope"
    for args in [("info", missing), ("verify", missing), ("show", missing),
                 ("push", missing, "s3://bucket/x"), ("merge", tmp_path / "m", missing),
                 ("sample", missing)]:
        proc = run_tokpack(*args, check=False)
        assert proc.returncode == 1, args
        assert f"{missing} does not exist" in proc.stderr, (args, proc.stderr)
        assert "manifest.json" not in proc.stderr, (args, proc.stderr)
    # An existing directory that is not a dataset still says what it lacks.
    proc = run_tokpack("info", tmp_path, check=False)
    assert proc.returncode == 1 and "no manifest.json" in proc.stderr


def test_commands_on_an_s3_dataset_and_verify_finds_a_damaged_object(
        tmp_path, run_tokpack, local_ds, cache, monkeypatch):
    with MotoServer() as moto:
        moto.setenv(monkeypatch)
        env = dict(os.environ)
        moto.client().create_bucket(Bucket="tokens")
        run_tokpack("push", local_ds, "s3://tokens/web/v1", env=env)
        url = "s3://tokens/web/v1"
        assert info(run_tokpack, url, env=env) == info(run_tokpack, local_ds)
        v = run_tokpack("verify", url, env=env)
        assert v.stdout.startswith(f"{url}: OK"), v.stdout
        assert show(run_tokpack, url, "--doc", 3, "--count", 2, env=env) == show(
            run_tokpack, local_ds, "--doc", 3, "--count", 2)
        assert show(run_tokpack, url, "--decode", env=env) == show(run_tokpack, local_ds,
                                                                   "--decode")
        # One flipped byte in the stored object, in chunk 1 of shard 1's .bin:
        # verify reads the store itself (not the warm cache) and names the chunk.
        s3 = moto.client()
        shard = json.loads(s3.get_object(Bucket="tokens", Key="web/v1/manifest.json")["Body"]
                           .read())["shards"][1]["path"]  # In push's generation directory.
        key = f"web/v1/{shard}.bin"
        body = bytearray(s3.get_object(Bucket="tokens", Key=key)["Body"].read())
        body[CHUNK + 10] ^= 0x40
        s3.put_object(Bucket="tokens", Key=key, Body=bytes(body))
        v = run_tokpack("verify", url, env=env, check=False)
        assert v.returncode == 1
        assert f"BAD  {url}/{shard}.bin: chunk 1 (bytes {CHUNK}..{2 * CHUNK})" in v.stdout
        assert "FAILED, 1 problem(s)" in v.stdout
        missing = run_tokpack("info", "s3://tokens/none", env=env, check=False)
        assert missing.returncode == 1 and "s3://tokens/none" in missing.stderr
        p = run_tokpack("push", url, "s3://tokens/copy", env=env, check=False)
        assert p.returncode == 1 and "is remote already" in p.stderr
        m = run_tokpack("merge", tmp_path / "merged", url, env=env, check=False)
        assert m.returncode == 1 and "can only refer to local shards" in m.stderr


def test_commands_on_an_http_dataset_and_verify_finds_a_damaged_file(
        tmp_path, run_tokpack, local_ds, cache):
    with RangeServer(local_ds.parent) as server:
        url = server.url + "/ds"
        assert info(run_tokpack, url) == info(run_tokpack, local_ds)
        assert run_tokpack("verify", url).returncode == 0
        assert show(run_tokpack, url, "--doc", 5) == show(run_tokpack, local_ds, "--doc", 5)
        flip_byte(local_ds / "shard-00002.bin", 3 * CHUNK + 1)
        v = run_tokpack("verify", url, check=False)
        assert v.returncode == 1
        assert f"BAD  {url}/shard-00002.bin: chunk 3" in v.stdout
        # A corrupted index: opening the dataset fails, verify still reports it.
        flip_byte(local_ds / "shard-00000.idx", 20)
        v = run_tokpack("verify", url, check=False)
        assert v.returncode == 1 and f"{url}/shard-00000.idx: chunk 0" in v.stdout
        # Readers fetch it into an empty cache, check it and refuse it.
        proc = run_tokpack("info", url, check=False,
                           env=dict(os.environ, TOKPACK_CACHE_DIR=str(tmp_path / "cold")))
        assert proc.returncode == 1 and "shard-00000.idx chunk 0" in proc.stderr


def test_python_build_to_s3_pushes_a_dataset(tmp_path, spm_model, cache, monkeypatch):
    tokpack = pytest.importorskip("tokpack")
    rng = random.Random(4)
    src = write_jsonl(tmp_path / "c.jsonl", [random_text(rng, 5, 80) for _ in range(200)])
    local = tokpack.build(src, tmp_path / "local", spm_model, chunk_bytes=CHUNK, threads=1)
    with MotoServer() as moto:
        moto.setenv(monkeypatch)
        moto.client().create_bucket(Bucket="tokens")
        remote = tokpack.build(src, "s3://tokens/built", spm_model, chunk_bytes=CHUNK,
                               threads=1)
        assert remote.fingerprint == local.fingerprint
        assert remote.tokens(0, 500).tolist() == local.tokens(0, 500).tolist()
        keys = {o["Key"] for o in moto.client().list_objects_v2(Bucket="tokens")["Contents"]}
        assert "built/manifest.json" in keys
        assert any(k.startswith("built/g-") and k.endswith("/shard-00000.bin") for k in keys)
        # An existing dataset is refused before any work, as a local one is.
        with pytest.raises(RuntimeError, match="already holds a dataset"):
            tokpack.build(src, "s3://tokens/built", spm_model, threads=1)
        with pytest.raises(Exception, match="not over HTTP"):
            tokpack.build(src, "http://127.0.0.1:1/x", spm_model, threads=1)


def test_show_marks_the_text_that_carries_no_loss(tmp_path, run_tokpack, local_ds):
    from mask_data import with_loss_masks

    masked = with_loss_masks(local_ds, tmp_path / "masked")  # Each document's first half.
    for doc in (0, 5):
        plain = show(run_tokpack, local_ds, "--doc", doc, "--decode").split("\n", 1)[1]
        out = show(run_tokpack, masked, "--doc", doc, "--decode")
        header, text = out.split("\n", 1)
        n = int(header.split("(")[1].split()[0])
        assert header == f"--- document {doc} ({n} tokens, {n - n // 2} carry loss)"
        # Not a terminal: the prompt half between the marks, then the rest
        # plain; without the marks, the text as decoded whole.
        assert text.startswith("\u27e6") and text.count("\u27e6") == text.count("\u27e7") == 1
        prompt, answer = text[1:].split("\u27e7")
        assert prompt and answer.strip()
        assert prompt + answer == plain
    ids = show(run_tokpack, masked, "--doc", 0).split("\n")[1]
    plain_ids = show(run_tokpack, local_ds, "--doc", 0).split("\n")[1]
    assert ids.replace("\u27e6", "").replace("\u27e7", "") == plain_ids
