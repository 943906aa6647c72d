"""tokpack.integrations.hf: Hugging Face transformers' Trainer on a tokpack.Loader.

A plain ``Trainer(train_dataset=tokpack.Loader(...))`` trains on the wrong
data: it wraps the loader in a torch DataLoader (a batch of batches), lets
accelerate dispatch rank 0's batches to every rank, skips batches on resume by
re-reading them, and saves no data cursor. ``TokpackTrainerMixin`` replaces the
Trainer's data path and checkpoint glue:

- each rank iterates its own Loader (its slice of every global batch); the
  batches reach the model as they come out of the loader, not through
  ``accelerator.prepare``, a collator or a copy;
- gradient accumulation takes consecutive loader steps (the Trainer fetches
  them in order);
- every checkpoint directory gets ``tokpack_cursor.json``: the cursor after the
  last batch trained (never one merely read ahead), and
  ``train(resume_from_checkpoint=...)`` loads it instead of skipping batches;
- with ``step_unit="optimizer"`` the loader's phases are given in optimizer
  steps, the Trainer's unit, and re-expressed in loader steps (x
  gradient_accumulation_steps) when training starts or resumes.

``TokpackTrainer`` is the mixin on ``transformers.Trainer``; mix it into a
Trainer subclass the same way (``class T(TokpackTrainerMixin, SFTTrainer)``).
docs/hf.md is the guide. Not thread-safe, like the Trainer and the Loader.
"""
from __future__ import annotations

import copy
import json
import os
import weakref
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple, Union

import transformers
from transformers.trainer import TRAINER_STATE_NAME
from transformers.trainer_callback import TrainerCallback
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR, get_last_checkpoint

from .. import _core, _phases
from .._loader import Loader
from ._trained import TrainedBatches, run_steps

__all__ = ["CURSOR_FILE", "TokpackTrainer", "TokpackTrainerMixin"]

CURSOR_FILE = "tokpack_cursor.json"
"""The file in each checkpoint directory that holds the loader's cursor."""

# The Trainer's leading parameters, in its (and its common subclasses') order,
# so that validation sees them however they were passed.
_LEADING = ("model", "args", "data_collator", "train_dataset", "eval_dataset")

STEP_UNITS = ("optimizer", "loader")

NamedPhases = List[Tuple[Any, ...]]  # (start_step, {name: weight}[, ramp_steps])

# The phases as given, in optimizer steps, of each loader a TokpackTrainer
# with step_unit="optimizer" took: training re-expresses the loader's own
# phases in loader steps, so a second trainer on the same loader must start
# from these, not convert twice.
_GIVEN_PHASES: "weakref.WeakKeyDictionary[Loader, NamedPhases]" = weakref.WeakKeyDictionary()


