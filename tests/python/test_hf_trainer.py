"""tokpack.integrations.hf with the real Hugging Face Trainer: a tiny Llama
trained on CPU by 1 process and by 2 gloo processes under torchrun. Each rank
trains, in order, on its slice of tokpack's global batches (rows captured
where the model sees them), gradient accumulation takes consecutive steps,
every checkpoint holds the cursor of the last batch trained, and a run killed
after a checkpoint and resumed repeats the uninterrupted run exactly."""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

tokpack = pytest.importorskip("tokpack")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from tokpack.integrations import hf  # noqa: E402

from phase_data import source_namer  # noqa: E402

SCRIPT = Path(__file__).parent / "scripts" / "hf_train.py"
STEPS, SAVE_EVERY, ACCUMULATE, BATCH = 6, 3, 2, 2  # optimizer steps; rows per rank


def train(world, data, out, *extra):
    """Runs the training script under torchrun, one gloo process per rank."""
    script = [str(SCRIPT), data, str(out), "--steps", str(STEPS), "--save-steps",
              str(SAVE_EVERY), "--accumulate", str(ACCUMULATE), "--batch-size", str(BATCH),
              *map(str, extra)]
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
    env.update(OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           f"--nproc-per-node={world}", *script]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=500, env=env)


def global_order(data, world, steps, state=None):
    """tokpack's own global batches, read by one process: the reference."""
    loader = tokpack.Loader(data, seq_len=32, batch_size=world * BATCH, seed=1234, rank=0,
                            world_size=1, labels="same")
    if state is not None:
        loader.load_state_dict(state)
    return [next(loader)["input_ids"].tolist() for _ in range(steps)]


