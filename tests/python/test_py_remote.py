"""Remote datasets against real servers on loopback: an HTTP server with
Range support, moto's S3 (checking SigV4 signatures), and a proxy that
injects faults. Under every fault the loader delivers exactly the batches it
delivers from local disk, and the node-shared cache stays within its limit."""
import fcntl
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from child import default_sigint
from conftest import random_text, write_jsonl
from remote_servers import FAULTS, FaultProxy, MotoServer, RangeServer, StalledServer
from test_format_spec import fingerprint

tokpack = pytest.importorskip("tokpack")

CHUNK = 4096  # Small checksum chunks, so each shard spans many cache chunks.
CACHE_LIMIT = 48 * 1024


@pytest.fixture(scope="module")
def chunked(tmp_path_factory, spm_model):
    """A dataset whose shards span many 4 KiB chunks, under root/data."""
    root = tmp_path_factory.mktemp("remote")
    rng = random.Random(5)
    src = write_jsonl(root / "corpus.jsonl", [random_text(rng, 5, 150) for _ in range(1200)])
    tokpack.build(src, root / "data", spm_model, shard_tokens=30000, chunk_bytes=CHUNK,
                  threads=2)
    return root


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh cache directory with a small limit, and fast retries."""
    d = tmp_path / "cache"
    monkeypatch.setenv("TOKPACK_CACHE_DIR", str(d))
    monkeypatch.setenv("TOKPACK_CACHE_BYTES", str(CACHE_LIMIT))
    monkeypatch.setenv("TOKPACK_HTTP_STALL_SECONDS", "1")
    monkeypatch.setenv("TOKPACK_HTTP_ATTEMPTS", "8")
    return d


def cache_bytes(d):
    """Bytes of chunks on disk, read under the cache's own lock (the one its
    writers hold while they evict and add), so the snapshot is consistent."""
    chunks = Path(d) / "chunks"
    if not chunks.exists():
        return 0
    with open(Path(d) / "cache.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return sum(p.stat().st_size for p in chunks.iterdir())


# shuffle="full": a fetch per sample, so faults and eviction are exercised on
# every step (the data is larger than CACHE_LIMIT).
KW = dict(seq_len=64, batch_size=4, seed=17, threads=2, prefetch=3, as_="numpy", max_steps=25,
          shuffle="full")


def local_batches(path):
    return [b["input_ids"].copy() for b in tokpack.Loader(str(path), **KW)]


def check_equal_within_limit(url, want, cache_dir):
    loader = tokpack.Loader(url, **KW)
    before = loader.stats()
    n = 0
    for i, batch in enumerate(loader):
        np.testing.assert_array_equal(batch["input_ids"], want[i], err_msg=f"step {i}")
        assert cache_bytes(cache_dir) <= CACHE_LIMIT
        n += 1
    assert n == len(want)
    # the loader's statistics see the downloads and the hits (process-wide counters)
    after = loader.stats()
    assert after["cache_misses"] > before["cache_misses"]
    assert after["cache_hits"] > before["cache_hits"]
    assert after["bytes_fetched"] >= before["bytes_fetched"] + CHUNK
    assert after["fetch_seconds"] > before["fetch_seconds"]


def test_http_dataset_reads_exactly_the_local_batches(chunked, cache):
    want = local_batches(chunked / "data")
    with RangeServer(chunked) as server:
        url = server.url + "/data"
        ds = tokpack.Dataset(url)
        local = tokpack.Dataset(chunked / "data")
        assert (ds.num_tokens, ds.num_documents, ds.fingerprint) == (
            local.num_tokens, local.num_documents, local.fingerprint)
        assert ds.doc(7).tolist() == local.doc(7).tolist()
        assert ds.tokenizer().decode(ds.doc(7)) == local.tokenizer().decode(local.doc(7))
        check_equal_within_limit(url, want, cache)
        ranged = [k for k in server.requests if k[1] is not None]
        assert ranged, "reads must be ranged GETs"


@pytest.mark.parametrize("fault", FAULTS)
def test_every_fault_is_survived_without_losing_or_duplicating_anything(chunked, cache, fault):
    want = local_batches(chunked / "data")
    # The cache refetches a corrupt chunk once (then reports DataLoss), so a
    # bit flip may hit the same request at most once in a row.
    with RangeServer(chunked) as server, FaultProxy(
            server.url, [fault], rate=0.05 if fault.startswith("stall") else 0.15, seed=3,
            stall_s=1.5,
            max_consecutive=1 if fault == "bitflip" else 2) as proxy:
        check_equal_within_limit(proxy.url + "/data", want, cache)
        assert proxy.counts[fault] > 0, proxy.counts


def test_a_chunk_corrupt_on_every_fetch_is_a_clear_data_loss(chunked, cache):
    with RangeServer(chunked) as server, FaultProxy(server.url, ["bitflip"], rate=1.0,
                                                    max_consecutive=1000,
                                                    match=r"shard-00000\.bin$") as proxy:
        loader = tokpack.Loader(proxy.url + "/data", seq_len=64, batch_size=4, shuffle=False,
                                as_="numpy")
        with pytest.raises(RuntimeError, match=r"data_loss.*shard-00000\.bin chunk 0"):
            next(loader)


def test_the_order_never_depends_on_a_nodes_cache(chunked, tmp_path, monkeypatch, capfd):
    # Nodes of one job may have other cache limits (TOKPACK_CACHE_BYTES) or
    # disks: every rank must still resolve the same order, or ranks overlap.
    kw = dict(seq_len=64, batch_size=4, seed=3, epochs=1, as_="numpy")
    local = tokpack.Loader(chunked / "data", **kw)
    assert local.options["shuffle"] == "full"  # auto, on local data
    monkeypatch.setenv("TOKPACK_HTTP_ATTEMPTS", "8")
    runs = {}
    with RangeServer(chunked) as server:
        url = server.url + "/data"
        for limit in (CACHE_LIMIT, 1 << 30):
            monkeypatch.setenv("TOKPACK_CACHE_DIR", str(tmp_path / f"cache-{limit}"))
            monkeypatch.setenv("TOKPACK_CACHE_BYTES", str(limit))
            for shuffle in ("auto", "window"):
                capfd.readouterr()
                loader = tokpack.Loader(url, shuffle=shuffle, **kw)
                err = capfd.readouterr().err
                rows = [b["input_ids"].copy() for b in loader]
                runs[limit, shuffle] = (dict(loader.options), rows, loader.state_dict(), err)
    for shuffle in ("auto", "window"):
        small, large = runs[CACHE_LIMIT, shuffle], runs[1 << 30, shuffle]
        assert small[0] == large[0], shuffle  # Resolved options, window_chunks included.
        assert len(small[1]) == len(large[1]) > 0
        for a, b in zip(small[1], large[1]):
            np.testing.assert_array_equal(a, b)
        assert small[2] == large[2]
    # auto: data under 64 GiB is shuffled in full, whatever the cache; the
    # small cache is warned about, the order is not changed by it.
    auto_small, auto_large = runs[CACHE_LIMIT, "auto"], runs[1 << 30, "auto"]
    assert auto_small[0]["shuffle"] == "full"
    for a, b in zip(auto_small[1], local):
        np.testing.assert_array_equal(a, b["input_ids"])
    assert 'warning: shuffle="full"' in auto_small[3] and "TOKPACK_CACHE_BYTES" in auto_small[3]
    assert auto_large[3] == ""
    # window: the default window comes from the chunk size (24 GiB of chunks,
    # the whole of this small dataset), and a cache under two windows says
    # which settings to change.
    window_small, window_large = runs[CACHE_LIMIT, "window"], runs[1 << 30, "window"]
    assert window_small[0]["window_chunks"] == (24 << 30) // CHUNK
    assert "fewer than the two windows" in window_small[3], window_small[3]
    assert "TOKPACK_CACHE_BYTES" in window_small[3] and "window_chunks" in window_small[3]
    assert window_large[3] == ""
    # The same order as window mode on the local copy, each sample once.
    same = tokpack.Loader(chunked / "data", shuffle="window",
                          window_chunks=window_small[0]["window_chunks"], **kw)
    seen = set()
    for a, b in zip(window_small[1], same):
        np.testing.assert_array_equal(a, b["input_ids"])
        seen.update(r.tobytes() for r in a)
    assert len(seen) == sum(len(a) for a in window_small[1])
    # A cursor names the options that resume it where the modes differ.
    with pytest.raises(ValueError, match='pass shuffle="window", window_chunks='):
        local.load_state_dict(window_small[2])
    same.load_state_dict(window_small[2])


def test_unreachable_and_missing_datasets_are_named(chunked, cache, monkeypatch):
    monkeypatch.setenv("TOKPACK_HTTP_ATTEMPTS", "2")
    with RangeServer(chunked) as server:
        with pytest.raises(FileNotFoundError, match="nothing-here"):
            tokpack.Dataset(server.url + "/nothing-here")
        dead = server.url
    with pytest.raises(RuntimeError, match=r"unavailable: " + dead):
        tokpack.Dataset(dead + "/data")
    with pytest.raises(ValueError, match="ftp"):
        tokpack.Dataset("ftp://example.org/data")


def test_removing_the_cache_directory_mid_run_only_costs_downloads(chunked, cache):
    want = local_batches(chunked / "data")
    with RangeServer(chunked) as server:
        loader = tokpack.Loader(server.url + "/data", **KW)
        for i, batch in enumerate(loader):
            np.testing.assert_array_equal(batch["input_ids"], want[i], err_msg=f"step {i}")
            if i in (3, 10):
                # rm -rf; prefetches may be adding chunks meanwhile
                shutil.rmtree(cache, ignore_errors=True)
        assert i == len(want) - 1
    assert cache_bytes(cache) > 0, "the cache was not made again"


def test_a_cache_too_small_for_a_chunk_reads_uncached_with_one_warning(chunked, cache,
                                                                     monkeypatch, capfd):
    # The same path as a full disk: the chunk cannot be stored, so it is served
    # from memory (verified as ever) and the cache stays empty.
    monkeypatch.setenv("TOKPACK_CACHE_BYTES", str(CHUNK // 2))
    want = local_batches(chunked / "data")
    with RangeServer(chunked) as server:
        loader = tokpack.Loader(server.url + "/data", **KW)
        got = [b["input_ids"].copy() for b in loader]
    for i, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(a, b, err_msg=f"step {i}")
    assert len(got) == len(want)
    assert cache_bytes(cache) <= CHUNK // 2  # only files' short last chunks fit
    err = capfd.readouterr().err
    assert err.count("reading uncached") == 1, err


# Opens a URL the way a user would; the parent interrupts it.
OPEN_URL = textwrap.dedent("""
    import sys, tokpack
    if sys.argv[1] == "Dataset":
        tokpack.Dataset(sys.argv[2])
    else:
        tokpack.Loader(sys.argv[2], seq_len=8, batch_size=1)
