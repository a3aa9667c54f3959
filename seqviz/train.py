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

Resuming. A run can go on from a saved point, on another worker, and end with the weights an uninterrupted run
would have, bit for bit (on the same torch build and thread count: the floating-point sums must be the same).
The step after step ``k`` depends on five things only, and a :class:`TrainState` holds all five: the weights,
AdamW's moments and step counts, the numpy batch generator, torch's generator as it is inside the loop's
``fork_rng`` (dropout masks, position shifts) and the step number (the learning rate is a function of it).
``train(..., save_state=f, save_every_s=s)`` hands ``f`` a fresh state after a step at most every ``s`` seconds
of training; ``train(..., resume=state)`` loads it into a freshly built model and goes on from its step.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from seqviz.tasks import Task

_now = time.perf_counter  # the loop's clock (a test may replace it)


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
    elapsed_s: float  # seconds trained so far (a resumed run counts its earlier pieces too)
    model: Any  # the model as it is now (do not modify it from the callback)


@dataclass(frozen=True)
class TrainResult:
    steps: int  # steps actually done (a resumed run counts those before it too)
    seconds: float  # wall-clock seconds spent training (and those of the state it resumed)
    final_loss: float  # the loss of the last step (nan if no step ran)
    stopped: bool  # True if ``stop`` ended training early


# ---------------------------------------------------------------------------------------------------------
# A saved point of a run


class TrainStateError(ValueError):
    """Bytes that are not a whole, undamaged training state, or a state that does not fit the run resuming it."""


_MAGIC = b"seqviz-trainst1\n"  # 16 bytes: what a training state's bytes begin with (format 1)
_DIGEST = 32  # sha256 of everything after it: a flipped or missing byte anywhere is found
_MAX_DOCUMENT = 64 * 1024 * 1024  # the JSON part's length, read before it is trusted


@dataclass(frozen=True)
class TrainState:
    """Everything a run needs to go on from ``step`` as if it had never stopped; its tensors are copies.

    ``to_bytes`` writes one value: ``_MAGIC``, the sha256 of the rest, then a JSON document (little-endian u64
    length first) and a safetensors blob of every tensor. Safetensors and JSON rather than ``torch.save``:
    reading them runs no pickle machinery at all, so bytes from a lost worker (or anyone) can only fail to
    parse, never run code; JSON also keeps the PCG64 state's 128-bit integers exact, and the checksum turns any
    damaged or truncated blob into :class:`TrainStateError` before a value of it is used. (A checksum finds damage,
    not forgery: forged bytes with a matching checksum are still parsed and checked field by field, and a state
    that does not fit the model or the run is refused when ``train`` loads it.)
    """

    step: int  # steps done: the resumed loop starts at this 0-based step
    model: dict[str, torch.Tensor]  # the model's state_dict
    optimizer: dict[str, Any]  # AdamW's state_dict: {"state": {index: {"step", "exp_avg", ...}}, "param_groups"}
    batch_rng: dict[str, Any]  # the numpy batch Generator's bit_generator.state (PCG64: 128-bit ints)
    torch_rng: torch.Tensor  # (5056,) uint8: torch's CPU generator inside the loop's fork_rng (dropout, shifts)
    loss: float  # the last step's training loss
    seconds: float  # seconds trained so far, over every piece of the run
    config: dict[str, Any]  # the TrainConfig's fields: a state only goes on with the run it came from
    curve: list[dict] = field(default_factory=list)  # learning-curve rows measured so far (seqviz.driver's)

    def to_bytes(self) -> bytes:
        from safetensors.torch import save

        tensors = {f"model/{name}": _own(value) for name, value in self.model.items()}
        values: dict[str, dict] = {}  # non-tensor optimizer state, by parameter index
        for index, entry in self.optimizer["state"].items():
            values[str(index)] = {}
            for name, value in entry.items():
                if isinstance(value, torch.Tensor):
                    tensors[f"optimizer/{index}/{name}"] = _own(value)
                else:
                    values[str(index)][name] = value
        tensors["torch_rng"] = _own(self.torch_rng)
        document = {
            "step": self.step, "loss": self.loss, "seconds": self.seconds, "config": self.config,
            "batch_rng": self.batch_rng, "model_keys": list(self.model), "optimizer_values": values,
            "param_groups": self.optimizer["param_groups"], "curve": self.curve,
        }
        text = json.dumps(document, default=_plain, separators=(",", ":")).encode()
        body = struct.pack("<Q", len(text)) + text + save(tensors)
        return _MAGIC + hashlib.sha256(body).digest() + body

    @classmethod
    def from_bytes(cls, data: bytes) -> TrainState:
        """The state in ``data`` (:meth:`to_bytes`'s); TrainStateError if it is anything else."""
        try:
            data = bytes(memoryview(data))
        except TypeError:
            raise TrainStateError(f"a training state is bytes, not {type(data).__name__}") from None
        if not data.startswith(_MAGIC):
            raise TrainStateError("these bytes are not a seqviz training state (they do not begin as one)")
        digest, body = data[len(_MAGIC):len(_MAGIC) + _DIGEST], data[len(_MAGIC) + _DIGEST:]
        if hashlib.sha256(body).digest() != digest:
            raise TrainStateError("the training state is damaged or truncated: its checksum does not match")
        try:
            return _parse(body)
        except TrainStateError:
            raise
        except Exception as error:  # anything a well-checksummed but malformed blob raises while parsing
            raise TrainStateError(f"the training state is malformed: {type(error).__name__}: {error}"[:300]) from None