class TokpackTrainerMixin:
    """Trains a ``transformers.Trainer`` (or a subclass it is mixed into)
    on a ``tokpack.Loader`` given as ``train_dataset``.

    The loader's ``labels`` must be ``"same"``, its ``batch_size`` the
    per-device batch size, its rank and world size the Trainer's, and
    ``args.max_steps`` positive (a loader is a stream: its passes are
    ``Loader(epochs=...)``). Every violation is a ``ValueError`` or
    ``TypeError`` at construction naming both values and the fix.

    The Trainer's ``args`` are copied with ``ignore_data_skip=True``: on
    resume the cursor from the checkpoint positions the data, and the
    Trainer must not skip batches on top of it.

    ``step_unit`` (keyword only) says what the start steps of the loader's
    phases count. ``"optimizer"``: optimizer steps, like ``max_steps``; a
    phase at step P begins with the first batch of the optimizer step that
    follows P steps (``state.global_step == P``), also across a resume with
    another ``gradient_accumulation_steps``. ``"loader"``: loader steps
    (micro-batches), as ``tokpack.Loader`` counts them. With gradient
    accumulation and a phase after step 0 it must be given: the two differ.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(_LEADING):
            raise TypeError(f"pass the Trainer's arguments after {_LEADING[-1]} by keyword")
        for name, value in zip(_LEADING, args):
            if name in kwargs:
                raise TypeError(f"TokpackTrainer got {name} both by position and by keyword")
            kwargs[name] = value
        step_unit = kwargs.pop("step_unit", None)
        train_args = kwargs.get("args")
        loader = kwargs.get("train_dataset")
        _check(train_args, loader, kwargs.get("data_collator"), kwargs.get("eval_dataset"),
               step_unit)
        self._tokpack_step_unit = step_unit
        kwargs["args"] = copy.copy(train_args)
        kwargs["args"].ignore_data_skip = True
        super().__init__(**kwargs)  # type: ignore[call-arg]
        # Releases before these parallelisms existed have none of them (size 1).
        split = 1
        for size in ("get_tp_size", "get_cp_size", "get_sp_size"):
            split *= getattr(self, size, lambda: 1)()
        if split > 1:
            raise ValueError(
                f"tensor, context or sequence parallelism (tp x cp x sp = {split}): the ranks of "
                f"one model replica need the same batch, but a tokpack.Loader gives each rank "
                f"its own slice; TokpackTrainer supports data parallelism (DDP, FSDP, ZeRO)")
        self._tokpack = self._stream(loader,
                                     keep=max(64, 2 * train_args.gradient_accumulation_steps))
        self.add_callback(_EpochFromSteps())  # type: ignore[attr-defined]

    def get_train_dataloader(self) -> "_Stream":
        """The loader's batches, as they are, for this rank: nothing is
        batched again, collated, dispatched between ranks or copied."""
        loader = self.train_dataset  # type: ignore[attr-defined]
        if loader is not self._tokpack.loader:
            # train_dataset was replaced after construction: check it again.
            _check(self.args, loader, None, None,  # type: ignore[attr-defined]
                   self._tokpack_step_unit)
            self._tokpack = self._stream(loader, keep=self._tokpack.keep)
        return self._tokpack

    def _stream(self, loader: Loader, keep: int) -> "_Stream":
        given = None
        if self._tokpack_step_unit == "optimizer":
            given = _GIVEN_PHASES.setdefault(loader, loader.phases)
        return _Stream(loader, keep=keep, given_phases=given)

    def get_eval_dataloader(self, eval_dataset: Any = None) -> Any:
        """The Trainer's, after refusing a tokpack.Loader (a stream is not
        an evaluation set)."""
        chosen = eval_dataset
        if chosen is None or isinstance(chosen, str):
            chosen = self.eval_dataset  # type: ignore[attr-defined]
        _check_eval(chosen)
        return super().get_eval_dataloader(eval_dataset)  # type: ignore[misc]

    def training_step(self, model: Any, inputs: Dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        """The Trainer's step, then counts the batch as trained: the count,
        not what was read, decides the cursor a checkpoint saves."""
        loss = super().training_step(model, inputs, *args, **kwargs)  # type: ignore[misc]
        self._tokpack.trained += 1
        return loss

    def _save_checkpoint(self, model: Any, trial: Any) -> None:
        # The cursor goes in before the Trainer's own files, so a checkpoint
        # the Trainer considers complete (trainer_state.json written) has it.
        if self.args.should_save:  # type: ignore[attr-defined]
            folder = os.path.join(self._get_output_dir(trial=trial),  # type: ignore[attr-defined]
                                  f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}")  # type: ignore[attr-defined]
            _write_cursor(folder, self._tokpack.cursor())
        super()._save_checkpoint(model, trial)  # type: ignore[misc]

    def train(self, resume_from_checkpoint: Union[str, bool, None] = None, *args: Any,
              **kwargs: Any) -> Any:
        """``Trainer.train``; with ``resume_from_checkpoint`` (a path, or True
        for the last checkpoint in ``args.output_dir``, found as the Trainer
        finds it) the loader continues from the checkpoint's cursor."""
        if resume_from_checkpoint is True:
            resume_from_checkpoint = get_last_checkpoint(self.args.output_dir) or True  # type: ignore[attr-defined]
        stream = self.get_train_dataloader()
        accumulate = self.args.gradient_accumulation_steps  # type: ignore[attr-defined]
        if isinstance(resume_from_checkpoint, (str, os.PathLike)):
            resume_from_checkpoint = os.fspath(resume_from_checkpoint)
            cursor = _read_cursor(resume_from_checkpoint)
            phases = None
            if stream.given_phases is not None:
                phases = _resumed_phases(stream.given_phases, accumulate, cursor,
                                         _global_step(resume_from_checkpoint))
            stream.load(cursor, phases)
        elif stream.given_phases is not None:
            stream.start(_phases.in_loader_steps(stream.given_phases, accumulate))
        # True here means no checkpoint was found: the Trainer raises its error.
        return super().train(resume_from_checkpoint, *args, **kwargs)  # type: ignore[misc]


