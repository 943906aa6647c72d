"""Zero-copy hand-off through DLPack and the buffer protocol, and the batch
lifetime rule: a batch's memory stays intact while anything views it."""
import gc

import numpy as np
import pytest

tokpack = pytest.importorskip("tokpack")
torch = pytest.importorskip("torch")


def data_ptr(a):
    return np.asarray(a).__array_interface__["data"][0]


def test_dlpack_consumers_share_the_batch_memory(packed):
    path, _ = packed
    loader = tokpack.Loader(path, seq_len=16, batch_size=4, as_="dlpack")
    x, y = next(loader).values()
    assert x.__dlpack_device__() == (1, 0)  # kDLCPU
    assert x.shape == (4, 16) and x.dtype == "int64" and not x.readonly
    t = torch.from_dlpack(x)
    n = np.from_dlpack(x)
    v = np.asarray(x)  # buffer protocol
    assert t.data_ptr() == data_ptr(n) == data_ptr(v)
    np.testing.assert_array_equal(t.numpy(), n)
    # an explicit copy is a different buffer with the same values
    c = np.from_dlpack(x, copy=True)
    assert data_ptr(c) != data_ptr(n)
    np.testing.assert_array_equal(c, n)
    # the int32 output and the document-boundary arrays export too
    b = next(tokpack.Loader(path, seq_len=16, batch_size=2, dtype="int32",
                            document_boundaries=True, as_="dlpack"))
    assert torch.from_dlpack(b["input_ids"]).dtype == torch.int32
    assert torch.from_dlpack(b["cu_seqlens"]).dim() == 1


def test_ring_buffers_are_reused_without_copies(packed):
    path, _ = packed
    loader = tokpack.Loader(path, seq_len=16, batch_size=4, prefetch=3)
    ptrs = {next(loader)["input_ids"].data_ptr() for _ in range(30)}
    assert len(ptrs) <= 3


def test_a_held_batch_stays_intact_while_the_ring_moves_on(packed):
    path, _ = packed
    reference = [b["input_ids"].clone() for _, b in
                 zip(range(40), tokpack.Loader(path, seq_len=16, batch_size=4, seed=8))]
    loader = tokpack.Loader(path, seq_len=16, batch_size=4, seed=8, prefetch=2)
    first = next(loader)
    view = first["input_ids"][1:3, 4:]  # a view keeps the batch alive too
    labels_np = first["labels"].numpy()
    del first
    for i in range(1, 40):  # the other ring slot is reused 39 times
        batch = next(loader)
        assert torch.equal(batch["input_ids"], reference[i])
        del batch
    assert torch.equal(view, reference[0][1:3, 4:])
    np.testing.assert_array_equal(labels_np[:, :-1], reference[0].numpy()[:, 1:])
    # ... and after the loader itself is gone
    del loader
    gc.collect()
    assert torch.equal(view, reference[0][1:3, 4:])


def test_releasing_a_batch_returns_its_buffer(packed):
    path, _ = packed
    loader = tokpack.Loader(path, seq_len=16, batch_size=2, prefetch=1)
    for _ in range(10):  # one buffer: each step reuses it once the last is released
        batch = next(loader)
        x = batch["input_ids"]
        del batch, x
    kept = next(loader)["labels"]
    with pytest.raises(RuntimeError, match="held"):
        next(loader)
    del kept
    next(loader)


def test_document_views_are_read_only_and_outlive_the_dataset(packed):
    path, texts = packed
    ds = tokpack.Dataset(path)
    doc = ds.doc(3)
    assert doc.dtype == np.uint16 and not doc.flags.writeable
    with pytest.raises(ValueError):
        doc[0] = 1
    arr = ds._core.document(3)
    # DLPack cannot mark memory read-only, so a view of the read-only mapping
    # is exported only as a copy
    with pytest.raises(BufferError, match="copy=True"):
        arr.__dlpack__()
    t = torch.from_dlpack(arr.__dlpack__(copy=True))
    np.testing.assert_array_equal(t.numpy(), doc)
    expected = doc.copy()
    del ds, arr
    gc.collect()
    np.testing.assert_array_equal(doc, expected)
