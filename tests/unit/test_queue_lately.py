"""What /train promises before Start: the training seconds of a run like the form's, from the last runs of its shape
that ended on this server (seqviz.queue_estimate.Paces.lately), so a class's load shows in it."""

from __future__ import annotations

import pytest

from seqviz.queue_estimate import Paces

QUICK = {"task": "translation", "family": "dot", "embedding": 64, "hidden": 128, "heads": 1, "layers": 1,
         "batch_size": 64, "steps": 400, "seed": 0}


def ended(spec: dict, per_step: float, overhead: float = 3.0) -> tuple[dict, float, float]:
    return spec, per_step, overhead


def test_nothing_is_promised_before_a_run_of_the_shape_has_ended():
    other_shape = {**QUICK, "hidden": 64}
    assert Paces([]).lately(QUICK) is None
    assert Paces([ended(other_shape, 0.1)]).lately(QUICK) is None


def test_the_last_runs_of_the_shape_set_the_figure_for_the_forms_steps():
    newest_first = [ended({**QUICK, "seed": 1}, 0.30), ended({**QUICK, "steps": 100}, 0.20),
                    ended({**QUICK, "hidden": 32}, 9.0)]  # seed and steps are not the shape; the hidden size is
    seconds, count = Paces(newest_first).lately(QUICK)
    assert count == 2
    assert seconds == pytest.approx((0.30 + 0.20) / 2 * 400)
    seconds, _ = Paces(newest_first).lately({**QUICK, "steps": 1000})
    assert seconds == pytest.approx(0.25 * 1000)


def test_only_the_recent_runs_count_so_the_figure_follows_the_load_now():
    # six quiet runs long ago, then a class started: the newest five were slower
    newest_first = [ended(QUICK, 0.5)] * 5 + [ended(QUICK, 0.1)] * 6
    seconds, count = Paces(newest_first).lately(QUICK)
    assert (seconds, count) == (pytest.approx(200.0), 5)
    assert Paces(newest_first).lately(QUICK, recent=11) == (pytest.approx((5 * 0.5 + 6 * 0.1) / 11 * 400), 11)


def test_a_family_that_counts_takes_one_pass():
    bow = {"task": "emails", "family": "bow", "embedding": 16, "hidden": 32, "heads": 1, "layers": 1,
           "batch_size": 32, "steps": 300}
    assert Paces([ended(bow, 0.8)]).lately(bow) == (pytest.approx(0.8), 1)
