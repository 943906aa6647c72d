"""packing="best_fit" from Python on a real built dataset (a sentencepiece
tokenizer with an EOS and no pad id, so rows are padded with EOS): the rows of
one epoch rebuild every document exactly once, labels are the ignore index at
every document edge and on the padding, position_ids and cu_seqlens mark each
piece, a run resumed in a new process continues identically, and a remote
dataset's plan lands in the node's cache directory."""
import collections
import json
import os
import textwrap

import numpy as np
import pytest

from conftest import run_python
from remote_servers import RangeServer

tokpack = pytest.importorskip("tokpack")

L = 64
KW = dict(seq_len=L, seed=5, packing="best_fit", as_="numpy", threads=2, prefetch=3)


def segments(batch):
    """(tokens, labels, position_ids, is_last_in_row) per segment of cu_seqlens."""
    ids = batch["input_ids"].reshape(-1)
    labels = batch["labels"].reshape(-1)
    pos = batch["position_ids"].reshape(-1)
    cu = batch["cu_seqlens"].tolist()
    assert cu[0] == 0 and cu[-1] == ids.size
    for a, b in zip(cu, cu[1:]):
        assert b // L == a // L or b % L == 0, "a segment crosses a row"
        yield ids[a:b], labels[a:b], pos[a:b], b % L == 0


def expected_pieces(ds):
    """Every non-empty document's pieces of at most L tokens."""
    want = collections.Counter()
    for i in range(ds.num_documents):
        doc = ds.doc(i).tolist()
        for p in range(0, len(doc), L):
            want[tuple(doc[p:p + L])] += 1
    return want


@pytest.mark.parametrize("labels,dtype", [("next", "int64"), ("same", "int64"),
                                          ("next", "int32"), ("same", "int32")])
def test_one_epoch_rebuilds_every_document_once(packed, labels, dtype):
    path, _ = packed
    ds = tokpack.Dataset(path)
    eos = ds.manifest["tokenizer"]["eos_id"]
    assert ds.manifest["tokenizer"].get("pad_id", -1) < 0 and eos >= 0  # Pads with EOS.
    loader = tokpack.Loader(path, batch_size=1, epochs=1, labels=labels, dtype=dtype, **KW)
    assert loader.options["packing"] == "best_fit"
    assert loader.options["max_docs_per_sequence"] == 0
    assert loader.options["document_boundaries"] is True
    assert loader.options["shuffle"] == "full"
    seen = collections.Counter()
    padlike = rows = 0
    for batch in loader:
        rows += 1
        assert batch["input_ids"].dtype == batch["labels"].dtype == np.dtype(dtype)
        for tokens, lab, pos, last in segments(batch):
            assert pos.tolist() == list(range(len(tokens)))
            if last and (lab == -100).all() and (tokens == eos).all():
                padlike += 1  # Padding, or a last piece that is just [eos].
                continue
            if labels == "next":
                assert lab[:-1].tolist() == tokens[1:].tolist()
                assert lab[-1] == -100
            else:
                assert lab[1:].tolist() == tokens[1:].tolist()
                assert lab[0] == -100
            seen[tuple(tokens.tolist())] += 1
    assert rows == loader.samples_per_source[0]
    want = expected_pieces(ds)
    assert not (seen - want), "pieces that are no document's, or twice"
    # What is missing can only be one-token [eos] pieces, taken for padding.
    missing = want - seen
    assert set(missing) <= {(eos,)} and sum(missing.values()) <= padlike, list(missing)[:3]
    assert padlike <= rows