class TokpackTrainer(TokpackTrainerMixin, transformers.Trainer):
    """``transformers.Trainer`` trained on a ``tokpack.Loader`` (docs/hf.md)."""


class _Stream:
    """The Trainer's train_dataloader: the loader's batches, counted.

    The Trainer calls iter() on it once per epoch; each iterator continues the
    same stream. ``cu_seqlens`` is dropped (no model takes it; HF models find
    packed documents from ``position_ids``), and so is ``loss_mask`` (the
    labels are -100 where it is 0, which is what the model's loss and the
    Trainer's token count read): dict operations, not copies."""

    def __init__(self, loader: Loader, keep: int,
                 given_phases: Optional[NamedPhases] = None) -> None:
        self.loader = loader
        self.keep = keep
        # step_unit="optimizer": the phases as given, in optimizer steps.
        self.given_phases = given_phases
        self._batches = TrainedBatches(loader, keep=keep)
        self.trained = 0

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        for batch in self._batches:
            batch.pop("cu_seqlens", None)
            batch.pop("loss_mask", None)
            yield batch

    def cursor(self) -> Dict[str, Any]:
        """The cursor after the batches trained (not those read ahead)."""
        return self._batches.state_after(self.trained)

    def load(self, state: Mapping[str, Any], phases: Optional[NamedPhases] = None) -> None:
        self._batches.load_state_dict(state, phases)
        self.trained = 0

    def start(self, phases: Any) -> None:
        """A run from the start of the data with these phases (loader steps)."""
        if self.loader.step != 0:
            raise ValueError(
                f"step_unit=\"optimizer\" counts phases from the Trainer's step 0, but the loader "
                f"is at step {self.loader.step}, not at the start of its data; train a new "
                f"tokpack.Loader, or resume with train(resume_from_checkpoint=...)")
        self.loader.set_phases(phases)


class _EpochFromSteps(TrainerCallback):
    """Keeps ``state.epoch`` the fraction of max_steps done. The Trainer
    counts it from the batches seen in this process, which restarts at 0
    when a resume does not skip batches; global_step / max_steps is the
    value an uninterrupted run has (for a stream the Trainer makes one
    epoch of max_steps)."""

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        state.epoch = state.global_step / state.max_steps


def _write_cursor(folder: str, cursor: Mapping[str, Any]) -> None:
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, CURSOR_FILE)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(dict(cursor), f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)  # atomic: a reader sees the old file or the whole new one


def _read_cursor(checkpoint: str) -> Dict[str, Any]:
    path = os.path.join(checkpoint, CURSOR_FILE)
    # The core's rule for a cursor file, as the CLI's --state-in: a regular
    # file of at most MAX_CURSOR_BYTES (a FIFO or a device planted in a
    # checkpoint is refused, not waited on or read without end).
    try:
        text = _core.read_small_file(path, _core.MAX_CURSOR_BYTES, "a cursor file")
    except FileNotFoundError:
        raise FileNotFoundError(
            f"no tokpack cursor at {path}: the checkpoint {checkpoint} was not saved by a "
            f"TokpackTrainer, so where its data stopped is unknown; resume from a checkpoint "
            f"a TokpackTrainer saved, or start without resume_from_checkpoint") from None
    return json.loads(text)


