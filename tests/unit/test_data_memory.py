"""The remember-the-first-word task."""

import numpy as np
import pytest

from seqviz.data import memory
from seqviz.data.memory import CLASSES, DISTRACTORS, MAX_DISTANCE, make_memory_example, make_memory_splits


@pytest.fixture(scope="module")
def splits():
    return make_memory_splits(0)


def test_example_is_a_class_token_then_distractors():
    rng = np.random.default_rng(0)
    for distance in (1, 7, MAX_DISTANCE):
        tokens, label = make_memory_example(rng, distance)
        assert len(tokens) == distance + 1
        assert tokens[0] == CLASSES[label]
        assert all(t in DISTRACTORS for t in tokens[1:])
    assert not set(CLASSES) & set(DISTRACTORS)


@pytest.mark.parametrize("distance", [0, MAX_DISTANCE + 1, -3])
def test_example_rejects_distances_out_of_range(distance):
    with pytest.raises(ValueError):
        make_memory_example(np.random.default_rng(0), distance)


def test_splits_sizes_and_distances(splits):
    assert len(splits.train) == memory.N_TRAIN
    assert sorted(splits.test) == list(range(1, MAX_DISTANCE + 1))
    for distance, examples in splits.test.items():
        assert len(examples) == memory.N_TEST_PER_DISTANCE
        assert all(len(tokens) == distance + 1 for tokens, _ in examples)
    train_distances = {len(tokens) - 1 for tokens, _ in splits.train}
    assert train_distances == set(range(1, MAX_DISTANCE + 1))


def test_labels_are_balanced(splits):
    counts = np.bincount([label for _, label in splits.train], minlength=len(CLASSES))
    assert counts.min() > 0.8 * len(splits.train) / len(CLASSES)
    for examples in (splits.test[1], splits.test[MAX_DISTANCE]):
        assert len({label for _, label in examples}) == len(CLASSES)


def test_same_seed_same_data_and_other_seed_other_data(splits):
    memory._splits.cache_clear()  # else the second call is the cache's copy of the first
    again = make_memory_splits(0)
    assert again.train == splits.train and again.test == splits.test
    assert make_memory_splits(1).train != splits.train


def test_returned_lists_are_copies():
    first = make_memory_splits(0)
    first.train[0][0].append("changed")
    first.test[1][0][0].append("changed")
    again = make_memory_splits(0)
    assert "changed" not in again.train[0][0] and "changed" not in again.test[1][0][0]


def test_training_distances_can_be_capped_while_the_test_keeps_every_distance():
    capped = make_memory_splits(0, n_train=500, max_train_distance=20)
    assert len(capped.train) == 500
    assert max(len(tokens) - 1 for tokens, _ in capped.train) == 20
    assert sorted(capped.test) == list(range(1, MAX_DISTANCE + 1))
    with pytest.raises(ValueError):
        make_memory_splits(0, max_train_distance=MAX_DISTANCE + 1)
