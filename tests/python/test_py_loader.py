"""tokpack.Loader from Python: what a training script relies on (shapes,
order, epochs, resume, blending, stats, errors)."""
import collections
import json

import numpy as np
import pytest

tokpack = pytest.importorskip("tokpack")
torch = pytest.importorskip("torch")


def all_samples(path, seq_len):
    ds = tokpack.Dataset(path)
    return [ds.sample(i, seq_len) for i in range(ds.num_samples(seq_len))]


def rows(batch):
    x = np.asarray(batch["input_ids"])
    y = np.asarray(batch["labels"])
    return [np.concatenate([x[r], y[r, -1:]]) for r in range(x.shape[0])]


def test_batches_are_torch_tensors_of_the_requested_shape_and_dtype(packed):
    path, _ = packed
    for dtype, want in [("int64", torch.int64), ("int32", torch.int32), (torch.int32, torch.int32)]:
        loader = tokpack.Loader(path, seq_len=32, batch_size=4, seed=1, dtype=dtype)
        batch = next(loader)
        assert set(batch) == {"input_ids", "labels"}
        for t in batch.values():
            assert isinstance(t, torch.Tensor)
            assert t.dtype == want and tuple(t.shape) == (4, 32)
        # labels are the inputs shifted by one token
        assert torch.equal(batch["input_ids"][:, 1:], batch["labels"][:, :-1])
    batch = next(tokpack.Loader(path, seq_len=8, batch_size=2, as_="numpy"))
    assert isinstance(batch["input_ids"], np.ndarray) and batch["input_ids"].dtype == np.int64


def test_unshuffled_rows_are_the_datasets_samples_in_order(packed):
    path, _ = packed
    want = all_samples(path, 16)
    loader = tokpack.Loader(path, seq_len=16, batch_size=5, shuffle=False, epochs=1, as_="numpy")
    got = [r for b in loader for r in rows(b)]
    n = len(want) // 5 * 5  # the last partial global batch is dropped
    assert len(got) == n
    for i in range(n):
        np.testing.assert_array_equal(got[i], want[i])


def test_labels_same_equal_the_inputs_of_the_same_samples_in_the_same_order(packed):
    kw = dict(seq_len=32, batch_size=4, seed=5, as_="numpy")
    nxt = tokpack.Loader(packed[0], labels="next", **kw)
    same = tokpack.Loader(packed[0], labels="same", **kw)
    samples = all_samples(packed[0], 32)
    for _ in range(10):
        a, b = next(nxt), next(same)
        assert (b["input_ids"] == a["input_ids"]).all()
        assert (b["labels"] == b["input_ids"]).all()
        assert b["labels"].ctypes.data != b["input_ids"].ctypes.data  # its own array
        for row in rows(a):
            assert any((row == s).all() for s in samples)
    assert same.state_dict() == nxt.state_dict()
    with pytest.raises(ValueError, match="labels must be one of 'next', 'same'"):
        tokpack.Loader(packed[0], labels="shifted", **kw)


def test_the_documented_labels_check_runs(packed):
    from doc_examples import doc_example

    code = doc_example("python.md", "labels-check").replace('"data/web"', repr(packed[0]))
    exec(compile(code, "docs/python.md", "exec"), {"tokpack": tokpack})
    with pytest.raises(AssertionError):
        exec(compile(code.replace('labels="next"', 'labels="same"'), "docs/python.md", "exec"),
             {"tokpack": tokpack})


def test_one_shuffled_epoch_serves_every_sample_once_and_len_counts_it(packed):
    path, _ = packed
    want = collections.Counter(tuple(s) for s in all_samples(path, 24))
    loader = tokpack.Loader(path, seq_len=24, batch_size=1, seed=5, epochs=1)
    assert len(loader) == sum(want.values())
    got = collections.Counter(tuple(r) for b in loader for r in rows(b))
    assert got == want
    with pytest.raises(StopIteration):
        next(loader)
    # a different seed gives a different order of the same samples
    a = [tuple(rows(b)[0]) for _, b in zip(range(20), tokpack.Loader(path, seq_len=24, batch_size=1, seed=5))]
    b = [tuple(rows(b)[0]) for _, b in zip(range(20), tokpack.Loader(path, seq_len=24, batch_size=1, seed=6))]
    assert a != b