def forwards(out, rank):
    lines = (Path(out) / f"rows-{rank}.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def cursor(out, step):
    return json.loads((Path(out) / f"checkpoint-{step}" / hf.CURSOR_FILE).read_text())


def step_logs(out):
    """The per-step entries of the Trainer's log (the last is the run summary)."""
    log = json.loads((Path(out) / "log_history.json").read_text())
    return [entry for entry in log if "loss" in entry]


def check_trained_in_global_order(data, world, out):
    """Each rank's forwards are its slices of tokpack's global batches, in
    order, two consecutive loader steps per optimizer step; each checkpoint's
    cursor is right after the batches trained until then."""
    micro = STEPS * ACCUMULATE
    want = global_order(data, world, micro + 1)
    for rank in range(world):
        seen = forwards(out, rank)
        assert [f["rows"] for f in seen] == [b[rank * BATCH:(rank + 1) * BATCH]
                                             for b in want[:micro]]
        assert [f["step"] for f in seen] == [i // ACCUMULATE for i in range(micro)]
        # position_ids reach the model (packed documents); cu_seqlens does not
        assert all("position_ids" in f["keys"] and "cu_seqlens" not in f["keys"] for f in seen)
    for step in (SAVE_EVERY, STEPS):
        assert global_order(data, world, 1, cursor(out, step)) == [want[step * ACCUMULATE]]
    logs = step_logs(out)
    assert [e["step"] for e in logs] == list(range(1, STEPS + 1))
    assert logs[-1]["loss"] < logs[0]["loss"]  # it learned: resume comparisons are not of constants


def test_one_process_trains_on_tokpacks_global_order(packed, tmp_path):
    # In this process: the same run as the script's, without a second
    # interpreter start (the machine running the tests is small).
    spec = importlib.util.spec_from_file_location("hf_train", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    script.run(packed[0], tmp_path / "run", steps=STEPS, save_steps=SAVE_EVERY,
               accumulate=ACCUMULATE, batch_size=BATCH)
    check_trained_in_global_order(packed[0], 1, tmp_path / "run")


@pytest.mark.timeout(900)
def test_two_ranks_train_in_global_order_and_a_killed_run_resumes_exactly(packed, tmp_path):
    data, world = packed[0], 2
    full = train(world, data, tmp_path / "full")
    assert full.returncode == 0, full.stderr[-4000:]
    check_trained_in_global_order(data, world, tmp_path / "full")

    # Every rank SIGKILLs itself right after checkpoint SAVE_EVERY is on disk.
    run = tmp_path / "run"
    killed = train(world, data, run, "--kill-at", SAVE_EVERY)
    assert killed.returncode != 0 and "SIGKILL" in killed.stderr, killed.stderr[-4000:]
    assert sorted(p.name for p in run.glob("checkpoint-*")) == [f"checkpoint-{SAVE_EVERY}"]
    assert cursor(run, SAVE_EVERY) == cursor(tmp_path / "full", SAVE_EVERY)
    resumed = train(world, data, run, "--resume")
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    # rows-RANK.jsonl holds the killed run's forwards, then the resumed run's:
    # together the uninterrupted run's, step numbers included
    for rank in range(world):
        assert forwards(run, rank) == forwards(tmp_path / "full", rank)
    # loss, grad norm, learning rate and epoch of every step, bit for bit (the
    # model has attention dropout: the RNG state is restored too)
    assert step_logs(run) == step_logs(tmp_path / "full")


@pytest.fixture(scope="module")
def tiny_model():
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=1000, hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=2, num_attention_heads=2,
                                      num_key_value_heads=2, max_position_embeddings=64)
    return transformers.LlamaForCausalLM(config)


def make_args(tmp_path, **kw):
    kw = {"output_dir": str(tmp_path / "out"), "max_steps": 4, "per_device_train_batch_size": 2,
          "use_cpu": True, "report_to": [], **kw}
    return transformers.TrainingArguments(**kw)


def make_loader(data, **kw):
    kw = {"seq_len": 32, "batch_size": 2, "seed": 1, "labels": "same", **kw}
    return tokpack.Loader(data, **kw)


@pytest.mark.parametrize("args_kw, loader_kw, message", [
    ({}, {"labels": "next"}, r'labels="next".*two ahead.*labels="same"'),
    ({"per_device_train_batch_size": 4}, {},
     r"batch_size=2 differs from per_device_train_batch_size=4"),
    ({}, {"rank": 1, "world_size": 2},
     r"reads rank 1 of 2, but the Trainer runs process 0 of 1.*rank=0, world_size=1"),
    ({"max_steps": -1, "num_train_epochs": 2}, {},
     r"max_steps=-1.*stream.*tokpack.Loader\(epochs=...\)"),
    ({"max_steps": 4, "gradient_accumulation_steps": 2}, {"max_steps": 5},
     r"ends after 5 steps, but max_steps=4 with gradient_accumulation_steps=2 trains on 8"),
    ({"dataloader_num_workers": 2}, {}, r"dataloader_num_workers=2.*set dataloader_num_workers=0"),
    ({"use_cache": True}, {"document_boundaries": True},
     r"use_cache=True.*packed documents.*attend to each other; set use_cache=False"),
    ({"use_cache": True}, {"packing": "best_fit"}, r"use_cache=True.*set use_cache=False"),
    ({"gradient_accumulation_steps": 3}, {"prefetch": 4},
     r"gradient_accumulation_steps=3 keeps up to 6 batches.*prefetch=4.*prefetch=6"),
    ({"auto_find_batch_size": True}, {}, r"auto_find_batch_size=True.*batch_size=2"),
    ({"accelerator_config": {"split_batches": True}}, {}, r"split_batches.*own slice"),
])
def test_a_mismatched_trainer_or_loader_is_refused_naming_both(packed, tmp_path, tiny_model,
                                                               args_kw, loader_kw, message):
    with pytest.raises(ValueError, match=message):
        hf.TokpackTrainer(model=tiny_model, args=make_args(tmp_path, **args_kw),
                          train_dataset=make_loader(packed[0], **loader_kw))


def test_wrong_kinds_of_arguments_are_refused(packed, tmp_path, tiny_model):
    args, loader = make_args(tmp_path), make_loader(packed[0])
    with pytest.raises(TypeError, match="train_dataset is list; pass train_dataset=tokpack"):
        hf.TokpackTrainer(model=tiny_model, args=args, train_dataset=[1, 2])
    with pytest.raises(TypeError, match=r"needs args=TrainingArguments\(max_steps=N"):
        hf.TokpackTrainer(model=tiny_model, train_dataset=loader)
    with pytest.raises(TypeError, match="got args both by position and by keyword"):
        hf.TokpackTrainer(tiny_model, args, args=args, train_dataset=loader)
    with pytest.raises(TypeError, match="data_collator is not used"):
        hf.TokpackTrainer(tiny_model, args, transformers.default_data_collator, loader)
    with pytest.raises(TypeError, match="eval_dataset is a tokpack.Loader"):
        hf.TokpackTrainer(model=tiny_model, args=args, train_dataset=loader,
                          eval_dataset={"held_out": make_loader(packed[0])})
    trainer = hf.TokpackTrainer(model=tiny_model, args=args, train_dataset=loader)
    with pytest.raises(TypeError, match="eval_dataset is a tokpack.Loader"):
        trainer.evaluate(eval_dataset=make_loader(packed[0]))
    # resuming needs the cursor: a checkpoint without one is named
    bare = tmp_path / "out" / "checkpoint-2"
    bare.mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match=f"no tokpack cursor at {bare}/tokpack_cursor"):
        trainer.train(resume_from_checkpoint=True)


def test_the_train_dataloader_is_the_loaders_batches_unchanged(packed, tmp_path, tiny_model):
    args = make_args(tmp_path)
    loader = make_loader(packed[0], document_boundaries=True)
    trainer = hf.TokpackTrainer(model=tiny_model, args=args, train_dataset=loader)
    # the Trainer must not skip batches on resume (the cursor does it); the
    # caller's arguments are left as they were
    assert trainer.args.ignore_data_skip and not args.ignore_data_skip
    reference = make_loader(packed[0], document_boundaries=True)
    batches = iter(trainer.get_train_dataloader())
    for _ in range(3):
        got, want = next(batches), next(reference)
        assert sorted(got) == ["input_ids", "labels", "position_ids"]
        for key in got:
            assert torch.equal(got[key], want[key])


def test_packed_documents_do_not_attend_to_each_other(packed, tmp_path, tiny_model):
    # HF builds the mask from the position_ids tokpack hands through (sdpa here).
    seen = []
    hooks = [tiny_model.register_forward_pre_hook(
                 lambda m, a, kw: seen.append(kw["position_ids"]), with_kwargs=True),
             tiny_model.model.layers[0].self_attn.register_forward_pre_hook(
                 lambda m, a, kw: seen.append(kw["attention_mask"]), with_kwargs=True)]
    args = make_args(tmp_path, max_steps=3, save_strategy="no", disable_tqdm=True)
    loader = make_loader(packed[0], document_boundaries=True)
    try:
        hf.TokpackTrainer(model=tiny_model, args=args, train_dataset=loader).train()
    finally:
        for hook in hooks:
            hook.remove()
    assert any((pos[:, 1:] == 0).any() for pos in seen[0::2])  # some rows hold 2+ documents
    causal = torch.ones(32, 32, dtype=torch.bool).tril()
    for pos, mask in zip(seen[0::2], seen[1::2]):
        doc = (torch.diff(pos, dim=-1, prepend=pos[:, :1] - 1) != 1).cumsum(-1)
        if mask is None:  # no row holds two documents: plain causal attention
            assert not doc.any()
        else:
            assert torch.equal(mask[:, 0], (doc[:, :, None] == doc[:, None, :]) & causal)


def test_the_mixin_goes_on_a_trainer_subclass(packed, tmp_path, tiny_model):
    class Custom(transformers.Trainer):
        pass

    class TokpackCustom(hf.TokpackTrainerMixin, Custom):
        pass

    trainer = TokpackCustom(model=tiny_model, args=make_args(tmp_path),
                            train_dataset=make_loader(packed[0]))
    assert trainer.get_train_dataloader().loader is trainer.train_dataset


def test_the_hf_doc_example_runs(packed, tmp_path):
    from doc_examples import doc_example

    code = doc_example("hf.md", "trainer").replace('"data/web"', repr(packed[0]))
    code = code.replace('"runs/tiny"', repr(str(tmp_path / "run")))
    exec(compile(code, "docs/hf.md", "exec"), {"__name__": "__main__"})
    assert (tmp_path / "run" / "checkpoint-10" / hf.CURSOR_FILE).is_file()


# Phases in optimizer steps (step_unit) ---------------------------------------

ANNEAL = [(0, {"a": 1.0}), (2, {"b": 1.0}), (4, {"a": 1.0})]  # all a, then b, then a again


@pytest.fixture(scope="module")
def two_sources(packed, packed_small):
    """Sources a and b, and source_of(rows): which one a micro-batch comes from."""
    paths = {"a": packed[0], "b": packed_small[0]}
    return paths, source_namer(paths, 32)


def phased_run(tmp_path, two_sources, *, accumulate, step_unit, resume=False, max_steps=6,
               save_steps=None):
    """A real Trainer on the ANNEAL phases; returns [(global_step, source)]
    per micro-batch, as the model's forward sees it, and the trainer."""
    paths, source_of = two_sources
    args = make_args(tmp_path, output_dir=str(tmp_path / "phased"), max_steps=max_steps,
                     gradient_accumulation_steps=accumulate, disable_tqdm=True,
                     save_strategy="steps" if save_steps else "no", save_steps=save_steps or 1)
    loader = make_loader(paths, phases=ANNEAL, batch_size=2)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=1000, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64))
    kw = {} if step_unit is None else {"step_unit": step_unit}
    trainer = hf.TokpackTrainer(model=model, args=args, train_dataset=loader, **kw)
    seen = []
    model.register_forward_pre_hook(
        lambda m, a, kw: seen.append((trainer.state.global_step, source_of(kw["input_ids"]))),
        with_kwargs=True)
    trainer.train(resume_from_checkpoint=True if resume else None)
    return seen, trainer


