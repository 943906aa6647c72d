"""Packer inputs in object storage: s3:// prefixes and globs listed through the
loopback S3 (moto, signatures checked), http(s):// single files through a
local range server, and --part over listed Parquet objects. Every remote build
is compared byte for byte with the same build from local files; a server that
answers a ranged read with another range fails the build."""
import contextlib
import json
import os
import random
import re
import subprocess

import pytest

from conftest import REPO, random_text, write_jsonl
from remote_servers import FaultProxy, MotoServer, RangeServer

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def dataset_bytes(d):
    """Token data and index of every shard, in manifest order."""
    m = json.loads((d / "manifest.json").read_text())
    return [(d / (s["path"] + ext)).read_bytes() for s in m["shards"] for ext in (".bin", ".idx")]


@pytest.fixture
def moto(monkeypatch, tmp_path):
    monkeypatch.setenv("TOKPACK_CACHE_DIR", str(tmp_path / "cache"))
    with MotoServer() as server:
        for k, v in server.env().items():
            monkeypatch.setenv(k, v)
        yield server


@pytest.fixture
def raw(tmp_path):
    """A FineWeb-like raw corpus: Parquet shards of several row groups, a
    JSONL.zst file and a README, as it would sit in a bucket."""
    rng = random.Random(14)
    root = tmp_path / "raw"
    (root / "data" / "CC-MAIN-1").mkdir(parents=True)
    (root / "data" / "CC-MAIN-2").mkdir(parents=True)
    texts = []
    for i, sub in enumerate(["CC-MAIN-1", "CC-MAIN-1", "CC-MAIN-2"]):
        part = [random_text(rng, 5, 120) for _ in range(300 + 50 * i)]
        texts += part
        table = pa.table({"id": list(range(len(part))), "text": part})
        pq.write_table(table, root / "data" / sub / f"{i:03d}_00000.parquet", row_group_size=64,
                       compression=["snappy", "zstd", "gzip"][i])
    (root / "README.md").write_text("# a dataset card\n")
    jsonl = write_jsonl(tmp_path / "dclm.jsonl", texts[:200])
    subprocess.run(["zstd", "-q", "-f", str(jsonl), "-o", str(root / "dclm.jsonl.zst")], check=True)
    return root, texts


def test_s3_glob_of_parquet_equals_the_local_build(moto, raw, tmp_path, run_tokpack, spm_model):
    root, _ = raw
    moto.upload(root, "s3://corpora/fineweb")
    env = dict(os.environ)
    run_tokpack("build", "-i", "s3://corpora/fineweb/data/**/*.parquet", "-o", tmp_path / "remote",
                "-t", spm_model, "-q", env=env)
    run_tokpack("build", "-i", root / "data/**/*.parquet", "-o", tmp_path / "local", "-t",
                spm_model, "-q")
    assert dataset_bytes(tmp_path / "remote") == dataset_bytes(tmp_path / "local")
    inputs = json.loads((tmp_path / "remote" / "manifest.json").read_text())["provenance"]["inputs"]
    assert [i["path"] for i in inputs] == [
        "s3://corpora/fineweb/data/CC-MAIN-1/000_00000.parquet",
        "s3://corpora/fineweb/data/CC-MAIN-1/001_00000.parquet",
        "s3://corpora/fineweb/data/CC-MAIN-2/002_00000.parquet"]
    assert all(i["bytes"] > 0 for i in inputs)


def test_s3_prefix_with_unknown_files_fails_unless_skipped(moto, raw, tmp_path, run_tokpack,
                                                           spm_model):
    root, _ = raw
    moto.upload(root, "s3://corpora/fineweb")
    env = dict(os.environ)
    bad = run_tokpack("build", "-i", "s3://corpora/fineweb/", "-o", tmp_path / "x", "-t",
                      spm_model, "-q", check=False, env=env)
    assert bad.returncode == 1
    assert "s3://corpora/fineweb/README.md" in bad.stderr and "--skip-unknown-files" in bad.stderr
    assert not (tmp_path / "x").exists()
    ok = run_tokpack("build", "-i", "s3://corpora/fineweb", "-o", tmp_path / "x", "-t", spm_model,
                     "-q", "--skip-unknown-files", env=env)
    assert "4 read, 1 skipped" in ok.stderr and "README.md" in ok.stderr
    paths = [i["path"] for i in
             json.loads((tmp_path / "x" / "manifest.json").read_text())["provenance"]["inputs"]]
    assert paths[0] == "s3://corpora/fineweb/data/CC-MAIN-1/000_00000.parquet"
    assert paths[-1] == "s3://corpora/fineweb/dclm.jsonl.zst"


def test_s3_jsonl_zst_streams_like_the_local_file(moto, raw, tmp_path, run_tokpack, spm_model):
    root, _ = raw
    moto.upload(root, "s3://corpora/fineweb")
    run_tokpack("build", "-i", "s3://corpora/fineweb/dclm.jsonl.zst", "-o", tmp_path / "remote",
                "-t", spm_model, "-q", env=dict(os.environ))
    run_tokpack("build", "-i", root / "dclm.jsonl.zst", "-o", tmp_path / "local", "-t", spm_model,
                "-q")
    assert dataset_bytes(tmp_path / "remote") == dataset_bytes(tmp_path / "local")