def test_max_steps_and_len_survive_a_resume(packed):
    path, _ = packed
    kw = dict(seq_len=32, batch_size=3, seed=11, max_steps=7)
    loader = tokpack.Loader(path, **kw)
    assert len(loader) == 7
    for _ in range(3):
        next(loader)
    state = loader.state_dict()
    resumed = tokpack.Loader(path, **kw)
    resumed.load_state_dict(state)
    assert resumed.step == 3 and len(resumed) == 7
    assert sum(1 for _ in resumed) == 4
    with pytest.raises(TypeError, match="endless"):
        len(tokpack.Loader(path, seq_len=32, batch_size=3))


def test_state_dict_is_plain_json_and_resumes_exactly(packed, tmp_path):
    path, _ = packed
    kw = dict(seq_len=16, batch_size=4, seed=3, threads=3, prefetch=3)
    reference = [b["input_ids"].clone() for _, b in zip(range(30), tokpack.Loader(path, **kw))]
    loader = tokpack.Loader(path, **kw)
    for _ in range(12):
        next(loader)
    state = loader.state_dict()
    assert json.loads(json.dumps(state)) == state
    # what a trainer does: torch.save in a checkpoint, torch.load (weights_only) later
    torch.save({"data": state}, tmp_path / "ckpt.pt")
    restored = torch.load(tmp_path / "ckpt.pt", weights_only=True)["data"]
    resumed = tokpack.Loader(path, **kw)
    resumed.load_state_dict(restored)
    for i in range(12, 30):
        assert torch.equal(next(resumed)["input_ids"], reference[i]), i
    # loading into a loader that already ran also rewinds it
    loader.load_state_dict(restored)
    assert torch.equal(next(loader)["input_ids"], reference[12])


def test_mismatched_or_malformed_states_are_refused(packed, packed_small):
    path, _ = packed
    state = tokpack.Loader(path, seq_len=16, batch_size=2, seed=1).state_dict()
    with pytest.raises(ValueError, match="seed"):
        tokpack.Loader(path, seq_len=16, batch_size=2, seed=2).load_state_dict(state)
    with pytest.raises(ValueError, match="seq_len"):
        tokpack.Loader(path, seq_len=32, batch_size=2, seed=1).load_state_dict(state)
    with pytest.raises(ValueError, match="fingerprint|dataset"):
        tokpack.Loader(packed_small[0], seq_len=16, batch_size=2, seed=1).load_state_dict(state)
    with pytest.raises(ValueError):
        tokpack.Loader(path, seq_len=16, batch_size=2, seed=1).load_state_dict({"hello": 1})
    # a different batch size (or world size) is allowed: the cursor is global
    tokpack.Loader(path, seq_len=16, batch_size=8, seed=1).load_state_dict(state)


def test_blending_from_a_dict_follows_the_weights(packed, packed_small):
    a, b = packed[0], packed_small[0]
    in_b = {tuple(s) for s in all_samples(b, 16)}
    loader = tokpack.Loader({a: 0.7, b: 0.3}, seq_len=16, batch_size=10, seed=2, max_steps=50)
    counts = collections.Counter(tuple(r) in in_b for batch in loader for r in rows(batch))
    assert counts[True] == 150 and counts[False] == 350  # exact: a deterministic schedule
    state = loader.state_dict()
    assert [p["weights"] for p in state["phases"]] == [[0.7, 0.3]]  # printed as given
    assert [s["consumed"] for s in state["sources"]] == [350, 150]
    # a list of (path, weight) pairs is the same thing
    pairs = tokpack.Loader([(a, 0.7), (b, 0.3)], seq_len=16, batch_size=10, seed=2, max_steps=50)
    assert torch.equal(next(pairs)["input_ids"],
                       next(tokpack.Loader({a: 0.7, b: 0.3}, seq_len=16, batch_size=10, seed=2))["input_ids"])


