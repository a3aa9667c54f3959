"""/what-if's bounds of seqviz.limits at their edges (seqviz.analysis.decoding, .beam, .neighbours), on the shipped
dot-attention translator: a setting exactly at a bound is answered, one past it gets the plain ValueError. (The
page's sliders, seqviz/ui/address.py and app_pages/what_if.py, take the same limits but need Streamlit: addresses far
past them are tests/pages/test_what_if.py's hostile settings.)"""

from __future__ import annotations

import math

import pytest

from seqviz import limits, zoo
from seqviz.analysis import beam, decoding, neighbours
from seqviz.data.translation import CHAPTER_PAIRS

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

SENTENCE = "the box arrived .".split()


@pytest.fixture(scope="module")
def dot():
    checkpoint = zoo.load("dot")
    return checkpoint.model, checkpoint.vocabularies


def test_top_k_lists_max_top_k_words_and_refuses_one_more(dot):
    model, vocabularies = dot
    k = limits.WHATIF_MAX_TOP_K
    assert len(vocabularies["tgt"]) > k + 1  # only the limit can refuse k + 1
    decoded = decoding.next_words(model, vocabularies, SENTENCE, k=k)
    assert decoded.steps and all(len(step.top_tokens) == k for step in decoded.steps)
    with pytest.raises(ValueError, match=f"number of next words must be a whole number from 1 to {k}, not {k + 1}"):
        decoding.next_words(model, vocabularies, SENTENCE, k=k + 1)


def test_beam_width_max_beam_is_searched_and_one_more_refused(dot):
    model, vocabularies = dot
    width = limits.WHATIF_MAX_BEAM
    assert len(vocabularies["tgt"]) > width + 1
    found = beam.beam_search(model, vocabularies, SENTENCE, width=width)
    assert found.width == width and 1 <= len(found.final) <= width
    with pytest.raises(ValueError, match=f"beam width must be a whole number from 1 to {width}, not {width + 1}"):
        beam.beam_search(model, vocabularies, SENTENCE, width=width + 1)


@pytest.mark.parametrize("edge", limits.WHATIF_TEMPERATURE_RANGE)
def test_a_temperature_at_either_end_samples_and_just_past_it_is_refused(dot, edge):
    model, vocabularies = dot
    low, high = limits.WHATIF_TEMPERATURE_RANGE
    decoded = decoding.next_words(model, vocabularies, SENTENCE, temperature=edge, seed=1)
    assert decoded.steps
    past = math.nextafter(edge, -math.inf if edge == low else math.inf)  # the next float outside the range
    with pytest.raises(ValueError, match=f"temperature must be 0 \\(greedy\\) or from {low} to {high}"):
        decoding.next_words(model, vocabularies, SENTENCE, temperature=past, seed=1)


def test_a_temperature_between_greedy_and_the_lowest_is_refused(dot):
    model, vocabularies = dot
    low = limits.WHATIF_TEMPERATURE_RANGE[0]
    assert decoding.next_words(model, vocabularies, SENTENCE, temperature=0).steps  # 0: greedy
    with pytest.raises(ValueError, match="temperature"):
        decoding.next_words(model, vocabularies, SENTENCE, temperature=low / 2)


def test_seeds_from_0_to_max_seed_sample_and_one_past_either_end_is_refused(dot):
    model, vocabularies = dot
    most = limits.WHATIF_MAX_SEED
    for seed in (0, most):
        first = decoding.next_words(model, vocabularies, SENTENCE, temperature=1.0, seed=seed)
        again = decoding.next_words(model, vocabularies, SENTENCE, temperature=1.0, seed=seed)
        assert first.ids == again.ids  # the seed was taken: the same words
    for seed in (-1, most + 1):
        with pytest.raises(ValueError, match=f"seed must be a whole number from 0 to {most}, not {seed}"):
            decoding.next_words(model, vocabularies, SENTENCE, temperature=1.0, seed=seed)


def test_max_neighbours_are_listed_and_one_more_refused(dot):
    model, vocabularies = dot
    most = limits.WHATIF_MAX_NEIGHBOURS
    pairs = [(tuple(e.split()), tuple(f.split())) for e, f in CHAPTER_PAIRS]
    index = neighbours.build_index(model, vocabularies, pairs, "encoder", max_states=most + 5)
    assert len(index) == most + 5  # more states than the limit: only the limit refuses most + 1
    found = neighbours.source_neighbours(index, model, vocabularies, SENTENCE, 1, k=most)
    assert len(found) == most
    assert [n.similarity for n in found] == sorted((n.similarity for n in found), reverse=True)
    with pytest.raises(ValueError, match=f"number of neighbours must be a whole number from 1 to {most}"):
        neighbours.source_neighbours(index, model, vocabularies, SENTENCE, 1, k=most + 1)
