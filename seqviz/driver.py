"""One driver builds, trains, evaluates and saves a model: for the zoo, the command line and the app's workers.

What to train is a :class:`Recipe`, a small value that a shipped model (:func:`seqviz.zoo.recipe`) and a
visitor's run (:func:`from_spec`, a :class:`seqviz.runs.RunSpec`) both become: the family and its config, the
task and its options, the training hyperparameters and seed, the steps after which to measure a learning curve,
and the words that describe the model. :func:`run` builds the model (seeded; the caller's random state is left
alone), trains it with the one loop (:func:`seqviz.train.train`), measures it on held-out data and writes the
one checkpoint format (:mod:`seqviz.checkpoints`): the same recipe gives the same weights, bit for bit, whoever
calls it. What differs between the callers comes in as hooks:

- ``phase(name)``: "data", "building", "training", then "saving" (the worker shows it on /train; the command
  line logs it);
- ``progress(p)`` after every step and ``stop`` before every step (:func:`seqviz.train.train`'s own);
  "watch it learn" snapshots are taken from ``progress``, which gets the model as it learns;
- ``finished(result)`` when training ends: False ends the run there, neither measured nor saved (a stopped zoo
  model; a run whose visitor has gone);
- ``save_state(state)`` every ``save_every_s`` seconds of training, and ``resume=state`` to go on from one (a lost
  worker's run, on another worker): the recipe's model is built as always, the state is loaded into it, and the
  weights end as an uninterrupted run's, bit for bit (:class:`seqviz.train.TrainState`). The learning-curve rows
  measured so far travel in the state, so a resumed run keeps them and measures only the steps still to come.

This module imports torch only when :func:`run` is called.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Recipe:
    """Everything the driver needs to make one model, and nothing about who asked for it."""

    name: str  # the model's name in its checkpoint
    description: str  # one line for tables and pickers
    family: str  # a key of seqviz.models.FAMILIES
    task: str  # a key of seqviz.tasks.TASKS
    config: dict[str, Any]  # the family config's fields; the task's own (vocabulary sizes, labels) are added
    train: dict[str, Any] = field(default_factory=dict)  # seqviz.train.TrainConfig fields, but the seed
    seed: int = 0  # initial weights, batches and dropout
    task_options: dict[str, Any] = field(default_factory=dict)  # e.g. the memory task's curriculum
    curve_steps: tuple[int, ...] = ()  # also measure held-out metrics after these steps (a learning curve)
    extra: dict[str, Any] = field(default_factory=dict)  # more for the checkpoint's document (a run's spec)

    def make_task(self):
        """The task with the shipped data split: one shared, read-only instance per process without options."""
        if not self.task_options:
            from seqviz.runs import shared_task

            return shared_task(self.task)
        from seqviz.tasks import make_task

        return make_task(self.task, **self.task_options)

    def train_config(self):
        """The :class:`seqviz.train.TrainConfig` of this recipe (its seed drives batches and dropout)."""
        from seqviz.train import TrainConfig

        return TrainConfig(**{**self.train, "seed": self.seed})

    def build(self, task=None):
        """A freshly initialised model, seeded: the same weights every time; torch's global generator untouched."""
        import torch

        from seqviz.models import build

        task = task if task is not None else self.make_task()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            return build(self.family, {**self.config, **task.model_fields()})

    def document(self, task, train_config, result, metrics: dict) -> dict:
        """What the checkpoint says about itself (checkpoints.dumps adds the family, config and sizes)."""
        from seqviz.tasks import DATA_SEED

        return {
            "name": self.name,
            "description": self.description,
            "task": self.task,
            **({"task_options": self.task_options} if self.task_options else {}),
            "data_seed": DATA_SEED,
            "seed": self.seed,
            "steps": result.steps,
            "train_seconds": round(result.seconds, 2),
            "final_loss": result.final_loss,
            "train": dict(vars(train_config)),
            **self.extra,
            "vocabularies": task.vocabularies,
            "metrics": metrics,
        }


