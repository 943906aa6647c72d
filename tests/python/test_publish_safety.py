"""Publishing loses no data and never shows readers a mix (issue 16): a local
output that holds its own inputs, two builds racing for one output, a --force
commit killed midway, a file size limit, and `push --force` over a dataset
that readers are using or with a push killed midway (moto, signatures checked,
behind a proxy that holds one chosen request until the test lets it go); and
a damaged local copy never replaces a good remote dataset (issue 32)."""
import json
import os
import random
import resource
import shutil
import subprocess
import threading
import time
import types

import pytest

from conftest import random_text, write_jsonl
from phase_data import write_source
from remote_servers import FaultProxy, MotoServer

CHUNK = 4096
DEADLINE_S = 120  # For events on a loaded machine; nothing waits for it to pass.


def make_corpus(path, seed, n=300):
    rng = random.Random(seed)
    return write_jsonl(path, [random_text(rng, 5, 80) for _ in range(n)])


def build(run_tokpack, spm_model, src, out, *extra):
    run_tokpack("build", "-i", src, "-o", out, "-t", spm_model, "--quiet", "--chunk-bytes",
                CHUNK, "--shard-tokens", 6000, "--threads", 1, *extra)
    return out


def staging_dirs(parent):
    return sorted(p.name for p in parent.iterdir() if ".tokpack-tmp-" in p.name)


def wait_until(condition, proc):
    """Waits for condition() while `proc` runs; fails with its stderr if it ends."""
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if proc.poll() is not None:
            pytest.fail(f"exited {proc.returncode} early: {proc.stderr.read()}")
        if time.monotonic() > deadline:
            pytest.fail("timed out")
        time.sleep(0.01)


@pytest.mark.parametrize("command", ["import", "build"])
def test_an_output_that_holds_an_input_is_refused(tmp_path, run_tokpack, spm_model, command):
    ds = build(run_tokpack, spm_model, make_corpus(tmp_path / "c.jsonl", 1), tmp_path / "ds")
    (ds / "more.jsonl").write_bytes((tmp_path / "c.jsonl").read_bytes())
    before = {p.name: p.read_bytes() for p in ds.iterdir()}
    if command == "import":
        args = ["import", ds / "shard-00000", ds / "shard-00001", "-o", ds, "--force"]
        named = ds / "shard-00000.bin"
    else:
        args = ["build", "-i", ds / "more.jsonl", "-o", ds, "-t", spm_model, "--force"]
        named = ds / "more.jsonl"
    proc = run_tokpack(*args, check=False)
    assert proc.returncode == 1, proc.stderr
    assert f"output '{ds}' contains the input '{named}'" in proc.stderr
    assert {p.name: p.read_bytes() for p in ds.iterdir()} == before
    assert staging_dirs(tmp_path) == []


