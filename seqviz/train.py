"""One training loop for every model: the command line, the zoo and the app's Train page all use it.

Each step draws a batch from the task, computes ``model.loss(batch)`` (mean cross-entropy), and takes
one AdamW step on gradients whose global norm is clipped to ``clip`` (Pascanu et al. 2013: clipping
tames exploding gradients; it cannot bring back vanished ones). The learning rate warms up linearly
and then follows a cosine down to ``min_lr_ratio`` of its peak (or stays constant).

Deterministic on CPU: the same model, task, config and seed give the same weights, bit for bit.
Batches come from a local numpy Generator seeded with ``config.seed``; dropout masks (and the
transformer translator's position shifts) from torch's generator seeded inside
``torch.random.fork_rng``, so the caller's random state is the same after training as before. The loop
changes no process-wide setting: threads and deterministic mode are set once per process by
:func:`seqviz.runtime.configure_torch`. No prints: progress goes to a callback, and a ``stop`` callable
(or ``threading.Event``) is checked between steps. The bag-of-words model is fitted by counting, in one step.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from seqviz.tasks import Task


@dataclass
class TrainConfig:
    steps: int = 2000  # optimisation steps (one batch each)
    batch_size: int = 64  # examples per batch
    lr: float = 3e-3  # peak learning rate of AdamW
    weight_decay: float = 0.0  # AdamW's decoupled weight decay
    clip: float = 1.0  # clip the global gradient norm to this (0: no clipping)
    warmup: int = 100  # steps of linear warm-up from 0 to lr
    schedule: str = "cosine"  # "cosine" decays to min_lr_ratio·lr at the last step; "constant" keeps lr
    min_lr_ratio: float = 0.1  # where the cosine ends, as a fraction of lr
    seed: int = 0  # drives batches and dropout (the initial weights are seeded where the model is built)

    def __post_init__(self):
        if self.steps < 0 or self.batch_size < 1 or self.lr <= 0 or self.clip < 0 or self.warmup < 0:
            raise ValueError("steps, warmup and clip must be >= 0, batch_size >= 1 and lr > 0")
        if self.schedule not in ("cosine", "constant"):
            raise ValueError("schedule must be 'cosine' or 'constant'")


@dataclass(frozen=True)
class Progress:
    step: int  # steps done so far (1 .. steps)
    steps: int  # steps planned
    loss: float  # this step's training loss
    metric: float | None  # the task's headline held-out metric, when it was measured at this step
    elapsed_s: float  # seconds since training started
    model: Any  # the model as it is now (do not modify it from the callback)


@dataclass(frozen=True)
class TrainResult:
    steps: int  # steps actually done
    seconds: float  # wall-clock seconds spent training
    final_loss: float  # the loss of the last step (nan if no step ran)
    stopped: bool  # True if ``stop`` ended training early


def learning_rate(step: int, config: TrainConfig) -> float:
    """The learning rate at ``step`` (0-based): linear warm-up, then cosine or constant."""
    if step < config.warmup:
        return config.lr * (step + 1) / config.warmup
    if config.schedule == "constant":
        return config.lr
    span = max(1, config.steps - config.warmup)
    progress = min(1.0, (step - config.warmup) / span)
    cosine = 0.5 * (1 + math.cos(math.pi * progress))
    return config.lr * (config.min_lr_ratio + (1 - config.min_lr_ratio) * cosine)


def _should_stop(stop) -> bool:
    if stop is None:
        return False
    if hasattr(stop, "is_set"):
        return bool(stop.is_set())
    return bool(stop())


def train(
    model,
    task: Task,
    config: TrainConfig,
    progress: Callable[[Progress], None] | None = None,
    stop: Callable[[], bool] | Any | None = None,
    eval_every: int = 0,
) -> TrainResult:
    """Train ``model`` on ``task`` in place and leave it in eval mode.

    ``progress`` is called after every step; every ``eval_every`` steps (0: never) and after the last
    step it also gets the task's headline metric, measured on held-out data. ``stop`` (a callable
    returning True, or a ``threading.Event``) is checked before every step.
    """
    if hasattr(model, "fit"):  # bag of words: counting is its whole training
        return _fit_counts(model, task, progress)
    try:
        with torch.random.fork_rng(devices=[]):  # the caller's random state comes back untouched
            torch.manual_seed(config.seed)  # dropout masks
            return _train_steps(model, task, config, progress, stop, eval_every)
    finally:
        model.eval()


def _train_steps(model, task, config, progress, stop, eval_every) -> TrainResult:
    rng = np.random.default_rng(config.seed)  # batches
    decay = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=config.lr,
        foreach=True,  # every tensor in one multi-tensor update: a little faster on a CPU than one at a time
    )
    start = time.perf_counter()
    loss_value = float("nan")
    done = 0
    for step in range(config.steps):
        if _should_stop(stop):
            break
        model.train()
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, config)
        batch = task.batch(rng, config.batch_size, progress=step / max(1, config.steps))
        loss = model.loss(batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if config.clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip)
        optimizer.step()
        loss_value = float(loss.detach())
        done = step + 1
        if progress is not None:
            metric = None
            if eval_every and (done % eval_every == 0 or done == config.steps):
                model.eval()
                metric = task.headline(task.evaluate(model))
            progress(Progress(done, config.steps, loss_value, metric, time.perf_counter() - start, model))
    return TrainResult(done, time.perf_counter() - start, loss_value, done < config.steps)


def _fit_counts(model, task: Task, progress) -> TrainResult:
    start = time.perf_counter()
    model.fit(task.train_ids, task.train_labels)
    seconds = time.perf_counter() - start
    if progress is not None:
        progress(Progress(1, 1, float("nan"), task.headline(task.evaluate(model)), seconds, model))
    return TrainResult(1, seconds, float("nan"), False)
