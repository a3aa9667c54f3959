"""The three tasks the zoo is trained on: support emails, English -> French, remember the first word.

A task owns its data (generated from a fixed seed by :mod:`seqviz.data`), its vocabularies (built from
its training data only), the batches the training loop draws, and the held-out evaluation whose
numbers go into a checkpoint's JSON:

- ``emails``: accuracy on the test set and on the word-identical twins (and how often a model gives
  both twins the same answer: always, for a bag of words);
- ``translation``: exact match and token accuracy per source-length bucket, overall for sources of at
  most 30 tokens and of at least 25, and the chapter's six pairs;
- ``memory``: accuracy per distance between the word to remember and the end, 1 .. 60.

Each task class also reads its own metrics without generating any data: ``TASKS[name].summary(metrics)``
gives the few numbers that say whether a model reached its target, ``TASKS[name].describe(metrics)`` one
line of them for people (the command line, assets/models/README.md), ``TASKS[name].label_names()`` its
classes.

Batches are dicts of tensors, padded with ``<pad>`` = 0:
classification ``{"ids": (B, T), "lengths": (B,), "labels": (B,)}``;
translation ``{"src": (B, T), "src_lengths": (B,), "tgt": (B, U + 2)}`` with tgt = <bos> ... <eos> <pad>..
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import torch

from seqviz.limits import output_limit
from seqviz.text import BOS, EOS, Vocab, tokenize

DATA_SEED = 0  # the seed of the shipped data splits; a model's own seed only drives its training


def pad_batch(sequences: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Pad id lists with 0 to the longest: -> ids (B, T) long, lengths (B,) long."""
    lengths = torch.tensor([len(s) for s in sequences], dtype=torch.long)
    ids = torch.zeros(len(sequences), int(lengths.max()) if len(sequences) else 0, dtype=torch.long)
    for row, seq in enumerate(sequences):
        ids[row, : len(seq)] = torch.tensor(list(seq), dtype=torch.long)
    return ids, lengths


def _batched_proba(model, sequences: Sequence[Sequence[int]], batch_size: int = 256) -> np.ndarray:
    """Class probabilities (n, C) for many id lists, in batches of similar length."""
    order = np.argsort([len(s) for s in sequences], kind="stable")
    probs: list[np.ndarray | None] = [None] * len(sequences)
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        ids, lengths = pad_batch([sequences[i] for i in chunk])
        for i, row in zip(chunk, model.predict_proba(ids, lengths), strict=True):
            probs[i] = row
    return np.stack(probs)


class Task:
    """What every task offers the training loop, the checkpoints and the pages."""

    name: str = ""
    kind: str = ""  # "classification" or "translation"
    label: str = ""  # what the task asks, for people (the Train page's picker)
    headline_name: str = ""  # what headline() measures, for people
    labels: tuple[str, ...] | None = None
    vocabularies: dict[str, Vocab]

    def model_fields(self) -> dict:
        """The config fields a model of this task takes from the data (vocabulary sizes, labels)."""
        raise NotImplementedError

    def batch(self, rng: np.random.Generator, batch_size: int, progress: float = 1.0) -> dict[str, torch.Tensor]:
        """A training batch drawn with ``rng``; ``progress`` (0 -> 1) lets a task run a curriculum."""
        raise NotImplementedError

    def evaluate(self, model) -> dict:
        """Held-out metrics of ``model`` (a JSON-ready dict)."""
        raise NotImplementedError

    def headline(self, metrics: dict) -> float:
        """The one number a progress bar shows."""
        raise NotImplementedError

    @classmethod
    def label_names(cls) -> tuple[str, ...] | None:
        """The classes a model of this task answers with (None: it translates); no data generated."""
        return None

    @classmethod
    def summary(cls, metrics: dict) -> dict:
        """The few held-out numbers that tell whether a model reached its target."""
        raise NotImplementedError

    @classmethod
    def describe(cls, metrics: dict) -> str:
        """:meth:`summary` in one line, for people."""
        raise NotImplementedError


def _pct(value) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


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


def token_matches(output: Sequence[str], reference: Sequence[str]) -> tuple[int, int]:
    """(positions where output and reference agree, max of the two lengths): a length mismatch costs."""
    return sum(a == b for a, b in zip(output, reference, strict=False)), max(len(output), len(reference))


