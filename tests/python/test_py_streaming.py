"""A dataset several times larger than the chunk cache, streamed from a
loopback HTTP server by two ranks that share one cache directory (one node):
with shuffle="window" an epoch downloads each chunk about once, and the
cache's bytes on disk never pass its limit."""
import random

import pytest

from conftest import random_text, write_jsonl
from remote_servers import RangeServer
from test_py_remote import cache_bytes

tokpack = pytest.importorskip("tokpack")

SEQ_LEN = 16
CHUNK = 8192  # 4096 uint16 tokens: a window unit is 2 chunks (511 samples of 16 tokens).
CACHE_LIMIT = 11 * CHUNK  # Two windows of 4 chunks (2 units) fit, with room to spare.
WINDOW_CHUNKS = 4
KW = dict(seq_len=SEQ_LEN, batch_size=8, seed=3, world_size=2, threads=2, as_="numpy")


@pytest.fixture(scope="module")
def big(tmp_path_factory, spm_model):
    """A dataset of many cache chunks under root/data: (root, .bin bytes)."""
    root = tmp_path_factory.mktemp("streaming")
    rng = random.Random(11)
    src = write_jsonl(root / "corpus.jsonl", [random_text(rng, 20, 120) for _ in range(3000)])
    tokpack.build(src, root / "data", spm_model, shard_tokens=60000, chunk_bytes=CHUNK,
                  threads=2)
    manifest = tokpack.Dataset(root / "data").manifest
    return root, sum(s["bin"]["bytes"] for s in manifest["shards"])


@pytest.fixture
def node_cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("TOKPACK_CACHE_DIR", str(d))
    monkeypatch.setenv("TOKPACK_CACHE_BYTES", str(CACHE_LIMIT))
    return d


def bin_bytes_served(server):
    """Bytes of .bin ranges the server was asked for (all requests)."""
    total = 0
    with server.lock:
        for (path, rng), count in server.requests.items():
            if path.endswith(".bin") and rng:
                a, _, b = rng[len("bytes="):].partition("-")
                total += (int(b) - int(a) + 1) * count
    return total


def run_node(url, cache_dir, **kw):
    """Ranks 0 and 1 of a world of 2, stepped in lockstep in this process,
    each with its own Dataset (so its own cache handles, as two processes
    would have). Checks the cache bound between batches; returns the node's
    bytes fetched (the loaders' own counters) and the steps run."""
    loaders = [tokpack.Loader(tokpack.Dataset(url), rank=r, **KW, **kw) for r in (0, 1)]
    its = [iter(loader) for loader in loaders]
    steps = 0
    while True:
        batches = [next(it, None) for it in its]
        if batches[0] is None:
            assert batches[1] is None, "ranks run the same number of steps"
            break
        assert cache_bytes(cache_dir) <= CACHE_LIMIT, f"step {steps}"
        steps += 1
    return sum(loader.stats()["bytes_fetched"] for loader in loaders), steps


def test_a_window_epoch_fetches_each_chunk_about_once_within_the_cache_limit(big, node_cache):
    root, bin_bytes = big
    assert bin_bytes >= 6 * CACHE_LIMIT, "the dataset must be several times the cache"
    with RangeServer(root) as server:
        fetched, steps = run_node(server.url + "/data", node_cache, shuffle="window",
                                  window_chunks=WINDOW_CHUNKS, epochs=1)
        served = bin_bytes_served(server)
    assert steps * 2 * KW["batch_size"] * SEQ_LEN > 0.9 * bin_bytes / 2  # A whole epoch.
    # Each chunk once, plus a little slack (a window's prefetch at the edge).
    assert fetched <= 1.1 * bin_bytes + 2 * CHUNK, (fetched, bin_bytes)
    assert served <= 1.1 * bin_bytes + 2 * CHUNK, (served, bin_bytes)
    assert fetched >= bin_bytes - 2 * CHUNK  # The counter sees the downloads.


def test_full_shuffle_under_the_same_cache_fetches_more_than_the_dataset(big, node_cache):
    # What the window mode avoids, measured the same way: the bound above is
    # not met by construction.
    root, bin_bytes = big
    with RangeServer(root) as server:
        fetched, steps = run_node(server.url + "/data", node_cache, shuffle="full",
                                  max_steps=bin_bytes // CHUNK // 2)
    assert fetched > 1.5 * bin_bytes, (fetched, bin_bytes, steps)
