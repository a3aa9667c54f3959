"""Tests written for mutmut's survivors in seqviz/runs.py (issue 28, scripts/mutation seqviz/runs.py): every refusal
of a RunSpec word for word, its label, its training config (the warm-up at its edges), presets' promises at their
bounds, and the shared task built once."""

from __future__ import annotations

import re

import pytest

from seqviz import runs
from seqviz.runs import Promise, RunSpec, preset, shared_task, task_families

EMAILS = {"task": "emails", "family": "lstm", "embedding": 8, "hidden": 8}


def refused(message: str, **fields):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        RunSpec(**fields)


def test_the_families_of_each_task():
    assert task_families("memory") == ("rnn", "gru", "lstm")
    assert "bow" in task_families("emails") and "dot" not in task_families("emails")


def test_each_refusal_word_for_word():
    refused("task must be one of emails, memory, translation, not 'poems'", task="poems")
    refused("a memory run trains one of these families: rnn, gru, lstm (not 'dot')", task="memory", family="dot")
    refused("steps must be a whole number, not 2.5", steps=2.5)
    refused("seed must be a whole number, not True", seed=True)
    refused("lr must be a number, not nan", lr=float("nan"))
    refused("lr must be a number, not True", lr=True)
    refused("lr must be a number, not '0.1'", lr="0.1")
    refused("name must be text of at most 80 characters", name="x" * 81)
    refused("name must be text of at most 80 characters", name=5)
    assert RunSpec(name="x" * 80).label == "x" * 80
    refused("steps is 0; a run trained here takes steps from 1 to 5000 (seqviz.limits.TRAIN_MAX_STEPS)", steps=0)
    refused("lr is 5; a run trained here takes lr from 1e-05 to 0.1 (seqviz.limits.TRAIN_LR_RANGE)", lr=5)
    refused("hidden is 3; a run trained here takes hidden from 4 to 256 (seqviz.limits.TRAIN_WIDTH_RANGE)",
            **{**EMAILS, "hidden": 3})
    refused("embedding (64) must divide by heads (3): each head gets embedding / heads numbers",
            family="transformer-seq2seq", heads=3, embedding=64)


def test_settings_at_both_ends_of_their_range():
    for field, low, high in (("steps", 1, 5000), ("batch_size", 1, 256), ("seed", 0, 2**31 - 1),
                             ("lr", 1e-5, 0.1)):
        for value in (low, high):
            assert getattr(RunSpec(**EMAILS, **{field: value}), field) == value
    for field, value in (("steps", 5001), ("batch_size", 0), ("batch_size", 257), ("seed", -1), ("seed", 2**31)):
        with pytest.raises(ValueError, match=f"^{field} is "):
            RunSpec(**EMAILS, **{field: value})
    small = {"task": "emails", "family": "transformer", "embedding": 16, "hidden": 16}
    assert RunSpec(**small, layers=4, heads=8).layers == 4 and RunSpec(**small, layers=1, heads=1).heads == 1
    with pytest.raises(ValueError, match=r"^layers is 5; .* from 1 to 4 \(seqviz.limits.TRAIN_MAX_LAYERS\)$"):
        RunSpec(**small, layers=5)
    with pytest.raises(ValueError, match=r"^heads is 0; .* from 1 to 8 \(seqviz.limits.TRAIN_MAX_HEADS\)$"):
        RunSpec(**small, heads=0)


@pytest.mark.parametrize(("field", "value", "low", "high", "bound"), [
    ("embedding", 257, 4, 256, "TRAIN_WIDTH_RANGE"),
    ("heads", 9, 1, 8, "TRAIN_MAX_HEADS"),
    ("layers", 0, 1, 4, "TRAIN_MAX_LAYERS"),
    ("steps", 5001, 1, 5000, "TRAIN_MAX_STEPS"),
    ("batch_size", 257, 1, 256, "TRAIN_BATCH_RANGE"),
    ("lr", 1e-6, 1e-5, 0.1, "TRAIN_LR_RANGE"),
    ("seed", -1, 0, 2**31 - 1, "TRAIN_MAX_SEED"),
])
def test_each_range_is_named_in_its_refusal(field, value, low, high, bound):
    fields = {"task": "emails", "family": "transformer", "embedding": 16, "hidden": 16, "heads": 1, field: value}
    refused(f"{field} is {value:g}; a run trained here takes {field} from {low:g} to {high:g} (seqviz.limits.{bound})",
            **fields)


def test_the_parameter_bound_is_named_in_its_refusal():
    refused("this model would learn 600,057 numbers, more than the 600,000 a model trained here may have "
            "(seqviz.limits.TRAIN_MAX_PARAMETERS): make it smaller",
            task="translation", family="transformer-seq2seq", embedding=200, hidden=92, heads=4, layers=1)