def by_optimizer_step(first_b, first_a_again, steps, accumulate):
    return [(s, "b" if first_b <= s < first_a_again else "a")
            for s in range(*steps) for _ in range(accumulate)]


def test_phases_in_optimizer_steps_begin_at_that_optimizer_step(tmp_path, two_sources):
    # gradient accumulation 2: phase (2, b) is the third optimizer step, loader step 4
    seen, trainer = phased_run(tmp_path, two_sources, accumulate=2, step_unit="optimizer")
    assert seen == by_optimizer_step(2, 4, (0, 6), 2)
    # the loader counts its own steps: the phases it ran, and its stats, in loader steps
    assert [start for start, _ in trainer.train_dataset.phases] == [0, 4, 8]
    assert [p["start_step"] for p in trainer.train_dataset.stats()["phases"]] == [0, 4, 8]


def test_phases_in_loader_steps_begin_at_that_micro_batch(tmp_path, two_sources):
    seen, _ = phased_run(tmp_path, two_sources, accumulate=2, step_unit="loader")
    assert seen == by_optimizer_step(1, 2, (0, 6), 2)


def test_phases_with_accumulation_need_a_step_unit(tmp_path, two_sources):
    with pytest.raises(ValueError, match=r"phases start at steps \[0, 2, 4\], and with "
                                         r"gradient_accumulation_steps=2.*step_unit=\"optimizer\""
                                         r".*loader step 4.*step_unit=\"loader\""):
        phased_run(tmp_path, two_sources, accumulate=2, step_unit=None)
    with pytest.raises(ValueError, match=r"step_unit='micro'"):
        phased_run(tmp_path, two_sources, accumulate=2, step_unit="micro")
    # without accumulation the units are the same
    seen, _ = phased_run(tmp_path, two_sources, accumulate=1, step_unit=None)
    assert seen == by_optimizer_step(2, 4, (0, 6), 1)


