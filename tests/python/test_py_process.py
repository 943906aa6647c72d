"""Process-level behaviour: the GIL is released while waiting, Ctrl-C
interrupts a blocked next(), fork and torch DataLoader workers are handled."""
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from child import Child
from conftest import run_python

tokpack = pytest.importorskip("tokpack")
torch = pytest.importorskip("torch")

# A loader whose every step takes seconds of planning in its own thread: rank
# 0 of a world of 2^31 - 1 ranks draws ~2^31 blended positions per step.
SLOW = "dict(seq_len=16, batch_size=1, rank=0, world_size=2**31 - 1, threads=1, prefetch=1)"


def test_ctrl_c_interrupts_a_blocked_next_and_loses_nothing(packed, packed_small):
    code = textwrap.dedent(f"""
        import sys, time, tokpack
        loader = tokpack.Loader({{sys.argv[1]: 0.5, sys.argv[2]: 0.5}}, **{SLOW})
        try:
            print("ready", flush=True)  # inside the try: a signal at any time is caught
            next(loader)
            print("batch arrived", flush=True)
        except KeyboardInterrupt:
            print("interrupted", loader.stats()["steps"], loader.step, flush=True)
    """)
    with Child([sys.executable, "-c", code, packed[0], packed_small[0]]) as child:
        assert child.stdout.line().strip() == "ready"
        time.sleep(1.0)  # most likely into the blocked next(); earlier is caught the same way
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        line = child.stdout.line().strip()
        reacted = time.monotonic() - sent
        returncode, _, err = child.finish()
    assert line == "interrupted 0 0", (line, err)
    # the wait polls for signals every 50 ms; a step here takes many seconds
    assert reacted < 3.0
    assert returncode == 0, err


def test_the_gil_is_released_while_next_waits(packed, packed_small):
    loader = tokpack.Loader({packed[0]: 0.5, packed_small[0]: 0.5}, **eval(SLOW))
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    t = threading.Thread(target=count)
    t.start()
    # SIGINT raises KeyboardInterrupt here even when pytest was started with it ignored.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            next(loader)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
        stop.set()
        t.join(timeout=60)
    # the other thread ran all along (about 1000 ticks in a second)
    assert len(ticks) > 100


def test_a_forked_child_gets_a_clear_error_and_the_parent_goes_on(packed):
    path, _ = packed
    code = textwrap.dedent("""
        import gc, os, sys, tokpack
        kw = dict(seq_len=16, batch_size=2, seed=4, threads=2, prefetch=3)
        reference = [b["input_ids"].clone() for _, b in zip(range(10), tokpack.Loader(sys.argv[1], **kw))]
        loader = tokpack.Loader(sys.argv[1], **kw)
        first = next(loader)
        pid = os.fork()
        if pid == 0:
            code = 3
            try:
                next(loader)
            except RuntimeError as e:
                code = 0 if "fork" in str(e) else 4
            # the inherited batch is the child's own copy and still readable
            ok = bool((first["input_ids"] == reference[0]).all())
            # dropping everything inherited must not touch the parent's threads or locks
            del first, loader
            gc.collect()
            os._exit(code if ok else 5)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        assert (first["input_ids"] == reference[0]).all()
        del first
        for i in range(1, 10):
            assert (next(loader)["input_ids"] == reference[i]).all()
        print("ok")
    """)
    proc = run_python(code, path, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


@pytest.mark.filterwarnings("ignore:Got pickle error")
def test_torch_dataloader_passes_batches_through_or_refuses_workers_clearly(packed):
    path, _ = packed
    from torch.utils.data import DataLoader

    kw = dict(seq_len=16, batch_size=4, seed=6, max_steps=6)
    reference = [b["input_ids"].clone() for b in tokpack.Loader(path, **kw)]
    wrapped = DataLoader(tokpack.Loader(path, **kw), batch_size=None)
    got = [b["input_ids"].clone() for b in wrapped]  # batches are views: keep copies
    assert len(got) == 6 and all(torch.equal(a, b) for a, b in zip(got, reference))

    with pytest.raises(RuntimeError, match="num_workers=0"):
        for _ in DataLoader(tokpack.Loader(path, **kw), batch_size=None, num_workers=2):
            pass
    # spawn-based workers pickle the dataset: refused with the same advice
    with pytest.raises(TypeError, match="cannot be pickled"):
        for _ in DataLoader(tokpack.Loader(path, **kw), batch_size=None, num_workers=1,
                            multiprocessing_context="spawn"):
            pass
