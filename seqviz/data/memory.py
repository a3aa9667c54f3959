"""Remember the first word: the plainest test of "can it learn that a word N steps back matters".

A sequence is one token from CLASSES followed by ``distance`` tokens from DISTRACTORS; its label is the index
of the first token in CLASSES. The answer is never among the last words, so a recurrent model must carry the
first word in its state h_t through ``distance`` updates h_t = f(W_h h_{t-1} + W_x x_t + b). A plain RNN's
memory fades with distance (the accuracy falls towards chance, 1 / len(CLASSES)); an LSTM's cell state
c_t = f_t ⊙ c_{t-1} + i_t ⊙ c̃_t can keep it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

MAX_DISTANCE = 60  # the most distractors after the first word
CLASSES: tuple[str, ...] = ("red", "blue", "green", "black", "white", "pink", "grey", "gold")  # the label
DISTRACTORS: tuple[str, ...] = ("0", "1", "2", "3", "4", "5", "6", "7", "8", "9")  # what follows it
N_TRAIN = 8000  # training sequences, distances drawn uniformly in 1..MAX_DISTANCE
N_TEST_PER_DISTANCE = 200  # held-out sequences for every distance 1..MAX_DISTANCE

Example = tuple[list[str], int]  # tokens, label index into CLASSES


def make_memory_example(rng: np.random.Generator, distance: int) -> Example:
    """One sequence: a class token, then ``distance`` distractors; the label is the class token's index."""
    if not 1 <= distance <= MAX_DISTANCE:
        raise ValueError(f"distance must be in 1..{MAX_DISTANCE}, got {distance}")
    label = int(rng.integers(len(CLASSES)))
    distractors = rng.integers(len(DISTRACTORS), size=distance)
    return [CLASSES[label], *(DISTRACTORS[int(i)] for i in distractors)], label


@dataclass(frozen=True)
class MemorySplits:
    train: list[Example]  # N_TRAIN sequences of every distance
    test: dict[int, list[Example]]  # distance -> N_TEST_PER_DISTANCE sequences


@functools.lru_cache(maxsize=4)
def _splits(
    seed: int, n_train: int, max_train_distance: int
) -> tuple[tuple[Example, ...], dict[int, tuple[Example, ...]]]:
    rng = np.random.default_rng(seed)
    test = {
        d: tuple(make_memory_example(rng, d) for _ in range(N_TEST_PER_DISTANCE))
        for d in range(1, MAX_DISTANCE + 1)
    }
    distances = rng.integers(1, max_train_distance + 1, size=n_train)
    train = tuple(make_memory_example(rng, int(d)) for d in distances)
    return train, test


def make_memory_splits(
    seed: int = 0, *, n_train: int = N_TRAIN, max_train_distance: int = MAX_DISTANCE
) -> MemorySplits:
    """The seeded train and test sequences (same seed, same sequences).

    Training distances are drawn uniformly in 1..``max_train_distance``; the test always covers every
    distance 1..MAX_DISTANCE (a smaller ``max_train_distance`` asks whether the memory generalises).
    """
    if not 1 <= max_train_distance <= MAX_DISTANCE:
        raise ValueError(f"max_train_distance must be in 1..{MAX_DISTANCE}, got {max_train_distance}")
    train, test = _splits(seed, n_train, max_train_distance)
    return MemorySplits(
        train=[(list(tokens), label) for tokens, label in train],
        test={d: [(list(tokens), label) for tokens, label in examples] for d, examples in test.items()},
    )