def test_a_resume_with_another_accumulation_keeps_phases_at_their_optimizer_steps(
        tmp_path, two_sources):
    # checkpoint 3 is inside phase b (begun at loader step 4); phase (4, a) is to come
    seen, _ = phased_run(tmp_path, two_sources, accumulate=2, step_unit="optimizer",
                         max_steps=3, save_steps=3)
    assert seen == by_optimizer_step(2, 4, (0, 3), 2)
    # resumed with 1 batch per optimizer step: b until step 4, then a
    seen, trainer = phased_run(tmp_path, two_sources, accumulate=1, step_unit="optimizer",
                               resume=True)
    assert seen == by_optimizer_step(2, 4, (3, 6), 1)
    assert [start for start, _ in trainer.train_dataset.phases] == [0, 4, 7]


def test_the_hf_anneal_example_runs(packed, packed_small, tmp_path):
    from doc_examples import doc_example

    code = doc_example("hf.md", "trainer-anneal").replace('"data/web"', repr(packed[0]))
    code = code.replace('"data/math"', repr(packed_small[0]))
    code = code.replace('"runs/anneal"', repr(str(tmp_path / "run")))
    scope = {"__name__": "__main__"}
    exec(compile(code, "docs/hf.md", "exec"), scope)
    assert scope["trainer"].state.global_step == 20
    stats = scope["loader"].stats()
    assert stats["steps"] == 40 and stats["phases"][1]["start_step"] == 32


def test_masked_tokens_do_not_count_in_the_trainers_loss(packed, tmp_path, tiny_model):
    """A dataset with loss masks (the first half of each document a prompt):
    the Trainer's first logged loss is the model's cross-entropy over the
    labels that carry loss only, hand-computed on the same batch."""
    import copy

    from mask_data import with_loss_masks

    masked = with_loss_masks(packed[0], tmp_path / "masked")
    model = copy.deepcopy(tiny_model)
    reference = copy.deepcopy(model)
    batch = next(make_loader(masked, loss_mask=True))
    targets = batch["labels"][:, 1:]  # labels="same": the model shifts them
    keep = targets != -100
    assert torch.equal(keep, batch["loss_mask"][:, 1:].bool())
    assert 0 < int(keep.sum()) < keep.numel()
    with torch.no_grad():
        logits = reference(input_ids=batch["input_ids"]).logits[:, :-1].float()
    trained_only = torch.nn.functional.cross_entropy(logits[keep], targets[keep]).item()
    every_token = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), batch["input_ids"][:, 1:].reshape(-1)).item()

    args = make_args(tmp_path, max_steps=1, logging_steps=1, save_strategy="no",
                     disable_tqdm=True)
    trainer = hf.TokpackTrainer(model=model, args=args,
                                train_dataset=make_loader(masked, loss_mask=True))
    trainer.train()
    logged = [e["loss"] for e in trainer.state.log_history if "loss" in e][0]
    assert logged == pytest.approx(trained_only, rel=1e-3)
    assert abs(every_token - trained_only) > 1e-2  # the masked tokens would change it
