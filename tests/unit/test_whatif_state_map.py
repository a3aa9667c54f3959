"""/what-if's map of states (seqviz.analysis.state_map): its points are scikit-learn's PCA of the encoder states (and
numpy's SVD of them, up to each axis's sign), the visitor's sentence is projected on the same plane, and every
token of the grammar's sentences gets its part of the tree."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from seqviz import zoo
from seqviz.analysis import decoding, state_map
from seqviz.data.translation import (
    CHAPTER_PAIRS,
    DETERMINERS,
    NOUNS,
    POST_ADJECTIVES,
    PRE_ADJECTIVES,
    render_english,
    sample_sentence,
)

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

TRANSLATORS = [name for name in ("plain", "additive", "transformer-translator") if name in zoo.available()]
RNG = np.random.default_rng(2)
SENTENCES = [render_english(sample_sentence(RNG, int(RNG.integers(3, 40)))) for _ in range(40)]


def encoder_states(model, vocabularies, sentences) -> np.ndarray:
    rows = []
    with torch.inference_mode():
        for tokens in sentences:
            source = decoding.read_source(model, vocabularies, tokens)
            rows.append(model.encoder_states(source.src, source.lengths)[0].double().numpy())
    return np.concatenate(rows)


@pytest.mark.parametrize("name", TRANSLATORS)
def test_the_map_is_scikit_learns_pca_of_the_encoder_states(name):
    from sklearn.decomposition import PCA

    checkpoint = zoo.load(name)
    model, vocabularies = checkpoint.model, checkpoint.vocabularies
    mapped = state_map.fit_state_map(model, vocabularies, SENTENCES, max_states=400)
    states = encoder_states(model, vocabularies, mapped.sentences)[:400]  # one sentence at a time
    assert mapped.points.shape == (400, 2) == (len(mapped.words), 2)
    reference = PCA(n_components=2, svd_solver="full").fit(states)
    np.testing.assert_allclose(mapped.points, reference.transform(states), atol=1e-4)
    np.testing.assert_allclose(mapped.explained_variance_ratio, reference.explained_variance_ratio_, atol=1e-5)
    centred = states - states.mean(axis=0)  # and by hand: the top two right singular vectors, up to sign
    _, singular, vt = np.linalg.svd(centred, full_matrices=False)
    by_hand = centred @ vt[:2].T
    signs = np.sign((by_hand * mapped.points).sum(axis=0))
    np.testing.assert_allclose(mapped.points, by_hand * signs, atol=1e-4)
    np.testing.assert_allclose(mapped.explained_variance_ratio, singular[:2] ** 2 / (singular**2).sum(), atol=1e-5)
    words = [w for tokens in mapped.sentences for w in tokens][:400]
    assert mapped.words == words
    assert list(mapped.positions) == [p for tokens in mapped.sentences for p in range(len(tokens))][:400]
    sentence = list(CHAPTER_PAIRS[0][0].split())
    path = state_map.project_sentence(mapped, model, vocabularies, sentence)
    own = encoder_states(model, vocabularies, [sentence])
    np.testing.assert_allclose(path.points, reference.transform(own), atol=1e-4)
    assert path.tokens == sentence and len(path.parts) == len(sentence) and None not in path.parts


def test_every_token_of_the_grammar_gets_its_part():
    for tokens in SENTENCES + [english.split() for english, _ in CHAPTER_PAIRS]:
        parts = state_map.grammar_parts(tokens)
        assert parts is not None and len(parts) == len(tokens)
        for token, part in zip(tokens, parts, strict=True):
            if part == "determiner":
                assert token in (*DETERMINERS, "an")
            if part == "noun":
                assert token in NOUNS
            if part == "adjective":
                assert token in PRE_ADJECTIVES or token in POST_ADJECTIVES
            if part == "punctuation":
                assert token in (",", ".", "?")
            if part == "negation":
                assert token in ("never", "not")
    assert state_map.grammar_parts("my red phone never arrived .".split()) == [
        "determiner", "adjective", "noun", "negation", "verb", "punctuation"]
    assert state_map.grammar_parts("where is my order ?".split()) == [
        "question", "verb", "determiner", "noun", "punctuation"]
    assert state_map.grammar_parts("the zebra arrived .".split()) is None  # outside the grammar: no parts


def test_a_sentence_outside_the_grammar_is_still_mapped_without_parts():
    checkpoint = zoo.load(TRANSLATORS[0])
    mapped = state_map.fit_state_map(checkpoint.model, checkpoint.vocabularies, SENTENCES[:5], max_states=30)
    assert len(mapped.words) == 30 and None not in mapped.parts
    path = state_map.project_sentence(mapped, checkpoint.model, checkpoint.vocabularies, "the zebra arrived".split())
    assert path.tokens == ["the", "<unk>", "arrived"] and path.parts == [None, None, None]
    assert path.points.shape == (3, 2)
    with pytest.raises(ValueError, match="no words"):
        state_map.project_sentence(mapped, checkpoint.model, checkpoint.vocabularies, [])
    with pytest.raises(ValueError, match="number of states"):
        state_map.fit_state_map(checkpoint.model, checkpoint.vocabularies, SENTENCES, max_states=10**6)