def from_spec(spec, where: str) -> Recipe:
    """The recipe of a visitor's :class:`seqviz.runs.RunSpec`; ``where`` it was trained heads its description
    ("trained in the app", "trained from the command line")."""
    train = dict(vars(spec.train_config()))
    train.pop("seed")
    return Recipe(
        name=spec.label, description=f"{where}: {spec.label}", family=spec.family, task=spec.task,
        config=dataclasses.asdict(spec.model_config()), train=train, seed=spec.seed,
        extra={"spec": dataclasses.asdict(spec)},
    )


@dataclass
class Trained:
    """What :func:`run` made: the model (eval mode) and, unless ``finished`` ended the run, its measures and file."""

    model: Any
    task: Any  # the task it learned
    result: Any  # seqviz.train.TrainResult: steps done, seconds, final loss, stopped
    metrics: dict | None = None  # held-out metrics (with "learning_curve" when the recipe asked for one)
    checkpoint: bytes | None = None  # the checkpoint file's bytes (checkpoints.load_bytes reads them)
    path: Path | None = None  # where it was written, when it was

    @property
    def saved(self) -> bool:
        return self.checkpoint is not None

    @property
    def document(self) -> dict:
        """The checkpoint's JSON document, as :func:`seqviz.checkpoints.read_meta` reads it."""
        from seqviz.checkpoints import read_meta

        if self.checkpoint is None:
            raise ValueError("this run ended before it was saved")
        return read_meta(self.checkpoint)


def run(
    recipe: Recipe,
    out: str | os.PathLike | None = None,
    *,
    progress: Callable[[Any], None] | None = None,
    stop: Callable[[], bool] | Any | None = None,
    phase: Callable[[str], None] | None = None,
    finished: Callable[[Any], bool] | None = None,
    resume: Any | None = None,
    save_state: Callable[[Any], None] | None = None,
    save_every_s: float = 5.0,
) -> Trained:
    """Build, train, measure and save ``recipe``'s model; the file goes to ``out`` when given (atomically).

    ``progress`` and ``stop`` are the training loop's; ``phase`` hears each phase begin; ``finished(result)``
    returning False ends the run after training, unmeasured and unsaved. ``resume`` (a
    :class:`seqviz.train.TrainState` of this recipe) goes on from a saved point; ``save_state`` gets one, with the
    learning-curve rows so far, at most every ``save_every_s`` seconds of training (0: after every step).
    """
    from seqviz import checkpoints
    from seqviz.train import train

    def enter(name: str) -> None:
        if phase is not None:
            phase(name)

    enter("data")
    task = recipe.make_task()
    enter("building")
    model = recipe.build(task)
    config = recipe.train_config()
    curve: list[dict] = [dict(row) for row in resume.curve] if resume is not None else []  # rows before the resume

    def measure_curve(p) -> None:
        if p.step in recipe.curve_steps:
            p.model.eval()  # the loop puts it back in training mode before the next step
            curve.append({"step": p.step, **task.evaluate(p.model)})
        if progress is not None:
            progress(p)

    def keep(state) -> None:  # the curve so far goes with the state (measure_curve ran before it was taken)
        save_state(dataclasses.replace(state, curve=[dict(row) for row in curve]))

    enter("training")
    result = train(model, task, config, progress=measure_curve if recipe.curve_steps else progress, stop=stop,
                   resume=resume, save_state=keep if save_state is not None else None, save_every_s=save_every_s)
    trained = Trained(model, task, result)
    if finished is not None and not finished(result):
        return trained
    enter("saving")
    model.eval()
    metrics = task.evaluate(model)
    if curve:
        metrics["learning_curve"] = curve
    trained.metrics = metrics
    trained.checkpoint = checkpoints.dumps(model, recipe.document(task, config, result, metrics))
    if out is not None:
        trained.path = checkpoints.write(out, trained.checkpoint)
    return trained
