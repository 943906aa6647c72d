"""tokpack with Lightning: TokpackDataModule serves a tokpack.Loader's batches
to ``Trainer.fit`` and puts the cursor of the last batch trained into
Lightning's own checkpoints, so ``fit(ckpt_path=...)`` resumes on exactly the
next batch, on one process or many.

How it fits Lightning (checked against lightning 2.6):

- The Loader is built in ``setup("fit")``, when the strategy has set up the
  process group, with the Trainer's ``global_rank`` and ``world_size``: each
  rank trains on its own slice of tokpack's global batch. Lightning injects
  no DistributedSampler into an iterable that is not a DataLoader.
- ``train_dataloader()`` returns a TrainBatches. Lightning saves the state of
  such a stateful iterable in every checkpoint (the fit loop's
  ``combined_loader`` entry) and loads it when it restarts training from one;
  the data module itself keeps no state, so nothing is restored twice. This
  is the mechanism rather than the data module's state_dict (which Lightning
  also saves) because Lightning then knows the iterable resumes mid-epoch
  (it warns about one that does not), and because the state belongs to the
  iterable that was trained, made after setup, so nothing waits pending.
- Lightning reads one batch ahead from an iterable without a length (to see
  the end coming) and none ahead from one with a length, so the loader's own
  cursor is not what was trained. TrainBatches saves the cursor after the
  batches Lightning's fit loop counted as processed, the count Lightning
  itself resumes from.
- Lightning's max_steps counts optimizer steps, a Loader's steps are batches
  (micro-batches under accumulate_grad_batches). ``step_unit="optimizer"``
  takes the phases' start steps and max_steps in optimizer steps and
  multiplies them by accumulate_grad_batches in setup(); with accumulation,
  step counts given without a step_unit are refused, since the two differ.

Not thread-safe, like the Loader: Lightning drives it from its loop's thread.
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

import lightning.pytorch as pl
from lightning.pytorch.utilities.signature_utils import is_param_in_hook_signature

from .. import _phases
from .._loader import Loader, Sources
from ._trained import TrainedBatches, run_steps

__all__ = ["TokpackDataModule", "TrainBatches"]


class TrainBatches:
    """The iterable TokpackDataModule.train_dataloader() returns: the
    loader's batches, unchanged, and (as Lightning's stateful-iterable
    protocol) the cursor of the last batch trained.

    ``len()`` is the loader's: the steps of the whole run, counting those
    before a resume, which is one Lightning epoch; Lightning's own batch
    count, restored from the checkpoint, covers the steps before it. An
    endless loader has no length (TypeError, as ``len(loader)``), so Lightning
    reads one batch ahead; the saved cursor does not include it. (A length
    made up from Trainer(max_steps) would avoid that read, but would tie the
    data to one Trainer's settings, and the read costs nothing.)
    """

    def __init__(self, loader: Loader, trainer: pl.Trainer,
                 converted_with: Optional[int] = None) -> None:
        self._batches = TrainedBatches(loader)
        self._trainer = trainer
        # step_unit="optimizer": the accumulate_grad_batches that the phases'
        # start steps and max_steps were multiplied by (None: not converted).
        self._converted_with = converted_with
        # Lightning's processed-batch count when the cursor was where
        # self._batches started counting.
        self._trained_at_start = self._trained()

    @property
    def loader(self) -> Loader:
        return self._batches.loader

    def __iter__(self) -> TrainedBatches:
        # The batches go to Lightning as the loader makes them; TrainedBatches
        # only records the cursor after each (no copy).
        return self._batches

    def __len__(self) -> int:
        return len(self._batches.loader)

    def _trained(self) -> int:
        # `processed` counts batches that went through training_step. A batch
        # fetched but not yet processed when a checkpoint is written (one
        # saved from on_train_batch_start or inside training_step) is fetched
        # again by the resumed loop, so it is not counted as trained; one
        # saved from on_train_batch_end counts its batch, as Lightning does.
        return self._trainer.fit_loop.epoch_loop.batch_progress.total.processed

    def _global_batch(self) -> int:
        return self.loader.batch_size * self.loader.world_size

    def state_dict(self) -> Dict[str, Any]:
        """The cursor after the batches trained so far, their number, the
        rows of a global batch (world_size x batch_size) they were counted in,
        and the Trainer's accumulate_grad_batches."""
        trained = self._trained()
        return {"tokpack": self._batches.state_after(trained - self._trained_at_start),
                "trained": trained, "global_batch": self._global_batch(),
                "accumulate_grad_batches": self._trainer.accumulate_grad_batches}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Moves the loader to a saved cursor (a dict from state_dict()).
        ValueError for a state that is not one, and, for a finite loader, for
        one saved with another global batch: the loader's length is in steps
        of the global batch and Lightning resumes its own count of them, so
        the epoch would end at the wrong batch. An endless loader continues
        the same sample order with the new global batch. With step counts
        converted from optimizer steps (step_unit="optimizer"), also for a
        state saved under another accumulate_grad_batches."""
        keys = {"tokpack", "trained", "global_batch"}
        if not isinstance(state, Mapping) or not keys <= set(state):
            raise ValueError(
                "this checkpoint's train dataloader state was not saved by "
                "tokpack.integrations.lightning (it has no 'tokpack' cursor); it comes from "
                "another train_dataloader()")
        saved, now = int(state["global_batch"]), self._global_batch()
        if saved != now and run_steps(self.loader) is not None:
            raise ValueError(
                f"this checkpoint was trained with a global batch of {saved} rows (world_size x "
                f"batch_size) and this run has {now} ({self.loader.world_size} x "
                f"{self.loader.batch_size}); a finite tokpack.Loader's length is counted in "
                f"global batches, so resume it with the same world size and batch_size (an "
                f"endless loader with Trainer(max_steps) may change them)")
        saved_accumulate = state.get("accumulate_grad_batches")
        if (self._converted_with is not None and saved_accumulate is not None
                and int(saved_accumulate) != self._converted_with):
            # Lightning steps the optimizer every accumulate_grad_batches
            # batches of its epoch, counted from the epoch's start: after such
            # a resume its optimizer steps no longer start at multiples of the
            # new value, and the phases that began are in the cursor in the
            # old loader steps; no conversion places both right.
            raise ValueError(
                f"this checkpoint was trained with accumulate_grad_batches={saved_accumulate} "
                f"and this run has {self._converted_with}; with step_unit=\"optimizer\" the "
                f"phases' start steps and max_steps are optimizer steps of "
                f"accumulate_grad_batches loader steps each, so they would move: resume with "
                f"accumulate_grad_batches={saved_accumulate}, or give them in loader steps "
                f"(step_unit=\"loader\")")
        self._batches.load_state_dict(state["tokpack"])
        self._trained_at_start = int(state["trained"])


class TokpackDataModule(pl.LightningDataModule):
    """A LightningDataModule over ``tokpack.Loader(sources, **options)``.

    ``options`` are the Loader's (seq_len, batch_size, seed, epochs,
    max_steps, labels, phases, ...): with ``phases=`` the mixture changes
    at given steps, and a resumed fit may pass phases that differ after the
    checkpoint's step. ``labels`` defaults to ``"next"`` (the inputs
    shifted by one), since a LightningModule computes its loss itself;
    pass ``labels="same"`` for a model that shifts internally (Hugging Face
    causal LMs). Batches are torch tensors.

    ``step_unit`` says what the phases' start steps and ``max_steps`` count.
    ``"optimizer"``: optimizer steps, like ``Trainer(max_steps)``; they are
    multiplied by the Trainer's ``accumulate_grad_batches`` when the Loader
    is made, so a phase at step P begins with the first batch of optimizer
    step P (``trainer.global_step == P``). ``"loader"``: batches, as
    ``tokpack.Loader`` counts them. With ``accumulate_grad_batches > 1``
    and a phase after step 0 or a ``max_steps``, it must be given.

    Use it as ``trainer.fit(model, datamodule=dm)``: the Loader is made in
    ``setup("fit")`` (a fresh one, at the start of the data, each fit) and a
    checkpoint's cursor is loaded by ``fit(ckpt_path=...)``. The loader of
    the latest fit is ``dm.loader`` (for its ``stats()``).

    A finite loader (epochs= or max_steps=) is one Lightning epoch: use
    ``Trainer(max_epochs=1)``, or a ``Trainer(max_steps)`` that ends within
    it. An endless loader needs ``Trainer(max_steps=N)``, or
    ``max_epochs=-1`` to train until stopped.
    """

    def __init__(self, sources: Optional[Sources] = None, *,
                 step_unit: Optional[str] = None, **options: Any) -> None:
        super().__init__()
        if step_unit not in (None, "optimizer", "loader"):
            raise ValueError(f"step_unit={step_unit!r}: give \"optimizer\" (phases and "
                             f"max_steps count the Trainer's optimizer steps) or \"loader\" "
                             f"(loader steps)")
        self.step_unit = step_unit
        if "num_workers" in options:
            raise TypeError(
                "TokpackDataModule takes no num_workers: a tokpack.Loader assembles batches "
                "in its own C++ threads (threads=, prefetch=) and cannot run in DataLoader "
                "worker processes")
        if options.get("as_", "torch") != "torch":
            raise ValueError(f"TokpackDataModule serves torch tensors; as_={options['as_']!r} "
                             "is not supported")
        options.pop("as_", None)
        options.setdefault("labels", "next")
        self.sources = sources
        self.options = options
        self.loader: Optional[Loader] = None
        self._converted_with: Optional[int] = None

    def setup(self, stage: str) -> None:
        """Makes the Loader for ``stage == "fit"`` with the Trainer's rank and
        world size (ValueError when options name others)."""
        if stage != "fit":
            return
        options = dict(self.options)
        if self.trainer is not None:
            for name, value in (("rank", self.trainer.global_rank),
                                ("world_size", self.trainer.world_size)):
                given = options.get(name)
                if given is not None and given != value:
                    raise ValueError(
                        f"TokpackDataModule got {name}={given}, but this process is "
                        f"{name}={value} of the Trainer; leave {name} out, the Trainer's is used")
                options[name] = value
        self._converted_with = self._in_loader_steps(options)
        self.loader = Loader(self.sources, as_="torch", **options)

    def _in_loader_steps(self, options: Dict[str, Any]) -> Optional[int]:
        """Multiplies the phases' start steps and max_steps in `options` by
        accumulate_grad_batches for step_unit="optimizer"; returns that factor,
        or None when nothing was converted. ValueError when there is
        accumulation, step counts and no step_unit."""
        phases, max_steps = options.get("phases"), options.get("max_steps") or 0
        starts = [s for s in _phases.start_steps(phases) if s] if phases is not None else []
        if not starts and not max_steps:
            return None  # nothing counts steps: the unit does not matter
        accumulate = self.trainer.accumulate_grad_batches if self.trainer is not None else None
        if self.step_unit == "loader" or (self.step_unit is None and accumulate in (None, 1)):
            return None
        given = ", ".join(([f"phases starting at {starts}"] if starts else [])
                          + ([f"max_steps={max_steps}"] if max_steps else []))
        if accumulate is None:
            raise ValueError(
                f"step_unit=\"optimizer\" multiplies {given} by the Trainer's "
                f"accumulate_grad_batches, but this TokpackDataModule has no Trainer: call "
                f"setup() through trainer.fit(model, datamodule=dm)")
        if self.step_unit is None:
            raise ValueError(
                f"TokpackDataModule got {given}, and with accumulate_grad_batches={accumulate} "
                f"an optimizer step is {accumulate} loader steps: say which these are. "
                f"TokpackDataModule(..., step_unit=\"optimizer\") counts them in optimizer "
                f"steps, like Trainer(max_steps) (step {starts[0] if starts else max_steps} is "
                f"loader step {(starts[0] if starts else max_steps) * accumulate}); "
                f"step_unit=\"loader\" in loader steps (batches)")
        if phases is not None:
            options["phases"] = _phases.in_loader_steps(phases, accumulate)
        if max_steps:
            options["max_steps"] = max_steps * accumulate
        return accumulate

    def train_dataloader(self) -> TrainBatches:
        """The loader's batches for Trainer.fit, checked against the
        Trainer's limits (see the class docstring)."""
        trainer = self.trainer
        if trainer is None or self.loader is None:
            raise RuntimeError(
                "TokpackDataModule.train_dataloader() is called by Trainer.fit: pass the "
                "module as trainer.fit(model, datamodule=dm), so that its loader is made in "
                "setup('fit') and its cursor is saved in the Trainer's checkpoints")
        if is_param_in_hook_signature(trainer.lightning_module.training_step, "dataloader_iter",
                                      explicit=True):
            raise TypeError(
                "TokpackDataModule does not support training_step(dataloader_iter): the "
                "batches trained are counted by Lightning's loop, which does not see the "
                "batches such a step takes; take `batch` instead")
        self._check_limits(trainer)
        return TrainBatches(self.loader, trainer, self._converted_with)

    def _check_limits(self, trainer: pl.Trainer) -> None:
        assert self.loader is not None
        max_steps, max_epochs = trainer.max_steps, trainer.max_epochs
        accumulate = trainer.accumulate_grad_batches
        steps = run_steps(self.loader)
        if steps is None:
            # Endless: Lightning's epoch never ends, so only max_steps stops it.
            if max_steps == -1 and max_epochs != -1:
                raise ValueError(
                    f"an endless tokpack.Loader never ends a Lightning epoch, so "
                    f"Trainer(max_epochs={max_epochs}) would never stop (1000 is Lightning's "
                    f"default when neither max_epochs nor max_steps is given): pass "
                    f"Trainer(max_steps=N), or max_epochs=-1 to train until stopped, or give "
                    f"the loader epochs= or max_steps=")
            return
        # Finite: the whole run is one Lightning epoch; a second epoch would
        # find the loader exhausted and repeat empty epochs.
        if max_epochs in (0, 1) or (max_steps != -1 and max_steps * accumulate <= steps):
            return
        if max_steps == -1:
            limit = f"Trainer(max_epochs={max_epochs})"
        else:
            limit = f"Trainer(max_steps={max_steps})" + (
                f" with accumulate_grad_batches={accumulate}" if accumulate > 1 else "")
        raise ValueError(
            f"this tokpack.Loader's run ({steps} steps, all its epochs) is one Lightning "
            f"epoch, and {limit} asks for more: pass Trainer(max_epochs=1) and set the "
            f"length with the loader's epochs= or max_steps=")
