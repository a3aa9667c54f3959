"""/what-if's "set a row of weights" attention edit: a one-hot row is the move-the-weight edit, the model's own row
written back changes nothing, and a row typed by a visitor is read as numbers or refused with a plain sentence."""

from __future__ import annotations

import numpy as np
import pytest

from seqviz import zoo
from seqviz.analysis import decoding
from seqviz.views.whatif import WhatIf

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

ATTENDING = [name for name in ("additive", "dot", "transformer-translator") if name in zoo.available()]
TOKENS = "the small box was delivered and the black watch arrived .".split()


@pytest.mark.parametrize("name", ATTENDING)
def test_a_one_hot_row_is_the_move_the_weight_edit(name):
    ck = zoo.load(name)
    original = decoding.next_words(ck.model, ck.vocabularies, TOKENS)
    for step in (0, len(original.steps) // 2):
        for position in (0, 3, len(TOKENS) - 1):
            moved = decoding.edit_attention(ck.model, ck.vocabularies, TOKENS, step, source_position=position)
            row = decoding.edit_attention(ck.model, ck.vocabularies, TOKENS, step,
                                          weights=np.eye(len(TOKENS))[position] * 3.0)  # any scale: renormalised
            assert (row.edited.ids, row.edited.ended) == (moved.edited.ids, moved.edited.ended)
            np.testing.assert_allclose(row.edited.log_probs, moved.edited.log_probs, atol=1e-6)
            np.testing.assert_allclose(row.edited.weights, moved.edited.weights, atol=1e-6)


@pytest.mark.parametrize("name", [n for n in ATTENDING if n != "transformer-translator"])
def test_the_models_own_row_as_the_page_shows_it_changes_no_word(name):
    """The page shows each step's own weights to 3 decimals for the visitor to copy: typed back, every word stays."""
    ck = zoo.load(name)
    original = decoding.next_words(ck.model, ck.vocabularies, TOKENS)
    for step in range(len(original.steps)):
        typed = WhatIf.typed_row(WhatIf.row_text(original.weights[step]), len(TOKENS))
        if typed.sum() == 0:
            continue
        edited = decoding.edit_attention(ck.model, ck.vocabularies, TOKENS, step, weights=typed)
        assert edited.edited.ids == original.ids, step
        np.testing.assert_allclose(edited.weights_after, typed / typed.sum(), atol=1e-6)


def test_a_typed_row_is_read_as_numbers_whatever_separates_them():
    np.testing.assert_array_equal(WhatIf.typed_row(" 0.2, 0.5;0.3  1e-1\t0 ", 5), [0.2, 0.5, 0.3, 0.1, 0])
    np.testing.assert_array_equal(WhatIf.typed_row(WhatIf.row_text([0.25, 0.75]), 2), [0.25, 0.75])


@pytest.mark.parametrize(("text", "said"), [
    ("1, 2", "has 3 source words and the row has 2 numbers"), ("1 2 3 4", "the row has 4 numbers"),
    ("", "the row has 0 numbers"), ("1 two 3", "“two” is not a number"), ("1 -2 3", "“-2” is not a weight"),
    ("1 nan 3", "“nan” is not a weight"), ("1 inf 3", "“inf” is not a weight"), ("0 0 0", "all 0"),
    ("<script>alert(1)</script>" * 3, "is not a number")])
def test_an_unusable_row_is_refused_with_a_plain_sentence(text, said):
    with pytest.raises(ValueError) as refused:
        WhatIf.typed_row(text, 3)
    assert said in str(refused.value)
    assert len(str(refused.value)) < 200  # the visitor's text is quoted cut short