""")


def interrupt_once_waiting(cmd, tmp_path):
    """Runs cmd against a server that never answers, sends SIGINT once the
    server has its request, and returns (returncode, stderr)."""
    # Without Ctrl-C the open would wait for 8 stalls of an hour each.
    env = dict(os.environ, TOKPACK_CACHE_DIR=str(tmp_path / "cache"),
               TOKPACK_HTTP_STALL_SECONDS="3600", TOKPACK_HTTP_ATTEMPTS="8")
    with StalledServer() as server:
        # SIGINT at its default even where the suite runs with it ignored (an
        # ignored SIGINT is inherited, and Python then installs no handler).
        proc = subprocess.Popen([*cmd, server.url + "/data"], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
        try:
            assert server.connected.wait(120), "the opener never reached the server"
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=60)  # generous: a loaded 2-core machine
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    return proc.returncode, err


@pytest.mark.parametrize("opener", ["Dataset", "Loader"])
def test_ctrl_c_interrupts_opening_a_url_whose_server_hangs(opener, tmp_path):
    code, err = interrupt_once_waiting([sys.executable, "-c", OPEN_URL, opener], tmp_path)
    assert code != 0 and "KeyboardInterrupt" in err, err


def test_sigint_stops_the_cli_opening_a_url_whose_server_hangs(tokpack_bin, tmp_path):
    code, err = interrupt_once_waiting([tokpack_bin, "info"], tmp_path)
    assert code == 130 and "cancelled" in err, err


def test_the_cli_reports_running_out_of_memory_instead_of_aborting(chunked, tmp_path,
                                                                   tokpack_bin):
    # A manifest that claims a 3 GiB .idx in 1 GiB chunks (under the resident
    # cap): its first chunk's buffer is more than the 512 MiB of address space
    # the CLI gets here, so the allocation fails before any chunk is asked for.
    import json
    import resource
    data = tmp_path / "web" / "data"
    shutil.copytree(chunked / "data", data)
    m = json.loads((data / "manifest.json").read_text())
    m["chunk_bytes"] = 1 << 30
    for shard in m["shards"]:
        for f in ("bin", "idx"):
            shard[f]["xxh3_64"] = shard[f]["xxh3_64"][:1]
    m["shards"][0]["idx"]["bytes"] = 3 << 30
    m["shards"][0]["idx"]["xxh3_64"] *= 3
    m["fingerprint"] = fingerprint(m)
    (data / "manifest.json").write_text(json.dumps(m))

    def limit_memory():
        resource.setrlimit(resource.RLIMIT_AS, (512 << 20, 512 << 20))

    env = dict(os.environ, TOKPACK_CACHE_DIR=str(tmp_path / "cache"))
    with RangeServer(tmp_path / "web") as server:
        proc = subprocess.run([tokpack_bin, "info", server.url + "/data"], env=env,
                              capture_output=True, text=True, preexec_fn=limit_memory,
                              timeout=120)
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert "tokpack info: error: out of memory" in proc.stderr, proc.stderr


def test_four_processes_download_each_chunk_once_per_node(chunked, cache):
    code = textwrap.dedent("""
        import sys, tokpack
        loader = tokpack.Loader(sys.argv[1], seq_len=64, batch_size=8, seed=int(sys.argv[2]),
                                shuffle=False, epochs=1, as_="numpy")
        print(sum(1 for _ in loader))
    """)
    # Big enough to hold the whole dataset: the test is about sharing, not eviction.
    env = dict(os.environ, TOKPACK_CACHE_BYTES=str(64 << 20))
    with RangeServer(chunked) as server:
        procs = [subprocess.Popen([sys.executable, "-c", code, server.url + "/data", str(i)],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for i in range(4)]
        outs = [p.communicate(timeout=120) for p in procs]
        assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
        with server.lock:
            # Each open reads the manifest and looks for a removal list.
            data_gets = {k: n for k, n in server.requests.items()
                         if not k[0].endswith(("manifest.json", "removed.json"))}
    assert data_gets and max(data_gets.values()) == 1, sorted(data_gets.items())[:5]
    # nearly every chunk was needed (an epoch drops the stream's last partial
    # batch, so the final chunk of the last .bin may go unread)
    ds = tokpack.Dataset(chunked / "data")
    files = ds.manifest["shards"]
    chunks = sum(len(s[kind]["xxh3_64"]) for s in files for kind in ("bin", "idx"))
    assert chunks - 1 <= len(data_gets) <= chunks


@pytest.fixture
def moto(monkeypatch):
    with MotoServer() as server:
        yield server


def test_push_then_read_s3_through_moto_with_signatures_checked(chunked, cache, moto,
                                                                  monkeypatch, run_tokpack):
    moto.setenv(monkeypatch)
    moto.client().create_bucket(Bucket="corpora")
    run_tokpack("push", chunked / "data", "s3://corpora/web/v1", env=dict(os.environ))
    again = run_tokpack("push", chunked / "data", "s3://corpora/web/v1", check=False,
                        env=dict(os.environ))
    assert again.returncode == 1 and "already holds a dataset" in again.stderr
    keys = {o["Key"] for o in moto.client().list_objects_v2(Bucket="corpora")["Contents"]}
    assert "web/v1/manifest.json" in keys
    assert any(k.startswith("web/v1/g-") and k.endswith("/tokenizer.model") for k in keys)
    want = local_batches(chunked / "data")
    check_equal_within_limit("s3://corpora/web/v1", want, cache)
    # a wrong secret is refused by the store, and the error says so
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    with pytest.raises(RuntimeError, match="access denied"):
        tokpack.Dataset("s3://corpora/web/v1")


def test_build_output_s3_multipart_push_and_reads_through_a_faulty_proxy(
        chunked, cache, moto, tmp_path, monkeypatch, run_tokpack, spm_model):
    # A file above --part-bytes goes up in parts: make a shard of more than 5 MiB.
    rng = random.Random(8)
    src = write_jsonl(tmp_path / "big.jsonl", [random_text(rng, 400, 900) for _ in range(4500)])
    moto.client().create_bucket(Bucket="big")
    moto.setenv(monkeypatch)
    run_tokpack("build", "-i", src, "-o", "s3://big/ds", "-t", spm_model, "--quiet",
                env=dict(os.environ))
    run_tokpack("build", "-i", src, "-o", tmp_path / "local", "-t", spm_model, "--quiet")
    size = (tmp_path / "local" / "shard-00000.bin").stat().st_size
    assert size > 5 << 20
    run_tokpack("push", tmp_path / "local", "s3://big/parts", "--part-bytes", 5 << 20,
                env=dict(os.environ))
    # Reads (GETs are always safe to retry) go through the faulty proxy.
    monkeypatch.setenv("TOKPACK_CACHE_BYTES", str(64 << 20))
    # The paths hold a random generation id, so random draws would differ per
    # run: a schedule makes each fault certain, then rate keeps faulting.
    with FaultProxy(moto.url, ["http503", "reset", "truncate"], rate=0.25, seed=5,
                    schedule=["http503", None, "reset", None, "truncate"]) as proxy:
        moto.setenv(monkeypatch, endpoint_url=proxy.url)
        local = tokpack.Dataset(tmp_path / "local")
        for url in ["s3://big/ds", "s3://big/parts"]:
            remote = tokpack.Dataset(url)
            assert remote.fingerprint == local.fingerprint
            for begin in [0, local.num_tokens // 3, local.num_tokens - 3000]:
                assert remote.tokens(begin, 3000).tolist() == local.tokens(begin, 3000).tolist()
        assert all(proxy.counts[f] > 0 for f in ["http503", "reset", "truncate"]), proxy.counts


def test_gs_urls_read_anonymously_and_with_hmac_keys(chunked, cache, moto, monkeypatch,
                                                     tmp_path):
    want = local_batches(chunked / "data")
    for var in ["GS_ACCESS_KEY_ID", "GS_SECRET_ACCESS_KEY"]:
        monkeypatch.delenv(var, raising=False)
    # A public bucket: unsigned GETs to the XML API's bucket/object paths.
    import shutil
    shutil.copytree(chunked / "data", tmp_path / "public" / "corpus")
    with RangeServer(tmp_path) as server:
        monkeypatch.setenv("TOKPACK_GCS_ENDPOINT", server.url)
        check_equal_within_limit("gs://public/corpus", want, cache)
        assert all(k[0].startswith("/public/corpus/") for k in server.requests)
    # HMAC keys: SigV4-signed requests (moto stands in for the XML API and checks them).
    moto.client().create_bucket(Bucket="private")
    moto.upload(chunked / "data", "s3://private/corpus")
    monkeypatch.setenv("TOKPACK_GCS_ENDPOINT", moto.url)
    monkeypatch.setenv("GS_ACCESS_KEY_ID", moto.access_key)
    monkeypatch.setenv("GS_SECRET_ACCESS_KEY", moto.secret_key)
    monkeypatch.setenv("TOKPACK_CACHE_DIR", str(tmp_path / "cache2"))
    check_equal_within_limit("gs://private/corpus", want, tmp_path / "cache2")


def test_explicit_storage_options_keep_datasets_and_loaders_apart(chunked, tmp_path,
                                                                  monkeypatch):
    # Whatever the environment says, each dataset uses the options it was given.
    monkeypatch.setenv("TOKPACK_CACHE_DIR", str(tmp_path / "from-environment"))
    monkeypatch.setenv("TOKPACK_HTTP_ATTEMPTS", "not-a-number")

    def options(name, limit):
        o = tokpack.StorageOptions()
        o.cache_dir = str(tmp_path / name)
        o.cache_bytes = limit
        return o

    want = local_batches(chunked / "data")
    with RangeServer(chunked) as server:
        url = server.url + "/data"
        big = tokpack.Dataset(url, storage=options("big", 64 << 20))
        small = tokpack.Dataset(url, storage=options("small", CACHE_LIMIT))
        first = tokpack.Loader(big, **KW)
        assert [b["input_ids"].tolist() for b in first] == [w.tolist() for w in want]
        # The same data again through the warm cache, while another loader
        # downloads through its own small one: each counts only its traffic.
        second = tokpack.Loader(tokpack.Dataset(url, storage=options("big", 64 << 20)), **KW)
        other = tokpack.Loader(small, **KW)
        for a, b in zip(second, other):
            np.testing.assert_array_equal(a["input_ids"], b["input_ids"])
            assert cache_bytes(tmp_path / "small") <= CACHE_LIMIT
        assert first.stats()["cache_misses"] > 0
        assert second.stats()["cache_misses"] == 0 and second.stats()["bytes_fetched"] == 0
        assert second.stats()["cache_hits"] > 0
        assert other.stats()["cache_misses"] > 0
    assert not (tmp_path / "from-environment").exists()
    with pytest.raises(ValueError, match="TOKPACK_HTTP_ATTEMPTS"):
        tokpack.Dataset(url)


def test_a_pickled_remote_dataset_reopens_with_its_own_storage_options(chunked, tmp_path,
                                                                       monkeypatch):
    # As a spawned DataLoader worker receives it: the explicit options come
    # along; the environment (here unusable) is not consulted.
    import pickle
    monkeypatch.setenv("TOKPACK_HTTP_ATTEMPTS", "not-a-number")
    o = tokpack.StorageOptions()
    o.cache_dir = str(tmp_path / "mine")
    o.http_attempts = 3
    with RangeServer(chunked) as server:
        ds = tokpack.Dataset(server.url + "/data", storage=o)
        again = pickle.loads(pickle.dumps(ds))
        assert again.doc(7).tolist() == ds.doc(7).tolist()
        assert again._storage.cache_dir == o.cache_dir and again._storage.http_attempts == 3
