"""tokpack with JAX on CPU: as_="jax" batches are zero-copy jax.Arrays in
JAX's integer width, survive JAX's asynchronous dispatch, take their rank
from jax.distributed (two real processes), and docs/jax.md's example runs."""
import json
import math
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

tokpack = pytest.importorskip("tokpack")
jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

from doc_examples import doc_example  # noqa: E402

WORKER = Path(__file__).parent / "scripts" / "jax_worker.py"


@pytest.fixture(autouse=True)
def x64_off():
    # JAX's default; each test that wants x64 turns it on in a context.
    assert not jax.config.jax_enable_x64


def address(array):
    return np.asarray(array).__array_interface__["data"][0]


def test_jax_batches_view_the_batch_memory_without_a_copy(packed):
    path, _ = packed
    loader = tokpack.Loader(path, seq_len=16, batch_size=4, seed=3, as_="jax")
    arrays = loader._core.next()  # the batch as tokpack arrays, converted as __next__ does
    x = loader._convert(arrays[0])
    assert isinstance(x, jax.Array) and x.dtype == jnp.int32
    assert x.unsafe_buffer_pointer() == address(arrays[0])
    # Through the public API: the values are the batch, from a ring of 2 buffers.
    reference = tokpack.Loader(path, seq_len=16, batch_size=4, seed=3, dtype="int32",
                               as_="numpy")
    next(reference)
    loader = tokpack.Loader(path, seq_len=16, batch_size=4, seed=3, prefetch=2, as_="jax")
    next(loader)
    pointers = set()
    for _ in range(20):
        batch, want = next(loader), next(reference)
        assert set(batch) == {"input_ids", "labels"}
        np.testing.assert_array_equal(np.asarray(batch["input_ids"]), want["input_ids"])
        np.testing.assert_array_equal(np.asarray(batch["labels"]), want["labels"])
        pointers.add(batch["input_ids"].unsafe_buffer_pointer())
        del batch
    assert len(pointers) <= 2
    # document boundaries: int32 jax arrays too
    b = next(tokpack.Loader(path, seq_len=16, batch_size=2, document_boundaries=True,
                            as_="jax"))
    assert b["position_ids"].dtype == jnp.int32 and b["position_ids"].shape == (2, 16)
    assert b["cu_seqlens"].dtype == jnp.int32 and int(b["cu_seqlens"][-1]) == 32


def test_a_jax_array_keeps_its_batch_alive(packed):
    path, _ = packed
    loader = tokpack.Loader(path, seq_len=16, batch_size=2, prefetch=1, as_="jax")
    labels = next(loader)["labels"]
    expected = np.array(labels)  # a copy
    with pytest.raises(RuntimeError, match="still held"):
        next(loader)  # raised at once: the caller holds the only buffer
    del loader
    np.testing.assert_array_equal(np.asarray(labels), expected)
    loader = tokpack.Loader(path, seq_len=16, batch_size=2, prefetch=1, as_="jax")
    for _ in range(5):
        next(loader)  # each batch is released before the next is asked for


def test_a_loop_running_ahead_of_jax_waits_for_buffers_instead_of_failing(packed):
    path, _ = packed

    @jax.jit
    def step(acc, x):
        # Slow enough that dispatch runs ahead of it; the result depends on x.
        # Integers only: on this project's CI machine (AMD EPYC, jax 0.10.2)
        # float code XLA compiled after tokpack opened a multi-shard dataset
        # sometimes returned NaN (see the issue 17 note), which would hide
        # what this test checks.
        w = x[:, :, None] * jnp.ones((1, 1, 64), jnp.int32)
        for _ in range(10):
            w = (w @ jnp.ones((64, 64), jnp.int32)) % 1009
        # w's sum is never negative, but XLA cannot know it: this keeps w
        # alive (it would fold 0 * w.sum() away for integers).
        return acc + x.sum() + jnp.minimum(w.sum(), 0)

    steps = 30
    loader = tokpack.Loader(path, seq_len=64, batch_size=8, seed=5, prefetch=2, as_="jax")
    acc = jnp.zeros((), jnp.int32)
    for _, batch in zip(range(steps), loader):
        acc = step(acc, batch["input_ids"])
    reference = tokpack.Loader(path, seq_len=64, batch_size=8, seed=5, dtype="int32",
                               as_="numpy")
    want = sum(int(next(reference)["input_ids"].sum()) for _ in range(steps))
    assert int(acc) == want  # no buffer was refilled under a pending computation


