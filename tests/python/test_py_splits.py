"""Held-out splits (split=, split_index=) on a real built dataset: parts are
disjoint by document content and cover the dataset, the same in another
process, blend and resume in a Loader, and `tokpack info --split` shows them."""
import collections
import json
import pickle

import numpy as np
import pytest

from conftest import run_python

tokpack = pytest.importorskip("tokpack")

SPLIT = "8,1,1"


def documents(ds):
    return [tuple(int(t) for t in ds.doc(i)) for i in range(len(ds))]


def parts(path, split=SPLIT, n=3):
    return [tokpack.Dataset(path, split=split, split_index=j) for j in range(n)]


def test_parts_are_disjoint_by_document_and_cover_the_dataset(packed):
    path, _ = packed
    whole = collections.Counter(documents(tokpack.Dataset(path)))
    assert max(whole.values()) == 1, "the generated documents are distinct"
    got = [collections.Counter(documents(p)) for p in parts(path)]
    assert sum(got, collections.Counter()) == whole
    for a in range(3):
        for b in range(a + 1, 3):
            assert not set(got[a]) & set(got[b]), (a, b)
    sizes = [sum(g.values()) for g in got]
    assert sizes[0] > 6 * sizes[1] and sizes[1] > 0 and sizes[2] > 0
    views = parts(path)
    assert sum(v.num_tokens for v in views) == tokpack.Dataset(path).num_tokens
    assert len({v.fingerprint for v in views} | {tokpack.Dataset(path).fingerprint}) == 4
    # The part's tokens read as its documents, one after another.
    v = views[1]
    docs = np.concatenate([v.doc(i) for i in range(len(v))])
    assert np.array_equal(v.tokens(0, v.num_tokens), docs)
    assert "split='8,1,1', split_index=1" in repr(v)


def test_parts_are_the_same_in_another_process_and_after_pickling(packed):
    path, _ = packed
    code = (
        "import sys, json, tokpack, hashlib\n"
        "out = []\n"
        "for j in range(3):\n"
        "    d = tokpack.Dataset(sys.argv[1], split='0.8, 0.1, 0.1', split_index=j)\n"
        "    h = hashlib.sha256(d.tokens(0, d.num_tokens).tobytes()).hexdigest()\n"
        "    out.append([d.fingerprint, len(d), h])\n"
        "print(json.dumps(out))\n")
    proc = run_python(code, path)
    assert proc.returncode == 0, proc.stderr
    import hashlib
    here = [[p.fingerprint, len(p), hashlib.sha256(p.tokens(0, p.num_tokens).tobytes()).hexdigest()]
            for p in parts(path)]
    assert json.loads(proc.stdout) == here
    again = pickle.loads(pickle.dumps(parts(path)[2]))
    assert again.fingerprint == here[2][0] and len(again) == here[2][1]


def test_a_split_blends_in_a_loader_and_resumes_exactly(packed, packed_small):
    path, _ = packed
    kw = dict(seq_len=32, batch_size=4, seed=3)

    def make():
        train = tokpack.Dataset(path, split=SPLIT, split_index=0)
        return tokpack.Loader({train: 0.8, packed_small[0]: 0.2}, **kw)

    loader = make()
    for _ in range(5):
        next(loader)
    state = loader.state_dict()
    want = [next(loader)["input_ids"].tolist() for _ in range(4)]
    resumed = make()
    resumed.load_state_dict(state)
    assert [next(resumed)["input_ids"].tolist() for _ in range(4)] == want
    # A list of (dataset, weight) pairs takes a split as well.
    held_out = tokpack.Dataset(path, split=SPLIT, split_index=1)
    listed = tokpack.Loader([(held_out, 1.0)], seq_len=32, batch_size=4, shuffle=False, epochs=1)
    rows = [r for b in listed for r in b["input_ids"].tolist()]
    assert len(rows) == (held_out.num_tokens - 1) // 32 // 4 * 4
    assert rows[0] == held_out.tokens(0, 32).tolist()
    # The cursor of part 0 is not one of part 1: the fingerprints differ.
    other = tokpack.Loader({held_out: 0.8, packed_small[0]: 0.2}, **kw)
    with pytest.raises(ValueError, match="fingerprint"):
        other.load_state_dict(state)


def test_bad_splits_are_refused_naming_option_and_value(packed):
    path, _ = packed
    with pytest.raises(ValueError, match=r"split '9,x': 'x' is not a non-negative number"):
        tokpack.Dataset(path, split="9,x")
    with pytest.raises(ValueError, match="every weight is 0"):
        tokpack.Dataset(path, split="0,0")
    with pytest.raises(ValueError, match=r"split_index 3 is out of range for split '8,1,1'"):
        tokpack.Dataset(path, split=SPLIT, split_index=3)
    with pytest.raises(ValueError, match="split '1,0,1' part 1 holds no documents"):
        tokpack.Dataset(path, split="1,0,1", split_index=1)


def test_info_shows_each_part(packed, run_tokpack):
    path, _ = packed
    views = parts(path, "949,50,1")
    text = run_tokpack("info", path, "--split", "949,50,1").stdout
    assert "split        949,50,1 (normalized 949,50,1" in text
    # How the parts are drawn: runs of documents (one document each below
    # 4097 documents) dealt out by a keyed permutation, not the tail.
    n = len(tokpack.Dataset(path))
    assert f"drawn as    {n} runs of 1 consecutive documents" in text, text
    info = json.loads(run_tokpack("info", path, "--json", "--split", "0.949,0.05,0.001").stdout)
    assert info["split"]["normalized"] == "949,50,1"
    assert info["split"]["run_documents"] == 1 and info["split"]["runs"] == n
    runs = [p["runs"] for p in info["split"]["parts"]]
    assert sum(runs) == n and all(abs(r - n * w / 1000) < 1 for r, w in zip(runs, [949, 50, 1]))
    for j, v in enumerate(views):
        assert (f"part {j:<6} {[949, 50, 1][j]}/1000: {runs[j]} runs, {len(v)} documents, "
                f"{v.num_tokens} tokens, fingerprint {v.fingerprint}") in text
    assert [(p["weight"], p["documents"], p["tokens"], p["fingerprint"])
            for p in info["split"]["parts"]] == [
                (w, len(v), v.num_tokens, v.fingerprint) for w, v in zip([949, 50, 1], views)]
    empty = run_tokpack("info", path, "--split", "1,0,1").stdout
    assert "0 runs, 0 documents, 0 tokens" in empty and "(empty: cannot be opened)" in empty
    bad = run_tokpack("info", path, "--split", "1,,2", check=False)
    assert bad.returncode != 0 and "split '1,,2'" in bad.stderr
    # show takes the dataset options as flags: the part's first document.
    shown = run_tokpack("show", path, "--split", "949,50,1", "--split-index", "2").stdout
    assert " ".join(str(t) for t in views[2].doc(0)) in shown


def test_the_documented_split_example_runs(packed, packed_small):
    from doc_examples import doc_example

    code = doc_example("python.md", "held-out-split")
    code = code.replace('"data/web"', repr(packed[0])).replace('"data/code"', repr(packed_small[0]))
    scope = {"tokpack": tokpack}
    exec(compile(code, "docs/python.md", "exec"), scope)
    assert scope["val_batches"] > 0 and len(scope["valid"]) > 0
