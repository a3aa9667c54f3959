"""/what-if's neighbours (seqviz.analysis.neighbours): the index holds the states the models give one sentence at a
time, its answers are scikit-learn's brute-force cosine search, a training sentence finds itself, and its size
is bounded."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from seqviz import limits, zoo
from seqviz.analysis import decoding, neighbours
from seqviz.data.translation import render_english, render_french, sample_sentence
from seqviz.models.common import BOS_ID

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

TRANSLATORS = [name for name in ("plain", "additive", "dot", "transformer-translator") if name in zoo.available()]


def grammar_pairs(count: int, seed: int = 1) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    rng = np.random.default_rng(seed)
    trees = [sample_sentence(rng, int(rng.integers(3, 25))) for _ in range(count)]
    return [(tuple(render_english(t)), tuple(render_french(t))) for t in trees]


PAIRS = grammar_pairs(60)


@pytest.fixture(scope="module")
def checkpoints():
    return {name: zoo.load(name) for name in TRANSLATORS}


def one_at_a_time(model, vocabularies, pairs, side: str) -> np.ndarray:
    """Every state of ``side``, one sentence at a time, by decode_step for the decoder: the reference."""
    rows = []
    with torch.inference_mode():
        for english, french in pairs:
            source = decoding.read_source(model, vocabularies, english)
            if side == "encoder":
                rows.append(model.encoder_states(source.src, source.lengths)[0].numpy())
                continue
            state = model.start(source.src, source.lengths)
            for word in [BOS_ID, *vocabularies["tgt"].encode(list(french))[:-1]]:
                step = model.decode_step(torch.tensor([word]), state)
                state = step.state
                rows.append(step.hidden.numpy())
    return np.concatenate(rows)


@pytest.mark.parametrize("side", neighbours.SIDES)
@pytest.mark.parametrize("name", TRANSLATORS)
def test_neighbours_are_a_brute_force_cosine_search(checkpoints, name, side):
    from sklearn.neighbors import NearestNeighbors

    model, vocabularies = checkpoints[name].model, checkpoints[name].vocabularies
    index = neighbours.build_index(model, vocabularies, PAIRS, side, max_states=700)
    states = one_at_a_time(model, vocabularies, index.pairs, side)[: len(index)]
    assert len(index) == 700 and index.vectors.shape == (700, states.shape[1])
    np.testing.assert_allclose(index.vectors.numpy(), states / np.linalg.norm(states, axis=1, keepdims=True),
                               atol=2e-5)  # batched and padded as the states of one sentence alone
    brute = NearestNeighbors(n_neighbors=10, metric="cosine", algorithm="brute").fit(states)
    rng = np.random.default_rng(0)
    for query in [*states[rng.integers(0, len(states), 5)], rng.normal(size=states.shape[1])]:
        found = neighbours.nearest(index, query, k=10)
        distance, rows = brute.kneighbors(query[None].astype(np.float64))
        np.testing.assert_allclose([n.similarity for n in found], 1 - distance[0], atol=1e-5)
        for neighbour, row in zip(found, rows[0], strict=True):  # the same states (or one as similar)
            expected = (index.pairs[index.sentence[row]], int(index.position[row]))
            got = ((tuple(neighbour.english), tuple(neighbour.french)), neighbour.position)
            twin = np.isclose(1 - distance[0], neighbour.similarity, atol=1e-6).sum() > 1
            assert got == expected or twin


@pytest.mark.parametrize("name", TRANSLATORS)
def test_a_training_sentence_finds_itself(checkpoints, name):
    model, vocabularies = checkpoints[name].model, checkpoints[name].vocabularies
    english, french = PAIRS[5]
    encoder = neighbours.build_index(model, vocabularies, PAIRS, "encoder")
    for position in (0, len(english) // 2, len(english) - 1):
        best = neighbours.source_neighbours(encoder, model, vocabularies, list(english), position, k=3)[0]
        assert best.similarity == pytest.approx(1.0, abs=1e-5)
        assert best.english[best.position] == english[position] == best.word
        assert best.position == position or best.english != list(english)  # itself, or a twin state
    decoder = neighbours.build_index(model, vocabularies, PAIRS, "decoder")
    greedy = decoding.next_words(model, vocabularies, list(english))
    if greedy.tokens == list(french):  # the shipped models translate the grammar (plain: its short sentences)
        best = neighbours.output_neighbours(decoder, model, vocabularies, list(english), 2, k=1)[0]
        assert best.similarity == pytest.approx(1.0, abs=1e-5) and best.word == french[2]


def test_the_index_is_bounded_and_says_its_size(checkpoints):
    checkpoint = checkpoints[TRANSLATORS[0]]
    index = neighbours.build_index(checkpoint.model, checkpoint.vocabularies, PAIRS, "encoder", max_states=100)
    assert len(index) == 100 and index.vectors.dtype == torch.float32
    assert index.nbytes == 100 * index.vectors.shape[1] * 4 + 100 * 4 * 2
    assert sum(len(e) for e, _ in index.pairs[:-1]) < 100 <= sum(len(e) for e, _ in index.pairs)  # no extra pair
    with pytest.raises(ValueError, match="number of states"):
        neighbours.build_index(checkpoint.model, checkpoint.vocabularies, PAIRS, "encoder",
                               max_states=limits.WHATIF_INDEX_STATES + 1)


def test_a_wide_model_gets_fewer_states_within_the_memory_bound(checkpoints, monkeypatch):
    checkpoint = checkpoints[TRANSLATORS[0]]
    monkeypatch.setattr(limits, "WHATIF_INDEX_MB", 0.05)  # as if its states were 100 times wider
    index = neighbours.build_index(checkpoint.model, checkpoint.vocabularies, PAIRS, "encoder")
    width = index.vectors.shape[1]
    assert len(index) == int(0.05 * 2**20) // (4 * width)
    assert index.vectors.numel() * 4 <= 0.05 * 2**20


def test_hostile_neighbour_questions_get_a_plain_message(checkpoints):
    checkpoint = checkpoints[TRANSLATORS[0]]
    model, vocabularies = checkpoint.model, checkpoint.vocabularies
    encoder = neighbours.build_index(model, vocabularies, PAIRS[:5], "encoder")
    decoder = neighbours.build_index(model, vocabularies, PAIRS[:5], "decoder")
    cases = [
        (lambda: neighbours.build_index(model, vocabularies, PAIRS, "middle"), "side"),
        (lambda: neighbours.source_neighbours(encoder, model, vocabularies, [], 0), "no words"),
        (lambda: neighbours.source_neighbours(encoder, model, vocabularies, ["the"], 1), "position"),
        (lambda: neighbours.source_neighbours(encoder, model, vocabularies, ["the"], 0, k=0), "neighbours"),
        (lambda: neighbours.source_neighbours(encoder, model, vocabularies, ["the"], 0, k=21), "neighbours"),
        (lambda: neighbours.source_neighbours(decoder, model, vocabularies, ["the"], 0), "encoder index"),
        (lambda: neighbours.output_neighbours(encoder, model, vocabularies, ["the"], 0), "decoder index"),
        (lambda: neighbours.output_neighbours(decoder, model, vocabularies, ["the"], 99), "output step"),
        (lambda: neighbours.nearest(encoder, [1.0, 2.0]), "finite numbers"),
    ]
    for call, message in cases:
        with pytest.raises(ValueError, match=message):
            call()
