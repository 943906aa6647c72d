"""TrainedBatches: the cursor of the last batch trained, whatever was read ahead."""
import pytest

tokpack = pytest.importorskip("tokpack")
from tokpack.integrations._trained import TrainedBatches  # noqa: E402


def test_the_cursor_after_n_batches_resumes_at_batch_n(packed):
    kw = dict(seq_len=32, batch_size=2, seed=1, as_="numpy")
    whole = tokpack.Loader(packed[0], **kw)
    want = [next(whole)["input_ids"].copy() for _ in range(8)]
    batches = TrainedBatches(tokpack.Loader(packed[0], **kw), keep=4)
    for _ in range(6):
        next(batches)
    assert batches.served == 6
    for trained in [2, 3, 6]:
        resumed = tokpack.Loader(packed[0], **kw)
        resumed.load_state_dict(batches.state_after(trained))
        assert (next(resumed)["input_ids"] == want[trained]).all()
    with pytest.raises(ValueError, match="only 6 were read"):
        batches.state_after(7)
    with pytest.raises(ValueError, match="read 5 batches past the last one trained"):
        batches.state_after(1)


def test_load_state_dict_restarts_the_count_at_the_loaded_cursor(packed):
    kw = dict(seq_len=32, batch_size=2, seed=1, as_="numpy")
    batches = TrainedBatches(tokpack.Loader(packed[0], **kw))
    for _ in range(3):
        next(batches)
    saved = batches.state_after(2)
    batches.load_state_dict(saved)
    assert batches.served == 0 and batches.state_after(0) == saved
    with pytest.raises(TypeError, match="expected a tokpack.Loader"):
        TrainedBatches([1, 2])


def test_the_cursors_stay_in_step_after_the_loader_ends(packed):
    kw = dict(seq_len=32, batch_size=2, seed=1, as_="numpy", max_steps=3)
    want = [b["input_ids"].copy() for b in tokpack.Loader(packed[0], **kw)]
    batches = TrainedBatches(tokpack.Loader(packed[0], **kw), keep=3)
    assert len(list(batches)) == 3 and list(batches) == []  # the end, asked for twice
    for trained in range(1, 3):  # the last 3 cursors, none pushed out by the end
        resumed = tokpack.Loader(packed[0], **kw)
        resumed.load_state_dict(batches.state_after(trained))
        assert (next(resumed)["input_ids"] == want[trained]).all()
    assert batches.state_after(3) == batches.loader.state_dict()
