"""The shipped models: every name, what it is, how it is trained, and where its checkpoint lives.

Each model of the zoo is a :class:`ZooEntry` (family, task, config, training hyperparameters, seed);
``python -m seqviz train`` rebuilds its checkpoint, one file ``assets/models/NAME.safetensors``, with the
one driver (:mod:`seqviz.driver`, which the command line's and the app's runs use too). Reading a model's
metadata (:func:`metadata`) reads only the file's header, so a page can show the measured numbers without
importing torch; :func:`load` builds the model itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ASSETS_DIR = Path(__file__).resolve().parent.parent / "assets" / "models"


@dataclass(frozen=True)
class ZooEntry:
    name: str  # the file name in assets/models/ (NAME.safetensors) and the name pages use
    family: str  # a key of seqviz.models.FAMILIES
    task: str  # a key of seqviz.tasks.TASKS
    description: str  # one line for tables and pickers
    config: dict[str, Any] = field(default_factory=dict)  # config fields; vocab sizes and labels come from the task
    train: dict[str, Any] = field(default_factory=dict)  # seqviz.train.TrainConfig fields
    seed: int = 0  # initial weights, batches and dropout
    task_options: dict[str, Any] = field(default_factory=dict)  # e.g. the memory task's curriculum
    curve_steps: tuple[int, ...] = ()  # also measure held-out metrics after these steps (a learning curve)


_CLASSIFIER_TRAIN = {"steps": 2500, "batch_size": 64, "lr": 3e-3, "warmup": 100, "clip": 1.0}
_MEMORY_TRAIN = {"steps": 2000, "batch_size": 64, "lr": 3e-3, "warmup": 100, "clip": 1.0}
# No curriculum: every distance 1..60 from the first step, the same data and budget for rnn, gru and lstm.
# The learning curve shows what each knows after a few hundred steps: the plain RNN learns the long
# distances last (its gradient through many steps is the weakest), the gated ones learn them at once.
_MEMORY_OPTIONS: dict[str, Any] = {}
_MEMORY_CURVE = (100, 200, 300, 400, 500, 750, 1000, 1500, 2000)
# The same budget for plain and the attention models, so
# plain's fall-off with length is the bottleneck's doing, not a smaller training run.
_SEQ2SEQ_TRAIN = {"steps": 3000, "batch_size": 64, "lr": 3e-3, "warmup": 100, "clip": 1.0}
# hidden 64 per direction reaches the targets (additive and dot exact on every sentence of <= 30 tokens, plain far
# behind on long ones) in less training time than 128.
_SEQ2SEQ = {"emb_dim": 64, "hidden": 64, "attn_dim": 64, "bidirectional": True, "dropout": 0.0}
_RECURRENT = {"emb_dim": 32, "hidden_dim": 64, "dropout": 0.0}
_MEMORY_RECURRENT = {"emb_dim": 16, "hidden_dim": 64, "dropout": 0.0}

ENTRIES: tuple[ZooEntry, ...] = (
    ZooEntry("bow", "bow", "emails", "bag-of-words naive Bayes: counts words, ignores their order",
             config={"alpha": 1.0}),
    ZooEntry("rnn", "rnn", "emails", "plain RNN classifier (tanh), reads the email word by word",
             config=_RECURRENT, train=_CLASSIFIER_TRAIN),
    ZooEntry("gru", "gru", "emails", "GRU classifier", config=_RECURRENT, train=_CLASSIFIER_TRAIN),
    ZooEntry("lstm", "lstm", "emails", "LSTM classifier", config=_RECURRENT, train=_CLASSIFIER_TRAIN),
    # Jain & Wallace's (2019) setting, smaller: the email read both ways (32 numbers per direction, h_j of 64 as
    # the LSTM's h_t), pooled by additive attention; the recurrent classifiers' data and budget.
    ZooEntry("attention-lstm", "attention-lstm", "emails",
             "bidirectional LSTM classifier that pools its states with additive attention",
             config={"emb_dim": 32, "hidden_dim": 32, "attn_dim": 64, "bidirectional": True, "dropout": 0.0},
             train=_CLASSIFIER_TRAIN),
    ZooEntry("transformer", "transformer", "emails", "2-layer, 4-head transformer encoder classifier",
             config={"d_model": 64, "n_heads": 4, "n_layers": 2, "d_ff": 128, "max_len": 64, "dropout": 0.1},
             train={**_CLASSIFIER_TRAIN, "steps": 2000, "lr": 2e-3, "weight_decay": 0.01, "warmup": 200}),
    ZooEntry("memory-rnn", "rnn", "memory", "plain RNN on 'remember the first word'",
             config=_MEMORY_RECURRENT, train=_MEMORY_TRAIN, task_options=_MEMORY_OPTIONS,
             curve_steps=_MEMORY_CURVE),
    ZooEntry("memory-gru", "gru", "memory", "GRU on 'remember the first word'",
             config=_MEMORY_RECURRENT, train=_MEMORY_TRAIN, task_options=_MEMORY_OPTIONS,
             curve_steps=_MEMORY_CURVE),
    ZooEntry("memory-lstm", "lstm", "memory", "LSTM on 'remember the first word'",
             config=_MEMORY_RECURRENT, train=_MEMORY_TRAIN, task_options=_MEMORY_OPTIONS,
             curve_steps=_MEMORY_CURVE),
    ZooEntry("plain", "plain", "translation", "LSTM encoder-decoder without attention: the one-vector bottleneck",
             config={**_SEQ2SEQ, "kind": "plain"}, train=_SEQ2SEQ_TRAIN),
    ZooEntry("additive", "additive", "translation", "LSTM encoder-decoder with additive attention (Bahdanau)",
             config={**_SEQ2SEQ, "kind": "additive"}, train=_SEQ2SEQ_TRAIN),
    ZooEntry("dot", "dot", "translation", "LSTM encoder-decoder with dot-product attention (Luong)",
             config={**_SEQ2SEQ, "kind": "dot"}, train=_SEQ2SEQ_TRAIN),
    ZooEntry("transformer-translator", "transformer-seq2seq", "translation",
             "encoder-decoder transformer: self- and cross-attention, no recurrence",
             # seqviz.models.transformer_seq2seq's defaults (random position shift 40)
             config={"d_model": 64, "n_heads": 4, "enc_layers": 2, "dec_layers": 2, "d_ff": 256, "dropout": 0.0,
                     "max_position_shift": 40},
             train={"steps": 3000, "batch_size": 64, "lr": 2e-3, "warmup": 200, "clip": 1.0}),
)

ZOO: dict[str, ZooEntry] = {entry.name: entry for entry in ENTRIES}
NAMES: tuple[str, ...] = tuple(ZOO)


def entry(name: str) -> ZooEntry:
    if name not in ZOO:
        raise KeyError(f"no model called {name!r} in the zoo; the zoo has: {', '.join(NAMES)}")
    return ZOO[name]


def path(name: str, directory: Path | None = None) -> Path:
    """The checkpoint file of a shipped model: ``assets/models/NAME.safetensors``."""
    directory = Path(directory) if directory is not None else ASSETS_DIR
    return directory / f"{entry(name).name}.safetensors"


def available(directory: Path | None = None) -> list[str]:
    """The zoo's names whose checkpoint file exists, in the zoo's order."""
    return [name for name in NAMES if path(name, directory).is_file()]


def metadata(name: str, directory: Path | None = None) -> dict:
    """A shipped model's JSON document (family, config, task, params, train seconds, metrics...), read from
    its file's header without torch; CheckpointError if the file is damaged."""
    from seqviz.checkpoints import read_meta

    file = path(name, directory)
    if not file.is_file():
        raise FileNotFoundError(f"the zoo model {name!r} has not been trained yet: run `python -m seqviz train {name}`")
    return read_meta(file)