def test_document_boundaries_follow_the_index(packed):
    path, _ = packed
    ds = tokpack.Dataset(path)
    starts = {ds.document_extent(i)[0] for i in range(len(ds))}
    L = 64
    loader = tokpack.Loader(path, seq_len=L, batch_size=3, shuffle=False,
                            document_boundaries=True, max_steps=5)
    for step, batch in enumerate(loader):
        pos, cu = batch["position_ids"], batch["cu_seqlens"]
        assert pos.dtype == torch.int32 and cu.dtype == torch.int32
        want_cu = []
        for r in range(3):
            first = (step * 3 + r) * L  # stream offset of the row (unshuffled)
            want_pos = []
            seg = first
            for j in range(L):
                if j == 0 or first + j in starts:
                    seg = first + j
                    want_cu.append(r * L + j)
                want_pos.append(first + j - seg)
            assert pos[r].tolist() == want_pos
        want_cu.append(3 * L)
        assert cu.tolist() == want_cu


def test_stats_report_steps_waits_and_throughput(packed):
    path, _ = packed
    loader = tokpack.Loader(path, seq_len=32, batch_size=4, max_steps=20)
    for _ in loader:
        pass
    s = loader.stats()
    assert s["steps"] == 20
    assert s["bytes_served"] == 20 * 2 * 4 * 32 * 8
    assert 0 <= s["wait_seconds_last"] <= s["wait_seconds_max"] <= s["wait_seconds_total"]
    assert 0 <= s["wait_seconds_p50"] <= s["wait_seconds_p99"] <= s["wait_seconds_max"]
    assert s["wait_seconds_mean"] == pytest.approx(s["wait_seconds_total"] / 20)
    assert s["samples_per_second"] > 0 and s["tokens_per_second"] == pytest.approx(
        s["samples_per_second"] * 32)
    assert 0 <= s["wait_fraction"]


def test_rank_and_world_size_default_to_the_environment(packed, monkeypatch):
    path, _ = packed
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("WORLD_SIZE", "3")
    loader = tokpack.Loader(path, seq_len=16, batch_size=2, seed=9)
    assert (loader.rank, loader.world_size) == (2, 3)
    whole = tokpack.Loader(path, seq_len=16, batch_size=6, seed=9, rank=0, world_size=1)
    assert torch.equal(next(loader)["input_ids"], next(whole)["input_ids"][4:6])
    monkeypatch.delenv("RANK")
    monkeypatch.delenv("WORLD_SIZE")
    assert tokpack.Loader(path, seq_len=16, batch_size=2).world_size == 1


def test_bad_arguments_raise_the_python_exception_that_fits(packed, tmp_path):
    path, _ = packed
    with pytest.raises(FileNotFoundError, match="nowhere"):
        tokpack.Loader(tmp_path / "nowhere", seq_len=16)
    with pytest.raises(IndexError, match="too long"):
        tokpack.Loader(path, seq_len=10**7, batch_size=1)
    with pytest.raises(ValueError, match="batch_size"):
        tokpack.Loader(path, seq_len=16, batch_size=0)
    with pytest.raises(ValueError, match="shuffle"):
        tokpack.Loader(path, seq_len=16, shuffle="sideways")
    with pytest.raises(ValueError, match="dtype"):
        tokpack.Loader(path, seq_len=16, dtype="float32")
    with pytest.raises(ValueError, match="rank"):
        tokpack.Loader(path, seq_len=16, rank=4, world_size=4)
    with pytest.raises(ValueError, match="as_"):
        tokpack.Loader(path, seq_len=16, as_="tensorflow")
    with pytest.raises(ValueError, match="weight"):
        tokpack.Loader({path: -1.0}, seq_len=16)