def test_missing_remote_inputs_are_named(moto, tmp_path, run_tokpack, spm_model):
    moto.client().create_bucket(Bucket="empty")
    env = dict(os.environ)
    for spec in ["s3://empty/nothing/**/*.parquet", "s3://empty/nothing/", "s3://empty/no.jsonl"]:
        proc = run_tokpack("build", "-i", spec, "-o", tmp_path / "x", "-t", spm_model, "-q",
                           check=False, env=env)
        assert proc.returncode == 1 and spec in proc.stderr, proc.stderr
    assert not (tmp_path / "x").exists()


def test_parts_over_listed_parquet_split_by_row_group_and_merge_to_the_whole(
        moto, raw, tmp_path, run_tokpack, spm_model):
    root, _ = raw
    moto.upload(root, "s3://corpora/fineweb")
    env = dict(os.environ)
    spec = "s3://corpora/fineweb/data/**/*.parquet"
    run_tokpack("build", "-i", spec, "-o", tmp_path / "whole", "-t", spm_model, "-q", env=env)
    parts = []
    for i in range(5):
        parts.append(tmp_path / f"part-{i}")
        run_tokpack("build", "-i", spec, "-o", parts[-1], "-t", spm_model, "-q", "--part",
                    f"{i}/5", env=env)
    # Three files, five parts: some part holds a slice of a file's row groups.
    slices = [i for p in parts for i in
              json.loads((p / "manifest.json").read_text())["provenance"]["inputs"]
              if "row_group_begin" in i]
    assert slices
    run_tokpack("merge", tmp_path / "merged", *parts)
    whole = tokpack_stream(tmp_path / "whole")
    assert tokpack_stream(tmp_path / "merged") == whole


def tokpack_stream(d):
    m = json.loads((d / "manifest.json").read_text())
    return b"".join((d / (s["path"] + ".bin")).read_bytes() for s in m["shards"])


def test_http_single_file_input(raw, tmp_path, run_tokpack, spm_model):
    root, _ = raw
    with RangeServer(root) as server:
        url = f"{server.url}/data/CC-MAIN-2/002_00000.parquet"
        run_tokpack("build", "-i", url, "-i", f"{server.url}/dclm.jsonl.zst", "-o",
                    tmp_path / "remote", "-t", spm_model, "-q")
        bad = run_tokpack("build", "-i", f"{server.url}/data/", "-o", tmp_path / "x", "-t",
                          spm_model, "-q", check=False)
        assert bad.returncode == 1 and "cannot be listed" in bad.stderr
        with server.lock:
            ranges = sorted(tuple(map(int, r[len("bytes="):].split("-")))
                            for (path, r), n in server.requests.items()
                            for _ in range(n) if path == "/dclm.jsonl.zst" and r)
    # The stream fetched each byte of the object exactly once, in order.
    size = (root / "dclm.jsonl.zst").stat().st_size
    assert ranges[0][0] == 0 and ranges[-1][1] == size - 1
    assert all(b[0] == a[1] + 1 for a, b in zip(ranges, ranges[1:]))
    run_tokpack("build", "-i", root / "data/CC-MAIN-2/002_00000.parquet", "-i",
                root / "dclm.jsonl.zst", "-o", tmp_path / "local", "-t", spm_model, "-q")
    assert dataset_bytes(tmp_path / "remote") == dataset_bytes(tmp_path / "local")


def test_slurm_script_builds_bucket_to_bucket(moto, raw, tmp_path, tokpack_bin, run_tokpack,
                                             spm_model):
    root, _ = raw
    moto.upload(root, "s3://corpora/fineweb")
    moto.client().create_bucket(Bucket="tokens")
    env = dict(os.environ, TOKPACK=tokpack_bin,
               TOKPACK_INPUT="s3://corpora/fineweb/data/**/*.parquet",
               TOKPACK_OUTPUT="s3://tokens/fineweb-v1", TOKPACK_TOKENIZER=spm_model,
               SLURM_ARRAY_TASK_COUNT="3", SLURM_CPUS_PER_TASK="1", TMPDIR=str(tmp_path))
    for i in range(3):
        env["SLURM_ARRAY_TASK_ID"] = str(i)
        subprocess.run(["bash", str(REPO / "scripts" / "slurm_build.sbatch")], env=env,
                       check=True, capture_output=True)
    parts = [f"s3://tokens/fineweb-v1/part-{i}" for i in range(3)]
    run_tokpack("merge", "s3://tokens/fineweb-v1", *parts, env=env)
    run_tokpack("build", "-i", root / "data/**/*.parquet", "-o", tmp_path / "local", "-t",
                spm_model, "-q")
    import tokpack
    remote = tokpack.Dataset("s3://tokens/fineweb-v1")
    local = tokpack.Dataset(tmp_path / "local")
    assert remote.num_tokens == local.num_tokens
    assert remote.tokens(0, local.num_tokens).tolist() == local.tokens(0, local.num_tokens).tolist()