def all_metadata(directory: Path | None = None) -> dict[str, dict]:
    """name -> JSON document of every shipped model that exists."""
    return {name: metadata(name, directory) for name in available(directory)}


def load(name: str, directory: Path | None = None):
    """The shipped model ``name`` as a :class:`seqviz.checkpoints.Checkpoint` (eval mode, gradients off)."""
    from seqviz import checkpoints

    return checkpoints.load(path(name, directory))


# ---------------------------------------------------------------------------------------------------------
# Building and training (imports torch)


def make_task(name: str, vocabularies=None):
    """The task of a zoo model, with its curriculum options."""
    from seqviz.tasks import make_task as _make_task

    spec = entry(name)
    return _make_task(spec.task, vocabularies=vocabularies, **spec.task_options)


def recipe(name: str):
    """The zoo entry ``name`` as the one driver's :class:`seqviz.driver.Recipe`."""
    from seqviz.driver import Recipe

    spec = entry(name)
    return Recipe(name=spec.name, description=spec.description, family=spec.family, task=spec.task,
                  config=dict(spec.config), train=dict(spec.train), seed=spec.seed,
                  task_options=dict(spec.task_options), curve_steps=spec.curve_steps)


def build(name: str, task=None):
    """A freshly initialised model of the zoo entry ``name`` (seeded: the same weights every time)."""
    return recipe(name).build(task if task is not None else make_task(name))


def train_config(name: str):
    return recipe(name).train_config()


def train_and_save(name: str, directory: Path | None = None, progress=None, stop=None) -> dict:
    """Train the zoo model ``name`` from scratch (the one driver), evaluate it on held-out data, save it with its
    held-out studies beside it; returns its document. A stopped training saves nothing."""
    from seqviz import driver

    def finished(result) -> bool:
        if result.stopped:
            raise RuntimeError(f"training of {name!r} was stopped after {result.steps} steps; nothing saved")
        return True

    from seqviz import checkpoints, studies

    saved = path(name, directory)
    trained = driver.run(recipe(name), saved, progress=progress, stop=stop, finished=finished)
    checkpoint = checkpoints.load(saved)
    found = studies.measure(checkpoint)  # its held-out studies, shipped beside it (seqviz.studies)
    if found:
        studies.write(saved, checkpoint, found)
    return trained.document


def train_with_log(name: str, directory: str | Path | None = None, log_every: int = 250) -> dict:
    """Train and save one zoo model with one torch thread, logging to stderr (the command line's worker)."""
    import sys

    from seqviz.runtime import configure_torch
    from seqviz.tasks import TASKS

    configure_torch()

    def log(message: str) -> None:
        print(f"[{name}] {message}", file=sys.stderr, flush=True)

    def progress(p) -> None:
        if p.step == 1 or p.step % log_every == 0 or p.step == p.steps:
            log(f"step {p.step}/{p.steps} loss {p.loss:.4f} ({p.elapsed_s:.0f} s)")

    log("training")
    meta = train_and_save(name, directory=Path(directory) if directory else None, progress=progress)
    log(f"done in {meta['train_seconds']:.0f} s: {json.dumps(TASKS[meta['task']].summary(meta['metrics']))}")
    return meta
