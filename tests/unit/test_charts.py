import json

import numpy as np

from seqviz import charts
from seqviz.analysis import attention_example as ex
from seqviz.analysis import tiny_rnn


def _spec(chart) -> dict:
    return json.loads(chart.to_json())


def test_position_labels_keep_repeated_words_apart():
    assert charts.position_labels(["the", "box", "the"]) == ["01 the", "02 box", "03 the"]
    assert charts.position_labels(["w"] * 120)[99] == "100 w"


def test_memory_chart_holds_every_step():
    run = tiny_rnn.run_tiny_rnn(tiny_rnn.impulse(6))
    data = charts.tiny_rnn_data(run)
    assert list(data["step"]) == [1, 2, 3, 4, 5, 6]
    spec = _spec(charts.memory_chart(run))
    assert "tooltip" in json.dumps(spec)


def test_gradient_chart_drops_only_zeros_from_the_log_axis():
    run = tiny_rnn.run_tiny_rnn(tiny_rnn.impulse(8), w=0.0)  # every factor is exactly 0
    data = charts.gradient_data(run)
    assert not data["drawn"].any()
    charts.gradient_chart(run).to_json()  # still a valid chart (the reference point)
    run = tiny_rnn.run_tiny_rnn(tiny_rnn.impulse(8), w=0.5)
    assert charts.gradient_data(run)["drawn"].all()


def test_attention_tables_match_the_worked_example():
    worked = ex.worked_attention(ex.CHAPTER_QUERY, ex.CHAPTER_KEYS, ex.CHAPTER_WORDS)
    table = charts.attention_steps_data(worked)
    assert list(table["word"]) == ["parcel", "never", "arrived"]
    np.testing.assert_allclose(table["weight α"], worked.weights)
    mix = charts.context_mix_data(worked)
    added = mix[mix["part"] == "α × key, added"]
    # the weighted keys laid head to tail end exactly at the context vector
    np.testing.assert_allclose(added[["x2", "y2"]].iloc[-1], worked.context)
    charts.attention_weights_chart(worked).to_json()
    charts.context_mix_chart(worked).to_json()