def _global_step(checkpoint: str) -> int:
    """The optimizer steps a checkpoint was saved after, from the Trainer's state."""
    path = os.path.join(checkpoint, TRAINER_STATE_NAME)
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"no {path}: with step_unit=\"optimizer\" the phases after the checkpoint are "
            f"placed from its global_step, which the Trainer saves there")
    with open(path, encoding="utf-8") as f:
        return int(json.load(f)["global_step"])


def _resumed_phases(given: NamedPhases, accumulate: int, cursor: Mapping[str, Any],
                    step: int) -> NamedPhases:
    """The phases as given (optimizer steps) in loader steps, for a run that
    continues from `cursor` after optimizer step `step`. Phases the saved run
    began keep the loader step they began at (the cursor has it, whatever the
    accumulation was then); a phase at optimizer step P >= step begins
    (P - step) optimizer steps of `accumulate` loader steps after the cursor,
    so a resume with another gradient_accumulation_steps still begins it at
    optimizer step P: the Trainer takes `accumulate` fresh batches per
    optimizer step from the cursor on."""
    begun = _phases.cursor_phases(cursor)
    at = int(cursor["step"])
    out: NamedPhases = []
    for i, phase in enumerate(given):
        start, weights, ramp = phase[0], phase[1], _phases.ramp_of(phase)
        if start >= step:
            resumed = (at + (start - step) * accumulate, weights, ramp * accumulate)
        elif i < len(begun):
            resumed = (begun[i][0], weights, _phases.ramp_of(begun[i]))
        else:
            raise ValueError(
                f"the phase at optimizer step {start} comes before the checkpoint's step "
                f"{step}, but the checkpoint's run began only {len(begun)} phases: phases "
                f"that began before a checkpoint must be given as they were, and later ones "
                f"at steps from {step} on")
        out.append(resumed if resumed[2] else resumed[:2])
    return out


