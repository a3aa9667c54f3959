import numpy as np
import pytest

from seqviz.analysis import attention_example as ex


@pytest.fixture
def chapter():
    return ex.worked_attention(ex.CHAPTER_QUERY, ex.CHAPTER_KEYS, ex.CHAPTER_WORDS)


def test_chapter_scores_exponentials_weights_context(chapter):
    assert [f"{s:.1f}" for s in chapter.scores] == ["1.0", "0.0", "0.7"]
    assert [f"{e:.3f}" for e in chapter.exp_scores] == ["2.718", "1.000", "2.014"]
    assert f"{chapter.exp_scores.sum():.3f}" == "5.732"
    assert [f"{w:.3f}" for w in chapter.weights] == ["0.474", "0.174", "0.351"]
    assert chapter.weights.sum() == pytest.approx(1.0)
    assert [f"{c:.3f}" for c in chapter.context] == ["0.720", "0.420"]
    assert chapter.focus == "parcel"


def test_self_test_query_turns_attention_to_never(chapter):
    turned = ex.worked_attention(ex.SELF_TEST_QUERY, ex.CHAPTER_KEYS, ex.CHAPTER_WORDS)
    assert [f"{w:.3f}" for w in turned.weights] == ["0.174", "0.474", "0.351"]
    assert [f"{c:.3f}" for c in turned.context] == ["0.420", "0.720"]
    sentence = ex.describe_change(chapter, turned)
    assert "towards “never” (0.174 → 0.474)" in sentence
    assert "away from “parcel”" in sentence


def test_same_query_changes_nothing(chapter):
    assert "do not change" in ex.describe_change(chapter, chapter)


def test_equal_scores_give_equal_weights():
    worked = ex.worked_attention((0.0, 0.0), ex.CHAPTER_KEYS, ex.CHAPTER_WORDS)
    np.testing.assert_allclose(worked.weights, 1 / 3)


def test_extreme_vectors_in_range_stay_finite():
    worked = ex.worked_attention((5.0, 5.0), ((5.0, 5.0), (-5.0, -5.0), (0.0, 0.0)), ("a", "b", "c"))
    assert np.all(np.isfinite(worked.weights)) and worked.weights.sum() == pytest.approx(1.0)


def test_shapes_must_agree():
    with pytest.raises(ValueError):
        ex.worked_attention((1.0, 0.0, 0.0), ex.CHAPTER_KEYS, ex.CHAPTER_WORDS)
    with pytest.raises(ValueError):
        ex.worked_attention((1.0, 0.0), ex.CHAPTER_KEYS, ("a", "b"))
