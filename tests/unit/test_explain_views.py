"""/explain's views and charts on made-up studies: one rounding on the chart and in the sentences, means
everywhere, the verdicts' thresholds in the view (seqviz.views.explain), every measure drawn."""

from __future__ import annotations

import types

import numpy as np
import pytest

from seqviz import views
from seqviz.analysis.explain import Agreement, HeldOutAgreement
from seqviz.charts.explain import MEASURE_NAMES, ablation_data, importance_data, percent
from seqviz.views import explain as explain_views


def held(tau, weighted, top1, top3=(None,)) -> HeldOutAgreement:
    """A held-out study's agreement, the same for both measures."""
    a = Agreement(tau=list(tau), weighted_tau=list(weighted), top1=list(top1), top3=list(top3) * len(tau))
    return HeldOutAgreement({"gradient": a, "leave_one_out": a}, inputs=40, outputs=len(tau))


def test_one_rounding_for_a_share_on_the_chart_and_in_the_sentence():
    """The additive model's uniform-weights exact match was 2.5%: the chart wrote "3%" and the summary "2%"."""
    assert percent(0.025) == "2.5%" and percent(0.4) == "40.0%" and percent(None) == "undefined"
    table = ablation_data({"additive": {"none": 0.9, "uniform": 0.025, "permuted": 0.0}})
    assert table.set_index("attention weights").loc["uniform weights", "label"] == "2.5%"


@pytest.mark.parametrize("tau, weighted, top1, says", [
    ([0.6, 0.7], [0.8, 0.7], [True, True], "much as"),
    ([-0.3, -0.2], [0.3, 0.2], [True, True], "with the same word first, but otherwise unlike"),
    ([0.1, 0.2], [0.3, 0.25], [False, True], "with the same word first, but otherwise unlike"),
    ([0.1, 0.2], [0.3, 0.25], [False, False], "somewhat as"),
    ([0.1, -0.2], [0.1, -0.1], [False, False], "unlike"),
    ([None], [None], [None], "cannot be compared with"),
])
def test_the_verdict_rests_on_every_measure(tau, weighted, top1, says):
    assert explain_views.ranks(held(tau, weighted, top1).agreement["leave_one_out"].mean) == says


def test_a_translators_study_speaks_in_means_and_one_rounding(monkeypatch):
    import seqviz.analysis.explain as analysis

    study = held([0.5, -0.25, None], [0.6, 0.1, None], [True, False, None], [True, None, None])
    matches = {"none": 0.9, "uniform": 0.025, "permuted": 0.35}
    monkeypatch.setattr(analysis, "held_out_taus", lambda model, task, limit: study)
    monkeypatch.setattr(analysis, "held_out_exact_match",
                        lambda model, task, ablation, limit: types.SimpleNamespace(exact_match=matches[ablation]))
    result = views.get("explain-translation").held_out(None, None)
    assert ("τ +0.12, weighted τ +0.35, the same top word for 50.0% of the words and the same top 3 for 100.0%"
            in result["summary"])
    assert "median" not in result["summary"] and "3 output words of 40 held-out sentences" in result["summary"]
    assert result["verdict"].endswith("replacing its weights wrecks its translations (exact match 90.0% with its "
                                      "own, 2.5% uniform, 35.0% shuffled).")


def test_importance_draws_every_measure_taken():
    tokens = ["where", "is", "it"]
    measures = {MEASURE_NAMES[m]: np.array([0.1, -0.4, 0.2]) for m in ("gradient_x_input", "leave_one_out")}
    table = importance_data(tokens, measures)
    for name in measures:
        np.testing.assert_allclose(table[name + " (share of the largest)"], [0.25, -1.0, 0.5])
    figure = explain_views.charts.make("importance", tokens, np.array([0.2, 0.3, 0.5]),
                                       {"gradient": np.ones(3), "integrated_gradients": None,
                                        "leave_one_out": np.zeros(3)})
    assert figure.args[0] == ("attention α", MEASURE_NAMES["gradient"], MEASURE_NAMES["leave_one_out"])


def test_attention_replaced_says_its_three_translations_in_one_line():
    """A /train snapshot's caption and any caller of View.summary: the view's own trace, a dict of word lists (it
    once inherited the translation view's summary and raised on it)."""
    from seqviz import views

    trace = {"none": ["où", "est", "mon", "colis", "?"], "uniform": ["où", "est", "LE", "colis"], "permuted": []}
    said = views.get("attention-replaced").summary(trace)
    assert said == ("With its own attention: “où est mon colis ?”; with uniform weights: “où est LE colis”; "
                    "with its weights, shuffled: “(nothing)”.")