class TranslationTask(Task):
    """English -> French from the grammar; evaluated by greedy translation of held-out sentences."""

    name = "translation"
    kind = "translation"
    label = "English → French translation"
    headline_name = "held-out exact match (sources of at most 30 tokens)"

    def __init__(self, seed: int = DATA_SEED, vocabularies: dict[str, Vocab] | None = None):
        from seqviz.data.translation import CHAPTER_PAIRS, MAX_TRAIN_SRC_LEN, make_translation_splits

        self.splits = make_translation_splits(seed)
        self.chapter_pairs = CHAPTER_PAIRS
        self.max_train_src_len = MAX_TRAIN_SRC_LEN
        vocabularies = vocabularies or {}
        self.src_vocab = vocabularies.get("src") or Vocab.build(p.src for p in self.splits.train)
        self.tgt_vocab = vocabularies.get("tgt") or Vocab.build(p.tgt for p in self.splits.train)
        self.vocabularies = {"src": self.src_vocab, "tgt": self.tgt_vocab}
        bos, eos = self.tgt_vocab.stoi[BOS], self.tgt_vocab.stoi[EOS]
        self._src, self._src_lengths = pad_batch([self.src_vocab.encode(list(p.src)) for p in self.splits.train])
        self._tgt, self._tgt_lengths = pad_batch(
            [[bos, *self.tgt_vocab.encode(list(p.tgt)), eos] for p in self.splits.train]
        )

    def model_fields(self) -> dict:
        return {"src_vocab_size": len(self.src_vocab), "tgt_vocab_size": len(self.tgt_vocab)}

    def batch(self, rng: np.random.Generator, batch_size: int, progress: float = 1.0) -> dict[str, torch.Tensor]:
        rows = torch.from_numpy(rng.integers(0, self._src.shape[0], size=batch_size))
        src_lengths = self._src_lengths[rows]
        tgt_width = int(self._tgt_lengths[rows].max())
        return {
            "src": self._src[rows, : int(src_lengths.max())],
            "src_lengths": src_lengths,
            "tgt": self._tgt[rows, :tgt_width],
        }

    def translate(self, model, sources: Sequence[Sequence[str]], batch_size: int = 128) -> list[list[str]]:
        """Greedy translations (tokens) of tokenized English sentences, in batches of similar length.

        Each is decoded to at most ``seqviz.limits.output_limit`` (its source length) words."""
        encoded = [self.src_vocab.encode(list(s)) for s in sources]
        order = np.argsort([len(s) for s in encoded], kind="stable")
        outputs: list[list[str]] = [[] for _ in sources]
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                chunk = order[start : start + batch_size]
                src, src_lengths = pad_batch([encoded[i] for i in chunk])
                longest = output_limit(int(src_lengths.max()))
                for i, ids in zip(chunk, model.translate(src, src_lengths, longest), strict=True):
                    outputs[i] = self.tgt_vocab.decode(list(ids)[: output_limit(len(encoded[i]))])
        return outputs

    def evaluate(self, model) -> dict:
        from seqviz.data.translation import LENGTH_BUCKETS, length_bucket

        test = self.splits.test
        outputs = self.translate(model, [p.src for p in test])
        per_bucket: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # n, exact, matched, positions
        overall = {"le30": [0, 0, 0, 0], "ge25": [0, 0, 0, 0]}
        for pair, output in zip(test, outputs, strict=True):
            exact = int(list(output) == list(pair.tgt))
            matched, positions = token_matches(output, pair.tgt)
            groups = [per_bucket[length_bucket(len(pair.src))]]
            groups += [overall["le30"]] if len(pair.src) <= 30 else []
            groups += [overall["ge25"]] if len(pair.src) >= 25 else []
            for counts in groups:
                for k, v in enumerate((1, exact, matched, positions)):
                    counts[k] += v

        def summary(counts: list[int]) -> dict:
            n, exact, matched, positions = counts
            return {"n": n, "exact_match": exact / n if n else None,
                    "token_accuracy": matched / positions if positions else None}

        labels = [f"{lo}-{hi}" for lo, hi in LENGTH_BUCKETS]
        buckets = {label: summary(per_bucket[label]) for label in labels if label in per_bucket}
        le30, ge25 = summary(overall["le30"]), summary(overall["ge25"])
        chapter_sources = [english.split() for english, _ in self.chapter_pairs]
        chapter = [
            {"src": english, "expected": french, "output": " ".join(output), "exact": output == french.split()}
            for (english, french), output in zip(
                self.chapter_pairs, self.translate(model, chapter_sources), strict=True
            )
        ]
        return {
            "buckets": buckets,
            "exact_match_le30": le30["exact_match"],
            "token_accuracy_le30": le30["token_accuracy"],
            "n_le30": le30["n"],
            "exact_match_ge25": ge25["exact_match"],
            "token_accuracy_ge25": ge25["token_accuracy"],
            "n_ge25": ge25["n"],
            "max_train_src_len": self.max_train_src_len,
            "chapter_pairs": chapter,
            "chapter_pairs_exact": sum(c["exact"] for c in chapter),
        }

    def headline(self, metrics: dict) -> float:
        return metrics["exact_match_le30"]

    @classmethod
    def summary(cls, metrics: dict) -> dict:
        keys = ("exact_match_le30", "token_accuracy_le30", "exact_match_ge25", "chapter_pairs_exact")
        return {k: metrics.get(k) for k in keys}

    @classmethod
    def describe(cls, metrics: dict) -> str:
        m = cls.summary(metrics)
        pairs = "–" if m["chapter_pairs_exact"] is None else m["chapter_pairs_exact"]
        return (f"exact ≤30 tokens {_pct(m['exact_match_le30'])} (tokens {_pct(m['token_accuracy_le30'])}), "
                f"exact ≥25 tokens {_pct(m['exact_match_ge25'])}, chapter pairs {pairs}/6")


TASKS: dict[str, type[Task]] = {"emails": EmailTask, "memory": MemoryTask, "translation": TranslationTask}


def task_labels(name: str) -> tuple[str, ...] | None:
    """The classes a model of task ``name`` answers with (None for translation), without generating data."""
    if name not in TASKS:
        raise KeyError(f"unknown task {name!r}; known: {', '.join(TASKS)}")
    return TASKS[name].label_names()


def make_task(name: str, seed: int = DATA_SEED, vocabularies: dict[str, Vocab] | None = None, **options) -> Task:
    """The task called ``name``; pass a checkpoint's ``vocabularies`` to evaluate it with its own words."""
    if name not in TASKS:
        raise KeyError(f"unknown task {name!r}; known: {', '.join(TASKS)}")
    return TASKS[name](seed=seed, vocabularies=vocabularies, **options)
