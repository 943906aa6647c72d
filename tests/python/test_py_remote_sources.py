"""Many remote sources in one process: one prefetch pool and one set of HTTP
connections per storage settings, shared by every dataset and loader
(docs/remote.md, "Prefetch"). Each measurement runs in a fresh interpreter,
so that the loopback server's threads (in this process) are not counted."""
import json
import os
import shutil

import pytest

from conftest import run_python
from remote_servers import RangeServer

tokpack = pytest.importorskip("tokpack")

SOURCES = 200

# Prints this process's threads, its prefetch threads (named tp-prefetch by
# the library), its sockets and the batches' agreement with local reads.
CHILD = r"""
import json, os, sys
import numpy as np
import tokpack

def census():
    tasks = os.listdir("/proc/self/task")
    names = []
    for t in tasks:
        try:
            names.append(open(f"/proc/self/task/{t}/comm").read().strip())
        except OSError:
            pass
    sockets = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            sockets += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except OSError:
            pass
    return {"threads": len(tasks), "prefetch": names.count("tp-prefetch"), "sockets": sockets}

def batches(loader):
    return [b["input_ids"].copy() for b in loader]

kw = dict(seq_len=64, batch_size=8, seed=3, as_="numpy", max_steps=12)
what, urls, paths = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
out = {}
if what == "many":
    loader = tokpack.Loader(urls, **kw)
    got = batches(loader)
    out = census()  # While the loader, and so the pools, live.
    want = batches(tokpack.Loader(paths, **kw))
    out["same"] = all(np.array_equal(a, b) for a, b in zip(got, want)) and len(got) == len(want)
elif what == "two_loaders":
    half = len(urls) // 2
    a = tokpack.Loader(urls[:half], **kw)
    b = tokpack.Loader(urls[half:], **kw)
    for x, y in zip(a, b):
        pass
    out = census()
elif what == "other_settings":
    a = tokpack.Loader(urls[:2], **kw)
    s = tokpack.StorageOptions()
    s.cache_dir = os.environ["TOKPACK_CACHE_DIR"]
    s.prefetch_threads = 2
    b = tokpack.Loader([tokpack.Dataset(u, storage=s) for u in urls[2:4]], **kw)
    for x, y in zip(a, b):
        pass
    out = census()
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory, packed_small):
    """SOURCES copies (hard links) of one small dataset under one root."""
    root = tmp_path_factory.mktemp("sources")
    for i in range(SOURCES):
        shutil.copytree(packed_small[0], root / f"s{i:03d}", copy_function=os.link)
    return root


def run_child(what, served, server, tmp_path, n, **env):
    urls = [f"{server.url}/s{i:03d}" for i in range(n)]
    paths = [str(served / f"s{i:03d}") for i in range(n)]
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("TOKPACK_")}
    child_env.update(TOKPACK_CACHE_DIR=str(tmp_path / "cache"), **env)
    p = run_python(CHILD, what, json.dumps(urls), json.dumps(paths), env=child_env, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_many_sources_share_bounded_threads_and_sockets(served, tmp_path):
    with RangeServer(served) as server:
        r = run_child("many", served, server, tmp_path, SOURCES)
    assert r["same"], "remote batches differ from the local ones"
    # One pool of the default 8 prefetch threads, whatever the sources; the
    # loader's own threads besides; before the pools were shared, 200
    # sources made 1600 prefetch threads.
    assert r["prefetch"] == 8, r
    cores = os.cpu_count()
    assert r["threads"] <= 2 * cores + 16, r
    # At most http_concurrency (16) handles, each keeping libcurl's cache of
    # at most 5 connections; before, each source had handles of its own.
    assert r["sockets"] <= 5 * 16, r


def test_two_loaders_share_one_prefetch_pool(served, tmp_path):
    with RangeServer(served) as server:
        r = run_child("two_loaders", served, server, tmp_path, 8, TOKPACK_PREFETCH_THREADS="3")
    assert r["prefetch"] == 3, r


def test_other_storage_settings_get_a_pool_of_their_own(served, tmp_path):
    with RangeServer(served) as server:
        r = run_child("other_settings", served, server, tmp_path, 4,
                      TOKPACK_PREFETCH_THREADS="3")
    assert r["prefetch"] == 3 + 2, r
