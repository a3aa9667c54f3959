"""Tasks that answer with a class: the Cartwise emails (which team?) and the memory task (which word came first?)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from seqviz.tasks.base import DATA_SEED, Task, _batched_proba, _pct, pad_batch
from seqviz.text import Vocab, tokenize


class _ClassificationTask(Task):
    kind = "classification"

    def __init__(self, train: Sequence[tuple[Sequence[str], int]], vocab: Vocab | None):
        self.vocab = vocab if vocab is not None else Vocab.build(tokens for tokens, _ in train)
        self.vocabularies = {"tokens": self.vocab}
        self.train_ids = [self.vocab.encode(list(tokens)) for tokens, _ in train]
        self.train_labels = [int(label) for _, label in train]
        self._ids, self._lengths = pad_batch(self.train_ids)  # (n, T_max), (n,)
        self._labels = torch.tensor(self.train_labels, dtype=torch.long)

    def model_fields(self) -> dict:
        return {"vocab_size": len(self.vocab), "labels": tuple(self.labels)}

    def batch(self, rng: np.random.Generator, batch_size: int, progress: float = 1.0) -> dict[str, torch.Tensor]:
        rows = torch.from_numpy(rng.integers(0, len(self.train_ids), size=batch_size))
        lengths = self._lengths[rows]
        return {"ids": self._ids[rows, : int(lengths.max())], "lengths": lengths, "labels": self._labels[rows]}

    def accuracy(self, model, examples: Sequence[tuple[Sequence[str], int]]) -> tuple[float, np.ndarray]:
        """Accuracy on (tokens, label) examples and the predicted label of each."""
        predicted = _batched_proba(model, [self.vocab.encode(list(t)) for t, _ in examples]).argmax(axis=1)
        truth = np.array([label for _, label in examples])
        return float((predicted == truth).mean()), predicted


class EmailTask(_ClassificationTask):
    """Route a Cartwise support email to its team (4 classes); twins share their words, not their label."""

    name = "emails"
    label = "route a support email (4 teams)"
    headline_name = "held-out accuracy"

    def __init__(self, seed: int = DATA_SEED, vocabularies: dict[str, Vocab] | None = None):
        from seqviz.data.emails import CHAPTER_EMAILS, LABELS, make_email_splits

        self.labels = tuple(LABELS)
        self.splits = make_email_splits(seed)
        self.chapter_emails = CHAPTER_EMAILS
        super().__init__([(e.tokens, e.label) for e in self.splits.train], (vocabularies or {}).get("tokens"))

    def evaluate(self, model) -> dict:
        test_accuracy, _ = self.accuracy(model, [(e.tokens, e.label) for e in self.splits.test])
        firsts = [(a.tokens, a.label) for a, _ in self.splits.twins]
        seconds = [(b.tokens, b.label) for _, b in self.splits.twins]
        first_accuracy, first_pred = self.accuracy(model, firsts)
        second_accuracy, second_pred = self.accuracy(model, seconds)
        chapter = []
        for text, label in self.chapter_emails:
            tokens = tokenize(text)
            probs = _batched_proba(model, [self.vocab.encode(tokens)])[0]
            chapter.append({"text": text, "label": label, "predicted": self.labels[int(probs.argmax())],
                            "probs": [round(float(p), 6) for p in probs]})
        return {
            "test_accuracy": test_accuracy,
            "twins_accuracy": (first_accuracy + second_accuracy) / 2,
            "twins_same_prediction": float((first_pred == second_pred).mean()),  # 1.0 for a bag of words
            "n_test": len(self.splits.test),
            "n_twin_pairs": len(self.splits.twins),
            "chapter_emails": chapter,
        }

    def headline(self, metrics: dict) -> float:
        return metrics["test_accuracy"]

    @classmethod
    def label_names(cls) -> tuple[str, ...]:
        from seqviz.data.emails import LABELS

        return tuple(LABELS)

    @classmethod
    def summary(cls, metrics: dict) -> dict:
        return {k: metrics.get(k) for k in ("test_accuracy", "twins_accuracy", "twins_same_prediction")}

    @classmethod
    def describe(cls, metrics: dict) -> str:
        m = cls.summary(metrics)
        return (f"test {_pct(m['test_accuracy'])}, twins {_pct(m['twins_accuracy'])} "
                f"(same answer for both twins: {_pct(m['twins_same_prediction'])})")


class MemoryTask(_ClassificationTask):
    """Say which word came first, after ``distance`` distractors: can a model learn N steps back matters?

    Training batches are fresh examples; with ``curriculum`` > 0 the longest distance drawn grows from
    ``start_distance`` to the maximum over the first ``curriculum`` fraction of training.
    """

    name = "memory"
    kind = "recall"  # a classification whose answer lies many steps back: for models whose memory is the point
    label = "remember the first word (1 to 60 steps back)"
    headline_name = "held-out accuracy at distance 20"

    def __init__(
        self,
        seed: int = DATA_SEED,
        vocabularies: dict[str, Vocab] | None = None,
        curriculum: float = 0.0,
        start_distance: int = 5,
    ):
        from seqviz.data.memory import CLASSES, DISTRACTORS, MAX_DISTANCE, make_memory_splits

        self.labels = tuple(CLASSES)
        self.max_distance = MAX_DISTANCE
        self.curriculum = curriculum
        self.start_distance = start_distance
        self.splits = make_memory_splits(seed)
        vocab = (vocabularies or {}).get("tokens") or Vocab.build([list(CLASSES) + list(DISTRACTORS)])
        super().__init__(self.splits.train, vocab)

    def longest_distance(self, progress: float) -> int:
        if self.curriculum <= 0:
            return self.max_distance
        ramp = min(1.0, progress / self.curriculum)
        return round(self.start_distance + ramp * (self.max_distance - self.start_distance))

    def batch(self, rng: np.random.Generator, batch_size: int, progress: float = 1.0) -> dict[str, torch.Tensor]:
        from seqviz.data.memory import make_memory_example

        longest = self.longest_distance(progress)
        examples = [make_memory_example(rng, int(d)) for d in rng.integers(1, longest + 1, size=batch_size)]
        ids, lengths = pad_batch([self.vocab.encode(tokens) for tokens, _ in examples])
        return {"ids": ids, "lengths": lengths, "labels": torch.tensor([label for _, label in examples])}

    def evaluate(self, model) -> dict:
        by_distance = {
            str(distance): self.accuracy(model, examples)[0] for distance, examples in sorted(self.splits.test.items())
        }
        return {
            "accuracy_by_distance": by_distance,
            "accuracy_at_20": by_distance.get("20"),
            "chance": 1 / len(self.labels),
            "n_per_distance": len(next(iter(self.splits.test.values()))),
        }

    def headline(self, metrics: dict) -> float:
        return metrics["accuracy_at_20"]

    SUMMARY_DISTANCES = (1, 5, 10, 20, 40, 60)

    @classmethod
    def label_names(cls) -> tuple[str, ...]:
        from seqviz.data.memory import CLASSES

        return tuple(CLASSES)

    @classmethod
    def summary(cls, metrics: dict) -> dict:
        by_distance = metrics.get("accuracy_by_distance") or {}
        return {f"accuracy_at_{d}": by_distance.get(str(d)) for d in cls.SUMMARY_DISTANCES}

    @classmethod
    def describe(cls, metrics: dict) -> str:
        return ", ".join(f"d={k.rsplit('_', 1)[1]}: {_pct(v)}" for k, v in cls.summary(metrics).items())
