"""device="cuda": batches in GPU memory equal the CPU batches, stream-ordered.
Without a GPU (or a CUDA build) only the clear error is checked; the rest
skips. On a GPU machine: scripts/gpu_check.sh runs these and more."""
import pytest

tokpack = pytest.importorskip("tokpack")
torch = pytest.importorskip("torch")

gpu = pytest.mark.skipif(not (tokpack.cuda_available() and torch.cuda.is_available()),
                         reason="needs a CUDA GPU and a CUDA build of tokpack")


def test_without_a_usable_gpu_device_cuda_is_a_clear_error(packed):
    if tokpack.cuda_available():
        pytest.skip("a GPU is usable here")
    with pytest.raises(RuntimeError, match="CUDA|cuda"):
        tokpack.Loader(packed[0], seq_len=16, batch_size=2, device="cuda")
    with pytest.raises(ValueError, match="numpy"):
        tokpack.Loader(packed[0], seq_len=16, device="cuda", as_="numpy")
    with pytest.raises(ValueError, match="device"):
        tokpack.Loader(packed[0], seq_len=16, device="tpu")


@gpu
@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_a_thousand_device_batches_equal_the_cpu_batches(packed, dtype):
    kw = dict(seq_len=64, batch_size=4, seed=21, dtype=dtype, document_boundaries=True)
    cpu = tokpack.Loader(packed[0], **kw)
    dev = tokpack.Loader(packed[0], device="cuda", **kw)
    for step in range(1000):
        want, got = next(cpu), next(dev)
        for key in want:
            assert got[key].is_cuda
            assert torch.equal(got[key].cpu(), want[key]), (step, key)


@gpu
def test_device_cursor_resumes_exactly(packed):
    kw = dict(seq_len=32, batch_size=4, seed=5)
    ref = [b["input_ids"].clone() for _, b in zip(range(40), tokpack.Loader(packed[0], **kw))]
    dev = tokpack.Loader(packed[0], device="cuda", **kw)
    for _ in range(15):
        next(dev)
    state = dev.state_dict()
    again = tokpack.Loader(packed[0], device="cuda", **kw)
    again.load_state_dict(state)
    for i in range(15, 40):
        assert torch.equal(next(again)["input_ids"].cpu(), ref[i]), i


@gpu
def test_buffers_are_reused_only_after_the_consumer_stream_passes(packed):
    # The consumer reads each batch on its own stream after a long GPU sleep,
    # and drops the tensor at once: if a buffer were refilled before the
    # stream passed the release point, the sums would see later batches.
    kw = dict(seq_len=128, batch_size=8, seed=3, device_prefetch=2)
    ref = [b["input_ids"].sum().item() for _, b in
           zip(range(30), tokpack.Loader(packed[0], seq_len=128, batch_size=8, seed=3))]
    dev = tokpack.Loader(packed[0], device="cuda", **kw)
    stream = torch.cuda.Stream()
    sums = []
    with torch.cuda.stream(stream):
        for _ in range(30):
            x = next(dev)["input_ids"]  # from_dlpack orders `stream` after the copy
            torch.cuda._sleep(2_000_000)
            sums.append(x.sum())
            del x
    torch.cuda.synchronize()
    assert [s.item() for s in sums] == ref
