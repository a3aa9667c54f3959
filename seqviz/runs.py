"""What a visitor may train in the app: a :class:`RunSpec` (task, family, sizes, budget), checked against
the bounds of :mod:`seqviz.limits`, and the named :data:`PRESETS` the Train page offers first.

A spec is a value: building it gives a fresh, seeded model, the task it learns (one shared, read-only
instance per task and process) and the :class:`seqviz.train.TrainConfig` of its run. Building never
changes torch's global random state (the initial weights are drawn inside ``torch.random.fork_rng``).

The sizes mean the same thing for every family, where they apply (the family's ``sizes``, seqviz.families):

- ``embedding``: the word-vector size (``emb_dim``; a transformer's ``d_model``);
- ``hidden``: the recurrent memory (``hidden_dim``; a translator's ``hidden`` per direction, which is also
  its attention size ``attn_dim``); a transformer's feed-forward width ``d_ff``;
- ``heads``: attention heads of a transformer;
- ``layers``: a transformer's blocks (encoder and decoder each), an LSTM translator's stacked layers.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from dataclasses import dataclass
from typing import Any

from seqviz import families, limits, tasks

TASKS = tasks.TASKS  # what a visitor may train on (every task, by name), in the picker's order


def task_families(task: str) -> tuple[str, ...]:
    """The families a visitor may train on ``task``, in the picker's order."""
    return families.trainable_on(tasks.TASKS[task].kind)