def _own(tensor: torch.Tensor) -> torch.Tensor:
    """A contiguous CPU copy (safetensors refuses tensors that share memory, as tied weights do)."""
    return tensor.detach().to("cpu").clone(memory_format=torch.contiguous_format)


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"a training state holds numbers, text, lists and dicts, not {type(value).__name__}")


def _parse(body: bytes) -> TrainState:
    from safetensors.torch import load

    (size,) = struct.unpack("<Q", body[:8])
    if size > min(_MAX_DOCUMENT, len(body) - 8):
        raise TrainStateError("the training state's document is longer than the bytes that hold it")
    doc = json.loads(body[8:8 + size].decode())
    tensors = load(body[8 + size:])
    _expect(doc, dict, "the document")
    for key, kind in (("step", int), ("loss", float | int), ("seconds", float | int), ("config", dict),
                      ("batch_rng", dict), ("model_keys", list), ("optimizer_values", dict),
                      ("param_groups", list), ("curve", list)):
        _expect(doc.get(key), kind, key)
    if doc["step"] < 0 or not doc["seconds"] >= 0 or not all(isinstance(row, dict) for row in doc["curve"]):
        raise TrainStateError("the training state's step, seconds or curve is out of range")
    np.random.PCG64().state = doc["batch_rng"]  # raises on anything but a PCG64 state
    torch_rng = tensors.pop("torch_rng")
    torch.Generator().set_state(torch_rng)  # raises on anything but a CPU generator's state
    model = {name: tensors.pop(f"model/{name}") for name in doc["model_keys"]}
    state: dict[int, dict] = {int(index): dict(values) for index, values in doc["optimizer_values"].items()}
    for key, tensor in tensors.items():
        kind, index, name = key.split("/")
        if kind != "optimizer" or int(index) not in state:
            raise TrainStateError(f"the training state holds a tensor it does not describe: {key[:80]!r}")
        state[int(index)][name] = tensor
    for group in doc["param_groups"]:
        _expect(group, dict, "an optimizer group")
        if "betas" in group:
            group["betas"] = tuple(group["betas"])  # AdamW's own type, so a state reads back equal
    return TrainState(doc["step"], model, {"state": state, "param_groups": doc["param_groups"]}, doc["batch_rng"],
                      torch_rng, float(doc["loss"]), float(doc["seconds"]), doc["config"], doc["curve"])


