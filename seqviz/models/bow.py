"""Bag-of-words multinomial naive Bayes (numpy): the chapter's baseline that only counts words.

For a sentence with words w_1 .. w_T and a class c,

    log P(c | w_1..w_T) = log P(c) + Σ_t log P(w_t | c) + const,
    P(w | c) = (count(w, c) + α) / (Σ_w' count(w', c) + α V),   P(c) = (n_c + 1) / (n + C).

The sum over t does not care in which order the words come: two sentences with the same bag of words
(the chapter's two emails) get exactly the same probabilities, so on word-identical twins with
different labels this model can be right on at most one of each pair, 50 %.

The model has the same surface as the torch classifiers (``predict_proba``, ``trace``), and its two
count arrays are saved in the same checkpoint format (one safetensors file, its JSON description in the header).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from seqviz.models.common import check_sizes, one_sentence
from seqviz.traces import ClassifierTrace


@dataclass
class NaiveBayesConfig:
    vocab_size: int = 64  # words known, the four specials included (set from the task's Vocab)
    labels: tuple[str, ...] = ("a", "b")  # class names, in the order of the output probabilities
    alpha: float = 1.0  # add-α (Laplace) smoothing of the word counts

    def __post_init__(self):
        self.labels = tuple(self.labels)
        check_sizes(self, vocab=("vocab_size",), labels=("labels",))
        if not self.alpha > 0:
            raise ValueError("alpha must be positive")


class NaiveBayesClassifier:
    """Multinomial naive Bayes over word counts; ``fit`` counts, nothing is learned by gradient."""

    family = "bow"

    def __init__(self, config: NaiveBayesConfig):
        self.config = config
        self.labels = config.labels
        n_classes = len(config.labels)
        self.word_counts = np.zeros((n_classes, config.vocab_size), dtype=np.float32)  # (C, V) count(w, c)
        self.class_counts = np.zeros(n_classes, dtype=np.float32)  # (C,) n_c sentences per class

    @staticmethod
    def expected_shapes(config: NaiveBayesConfig) -> dict[str, tuple[int, ...]]:
        """The arrays a checkpoint of this config must hold, with their shapes."""
        return {"word_counts": (len(config.labels), config.vocab_size), "class_counts": (len(config.labels),)}

    def state_dict(self) -> dict[str, np.ndarray]:
        return {"word_counts": self.word_counts, "class_counts": self.class_counts}

    def load_state_dict(self, arrays: dict[str, np.ndarray]) -> None:
        self.word_counts = np.array(arrays["word_counts"], dtype=np.float32)
        self.class_counts = np.array(arrays["class_counts"], dtype=np.float32)

    def num_parameters(self) -> int:
        return int(self.word_counts.size + self.class_counts.size)

    def fit(self, sentences: Sequence[Sequence[int]], labels: Sequence[int]) -> NaiveBayesClassifier:
        """Count every word of every training sentence (ids, no padding) under its class."""
        self.word_counts[:] = 0
        self.class_counts[:] = 0
        for ids, label in zip(sentences, labels, strict=True):
            np.add.at(self.word_counts[label], np.asarray(ids, dtype=np.int64), 1.0)
            self.class_counts[label] += 1
        return self

    def log_word_given_class(self) -> np.ndarray:
        """log P(w | c): (C, V)."""
        smoothed = self.word_counts.astype(np.float64) + self.config.alpha
        return np.log(smoothed / smoothed.sum(axis=1, keepdims=True))

    def log_prior(self) -> np.ndarray:
        """log P(c): (C,)."""
        counts = self.class_counts.astype(np.float64) + 1.0
        return np.log(counts / counts.sum())

    def bag_of_words(self, ids, lengths) -> np.ndarray:
        """Word counts of each sentence (B, V): all the model ever sees of it."""
        ids = np.asarray(ids, dtype=np.int64)  # (B, T)
        lengths = np.asarray(lengths, dtype=np.int64)  # (B,)
        real = np.arange(ids.shape[1])[None, :] < lengths[:, None]  # (B, T)
        bags = np.zeros((ids.shape[0], self.config.vocab_size))
        rows = np.broadcast_to(np.arange(ids.shape[0])[:, None], ids.shape)
        np.add.at(bags, (rows[real], ids[real]), 1.0)
        return bags

    def predict_proba(self, ids, lengths) -> np.ndarray:
        """P(c | sentence) for a padded batch: (B, T) ids and (B,) lengths -> (B, C)."""
        if hasattr(ids, "numpy"):
            ids, lengths = ids.numpy(), lengths.numpy()
        scores = self.bag_of_words(ids, lengths) @ self.log_word_given_class().T + self.log_prior()  # (B, C)
        scores -= scores.max(axis=1, keepdims=True)
        probs = np.exp(scores)
        return (probs / probs.sum(axis=1, keepdims=True)).astype(np.float32)

    def trace(self, tokens, vocab) -> ClassifierTrace:
        """Probabilities for one tokenized sentence (no hidden state: the model has no memory)."""
        ids, seen = one_sentence(tokens, vocab)
        probs = self.predict_proba(np.array([ids]), np.array([len(ids)]))[0]
        return ClassifierTrace(tokens=seen, labels=tuple(self.labels), probs=probs)

    # The torch models' housekeeping, so callers can treat every classifier alike.
    def eval(self) -> NaiveBayesClassifier:
        return self

    def train(self, mode: bool = True) -> NaiveBayesClassifier:
        return self

    def requires_grad_(self, requires_grad: bool = True) -> NaiveBayesClassifier:
        return self
