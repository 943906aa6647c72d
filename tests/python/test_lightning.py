"""TokpackDataModule under a real Lightning Trainer on CPU: each rank trains on
its slice of tokpack's global order (rows captured in the model's forward),
a run SIGKILLed right after a checkpoint and resumed with fit(ckpt_path=...)
trains on the same rows with the same per-step losses as the uninterrupted
run (endless and finite loaders, 1 and 2 gloo processes), misuse gets clear
errors, and docs/lightning.md's example runs.

Lightning takes seconds of CPU to import, so the training runs share one
launcher process that forks fresh processes per run (scripts/lightning_train.py
--plan); one 2-process run goes through torchrun."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

tokpack = pytest.importorskip("tokpack")
torch = pytest.importorskip("torch")
pl = pytest.importorskip("lightning.pytorch")
from tokpack.integrations.lightning import TokpackDataModule  # noqa: E402

from doc_examples import doc_example  # noqa: E402
from phase_data import source_namer  # noqa: E402

SCRIPT = Path(__file__).parent / "scripts" / "lightning_train.py"
B = 2  # rows per rank, as the script's loader
KILLED = -9

# The script's arguments after DATA OUT (OUT: each run's own directory).
ENDLESS_1 = ["--trainer-steps", "8", "--every", "3"]
FINITE_1 = ["--loader-steps", "8", "--every", "3"]
ENDLESS_2 = ["--trainer-steps", "4", "--accumulate", "2", "--every", "1"]
FINITE_2 = ["--loader-steps", "8", "--accumulate", "2", "--every", "1"]
RESUMES = {  # name: (world, arguments, the optimizer step killed after, accumulation)
    "1-endless": (1, ENDLESS_1, 3, 1),
    "1-finite": (1, FINITE_1, 6, 1),
    "2-endless": (2, ENDLESS_2, 2, 2),
    "2-finite": (2, FINITE_2, 3, 2),
}


def plan_runs(data, out):
    runs = {"full-1": (1, ENDLESS_1), "full-2": (2, ENDLESS_2)}
    for name, (world, args, kill_at, _) in RESUMES.items():
        runs[f"killed-{name}"] = (world, args + ["--kill-at", str(kill_at)])
        ckpt = out / f"killed-{name}" / "ckpt" / f"step={kill_at}.ckpt"
        runs[f"resumed-{name}"] = (world, args + ["--resume", str(ckpt)])
    # the 2-process endless checkpoint, resumed on 1 process
    runs["resumed-2-endless-on-1"] = (1, runs["resumed-2-endless"][1])
    return runs


def read_run(out, world):
    """Each rank's logged batches (none when it never trained)."""
    logs = [out / f"rank{r}.jsonl" for r in range(world)]
    return [[json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
            for log in logs]


@pytest.fixture(scope="module")
def runs(packed, tmp_path_factory):
    """Every planned run: name -> (exit status per rank, batches logged per
    rank, its directory). Fails, with the runs' output, unless every run
    that is not killed on purpose exits 0."""
    data, _ = packed
    out = tmp_path_factory.mktemp("lightning")
    planned = plan_runs(data, out)
    plan = [{"world": world, "argv": [data, str(out / name), *args]}
            for name, (world, args) in planned.items()]
    (out / "plan.json").write_text(json.dumps(plan))
    proc = subprocess.run([sys.executable, str(SCRIPT), "--plan", str(out / "plan.json"),
                           str(out / "result.json")], capture_output=True, text=True,
                          timeout=1500, env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert proc.returncode == 0, proc.stderr[-5000:]
    codes = json.loads((out / "result.json").read_text())
    failed = {name: code for name, code in zip(planned, codes)
              if not name.startswith("killed-") and code != [0] * len(code)}
    assert not failed, f"{failed}\n{proc.stderr[-8000:]}"
    return {name: (code, read_run(out / name, planned[name][0]), out / name)
            for name, code in zip(planned, codes)}


def global_order(data, world, steps):
    """tokpack's own order: one process, batch_size world*B, split per rank."""
    loader = tokpack.Loader(data, seq_len=32, batch_size=world * B, seed=1234, rank=0,
                            world_size=1, as_="numpy")
    batches = [next(loader)["input_ids"].tolist() for _ in range(steps)]
    return [[b[r * B:(r + 1) * B] for b in batches] for r in range(world)]


@pytest.mark.timeout(1500)
@pytest.mark.parametrize("world", [1, 2])
def test_each_rank_trains_on_its_slice_of_tokpacks_global_order(runs, packed, world):
    code, logged, _ = runs[f"full-{world}"]
    assert code == [0] * world
    want = global_order(packed[0], world, 8)  # 8 batches: 8 steps, or 4 x accumulate 2
    for rank in range(world):
        assert [b["rows"] for b in logged[rank]] == want[rank], rank
    # the run learned something (losses are not constants)
    assert float.fromhex(logged[0][-1]["loss"]) < float.fromhex(logged[0][0]["loss"])


@pytest.mark.timeout(1500)
@pytest.mark.parametrize("name", list(RESUMES))
def test_a_run_killed_after_a_checkpoint_resumes_as_if_never_interrupted(runs, name):
    world, _, kill_at, accumulate = RESUMES[name]
    _, full, _ = runs[f"full-{world}"]
    killed_code, killed, killed_dir = runs[f"killed-{name}"]
    resumed_code, resumed, resumed_dir = runs[f"resumed-{name}"]
    # Each rank kills itself once the save's closing barrier returns; a rank
    # may instead fail in that barrier when its peer is already gone.
    assert killed_code[0] == KILLED and all(c != 0 for c in killed_code), killed_code
    assert (killed_dir / "ckpt" / f"step={kill_at}.ckpt").exists()
    assert resumed_code == [0] * world
    trained = kill_at * accumulate
    for rank in range(world):
        # rows and losses, batch by batch: the killed run up to the checkpoint,
        # then the resumed run from the next batch to the end
        assert killed[rank] == full[rank][:trained], rank
        assert resumed[rank] == full[rank][trained:], rank
    done = json.loads((resumed_dir / "done0").read_text())
    assert done["global_step"] == 8 // accumulate


@pytest.mark.timeout(1500)
def test_an_endless_run_resumes_on_another_number_of_processes_in_the_same_order(runs, packed):
    code, logged, _ = runs["resumed-2-endless-on-1"]
    assert code == [0]
    # 2 x 2 rows x 4 batches trained before the checkpoint; then 4 batches of 1 x 2
    stream = [row for batch in global_order(packed[0], 1, 12)[0] for row in batch]
    assert [row for b in logged[0] for row in b["rows"]] == stream[16:24]


@pytest.mark.timeout(600)
def test_two_processes_under_torchrun_train_on_the_global_order(runs, packed, tmp_path):
    out = tmp_path / "torchrun"
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
         str(SCRIPT), packed[0], str(out), *ENDLESS_2],
        capture_output=True, text=True, timeout=500, env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert proc.returncode == 0, proc.stderr[-5000:]
    logged = read_run(out, 2)
    want = global_order(packed[0], 2, 8)
    assert [[b["rows"] for b in rank] for rank in logged] == want
    assert logged == runs["full-2"][1]  # and the same losses as processes started by hand


# In this process: errors, the bare Loader's cursor, the docs' example. ----------


class TinyModule(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(1000, 8)
        self.head = torch.nn.Linear(8, 1000)

    def training_step(self, batch, batch_idx):
        logits = self.head(self.embed(batch["input_ids"]))
        return torch.nn.functional.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten())

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def trainer(tmp_path, **kw):
    kw.setdefault("enable_checkpointing", False)
    return pl.Trainer(accelerator="cpu", devices=1, logger=False, enable_progress_bar=False,
                      enable_model_summary=False, default_root_dir=tmp_path, **kw)


def test_misuse_gets_errors_naming_the_thing(packed, tmp_path):
    data, _ = packed
    with pytest.raises(TypeError, match="takes no num_workers"):
        TokpackDataModule(data, num_workers=4)
    with pytest.raises(ValueError, match="as_='numpy' is not supported"):
        TokpackDataModule(data, as_="numpy")
    with pytest.raises(RuntimeError, match=r"datamodule=dm"):
        TokpackDataModule(data).train_dataloader()
    with pytest.raises(ValueError, match="got rank=1, but this process is rank=0"):
        trainer(tmp_path, max_steps=2).fit(TinyModule(), datamodule=TokpackDataModule(data, rank=1))
    with pytest.raises(ValueError, match="got world_size=2, but this process is world_size=1"):
        trainer(tmp_path, max_steps=2).fit(
            TinyModule(), datamodule=TokpackDataModule(data, world_size=2))
    with pytest.raises(ValueError, match=r"endless tokpack.Loader never ends a Lightning epoch, "
                                         r"so Trainer\(max_epochs=2\)"):
        trainer(tmp_path, max_epochs=2).fit(TinyModule(), datamodule=TokpackDataModule(data))
    finite = dict(seq_len=16, batch_size=2, max_steps=4, step_unit="loader")
    with pytest.raises(ValueError, match=r"run \(4 steps.*Trainer\(max_epochs=1000\)"):
        trainer(tmp_path).fit(TinyModule(), datamodule=TokpackDataModule(data, **finite))
    with pytest.raises(ValueError, match=r"Trainer\(max_steps=3\) with accumulate_grad_batches=2"):
        trainer(tmp_path, max_steps=3, accumulate_grad_batches=2).fit(
            TinyModule(), datamodule=TokpackDataModule(data, **finite))

    class IterStep(TinyModule):
        def training_step(self, dataloader_iter):
            return super().training_step(next(dataloader_iter), 0)

    with pytest.raises(TypeError, match=r"training_step\(dataloader_iter\)"):
        trainer(tmp_path, max_steps=2).fit(IterStep(), datamodule=TokpackDataModule(data))
    # within the finite run, Trainer(max_steps) is fine
    fine = trainer(tmp_path, max_steps=2, accumulate_grad_batches=2)
    dm = TokpackDataModule(data, **finite)
    fine.fit(TinyModule(), datamodule=dm)
    assert fine.global_step == 2 and dm.loader.step == 4


@pytest.mark.parametrize("labels", [None, "same"])
def test_labels_are_next_by_default_and_same_on_request(packed, labels):
    options = {} if labels is None else {"labels": labels}
    dm = TokpackDataModule(packed[0], seq_len=16, batch_size=2, **options)
    dm.setup("fit")  # outside a Trainer: the Loader's own rank and world size
    batch = next(dm.loader)
    assert isinstance(batch["input_ids"], torch.Tensor)
    if labels is None:
        assert (batch["labels"][:, :-1] == batch["input_ids"][:, 1:]).all()
    else:
        assert (batch["labels"] == batch["input_ids"]).all()


# Phases and max_steps in optimizer steps (step_unit) -------------------------

ANNEAL = [(0, {"a": 1.0}), (2, {"b": 1.0}), (4, {"a": 1.0})]  # all a, then b, then a again


class SourceModule(TinyModule):
    """Records (trainer.global_step, source) for every batch trained."""

    def __init__(self, source_of):
        super().__init__()
        self.source_of = source_of
        self.seen = []

    def training_step(self, batch, batch_idx):
        self.seen.append((self.trainer.global_step, self.source_of(batch["input_ids"])))
        return super().training_step(batch, batch_idx)


@pytest.fixture(scope="module")
def two_sources(packed, packed_small):
    paths = {"a": packed[0], "b": packed_small[0]}
    return paths, source_namer(paths, 16)


def phased(paths, **kw):
    return TokpackDataModule(paths, phases=ANNEAL, seq_len=16, batch_size=2, seed=5, **kw)


def by_optimizer_step(first_b, first_a_again, steps, accumulate):
    return [(s, "b" if first_b <= s < first_a_again else "a")
            for s in range(*steps) for _ in range(accumulate)]


@pytest.mark.parametrize("unit, first_b, first_a_again", [("optimizer", 2, 4), ("loader", 1, 2)])
def test_phases_begin_at_the_optimizer_step_or_micro_batch_given(two_sources, tmp_path, unit,
                                                                 first_b, first_a_again):
    paths, source_of = two_sources
    module, dm = SourceModule(source_of), phased(paths, step_unit=unit)
    trainer(tmp_path, max_steps=6, accumulate_grad_batches=2).fit(module, datamodule=dm)
    assert module.seen == by_optimizer_step(first_b, first_a_again, (0, 6), 2)
    factor = 2 if unit == "optimizer" else 1
    assert [start for start, _ in dm.loader.phases] == [0, 2 * factor, 4 * factor]


def test_max_steps_in_optimizer_steps_is_the_run(two_sources, tmp_path):
    paths, source_of = two_sources
    module, dm = SourceModule(source_of), phased(paths, step_unit="optimizer", max_steps=5)
    run = trainer(tmp_path, max_epochs=1, accumulate_grad_batches=2)
    run.fit(module, datamodule=dm)
    assert run.global_step == 5 and len(dm.loader) == 10
    assert module.seen == by_optimizer_step(2, 4, (0, 5), 2)


def test_step_counts_with_accumulation_need_a_step_unit(two_sources, packed, tmp_path):
    paths, source_of = two_sources
    with pytest.raises(ValueError, match=r"phases starting at \[2, 4\], and with "
                                         r"accumulate_grad_batches=2.*step_unit=\"optimizer\""
                                         r".*step 2 is loader step 4.*step_unit=\"loader\""):
        trainer(tmp_path, max_steps=6, accumulate_grad_batches=2).fit(
            SourceModule(source_of), datamodule=phased(paths))
    with pytest.raises(ValueError, match=r"got max_steps=8, and with accumulate_grad_batches=2"):
        trainer(tmp_path, max_epochs=1, accumulate_grad_batches=2).fit(
            TinyModule(), datamodule=TokpackDataModule(packed[0], seq_len=16, batch_size=2,
                                                       max_steps=8))
    with pytest.raises(ValueError, match=r"step_unit='micro'"):
        phased(paths, step_unit="micro")
    with pytest.raises(ValueError, match=r"multiplies phases starting at \[2, 4\] by the "
                                         r"Trainer's accumulate_grad_batches.*no Trainer"):
        phased(paths, step_unit="optimizer").setup("fit")
    # without accumulation the units are the same
    module = SourceModule(source_of)
    trainer(tmp_path, max_steps=6).fit(module, datamodule=phased(paths))
    assert module.seen == by_optimizer_step(2, 4, (0, 6), 1)


def test_a_resume_keeps_phases_at_their_optimizer_steps_or_refuses_another_accumulation(
        two_sources, tmp_path):
    paths, source_of = two_sources
    ckpt = pl.callbacks.ModelCheckpoint(tmp_path / "ckpt", filename="{step}",
                                        every_n_train_steps=3, save_top_k=-1)
    first = SourceModule(source_of)
    trainer(tmp_path, max_steps=3, accumulate_grad_batches=2, callbacks=[ckpt],
            enable_checkpointing=True).fit(first, datamodule=phased(paths, step_unit="optimizer"))
    assert first.seen == by_optimizer_step(2, 4, (0, 3), 2)
    path = tmp_path / "ckpt" / "step=3.ckpt"
    resumed = SourceModule(source_of)
    trainer(tmp_path, max_steps=6, accumulate_grad_batches=2).fit(
        resumed, datamodule=phased(paths, step_unit="optimizer"), ckpt_path=path)
    assert resumed.seen == by_optimizer_step(2, 4, (3, 6), 2)
    # Lightning's optimizer steps would no longer line up with the converted phases
    with pytest.raises(ValueError, match=r"trained with accumulate_grad_batches=2 and this run "
                                         r"has 1; with step_unit=\"optimizer\".*resume with "
                                         r"accumulate_grad_batches=2"):
        trainer(tmp_path, max_steps=6).fit(
            SourceModule(source_of), datamodule=phased(paths, step_unit="optimizer"),
            ckpt_path=path)


class BareLoader(TinyModule):
    """Returns a plain tokpack.Loader from train_dataloader()."""

    def __init__(self, data, **options):
        super().__init__()
        self.loader_args = (data, options)

    def train_dataloader(self):
        data, options = self.loader_args
        return tokpack.Loader(data, seq_len=16, batch_size=2, seed=5, **options)


def saved_cursor_step(path, data):
    """The step of the next batch under the train dataloader state in a checkpoint."""
    state = torch.load(path, weights_only=False)["loops"]["fit_loop"]["state_dict"]
    saved = state["combined_loader"][0]
    loader = tokpack.Loader(data, seq_len=16, batch_size=2, seed=5)
    loader.load_state_dict(saved.get("tokpack", saved))
    return loader.step


@pytest.mark.parametrize("kind", ["bare-endless", "bare-finite", "datamodule"])
def test_the_cursor_in_the_checkpoint_a_bare_loader_versus_the_datamodule(packed, tmp_path,
                                                                          kind):
    """docs/lightning.md: a bare endless Loader is saved one batch past the
    last one trained (Lightning reads ahead), a bare finite one is not read
    ahead, TokpackDataModule saves the batch after the last one trained."""
    data, _ = packed
    ckpt = pl.callbacks.ModelCheckpoint(tmp_path / kind, filename="last", every_n_train_steps=3)
    run = trainer(tmp_path, max_steps=3, callbacks=[ckpt], enable_checkpointing=True)
    if kind == "datamodule":
        run.fit(TinyModule(), datamodule=TokpackDataModule(data, seq_len=16, batch_size=2,
                                                           seed=5))
    else:
        run.fit(BareLoader(data, max_steps=6 if kind == "bare-finite" else 0))
    path = tmp_path / kind / "last.ckpt"
    assert saved_cursor_step(path, data) == (4 if kind == "bare-endless" else 3)
    if kind == "datamodule":
        # a finite loader's length is in global batches: resumed with another, it says so
        with pytest.raises(ValueError, match=r"global batch of 2 rows .* this run has 4 \(1 x 4\)"):
            trainer(tmp_path, max_epochs=1).fit(
                TinyModule(), ckpt_path=path,
                datamodule=TokpackDataModule(data, seq_len=16, batch_size=4, seed=5, max_steps=8))
    if kind == "bare-endless":
        # such a checkpoint is not taken for a TokpackDataModule's
        with pytest.raises(ValueError, match="not saved by tokpack.integrations.lightning"):
            trainer(tmp_path, max_steps=4).fit(
                TinyModule(), ckpt_path=path,
                datamodule=TokpackDataModule(data, seq_len=16, batch_size=2, seed=5))


@pytest.mark.timeout(600)
def test_the_docs_example_trains_and_resumes(packed, packed_small, tmp_path, monkeypatch):
    code = doc_example("lightning.md", "lightning-fit").replace('"data/web"', repr(packed[0]))
    monkeypatch.chdir(tmp_path)
    scope = {"__name__": "lightning_example"}
    exec(compile(code, "docs/lightning.md", "exec"), scope)
    assert scope["trainer"].global_step == 150
    assert scope["data"].loader.step >= 150  # read ahead by Lightning; trained 150
    assert (tmp_path / "ckpt" / "last.ckpt").exists()

    # the anneal in optimizer steps continues the example
    code = doc_example("lightning.md", "lightning-anneal").replace('"data/web"', repr(packed[0]))
    code = code.replace('"data/math"', repr(packed_small[0]))
    exec(compile(code, "docs/lightning.md", "exec"), scope)
    assert scope["trainer"].global_step == 100
    assert scope["data"].loader.stats()["phases"][1]["start_step"] == 160