def test_a_model_config_takes_its_sizes_from_the_task_given():
    from seqviz.tasks import make_task
    from seqviz.text import Vocab

    small = make_task("memory", vocabularies={"tokens": Vocab.build([["red", "blue", "0"]])})
    spec = RunSpec(task="memory", family="gru", hidden=8, embedding=8)
    assert spec.model_config(small).vocab_size == 7 and spec.model_config().vocab_size == 22


def test_sizes_a_family_does_not_use_are_not_checked():
    assert RunSpec(task="emails", family="bow", embedding=1, hidden=100_000, heads=99, layers=99).hidden == 100_000
    assert RunSpec(**EMAILS, heads=99, layers=99).heads == 99


def test_labels_say_what_a_run_is():
    assert RunSpec(**EMAILS, steps=300).label == "lstm emails, hidden 8, 300 steps"  # an LSTM serves two tasks
    assert RunSpec(task="memory", family="gru", hidden=16, steps=7).label == "gru memory, hidden 16, 7 steps"
    assert RunSpec(family="dot", hidden=32, steps=5).label == "dot, hidden 32, 5 steps"  # translation only
    assert RunSpec(task="emails", family="bow", steps=5).label == "bow"  # no sizes, no steps
    assert RunSpec(name="mine").label == "mine"


def test_a_family_that_counts_takes_one_step():
    bow = RunSpec(task="emails", family="bow", steps=500)
    assert bow.counts and bow.steps_to_run == 1
    lstm = RunSpec(**EMAILS, steps=500)
    assert not lstm.counts and lstm.steps_to_run == 500
    assert bow.sizes == () and lstm.sizes == ("embedding", "hidden")


def test_a_spec_as_a_dict():
    spec = RunSpec(**EMAILS, steps=9, seed=4, name="n")
    assert spec.to_dict() == {"task": "emails", "family": "lstm", "embedding": 8, "hidden": 8, "heads": 4,
                              "layers": 1, "steps": 9, "lr": 3e-3, "batch_size": 64, "seed": 4, "name": "n"}


@pytest.mark.parametrize(("steps", "warmup"), [(1, 1), (19, 1), (20, 2), (999, 99), (1000, 100), (5000, 100)])
def test_the_warm_up_is_a_tenth_of_the_steps_from_1_to_100(steps, warmup):
    config = RunSpec(**EMAILS, steps=steps, lr=0.01, batch_size=7, seed=3).train_config()
    assert (config.steps, config.warmup, config.batch_size, config.seed) == (steps, warmup, 7, 3)
    assert (config.lr, config.clip, config.schedule) == (0.01, 1.0, "cosine") and type(config.lr) is float


def test_the_bag_of_words_counts_one_number_per_word_and_class_and_one_per_class():
    spec = RunSpec(task="emails", family="bow")
    fields = shared_task("emails").model_fields()
    assert spec.num_parameters() == (fields["vocab_size"] + 1) * len(fields["labels"])


def test_the_shared_task_is_built_once(monkeypatch):
    monkeypatch.setattr(runs, "_TASKS", {})  # none built yet in this process
    assert shared_task("memory") is shared_task("memory") is runs._TASKS["memory"]
    assert shared_task("memory").name == "memory"
    model, task, _ = RunSpec(task="memory", family="gru", hidden=8, embedding=8).build()
    assert task is shared_task("memory") and model.config.vocab_size == len(task.vocab)


def test_promises_hold_at_their_bounds():
    metrics = {"exact_match_le30": 0.9, "buckets": {"3-9": {"exact_match": 0.25}}}
    assert Promise("bucket:3-9").measured(metrics) == 0.25 and Promise("exact_match_le30").measured(metrics) == 0.9
    assert Promise("exact_match_le30", at_least=0.9).holds(metrics)
    assert not Promise("exact_match_le30", at_least=0.9000001).holds(metrics)
    assert Promise("bucket:3-9", at_most=0.25).holds(metrics) and not Promise("bucket:3-9", at_most=0.2).holds(metrics)
    assert Promise("bucket:3-9", at_least=0.2, at_most=0.3).holds(metrics)
    assert not Promise("bucket:3-9", at_least=0.3, at_most=0.4).holds(metrics)
    assert Promise("bucket:3-9").holds(metrics)  # no bound: always


def test_an_unknown_preset_is_refused_naming_every_preset():
    assert preset("Memory: GRU").spec.family == "gru"
    names = ", ".join(p.name for p in runs.PRESETS)
    with pytest.raises(KeyError, match=re.escape(f"no preset called 'Memory: LSTM'; presets: {names}")):
        preset("Memory: LSTM")