def test_int64_needs_jax_enable_x64_and_is_never_cast_silently(packed):
    path, _ = packed
    for dtype in ("int64", np.int64, jnp.int64):
        with pytest.raises(ValueError, match='jax_enable_x64.*dtype="int32"'):
            tokpack.Loader(path, seq_len=16, dtype=dtype, as_="jax")
    assert next(tokpack.Loader(path, seq_len=16, batch_size=2, dtype=jnp.int32,
                               as_="jax"))["input_ids"].dtype == jnp.int32
    with jax.enable_x64(True):
        loader = tokpack.Loader(path, seq_len=16, batch_size=2, as_="jax")
        assert loader.options["dtype"] == "int64"
        arrays = loader._core.next()
        x = loader._convert(arrays[0])
        assert x.dtype == jnp.int64 and x.unsafe_buffer_pointer() == address(arrays[0])
        assert next(loader)["labels"].dtype == jnp.int64
    with pytest.raises(ValueError, match="switched off"):
        next(loader)


def test_jax_with_a_cuda_device_is_refused(packed):
    path, _ = packed
    with pytest.raises(ValueError, match="jax.device_put"):
        tokpack.Loader(path, seq_len=16, device="cuda", as_="jax")


def test_numpy_batches_go_through_dlpack_into_jax_and_read_only_data_says_why_not(packed):
    path, _ = packed
    batch = next(tokpack.Loader(path, seq_len=16, batch_size=4, dtype="int32", as_="numpy"))
    x = batch["input_ids"]
    assert x.flags.writeable
    assert jnp.from_dlpack(x).unsafe_buffer_pointer() == address(x)
    frozen = x.view()
    frozen.flags.writeable = False
    with pytest.raises(BufferError, match="readonly"):
        jnp.from_dlpack(frozen)
    ds = tokpack.Dataset(path)
    with pytest.raises(BufferError, match="readonly"):
        jnp.from_dlpack(ds.doc(3))
    with pytest.raises(BufferError, match="copy=True"):
        jnp.from_dlpack(ds._core.document(3))
    np.testing.assert_array_equal(np.asarray(jnp.asarray(ds.doc(3))), ds.doc(3))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_processes(argvs, cwd):
    """Runs one process per argv with no RANK / WORLD_SIZE in its
    environment; returns their stdouts, failing with their stderrs."""
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
    env.update(OMP_NUM_THREADS="1", JAX_PLATFORMS="cpu")
    procs = [subprocess.Popen([sys.executable, *map(str, argv)], env=env, cwd=cwd,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for argv in argvs]
    outs, errors = [], []
    for p in procs:
        try:
            out, err = p.communicate(timeout=400)
        finally:
            p.kill()
        outs.append(out)
        if p.returncode != 0:
            errors.append(err[-4000:])
    assert not errors, errors
    return outs


@pytest.mark.timeout(600)
def test_jax_processes_read_disjoint_slices_of_each_global_batch(packed, tmp_path):
    path, _ = packed
    port = free_port()
    run_processes([[WORKER, path, port, i, tmp_path / f"{i}.json"] for i in (0, 1)], tmp_path)
    got = [json.loads((tmp_path / f"{i}.json").read_text()) for i in (0, 1)]
    assert [(g["rank"], g["world_size"], g["process_index"]) for g in got] == [(0, 2, 0),
                                                                              (1, 2, 1)]
    assert not any(g["torch_imported"] for g in got)  # the rank came from JAX
    whole = tokpack.Loader(path, seq_len=16, batch_size=6, seed=77, max_steps=6,
                           dtype="int32", as_="numpy")
    expected = [b["input_ids"].tolist() for b in whole]
    assert len(expected) == 6
    assert [a + b for a, b in zip(got[0]["rows"], got[1]["rows"])] == expected
    rows = [tuple(r) for g in got for b in g["rows"] for r in b]
    assert len(set(rows)) == len(rows)


@pytest.mark.timeout(600)
def test_the_documented_data_parallel_example_runs_on_two_processes(packed, tmp_path):
    path, _ = packed
    code = doc_example("jax.md", "data-parallel")
    code = code.replace('"data/web"', repr(path))
    code = code.replace('"localhost:1234"', repr(f"127.0.0.1:{free_port()}"))
    script = tmp_path / "train.py"
    script.write_text(code)
    outs = run_processes([[script, 0], [script, 1]], tmp_path)
    losses = []
    for rank, out in enumerate(outs):
        lines = [line for line in out.splitlines() if line.startswith("process ")]
        assert [line.split(" loss ")[0] for line in lines] == [
            f"process {rank}/2 step {s}" for s in (1, 2, 3)]
        losses.append([float(line.split(" loss ")[1]) for line in lines])
    assert losses[0] == losses[1]  # one computation over the global batch
    # a small random init predicts about uniformly over the 1000 tokens
    assert all(abs(loss - math.log(1000)) < 0.1 for loss in losses[0])
