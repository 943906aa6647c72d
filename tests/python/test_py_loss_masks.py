"""Loss masks through the Python API: Dataset.loss_mask, the Loader's labels
(-100 exactly where the label's token carries no loss) and its loss_mask
array, in concat and best_fit, both labels modes, numpy and torch, a blend
with an unmasked dataset, a resume, and the trainable-token counts."""
import numpy as np
import pytest

from mask_data import prompt_half, with_loss_masks

tokpack = pytest.importorskip("tokpack")

SEQ = 32


@pytest.fixture(scope="module")
def masked(packed, tmp_path_factory):
    return with_loss_masks(packed[0], tmp_path_factory.mktemp("masked") / "data")


def stream_bits(path):
    """Each token's loss bit over the whole stream, from the documents."""
    ds = tokpack.Dataset(path)
    return np.concatenate([prompt_half(ds.doc(i)) for i in range(len(ds))]).astype(np.uint8)


def expected_labels(tokens, bits, start, labels):
    """The labels of the window at stream offset `start`: the named token
    (the next one for "next"), or -100 where its bit is 0."""
    shift = 1 if labels == "next" else 0
    named = tokens[start + shift:start + shift + SEQ]
    return np.where(bits[start + shift:start + shift + SEQ] == 1, named, -100)


def test_the_dataset_reads_its_masks(masked, packed):
    ds = tokpack.Dataset(masked)
    assert ds.has_loss_masks and not tokpack.Dataset(packed[0]).has_loss_masks
    bits = stream_bits(masked)
    assert np.array_equal(ds.loss_mask(0, ds.num_tokens), bits)
    assert np.array_equal(ds.loss_mask(13, 37), bits[13:50])
    assert tokpack.Dataset(packed[0]).loss_mask(5, 9).tolist() == [1] * 9
    trainable = sum(s["trainable_tokens"] for s in ds.manifest["shards"])
    assert trainable == int(bits.sum())


@pytest.mark.parametrize("labels", ["next", "same"])
@pytest.mark.parametrize("as_", ["numpy", "torch"])
def test_concat_labels_are_ignored_where_their_token_carries_no_loss(masked, labels, as_):
    if as_ == "torch":
        pytest.importorskip("torch")
    ds = tokpack.Dataset(masked)
    tokens, bits = ds.tokens(0, ds.num_tokens), stream_bits(masked)
    loader = tokpack.Loader(masked, seq_len=SEQ, batch_size=4, seed=3, shuffle=False,
                            labels=labels, loss_mask=True, dtype="int32", as_=as_)
    kept = 0
    for step in range(6):
        batch = {k: np.asarray(v) for k, v in next(loader).items()}
        assert batch["loss_mask"].dtype == np.uint8 and batch["loss_mask"].shape == (4, SEQ)
        for r in range(4):
            start = (step * 4 + r) * SEQ
            want = expected_labels(tokens, bits, start, labels)
            assert np.array_equal(batch["labels"][r], want), (step, r)
            assert np.array_equal(batch["loss_mask"][r], (want != -100).astype(np.uint8))
            kept += int((want != -100).sum())
    assert 0 < kept < 6 * 4 * SEQ
    assert loader.stats()["sources"][0]["trainable_tokens"] == kept


def test_best_fit_rows_carry_their_documents_masks(masked):
    ds = tokpack.Dataset(masked)
    bits = stream_bits(masked)
    tokens = ds.tokens(0, ds.num_tokens)
    starts = {int(tokens[ds.document_extent(i)[0]]) for i in range(len(ds))}
    loader = tokpack.Loader(masked, seq_len=SEQ, batch_size=4, seed=3, packing="best_fit",
                            labels="next", loss_mask=True, as_="numpy")
    checked = 0
    for _ in range(12):
        batch = next(loader)
        cu = batch["cu_seqlens"]
        flat_in, flat_lab = batch["input_ids"].reshape(-1), batch["labels"].reshape(-1)
        for a, b in zip(cu[:-1], cu[1:]):
            piece = flat_in[a:b]
            # A piece long enough to place that starts a document: find it.
            if b - a < 6 or int(piece[0]) not in starts:
                continue
            for i in range(len(ds)):
                off, n = ds.document_extent(i)
                if n >= b - a and np.array_equal(tokens[off:off + b - a], piece):
                    break
            else:
                continue
            named = np.arange(off + 1, off + (b - a))
            want = np.where(bits[named] == 1, tokens[named], -100)
            assert np.array_equal(flat_lab[a:b - 1], want)
            assert flat_lab[b - 1] == -100  # The piece's end, as without masks.
            checked += 1
        assert np.array_equal(batch["loss_mask"], (batch["labels"] != -100).astype(np.uint8))
    assert checked > 10


def test_an_unmasked_source_in_a_blend_trains_every_token(masked, packed):
    loader = tokpack.Loader({masked: 0.5, packed[0]: 0.5}, seq_len=SEQ, batch_size=8, seed=5,
                            as_="numpy")
    for _ in range(10):
        batch = next(loader)
    sources = loader.stats()["sources"]
    assert sources[1]["trainable_tokens"] == sources[1]["samples"] * SEQ
    assert 0 < sources[0]["trainable_tokens"] < sources[0]["samples"] * SEQ
    assert "loss_mask" not in batch


def test_a_resume_gives_the_same_labels(masked):
    def make():
        return tokpack.Loader(masked, seq_len=SEQ, batch_size=4, seed=8, loss_mask=True,
                              as_="numpy")
    first = make()
    for _ in range(5):
        next(first)
    state = first.state_dict()
    want = [{k: v.copy() for k, v in next(first).items()} for _ in range(4)]
    resumed = make()
    resumed.load_state_dict(state)
    for w in want:
        got = next(resumed)
        for key in ("input_ids", "labels", "loss_mask"):
            assert np.array_equal(got[key], w[key]), key