def test_two_builds_into_one_new_output_never_replace_each_other(tmp_path, tokpack_bin,
                                                                  run_tokpack, spm_model):
    out = tmp_path / "ds"
    lines = make_corpus(tmp_path / "a.jsonl", 2).read_text().splitlines(keepends=True)
    # The first build reads stdin: it passes its start checks, then waits for
    # the rest of its input while the second builds the same output.
    first = subprocess.Popen([tokpack_bin, "build", "-i", "-", "-o", out, "-t", spm_model,
                              "--quiet", "--threads", "1"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first.stdin.write("".join(lines[:10]))
        first.stdin.flush()
        wait_until(lambda: staging_dirs(tmp_path), first)
        build(run_tokpack, spm_model, make_corpus(tmp_path / "b.jsonl", 3), out)
        second = (out / "manifest.json").read_bytes()
        _, err = first.communicate("".join(lines[10:]), timeout=DEADLINE_S)
    finally:
        first.kill()
    assert first.returncode == 1, err
    assert f"output '{out}' appeared while this writer ran" in err
    assert (out / "manifest.json").read_bytes() == second
    assert run_tokpack("verify", out).returncode == 0
    assert staging_dirs(tmp_path) == []


def test_leftovers_of_a_killed_force_commit_are_removed_by_the_next_build(
        tmp_path, run_tokpack, spm_model):
    src = make_corpus(tmp_path / "c.jsonl", 4)
    ds = build(run_tokpack, spm_model, src, tmp_path / "ds")
    # What a build killed while deleting the dataset it replaced left behind:
    # the old dataset under its staging name, with the lock taken before the
    # swap (free now); "-old" after two renames.
    for name in [".ds.tokpack-tmp-Ab12Cd-old", ".ds.tokpack-tmp-Ef34Gh"]:
        build(run_tokpack, spm_model, src, tmp_path / "copy", "--force")
        (tmp_path / "copy" / ".tokpack-build.lock").write_text("")
        (tmp_path / "copy").rename(tmp_path / name)
    assert len(staging_dirs(tmp_path)) == 2
    build(run_tokpack, spm_model, src, ds, "--force")
    assert staging_dirs(tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.jsonl", "ds"]


def test_a_file_size_limit_is_an_error_naming_the_file(tmp_path, tokpack_bin, spm_model):
    src = make_corpus(tmp_path / "c.jsonl", 5, n=2000)  # About 200 KB of tokens.
    out = tmp_path / "ds"

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, 64 << 10))

    proc = subprocess.run([tokpack_bin, "build", "-i", src, "-o", out, "-t", spm_model,
                           "--quiet"], preexec_fn=limit, capture_output=True, text=True,
                          timeout=DEADLINE_S)
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert "shard-00000.bin" in proc.stderr and "File too large" in proc.stderr, proc.stderr
    assert not out.exists() and staging_dirs(tmp_path) == []


class HoldProxy(FaultProxy):
    """Forwards every request to the upstream unchanged, except the `nth`
    request whose method is `method` and whose path matches `path_re`: when it
    arrives, .arrived is set and it waits for .release, then goes on (or,
    with drop=True, gets a connection reset)."""

    def __init__(self, upstream_url, method, path_re, nth=1, drop=False):
        super().__init__(upstream_url, [], rate=0, match=path_re)
        self.method, self.nth, self.drop = method, nth, drop
        self.seen = 0
        self.arrived, self.release = threading.Event(), threading.Event()

    def _choose(self, key):
        if key[0] == self.method and self.match.search(key[1]):
            with self.lock:
                self.seen += 1
                mine = self.seen == self.nth
            if mine:
                self.arrived.set()
                self.release.wait(DEADLINE_S)
                if self.drop:
                    return "reset", random.Random(0)
        return super()._choose(key)

    def stop(self):
        self.release.set()
        super().stop()


@pytest.fixture
def remote(tmp_path, run_tokpack, spm_model, monkeypatch):
    """moto with bucket "tokens", its variables set here; datasets a and b
    built locally; a pushed to s3://tokens/ds. Yields a namespace."""
    tokpack = pytest.importorskip("tokpack")
    local = {name: build(run_tokpack, spm_model, make_corpus(tmp_path / f"{name}.jsonl", seed,
                                                             n=400), tmp_path / name)
             for name, seed in [("a", 6), ("b", 7)]}
    monkeypatch.setenv("TOKPACK_HTTP_ATTEMPTS", "3")
    with MotoServer() as moto:
        moto.setenv(monkeypatch)
        moto.client().create_bucket(Bucket="tokens")
        url = "s3://tokens/ds"
        run_tokpack("push", local["a"], url, env=dict(os.environ))
        caches = iter(range(1000))

        def open_cold():
            """The dataset at the URL, read through an empty cache."""
            monkeypatch.setenv("TOKPACK_CACHE_DIR", str(tmp_path / f"cache{next(caches)}"))
            return tokpack.Dataset(url)

        def tokens(ds):
            return ds.tokens(0, ds.num_tokens).tolist()

        def keys():
            return sorted(o["Key"] for o in
                          moto.client().list_objects_v2(Bucket="tokens")["Contents"])

        yield types.SimpleNamespace(
            moto=moto, url=url, local=local, open_cold=open_cold, keys=keys, tokens=tokens,
            want={k: tokens(tokpack.Dataset(v)) for k, v in local.items()},
            via=lambda proxy: dict(os.environ, **moto.env(endpoint_url=proxy.url)))


def test_readers_of_the_old_manifest_read_it_whole_while_a_force_push_runs(
        remote, tokpack_bin, run_tokpack):
    old = remote.open_cold()  # Opened on a's manifest; no token read yet.
    with HoldProxy(remote.moto.url, "PUT", r"/manifest\.json$") as proxy:
        push = subprocess.Popen([tokpack_bin, "push", remote.local["b"], remote.url, "--force"],
                                env=remote.via(proxy), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            wait_until(proxy.arrived.is_set, push)
            # Every object of b is up; a's manifest still rules.
            assert remote.tokens(old) == remote.want["a"]
            assert remote.tokens(remote.open_cold()) == remote.want["a"]
            proxy.release.set()
            _, err = push.communicate(timeout=DEADLINE_S)
        finally:
            push.kill()
        assert push.returncode == 0, err
    assert remote.tokens(remote.open_cold()) == remote.want["b"]
    # a's objects went after the switch: b's generation and the manifest remain.
    keys = remote.keys()
    generations = {k.split("/")[1] for k in keys if k != "ds/manifest.json"}
    assert len(generations) == 1 and generations.pop().startswith("g-"), keys
    manifest = json.loads(remote.moto.client().get_object(
        Bucket="tokens", Key="ds/manifest.json")["Body"].read())
    assert {f"ds/{s['path']}.{e}" for s in manifest["shards"] for e in ("bin", "idx", "src")} | {
        f"ds/{manifest['tokenizer']['file']}", "ds/manifest.json"} == set(keys)


def test_a_push_killed_midway_leaves_the_old_dataset_whole_and_a_retry_succeeds(
        remote, tokpack_bin, run_tokpack):
    # Held, then dropped: the second shard file upload of the force push.
    with HoldProxy(remote.moto.url, "PUT", r"\.(bin|idx)$", nth=2, drop=True) as proxy:
        push = subprocess.Popen([tokpack_bin, "push", remote.local["b"], remote.url, "--force"],
                                env=remote.via(proxy), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            wait_until(proxy.arrived.is_set, push)
        finally:
            push.kill()
            push.communicate(timeout=DEADLINE_S)
    v = run_tokpack("verify", remote.url, env=dict(os.environ), check=False)
    assert v.returncode == 0, v.stdout
    assert remote.tokens(remote.open_cold()) == remote.want["a"]
    run_tokpack("push", remote.local["b"], remote.url, "--force", env=dict(os.environ))
    assert remote.tokens(remote.open_cold()) == remote.want["b"]
    assert run_tokpack("verify", remote.url, env=dict(os.environ)).returncode == 0


def test_a_force_push_keeps_its_manifest_whatever_the_old_one_names(remote, run_tokpack):
    """The replaced manifest is untrusted: objects it names that the new
    dataset uses, manifest.json above all, are not deleted after the switch."""
    s3 = remote.moto.client()
    m = json.loads(s3.get_object(Bucket="tokens", Key="ds/manifest.json")["Body"].read())
    m["tokenizer"]["file"] = "manifest.json"
    s3.put_object(Bucket="tokens", Key="ds/manifest.json", Body=json.dumps(m).encode())
    run_tokpack("push", remote.local["b"], remote.url, "--force", env=dict(os.environ))
    assert "ds/manifest.json" in remote.keys()
    assert remote.tokens(remote.open_cold()) == remote.want["b"]


def test_a_push_whose_generation_prefix_makes_paths_too_deep_uploads_nothing(
        remote, tmp_path, run_tokpack, tokpack_bin):
    """Shard paths at the depth limit: under "g-…/" they are one too deep, and
    readers would refuse the manifest; the rewritten manifest is checked as
    readers check it before anything goes up."""
    ds = tmp_path / "deep"
    deep = "/".join(["d"] * 15)
    m = json.loads((remote.local["a"] / "manifest.json").read_text())
    (ds / deep).mkdir(parents=True)
    for s in m["shards"]:
        for ext in ("bin", "idx", "src"):
            os.link(remote.local["a"] / f"{s['path']}.{ext}", ds / deep / f"{s['path']}.{ext}")
        s["path"] = f"{deep}/{s['path']}"
    os.link(remote.local["a"] / "tokenizer.model", ds / "tokenizer.model")
    (ds / "manifest.json").write_text(json.dumps(m))
    assert run_tokpack("verify", ds).returncode == 0  # Valid where it is.
    r = subprocess.run([tokpack_bin, "push", ds, "s3://tokens/deep"], capture_output=True,
                       text=True, timeout=DEADLINE_S)
    assert r.returncode != 0 and "shards[0].path" in r.stderr, r.stderr
    assert not [k for k in remote.keys() if k.startswith("deep/")]


def many_inputs(run_tokpack, spm_model, tmp_path, name):
    src = tmp_path / f"{name}-src"
    src.mkdir()
    for i in range(1001):
        (src / f"{i:04d}.jsonl").write_text(json.dumps({"text": f"{name} document {i}"}) + "\n")
    return build(run_tokpack, spm_model, src, tmp_path / name)


def test_a_force_push_replaces_the_inputs_side_file_atomically(remote, tmp_path, tokpack_bin,
                                                               run_tokpack, spm_model):
    """More than 1000 inputs go to a side file that the manifest names: it
    goes up with the generation, so readers of the old manifest still find
    theirs until the switch."""
    a, b = (many_inputs(run_tokpack, spm_model, tmp_path, n) for n in ("ma", "mb"))
    url = "s3://tokens/many"
    run_tokpack("push", a, url, env=dict(os.environ))
    with HoldProxy(remote.moto.url, "PUT", r"/many/manifest\.json$") as proxy:
        push = subprocess.Popen([tokpack_bin, "push", b, url, "--force"], env=remote.via(proxy),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_until(proxy.arrived.is_set, push)
            v = run_tokpack("verify", url, env=dict(os.environ), check=False)
            assert v.returncode == 0, v.stdout + v.stderr
            proxy.release.set()
            _, err = push.communicate(timeout=DEADLINE_S)
        finally:
            push.kill()
        assert push.returncode == 0, err
    assert run_tokpack("verify", url, env=dict(os.environ)).returncode == 0
    manifest = json.loads(remote.moto.client().get_object(
        Bucket="tokens", Key="many/manifest.json")["Body"].read())
    name = manifest["provenance"]["inputs_file"]
    assert name.startswith("g-") and name.endswith("/inputs.jsonl"), name
    assert [k for k in remote.keys() if k.endswith("inputs.jsonl")] == [f"many/{name}"]


def flip_byte(path, offset):
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x20
    path.write_bytes(bytes(data))


def assert_refused_and_old_dataset_kept(remote, tokpack_bin, run_tokpack, damaged, url, named,
                                        *extra):
    """`push --force` of `damaged` over the good dataset at `url` fails with
    `named` in its error, and leaves the store as it was: the old dataset's
    objects, readable and verified, and no object or multipart upload of the
    refused generation."""
    s3 = remote.moto.client()
    before = remote.keys()
    r = subprocess.run([tokpack_bin, "push", damaged, url, "--force", *extra], capture_output=True,
                       text=True, timeout=DEADLINE_S)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert f"push refused, nothing published ({url} keeps what it held): " in r.stderr, r.stderr
    assert named in r.stderr, r.stderr
    assert remote.keys() == before
    assert not s3.list_multipart_uploads(Bucket="tokens").get("Uploads")
    v = run_tokpack("verify", url, env=dict(os.environ), check=False)
    assert v.returncode == 0, v.stdout + v.stderr


def test_a_force_push_of_a_damaged_copy_is_refused_and_the_good_dataset_stays(
        remote, tmp_path, tokpack_bin, run_tokpack):
    """Bit rot in the local copy (one byte, sizes unchanged) of the last shard,
    or of the tokenizer: every byte is checked against the manifest as it is
    read for the upload, so the push stops before manifest.json, removes what
    of the new generation went up (the earlier shards), and the dataset at the
    URL still reads and verifies as the old one."""
    m = json.loads((remote.local["b"] / "manifest.json").read_text())
    last = m["shards"][-1]
    assert last["bin"]["bytes"] > CHUNK + 100 and len(m["shards"]) > 1
    for name, offset, named in [
            (f"{last['path']}.bin", CHUNK + 100,
             f"/{last['path']}.bin: chunk 1 (bytes {CHUNK}..{min(2 * CHUNK, last['bin']['bytes'])})"
             f" has checksum "),
            (m["tokenizer"]["file"], 10, f"/{m['tokenizer']['file']} has checksum ")]:
        damaged = tmp_path / f"damaged-{name.replace('/', '_')}"
        shutil.copytree(remote.local["b"], damaged)
        flip_byte(damaged / name, offset)
        assert run_tokpack("verify", damaged, check=False).returncode != 0
        assert_refused_and_old_dataset_kept(remote, tokpack_bin, run_tokpack, damaged, remote.url,
                                            f"{damaged}{named}")
        assert remote.tokens(remote.open_cold()) == remote.want["a"]
    # The intact copy goes up.
    run_tokpack("push", remote.local["b"], remote.url, "--force", env=dict(os.environ))
    assert remote.tokens(remote.open_cold()) == remote.want["b"]


def test_a_damaged_part_of_a_multipart_upload_is_refused_and_the_upload_aborted(
        remote, tmp_path, tokpack_bin, run_tokpack):
    """A file above --part-bytes goes up in parts, each checked as it is read:
    damage in the second part stops the upload before that part is sent, and
    the multipart upload is aborted, so no part of it stays in the bucket."""
    write_source(tmp_path / "raw", 0, 1_600_000)  # 6.4 MB of int32: two 5 MiB parts.
    run_tokpack("import", tmp_path / "raw", "-o", tmp_path / "linked")
    big = tmp_path / "big"
    shutil.copytree(tmp_path / "linked", big)  # Push uploads files, not links.
    url = "s3://tokens/big"
    run_tokpack("push", big, url, env=dict(os.environ))
    m = json.loads((big / "manifest.json").read_text())
    chunk, size = m["chunk_bytes"], m["shards"][0]["bin"]["bytes"]
    offset = (5 << 20) + 100
    assert size > offset
    flip_byte(big / "shard-00000.bin", offset)
    k = offset // chunk
    assert_refused_and_old_dataset_kept(
        remote, tokpack_bin, run_tokpack, big, url,
        f"{big}/shard-00000.bin: chunk {k} (bytes {k * chunk}..{min((k + 1) * chunk, size)}) "
        f"has checksum ", "--part-bytes", str(5 << 20))