def test_max_docs_per_sequence_caps_documents(packed):
    path, _ = packed
    loader = tokpack.Loader(path, batch_size=4, max_steps=40, max_docs_per_sequence=2, **KW)
    assert loader.options["max_docs_per_sequence"] == 2
    for batch in loader:
        cu = batch["cu_seqlens"]
        starts = collections.Counter(int(c) // L for c in cu[:-1])
        # Two pieces and perhaps a padding segment per row.
        assert max(starts.values()) <= 3
    with pytest.raises(ValueError, match="max_docs_per_sequence"):
        tokpack.Loader(path, seq_len=L, batch_size=4, max_docs_per_sequence=2)
    with pytest.raises(ValueError, match="packing"):
        tokpack.Loader(path, seq_len=L, batch_size=4, packing="best_fit", shuffle="window")


def test_resume_in_a_new_process_is_identical(packed, tmp_path):
    path, _ = packed
    loader = tokpack.Loader(path, batch_size=4, max_steps=12, **KW)
    batches = [{k: v.copy() for k, v in b.items()} for b in loader]
    first = tokpack.Loader(path, batch_size=4, max_steps=12, **KW)
    for _, _ in zip(range(5), first):
        pass
    state = first.state_dict()
    (tmp_path / "state.json").write_text(json.dumps(state))
    assert "best_fit" in json.dumps(state)
    code = textwrap.dedent(f"""
        import json, sys
        import numpy as np
        import tokpack
        kw = {KW!r}
        loader = tokpack.Loader({path!r}, batch_size=4, max_steps=12, **kw)
        loader.load_state_dict(json.load(open(sys.argv[1])))
        out = {{}}
        for i, b in enumerate(loader):
            for k, v in b.items():
                out[f"{{k}}_{{i}}"] = v.copy()
        np.savez(sys.argv[2], **out)
    """)
    proc = run_python(code, tmp_path / "state.json", tmp_path / "rest.npz")
    assert proc.returncode == 0, proc.stderr
    rest = np.load(tmp_path / "rest.npz")
    assert len(rest.files) == 4 * 7
    for i, want in enumerate(batches[5:]):
        for k in ("input_ids", "labels", "position_ids", "cu_seqlens"):
            np.testing.assert_array_equal(rest[f"{k}_{i}"], want[k], err_msg=f"{k} step {i}")
    # Another packing setting refuses the cursor, naming it.
    other = tokpack.Loader(path, batch_size=4, max_docs_per_sequence=3, **KW)
    with pytest.raises(ValueError, match="max_docs_per_sequence"):
        other.load_state_dict(state)


def test_remote_plan_lands_in_the_cache_dir(packed, tmp_path, monkeypatch):
    path, _ = packed
    root = os.path.dirname(path)
    cache = tmp_path / "cache"
    monkeypatch.setenv("TOKPACK_CACHE_DIR", str(cache))
    local = [b["input_ids"].copy() for b in tokpack.Loader(path, batch_size=4, max_steps=6, **KW)]
    with RangeServer(root) as server:
        loader = tokpack.Loader(server.url + "/" + os.path.basename(path), batch_size=4,
                                max_steps=6, **KW)
        remote = [b["input_ids"].copy() for b in loader]
    for a, b in zip(local, remote):
        np.testing.assert_array_equal(a, b)
    assert len(remote) == len(local) == 6
    fingerprint = tokpack.Dataset(path).fingerprint
    plans = sorted((cache / "packing" / fingerprint).glob("s*.plan"))
    assert len(plans) == tokpack.Dataset(path).num_shards, sorted(cache.rglob("*"))


def test_docs_packed_varlen_example_runs(packed):
    pytest.importorskip("torch")
    from doc_examples import doc_example
    code = doc_example("python.md", "packed-varlen").replace('"data/web"', repr(packed[0]))
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr


def test_a_plan_made_ahead_by_tokpack_pack_is_loaded_not_rebuilt(tmp_path, packed_small,
                                                                  run_tokpack):
    import shutil
    data = tmp_path / "data"
    shutil.copytree(packed_small[0], data)
    run_tokpack("pack", data, "--seq-len", "48", "--max-docs-per-sequence", "3")
    code = textwrap.dedent(f"""
        import tokpack
        loader = tokpack.Loader({str(data)!r}, seq_len=48, batch_size=2, packing="best_fit",
                                max_docs_per_sequence=3, max_steps=2, as_="numpy")
        print(sum(1 for _ in loader))
    """)
    proc = run_python(code)
    assert proc.returncode == 0 and proc.stdout.strip() == "2", proc.stderr
    assert "planned" not in proc.stderr and "rebuilding" not in proc.stderr, proc.stderr
    # Other settings are another plan: the loader builds it, saying so.
    proc = run_python(code.replace("max_docs_per_sequence=3", "max_docs_per_sequence=0"))
    assert proc.returncode == 0 and "planned" in proc.stderr, proc.stderr