def test_holding_every_buffer_is_an_error_not_a_hang(packed):
    path, _ = packed
    loader = tokpack.Loader(path, seq_len=16, batch_size=2, prefetch=2)
    held = [next(loader), next(loader)]
    with pytest.raises(RuntimeError, match="prefetch"):
        next(loader)
    del held
    assert next(loader)["input_ids"].shape == (2, 16)


def test_numpy_batches_are_writable_views_that_keep_their_batch_alive(packed):
    path, _ = packed
    loader = tokpack.Loader(path, seq_len=16, batch_size=2, prefetch=1, as_="numpy")
    x = next(loader)["input_ids"]
    assert x.flags.writeable  # so DLPack consumers take it (they cannot mark read-only)
    assert isinstance(x.base, memoryview) and isinstance(x.base.obj, tokpack._core.Array)
    t = torch.from_dlpack(x)
    assert t.data_ptr() == x.__array_interface__["data"][0]
    with pytest.raises(RuntimeError, match="still held"):
        next(loader)  # the array (through its base) holds the only buffer
    frozen = x.view()
    frozen.flags.writeable = False  # read-only data for a consumer that wants it
    # torch's DLPack import accepts read-only data (JAX's does not: test_py_jax.py)
    assert torch.from_dlpack(frozen).data_ptr() == t.data_ptr()
    del x, t, frozen
    assert next(loader)["labels"].shape == (2, 16)


def test_a_dataloader_that_would_collate_batches_is_a_type_error(packed):
    path, _ = packed
    DataLoader = torch.utils.data.DataLoader
    loader = tokpack.Loader(path, seq_len=16, batch_size=2, seed=4)
    for dl in (DataLoader(loader), DataLoader(loader, batch_size=4)):
        with pytest.raises(TypeError, match=r"batch_size=None.*TokpackTrainer"):
            iter(dl)
    assert loader.step == 0  # refused before a batch was taken
    passed = [b["input_ids"] for _, b in zip(range(3), DataLoader(loader, batch_size=None))]
    direct = tokpack.Loader(path, seq_len=16, batch_size=2, seed=4)
    assert all(torch.equal(p, next(direct)["input_ids"]) for p in passed)
    # accelerate's IterableDatasetShard, as a multi-process HF Trainer wraps the dataset
    accelerate_data = pytest.importorskip("accelerate.data_loader")
    shard = accelerate_data.IterableDatasetShard(loader, batch_size=2)
    with pytest.raises(TypeError, match="batch_size=None"):
        next(iter(DataLoader(shard, batch_size=2)))

    # Re-batching rows of tokpack batches on purpose is not refused.
    class Rows(torch.utils.data.IterableDataset):
        def __iter__(self):
            for batch in tokpack.Loader(path, seq_len=16, batch_size=2, max_steps=2):
                yield from batch["input_ids"]

    assert [tuple(b.shape) for b in DataLoader(Rows(), batch_size=4)] == [(4, 16)]


@pytest.mark.timeout(600)
def test_the_plain_hf_trainer_given_a_loader_raises_the_collation_error(packed, tmp_path):
    path, _ = packed
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(vocab_size=1000, hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=2, num_attention_heads=2,
                                      num_key_value_heads=2, max_position_embeddings=32)
    model = transformers.LlamaForCausalLM(config)
    args = transformers.TrainingArguments(output_dir=str(tmp_path), max_steps=1,
                                          per_device_train_batch_size=2, report_to=[],
                                          use_cpu=True, save_strategy="no")
    loader = tokpack.Loader(path, seq_len=32, batch_size=2, labels="same")
    trainer = transformers.Trainer(model=model, args=args, train_dataset=loader)
    with pytest.raises(TypeError, match="TokpackTrainer"):
        trainer.train()