@dataclass(frozen=True)
class RunSpec:
    """One training run a visitor asked for; ``__post_init__`` refuses anything outside seqviz.limits."""

    task: str = "translation"  # "emails", "memory" or "translation"
    family: str = "dot"  # one of task_families(task)
    embedding: int = 64  # word-vector size (emb_dim, or a transformer's d_model)
    hidden: int = 64  # recurrent memory (hidden_dim / hidden and attn_dim), or a transformer's d_ff
    heads: int = 4  # attention heads (transformers)
    layers: int = 1  # transformer blocks (encoder and decoder each) or stacked LSTM layers (translators)
    steps: int = 600  # optimisation steps, one batch each (ignored by a family that counts in one pass)
    lr: float = 3e-3  # peak learning rate (linear warm-up over the first 10% of steps, at most 100, then cosine)
    batch_size: int = 64  # examples per step
    seed: int = 0  # initial weights, batches and dropout; the data itself is always the shipped split
    name: str = ""  # a label for the run ("" : described from the fields)

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {', '.join(TASKS)}, not {self.task!r:.40}")
        if self.family not in task_families(self.task):
            raise ValueError(
                f"a {self.task} run trains one of these families: {', '.join(task_families(self.task))} "
                f"(not {self.family!r:.40})"
            )
        for field in ("embedding", "hidden", "heads", "layers", "steps", "batch_size", "seed"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"{field} must be a whole number, not {value!r:.40}")
        if not isinstance(self.lr, int | float) or isinstance(self.lr, bool) or not math.isfinite(self.lr):
            raise ValueError(f"lr must be a number, not {self.lr!r:.40}")
        if not isinstance(self.name, str) or len(self.name) > 80:
            raise ValueError("name must be text of at most 80 characters")
        applies = self.sizes
        low, high = limits.TRAIN_WIDTH_RANGE
        for field in ("embedding", "hidden"):
            if field in applies:
                _check_range(field, getattr(self, field), low, high, "TRAIN_WIDTH_RANGE")
        if "heads" in applies:
            _check_range("heads", self.heads, 1, limits.TRAIN_MAX_HEADS, "TRAIN_MAX_HEADS")
            if self.embedding % self.heads:
                raise ValueError(
                    f"embedding ({self.embedding}) must divide by heads ({self.heads}): each head gets "
                    "embedding / heads numbers"
                )
        if "layers" in applies:
            _check_range("layers", self.layers, 1, limits.TRAIN_MAX_LAYERS, "TRAIN_MAX_LAYERS")
        _check_range("steps", self.steps, 1, limits.TRAIN_MAX_STEPS, "TRAIN_MAX_STEPS")
        _check_range("batch_size", self.batch_size, *limits.TRAIN_BATCH_RANGE, "TRAIN_BATCH_RANGE")
        _check_range("lr", self.lr, *limits.TRAIN_LR_RANGE, "TRAIN_LR_RANGE")
        _check_range("seed", self.seed, 0, limits.TRAIN_MAX_SEED, "TRAIN_MAX_SEED")
        params = self.num_parameters()
        if params > limits.TRAIN_MAX_PARAMETERS:
            raise ValueError(
                f"this model would learn {params:,} numbers, more than the {limits.TRAIN_MAX_PARAMETERS:,} a model "
                "trained here may have (seqviz.limits.TRAIN_MAX_PARAMETERS): make it smaller"
            )

    # -----------------------------------------------------------------------------------------------------

    @property
    def sizes(self) -> tuple[str, ...]:
        """The size fields this run's family uses (the others are ignored and not checked)."""
        return families.get(self.family).sizes

    @property
    def counts(self) -> bool:
        """The family learns by counting words in one pass: steps, learning rate and batch size do not apply."""
        return families.get(self.family).counts

    @property
    def steps_to_run(self) -> int:
        """Optimisation steps this run takes (one pass of counting for a family that counts)."""
        return 1 if self.counts else self.steps

    @property
    def label(self) -> str:
        """The name, or a short description of the run: "lstm emails, hidden 32, 300 steps"."""
        if self.name:
            return self.name
        serves_one_task = sum(tasks.TASKS[t].kind in families.get(self.family).trains_on for t in TASKS) == 1
        parts = [self.family if serves_one_task else f"{self.family} {self.task}"]
        if "hidden" in self.sizes:
            parts.append(f"hidden {self.hidden}")
        if not self.counts:
            parts.append(f"{self.steps} steps")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def model_config(self, task=None):
        """The family's config dataclass for this spec (vocabulary sizes and labels from the task)."""
        family = families.get(self.family)
        fields = family.spec_fields(self)
        fields.update(_model_fields(self.task) if task is None else task.model_fields())
        return family.config_class(**fields)

    def num_parameters(self) -> int:
        """Numbers the model would learn, counted on its skeleton (no memory, no computation: "meta" device)."""
        from seqviz.models.common import skeleton

        config = self.model_config()
        model_class = families.get(self.family).model_class
        if hasattr(model_class, "expected_shapes"):  # bag of words: numpy counts
            return sum(math.prod(shape) for shape in model_class.expected_shapes(config).values())
        return int(sum(p.numel() for p in skeleton(model_class, config).parameters()))

    def train_config(self):
        """The :class:`seqviz.train.TrainConfig` of this run."""
        from seqviz.train import TrainConfig

        fields = {"steps": self.steps, "batch_size": self.batch_size, "lr": float(self.lr),
                  "warmup": max(1, min(100, self.steps // 10)), "clip": 1.0, "schedule": "cosine", "seed": self.seed}
        return TrainConfig(**fields)

    def build(self):
        """(fresh seeded model, the task's shared read-only instance, TrainConfig); global RNG untouched."""
        import torch

        from seqviz.models import build

        task = shared_task(self.task)
        config = self.model_config(task)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            model = build(self.family, config)
        return model, task, self.train_config()


def _check_range(field: str, value, low, high, bound: str) -> None:
    if not low <= value <= high:
        raise ValueError(
            f"{field} is {value:g}; a run trained here takes {field} from {low:g} to {high:g} (seqviz.limits.{bound})"
        )


# ---------------------------------------------------------------------------------------------------------
# One task per name and process: building one takes seconds (the translation data), and a task is only read
# while training and evaluating, so every run shares it.

_TASKS: dict[str, Any] = {}
_TASKS_LOCK = threading.Lock()


def shared_task(name: str):
    """The task ``name`` with the shipped data split and vocabularies (built once per process; read-only)."""
    with _TASKS_LOCK:
        if name not in _TASKS:
            from seqviz.tasks import make_task

            _TASKS[name] = make_task(name)
        return _TASKS[name]


def _model_fields(task_name: str) -> dict:
    """The task's vocabulary sizes and labels: shipped beside the code (seqviz.task_fields) or, failing that, from
    the task built."""
    from seqviz import task_fields as fields

    return fields.shipped(task_name) or shared_task(task_name).model_fields()


# ---------------------------------------------------------------------------------------------------------
# Presets


@dataclass(frozen=True)
class Promise:
    """A figure a preset's text promises, checked on the run's held-out metrics (tests/unit/test_presets.py trains
    every preset with its seed). Set with a margin from what the preset measured (docs/training.md, "Presets")."""

    metric: str  # a key of the task's held-out metrics, or "bucket:3-9" for exact match on that length bucket
    at_least: float | None = None
    at_most: float | None = None

    def measured(self, metrics: dict) -> float:
        if self.metric.startswith("bucket:"):
            return float(metrics["buckets"][self.metric.removeprefix("bucket:")]["exact_match"])
        return float(metrics[self.metric])

    def holds(self, metrics: dict) -> bool:
        value = self.measured(metrics)
        return (self.at_least is None or value >= self.at_least) and (self.at_most is None or value <= self.at_most)


@dataclass(frozen=True)
class Preset:
    name: str  # what the picker shows
    spec: RunSpec
    look_for: str  # what to look for, and on which page; any figure it names is one of ``promises``
    goal: str  # what the run reaches, in words
    experiment: str = ""  # presets with the same experiment are meant to be run side by side
    promises: tuple[Promise, ...] = ()


_MEMORY = {"task": "memory", "embedding": 16, "hidden": 64, "steps": 500, "lr": 3e-3}
_SAME_BUDGET = {"task": "translation", "steps": 600, "batch_size": 64}

# What each preset measured, seed 0, on the project's machine: docs/training.md, "Presets". A preset's promises sit
# below those figures with a margin: the same seed gives other curves on other processors.
PRESETS: list[Preset] = [
    Preset(
        "Quick: attention translator",
        RunSpec(family="dot", task="translation", embedding=64, hidden=128, steps=400, lr=3e-3, batch_size=64,
                name="quick dot-attention translator"),
        "Watch the held-out exact match climb past 90% within its 400 steps (the form says how long runs like "
        "it take on this server now), then add it in /attention's picker (your models come first) to see "
        "where your translator looks for each French word. The shipped dot translator, trained twice as long, "
        "does better still.",
        "held-out exact match >= 90% on sources of up to 30 tokens",
        promises=(Promise("exact_match_le30", at_least=0.90),),
    ),
    Preset(
        "Quick: LSTM email classifier",
        RunSpec(task="emails", family="lstm", embedding=16, hidden=32, steps=300, lr=1e-2,
                name="quick LSTM email classifier"),
        "Its held-out accuracy (the chart) passes 95% in seconds, and on the word-identical twins (the table at the "
        "end) 90%; then add it in /order's picker (your models come first) to see it route the chapter's two "
        "emails, which share every word, to different teams, where a bag of words cannot.",
        "held-out accuracy >= 95%, and >= 90% on the word-identical twins",
        promises=(Promise("twins_accuracy", at_least=0.90), Promise("test_accuracy", at_least=0.95)),
    ),
    Preset(
        "Memory: GRU",
        RunSpec(family="gru", **_MEMORY, name="memory GRU"),
        "Its accuracy at distance 20 passes 95% in a few hundred steps while the plain RNN's, on the same budget, "
        "stays below 75%; /vanishing-gradients shows why: the GRU's gradient through 20 steps does not fade.",
        "accuracy at distance 20 >= 95%",
        experiment="memory",
        promises=(Promise("accuracy_at_20", at_least=0.95),),
    ),
    Preset(
        "Memory: plain RNN",
        RunSpec(family="rnn", **_MEMORY, name="memory plain RNN"),
        "On the GRU's budget it stays below 75% at distance 20, where the GRU passes 95%: it learns slowly, "
        "and /vanishing-gradients shows its ‖∂h_T/∂h_k‖ shrinking with every step back.",
        "accuracy at distance 20 < 75%",
        experiment="memory",
        promises=(Promise("accuracy_at_20", at_most=0.75),),
    ),
    Preset(
        "Bottleneck: plain encoder-decoder, hidden 16",
        RunSpec(family="plain", **_SAME_BUDGET, embedding=64, hidden=16, lr=3e-3, name="plain encoder-decoder h16"),
        "The whole sentence must pass through 32 numbers: in 600 steps it gets almost no held-out sentence "
        "(under 5%) exactly right, where hidden 128 gets nearly every short one; compare both on /encoder-decoder.",
        "exact match < 5%",
        experiment="bottleneck",
        promises=(Promise("exact_match_le30", at_most=0.05),),
    ),
    Preset(
        "Bottleneck: plain encoder-decoder, hidden 128",
        RunSpec(family="plain", **_SAME_BUDGET, embedding=64, hidden=128, lr=3e-3, name="plain encoder-decoder h128"),
        "Eight times the memory gets short sentences right (over 90% of 3 to 9 tokens), but on /encoder-decoder "
        "its exact match falls with every extra word, under 30% from 25 tokens on: one fixed vector is the "
        "bottleneck that attention removes.",
        "exact match >= 90% on 3-9 tokens, < 30% on 25+ tokens",
        experiment="bottleneck",
        promises=(Promise("bucket:3-9", at_least=0.90), Promise("exact_match_ge25", at_most=0.30)),
    ),
    Preset(
        "Same budget: transformer translator",
        RunSpec(family="transformer-seq2seq", **_SAME_BUDGET, embedding=64, hidden=128, heads=4, layers=2, lr=2e-3,
                name="transformer translator (600 steps)"),
        "Compare its held-out exact match and training seconds with the attention LSTM's on the same 600 steps. "
        "On this CPU it takes about twice the LSTM's seconds, where the chapter says the transformer trained "
        "faster: that needs hardware that works on every position at once (/transformer measures why).",
        "exact match and seconds side by side with the attention LSTM",
        experiment="transformer",
    ),
    Preset(
        "Same budget: attention LSTM translator",
        RunSpec(family="dot", **_SAME_BUDGET, embedding=64, hidden=64, lr=3e-3, name="attention LSTM translator "
                "(600 steps)"),
        "The same 600 steps of 64 sentence pairs as the transformer: compare exact match and seconds, then "
        "see the two kinds of attention side by side on /attention and /transformer.",
        "exact match and seconds side by side with the transformer",
        experiment="transformer",
    ),
]


def preset(name: str) -> Preset:
    for p in PRESETS:
        if p.name == name:
            return p
    raise KeyError(f"no preset called {name!r}; presets: {', '.join(p.name for p in PRESETS)}")