def _check(args: Any, loader: Any, collator: Any, eval_dataset: Any,
           step_unit: Optional[str] = None) -> None:
    """The construction checks: every mismatch named with both values and the fix."""
    if not isinstance(loader, Loader):
        raise TypeError(
            f"TokpackTrainer trains on a tokpack.Loader, but train_dataset is "
            f"{type(loader).__name__}; pass train_dataset=tokpack.Loader(path, seq_len=..., "
            f"batch_size=..., labels=\"same\"), or use transformers.Trainer for other datasets")
    if not isinstance(args, transformers.TrainingArguments):
        raise TypeError(
            f"TokpackTrainer needs args=TrainingArguments(max_steps=N, "
            f"per_device_train_batch_size={loader.batch_size}, ...), not {type(args).__name__}")
    labels = loader.options["labels"]
    if labels != "same":
        raise ValueError(
            f'the loader gives labels="{labels}" (shifted by one token), but Hugging Face causal '
            f'LMs shift labels themselves, so the model would learn the token two ahead; '
            f'create the loader with labels="same"')
    if loader.batch_size != args.per_device_train_batch_size:
        raise ValueError(
            f"the loader's batch_size={loader.batch_size} differs from "
            f"per_device_train_batch_size={args.per_device_train_batch_size}; each rank trains "
            f"on the loader's batches as they are, so set both to the same value")
    rank, world = args.process_index, args.world_size
    if (loader.rank, loader.world_size) != (rank, world):
        raise ValueError(
            f"the loader reads rank {loader.rank} of {loader.world_size}, but the Trainer runs "
            f"process {rank} of {world}; create the loader after the Trainer's processes are "
            f"set up (under torchrun it takes rank and world size from the environment), or pass "
            f"rank={rank}, world_size={world}")
    if args.max_steps <= 0:
        raise ValueError(
            f"TrainingArguments(max_steps={args.max_steps}): a tokpack.Loader is a stream, so "
            f"the Trainer needs max_steps > 0 (optimizer steps); passes over the data are "
            f"tokpack.Loader(epochs=...), not num_train_epochs")
    accumulate = args.gradient_accumulation_steps
    if step_unit not in (None, *STEP_UNITS):
        raise ValueError(f"step_unit={step_unit!r}: give \"optimizer\" (phases count the "
                         f"Trainer's optimizer steps) or \"loader\" (loader steps)")
    starts = [p[0] for p in _GIVEN_PHASES.get(loader, loader.phases)]
    if step_unit is None and accumulate > 1 and any(starts):
        later = next(start for start in starts if start)
        raise ValueError(
            f"the loader's phases start at steps {starts}, and with gradient_accumulation_steps="
            f"{accumulate} an optimizer step is {accumulate} loader steps: say which these are. "
            f"TokpackTrainer(..., step_unit=\"optimizer\"): the phase at {later} begins at "
            f"optimizer step {later} (loader step {later * accumulate}); step_unit=\"loader\": "
            f"at loader step {later}, in optimizer step {later // accumulate}")
    needed = args.max_steps * accumulate
    steps = run_steps(loader)
    if steps is not None and steps < needed:
        raise ValueError(
            f"the loader ends after {steps} steps, but max_steps={args.max_steps} with "
            f"gradient_accumulation_steps={accumulate} trains on {needed}; lower max_steps "
            f"or raise the loader's epochs= / max_steps=")
    if args.use_cache and loader.options["document_boundaries"]:
        # The Trainer copies use_cache into model.config; transformers (5.24)
        # makes the block-diagonal mask from position_ids only without a cache.
        raise ValueError(
            "TrainingArguments(use_cache=True): the Trainer sets the model's config.use_cache, "
            "and with a cache Hugging Face models ignore position_ids for the attention mask, "
            "so the loader's packed documents (document_boundaries / packing=\"best_fit\") "
            "would attend to each other; set use_cache=False (the default)")
    if args.dataloader_num_workers != 0:
        raise ValueError(
            f"dataloader_num_workers={args.dataloader_num_workers}: tokpack.Loader assembles "
            f"batches in its own C++ threads and cannot run in DataLoader workers; set "
            f"dataloader_num_workers=0 (and tokpack.Loader(threads=N) for more assembly threads)")
    if args.auto_find_batch_size:
        raise ValueError(
            "auto_find_batch_size=True: the batch size is the loader's "
            f"(batch_size={loader.batch_size}); set auto_find_batch_size=False")
    config = args.accelerator_config
    if getattr(config, "split_batches", False) or getattr(config, "dispatch_batches", None):
        raise ValueError(
            "accelerator_config split_batches / dispatch_batches: tokpack gives each rank its "
            "own slice of every global batch, nothing is split or dispatched; leave both unset")
    # The Trainer holds one accumulation group while it fetches the next; a
    # device loader hands out batches from its device ring.
    rings = ["prefetch"] + (["device_prefetch"] if loader.device != "cpu" else [])
    for ring in rings:
        buffers = int(loader.options[ring])
        if buffers < 2 * accumulate:
            raise ValueError(
                f"gradient_accumulation_steps={accumulate} keeps up to {2 * accumulate} batches "
                f"alive at once, but the loader has {ring}={buffers} buffers; create it with "
                f"{ring}={2 * accumulate} or more")
    if collator is not None:
        raise TypeError(
            "data_collator is not used: tokpack.Loader batches are complete model inputs "
            "(input_ids, labels, and position_ids with document_boundaries=True); leave "
            "data_collator unset")
    _check_eval(eval_dataset)


def _check_eval(eval_dataset: Any) -> None:
    values = eval_dataset.values() if isinstance(eval_dataset, Mapping) else [eval_dataset]
    if any(isinstance(v, Loader) for v in values):
        raise TypeError(
            "eval_dataset is a tokpack.Loader: evaluation needs a finite dataset that every rank "
            "reads through the Trainer's evaluation loop, which a training stream is not; pass "
            "a datasets.Dataset or torch Dataset as eval_dataset, or evaluate in a callback")


