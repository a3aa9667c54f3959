"""RunSpec: what a visitor may train, checked against seqviz.limits; presets build."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from seqviz import families, limits
from seqviz.runs import PRESETS, TASKS, RunSpec, preset, task_families


def test_every_family_of_every_task_builds_a_small_model():
    for task in TASKS:
        for family in task_families(task):
            spec = RunSpec(task=task, family=family, embedding=8, hidden=8, heads=2, layers=1, steps=3)
            model, built_task, config = spec.build()
            assert isinstance(model, families.get(family).model_class), (task, family, type(model))
            learned = (sum(int(np.prod(np.shape(v))) for v in model.state_dict().values())
                       if not isinstance(model, torch.nn.Module) else sum(p.numel() for p in model.parameters()))
            assert learned == spec.num_parameters() > 0, (task, family)  # the model built is the one counted
            assert built_task.name == task
            assert config.steps == 3 and config.seed == 0


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"task": "poems"}, "task must be one of"),
        ({"task": "memory", "family": "dot"}, "a memory run trains one of these families: rnn, gru, lstm"),
        ({"task": "emails", "family": "lstm", "hidden": 100_000}, "TRAIN_WIDTH_RANGE"),
        ({"task": "emails", "family": "lstm", "embedding": 2}, "TRAIN_WIDTH_RANGE"),
        ({"steps": limits.TRAIN_MAX_STEPS + 1}, "TRAIN_MAX_STEPS"),
        ({"steps": 0}, "TRAIN_MAX_STEPS"),
        ({"lr": 5.0}, "TRAIN_LR_RANGE"),
        ({"lr": float("nan")}, "lr must be a number"),
        ({"batch_size": 10_000}, "TRAIN_BATCH_RANGE"),
        ({"seed": -1}, "TRAIN_MAX_SEED"),
        ({"steps": 2.5}, "steps must be a whole number"),
        ({"steps": True}, "steps must be a whole number"),
        ({"family": "transformer-seq2seq", "heads": 3, "embedding": 64}, "must divide by heads"),
        ({"family": "transformer-seq2seq", "heads": 64}, "TRAIN_MAX_HEADS"),
        ({"family": "transformer-seq2seq", "layers": 9}, "TRAIN_MAX_LAYERS"),
        ({"family": "transformer-seq2seq", "embedding": 256, "hidden": 256, "layers": 4}, "TRAIN_MAX_PARAMETERS"),
        ({"name": "x" * 200}, "name must be text"),
    ],
)
def test_out_of_bounds_specs_are_refused_with_a_message_naming_the_bound(fields, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
        RunSpec(**fields)


def test_the_parameter_limit_at_its_edge():
    """A transformer translator of 599,255 numbers is accepted and one a unit of d_ff wider (600,057: 57 past the
    bound, not 7x) refused; and exactly at the bound: a limit set to a model's own count takes it, one less not."""
    at = RunSpec(task="translation", family="transformer-seq2seq", embedding=200, hidden=91, heads=4, layers=1)
    assert at.num_parameters() == 599_255 <= limits.TRAIN_MAX_PARAMETERS
    with pytest.raises(ValueError, match=r"would learn 600,057 numbers, more than the 600,000 .*TRAIN_MAX_PARAMETERS"):
        RunSpec(task="translation", family="transformer-seq2seq", embedding=200, hidden=92, heads=4, layers=1)


def test_the_parameter_limit_is_inclusive(monkeypatch):
    spec = RunSpec(task="emails", family="lstm", embedding=8, hidden=8)
    count = spec.num_parameters()
    monkeypatch.setattr(limits, "TRAIN_MAX_PARAMETERS", count)
    RunSpec(task="emails", family="lstm", embedding=8, hidden=8)  # exactly at the bound: accepted
    monkeypatch.setattr(limits, "TRAIN_MAX_PARAMETERS", count - 1)
    with pytest.raises(ValueError, match=f"would learn {count:,} numbers, more than the {count - 1:,}"):
        RunSpec(task="emails", family="lstm", embedding=8, hidden=8)


def test_sizes_that_do_not_apply_are_not_checked():
    spec = RunSpec(task="emails", family="bow", embedding=0, hidden=0, heads=0, layers=0)
    assert spec.num_parameters() > 0
    assert spec.label == "bow"


def test_building_leaves_the_global_generator_alone_and_is_seeded():
    before = torch.random.get_rng_state()
    spec = RunSpec(task="memory", family="gru", embedding=8, hidden=8, steps=2, seed=3)
    first, _, _ = spec.build()
    second, _, _ = spec.build()
    assert torch.equal(torch.random.get_rng_state(), before)
    for a, b in zip(first.state_dict().values(), second.state_dict().values(), strict=True):
        assert torch.equal(a, b)


def test_presets_are_named_explained_and_within_bounds():
    assert PRESETS[0].name == "Quick: attention translator"
    assert PRESETS[0].spec.family == "dot"
    names = [p.name for p in PRESETS]
    assert len(names) == len(set(names))
    for p in PRESETS:
        assert p.look_for.endswith(".") and "/" in p.look_for  # says where to look
        assert p.goal
        assert preset(p.name) is p
        assert p.spec.num_parameters() <= limits.TRAIN_MAX_PARAMETERS
        assert p.spec.train_config().steps == p.spec.steps
    experiments = {p.experiment for p in PRESETS if p.experiment}
    for experiment in experiments:
        assert sum(p.experiment == experiment for p in PRESETS) >= 2  # run side by side
    with pytest.raises(KeyError):
        preset("no such preset")