def _expect(value, kind, what: str) -> None:
    if not isinstance(value, kind) or isinstance(value, bool):
        raise TrainStateError(f"the training state's {what} is missing or of the wrong kind")


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
    *,
    resume: TrainState | None = None,
    save_state: Callable[[TrainState], None] | None = None,
    save_every_s: float = 5.0,
) -> TrainResult:
    """Train ``model`` on ``task`` in place and leave it in eval mode.

    ``progress`` is called after every step; every ``eval_every`` steps (0: never) and after the last
    step it also gets the task's headline metric, measured on held-out data. ``stop`` (a callable
    returning True, or a ``threading.Event``) is checked before every step.

    ``resume``: a :class:`TrainState` of this run (same config) to go on from: its weights, optimizer and
    generators are loaded into ``model`` (freshly built) and the loop starts at its step; steps, seconds and
    ``Progress.step`` count on from it. ``save_state`` gets a new state after a step (and after that step's
    ``progress``) whenever ``save_every_s`` seconds of training have passed since the last one (0: every step).
    """
    if not save_every_s >= 0:
        raise ValueError("save_every_s must be >= 0 seconds")
    if hasattr(model, "fit"):  # bag of words: counting is its whole training
        if resume is not None:
            raise TrainStateError("a model fitted by counting has no steps to resume")
        return _fit_counts(model, task, progress)
    if resume is not None:
        _check_resume(resume, config)
    try:
        with torch.random.fork_rng(devices=[]):  # the caller's random state comes back untouched
            torch.manual_seed(config.seed)  # dropout masks
            return _train_steps(model, task, config, progress, stop, eval_every, resume, save_state, save_every_s)
    finally:
        model.eval()


def _check_resume(resume: TrainState, config: TrainConfig) -> None:
    differ = sorted(k for k in {**resume.config, **vars(config)} if resume.config.get(k) != getattr(config, k, None))
    if differ:
        raise TrainStateError(f"the saved state is of another run (a different {', '.join(differ)})")
    if resume.step > config.steps:
        raise TrainStateError(f"the saved state is at step {resume.step}, past this run's {config.steps} steps")


def _train_steps(model, task, config, progress, stop, eval_every, resume, save_state, save_every_s) -> TrainResult:
    rng = np.random.default_rng(config.seed)  # batches
    decay = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=config.lr,
        foreach=True,  # every tensor in one multi-tensor update: a little faster on a CPU than one at a time
    )
    done, loss_value, before = 0, float("nan"), 0.0  # steps done, last loss, seconds trained before this piece
    if resume is not None:
        try:
            model.load_state_dict(resume.model)
            optimizer.load_state_dict(copy.deepcopy(resume.optimizer))  # AdamW would step the state's own tensors
        except (RuntimeError, ValueError, KeyError) as error:
            raise TrainStateError(f"the saved state does not fit this model: {error}"[:300]) from None
        rng.bit_generator.state = resume.batch_rng
        torch.random.set_rng_state(resume.torch_rng)  # inside train's fork_rng: the loop's own generator
        done, loss_value, before = resume.step, resume.loss, resume.seconds
    start = _now()
    saved_at = before
    for step in range(done, config.steps):
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
            progress(Progress(done, config.steps, loss_value, metric, before + _now() - start, model))
        seconds = before + _now() - start
        if save_state is not None and seconds - saved_at >= save_every_s:
            # After progress: whatever it drew from torch's generator is in the state, as the next step sees it.
            save_state(TrainState(done, copy.deepcopy(model.state_dict()), copy.deepcopy(optimizer.state_dict()),
                                  rng.bit_generator.state, torch.random.get_rng_state(), loss_value, seconds,
                                  dict(vars(config)), list(resume.curve) if resume is not None else []))
            saved_at = seconds
    return TrainResult(done, before + _now() - start, loss_value, done < config.steps)


def _fit_counts(model, task: Task, progress) -> TrainResult:
    start = time.perf_counter()
    model.fit(task.train_ids, task.train_labels)
    seconds = time.perf_counter() - start
    if progress is not None:
        progress(Progress(1, 1, float("nan"), task.headline(task.evaluate(model)), seconds, model))
    return TrainResult(1, seconds, float("nan"), False)
