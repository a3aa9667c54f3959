"""Tests written for mutmut's survivors in seqviz/store/experiments.py (issue 28, scripts/mutation
seqviz/store/experiments.py): every setting an experiment may vary, check's refusals word for word, the run a value
trains, an experiment to JSON and back (and what is not one), the value a joining student is handed, and the
ready-made experiments field by field. No database: experiments are values."""

from __future__ import annotations

import pytest

from seqviz import limits
from seqviz.runs import RunSpec
from seqviz.store.experiments import LENGTH, SETTINGS, Experiment, next_value, ready_made

BASE = {"embedding": 8, "hidden": 8}
VALUES = {"family": ("rnn", "lstm"), "hidden": (8, 16), "embedding": (8, 16), "layers": (1, 2), "heads": (1, 2),
          "steps": (50, 60), "lr": (0.01, 0.02), "batch_size": (16, 32), "seed": (0, 1)}


def _experiment(setting="seed", values=(0, 1), base=BASE, family="rnn") -> Experiment:
    return Experiment("what the class finds out", "memory", family, setting, tuple(values), base=dict(base))


def test_the_settings_an_experiment_may_vary_are_these_nine():
    assert SETTINGS == ("family", "hidden", "embedding", "layers", "heads", "steps", "lr", "batch_size", "seed")
    assert LENGTH == "length"


@pytest.mark.parametrize("setting", SETTINGS)
def test_each_setting_may_be_varied_and_each_value_trains_its_run(setting):
    experiment = _experiment(setting, VALUES[setting]).check()
    for value in VALUES[setting]:
        run = experiment.spec(value)
        assert isinstance(run, RunSpec) and getattr(run, setting) == value
        assert (run.task, run.name) == ("memory", "")


def test_a_runs_other_fields_come_from_the_base_but_never_its_name_task_or_an_unknown_field():
    experiment = _experiment("seed", (3,), base={"embedding": 16, "hidden": 24, "name": "not this", "task": "emails",
                                                 "colour": "blue", "steps": 70})
    run = experiment.spec(3)
    assert (run.task, run.family, run.name, run.embedding, run.hidden, run.steps, run.seed) == (
        "memory", "rnn", "", 16, 24, 70, 3)


def test_check_refuses_in_words():
    with pytest.raises(ValueError) as refused:
        _experiment("name", ("a", "b")).check()
    assert str(refused.value) == ("the setting to vary must be one of family, hidden, embedding, layers, heads, steps, "
                                  "lr, batch_size, seed")
    with pytest.raises(ValueError) as refused:
        _experiment("seed", ()).check()
    assert str(refused.value) == f"an experiment varies its setting over 1 to {limits.CLASS_MAX_VALUES} values"
    with pytest.raises(ValueError) as refused:
        _experiment("seed", (1, 2, 1)).check()
    assert str(refused.value) == "each value may be listed once"
    value = "a family name longer than twenty characters"
    with pytest.raises(ValueError) as said:
        RunSpec(task="memory", family=value, embedding=8, hidden=8)
    with pytest.raises(ValueError) as refused:
        _experiment("family", ("rnn", value)).check()
    assert str(refused.value) == f"family a family name longer: {said.value}"
    assert refused.value.__cause__ is None and refused.value.__suppress_context__


def test_an_experiment_to_json_and_back():
    experiment = Experiment("t", "memory", "rnn", "seed", (1, 2), base={"hidden": 8}, preset="p", x="seed",
                            measure="m")
    as_dict = experiment.to_dict()
    assert as_dict == {"title": "t", "task": "memory", "family": "rnn", "setting": "seed", "values": [1, 2],
                       "base": {"hidden": 8}, "preset": "p", "x": "seed", "measure": "m"}
    assert type(as_dict["values"]) is list
    assert Experiment.from_dict(as_dict) == experiment and type(Experiment.from_dict(as_dict).values) is tuple
    assert Experiment.from_dict({**as_dict, "colour": "blue"}) == experiment  # an unknown key is left out
    fewest = {"title": "t", "task": "memory", "family": "rnn", "setting": "seed"}
    assert Experiment.from_dict(fewest) == Experiment("t", "memory", "rnn", "seed", ())
    assert Experiment.from_dict({**fewest, "values": None}).values == ()


@pytest.mark.parametrize("data", [None, [], "experiment", {"title": "t", "task": "memory", "family": "rnn"}])
def test_what_is_not_an_experiment_reads_as_none(data):
    assert Experiment.from_dict(data) is None


def test_value_of_a_runs_spec_is_one_of_the_values_or_none():
    experiment = _experiment("hidden", (8, 16))
    assert experiment.value_of({"hidden": 16, "seed": 3}) == 16
    assert experiment.value_of({"hidden": 32}) is None and experiment.value_of({"seed": 8}) is None
    assert experiment.value_of(None) is None and experiment.value_of([("hidden", 8)]) is None


def test_a_joining_student_gets_the_value_fewest_hold_or_have_posted_the_first_on_a_tie():
    experiment = _experiment("hidden", (8, 16, 32))
    assert next_value(experiment, [], []) == 8
    assert next_value(experiment, [8, 8, 16, 32], []) == 16
    assert next_value(experiment, [8], [8, 16, 32]) == 16
    assert next_value(experiment, [8, 16], [99, 99, 99]) == 32  # values not listed do not count
    assert next_value(_experiment("hidden", (8, 16)), [8, 8, 16], []) == 16  # held twice is more than once


def test_the_ready_made_experiments_field_by_field():
    made = ready_made()
    bottleneck, attention = made["bottleneck"], made["attention"]
    assert (bottleneck.title, bottleneck.task, bottleneck.family, bottleneck.setting, bottleneck.values,
            bottleneck.preset, bottleneck.x, bottleneck.measure) == (
        "The bottleneck: a plain encoder-decoder's hidden size against exact match by sentence length",
        "translation", "plain", "hidden", (8, 16, 32, 64, 96, 128), "Bottleneck: plain encoder-decoder, hidden 16",
        "hidden", "exact_match_le30")
    assert (attention.title, attention.task, attention.family, attention.setting, attention.values,
            attention.preset, attention.x, attention.measure) == (
        "Attention against none: exact match by sentence length, on the same budget",
        "translation", "plain", "family", ("plain", "additive", "dot"), "Same budget: attention LSTM translator",
        "length", "exact_match_le30")
    for experiment in (bottleneck, attention):
        assert experiment.base and not {"task", "family", "name"} & set(experiment.base)
        assert set(experiment.base) <= set(RunSpec.__dataclass_fields__)