def test_a_part_whose_manifest_lies_about_its_index_is_refused(tmp_path, run_tokpack, spm_model):
    src = write_jsonl(tmp_path / "a.jsonl", ["one text", "two texts"])
    for i in range(2):
        run_tokpack("build", "-i", src, "-o", tmp_path / f"p{i}", "-t", spm_model, "-q",
                    "--part", f"{i}/2")
    m = tmp_path / "p1" / "manifest.json"
    for index, count in [(7, 2), (-1, 2), (0, 0)]:
        doc = json.loads(m.read_text())
        doc["provenance"]["part"] = {"index": index, "count": count}
        m.write_text(json.dumps(doc))
        proc = run_tokpack("merge", tmp_path / "merged", tmp_path / "p0", tmp_path / "p1",
                           check=False)
        assert proc.returncode == 1 and "provenance.part" in proc.stderr, proc.stderr


def test_parquet_files_a_part_reads_whole_record_their_file_size(raw, tmp_path, run_tokpack,
                                                                 spm_model):
    root, _ = raw
    files = sorted((root / "data").rglob("*.parquet"))
    out = tmp_path / "p0"
    run_tokpack("build", "-i", *files, "-o", out, "-t", spm_model, "-q", "--part", "0/2")
    inputs = json.loads((out / "manifest.json").read_text())["provenance"]["inputs"]
    whole = [i for i in inputs if "row_group_begin" not in i]
    assert whole and all(i["bytes"] == os.path.getsize(i["path"]) for i in whole)


def fixed_length_lines(path, n, length, seed):
    """A JSONL file of n documents whose lines are all `length` bytes (newline
    included), so that any range starting on a multiple of `length` starts a
    line."""
    rng = random.Random(seed)
    with path.open("w") as f:
        for i in range(n):
            # Printable ASCII that JSON does not escape: one byte a character.
            text = "".join(c for c in f"document {i} {random_text(rng, 200, 200)}"
                           if " " <= c <= "~" and c not in '"\\')
            line = json.dumps({"text": text[:length - 13].ljust(length - 13, "x")}) + "\n"
            assert len(line) == length
            f.write(line)
    return path


@pytest.mark.parametrize("store", ["http", "s3"])
def test_an_input_range_answered_with_another_range_fails_the_build(
        store, tmp_path, run_tokpack, spm_model, monkeypatch):
    """Inputs carry no checksums: a server (here a proxy) that answers a
    ranged GET with another range of the same length would put other bytes in
    the dataset unnoticed. The input is 9 MiB of 1 KiB lines, read in several
    ranges, each moved by one line: the moved bytes still parse (a document
    twice, one lost), so only the Content-Range tells. The build fails naming
    the input and both ranges, and leaves no output."""
    monkeypatch.setenv("TOKPACK_HTTP_ATTEMPTS", "2")  # Every attempt is moved.
    root = tmp_path / "srv"
    root.mkdir()
    size = 9 << 20
    fixed_length_lines(root / "c.jsonl", size // 1024, 1024, seed=21)
    out = tmp_path / "out"
    with contextlib.ExitStack() as stack:
        if store == "http":
            upstream = stack.enter_context(RangeServer(root)).url
            env = dict(os.environ)
        else:
            moto = stack.enter_context(MotoServer())
            moto.upload(root, "s3://corpora/moved")
            upstream = moto.url
        proxy = stack.enter_context(FaultProxy(upstream, ["shift_range"], rate=1,
                                               max_consecutive=10**6, shift_bytes=1024,
                                               match=r"c\.jsonl$"))
        if store == "http":
            url = f"{proxy.url}/c.jsonl"
        else:
            url = "s3://corpora/moved/c.jsonl"
            env = dict(os.environ, **moto.env(endpoint_url=proxy.url))
        proc = run_tokpack("build", "-i", url, "-o", out, "-t", spm_model, "-q", check=False,
                           env=env)
        with proxy.lock:
            moved = proxy.counts["shift_range"]
    assert proc.returncode == 1, proc.stderr
    assert moved >= 1
    # An s3:// input is named as given, then by its endpoint's URL.
    where = url if store == "http" else f"{url}: {proxy.url}/corpora/moved/c.jsonl"
    m = re.search("error: " + re.escape(where) + r": failed after 2 attempts; last error: "
                  r"asked for bytes (\d+)-(\d+), got a 206 reply for 'bytes (\d+)-(\d+)/(\d+)'",
                  proc.stderr)
    assert m, proc.stderr
    asked, got = (int(m[1]), int(m[2])), (int(m[3]), int(m[4]))
    assert abs(got[0] - asked[0]) == 1024 and got[1] - got[0] == asked[1] - asked[0]
    assert int(m[5]) == size
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if ".tokpack-tmp-" in p.name] == []
