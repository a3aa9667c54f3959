"""The one driver: a zoo entry's recipe and a visitor's spec build, train, measure and save through the same
steps, with the same weights as the spec's own build and the one loop; its hooks see the phases in order."""

from __future__ import annotations

import dataclasses

import torch

from seqviz import checkpoints, driver, zoo
from seqviz.runs import RunSpec
from seqviz.train import train

SPEC = RunSpec(task="emails", family="lstm", embedding=4, hidden=4, steps=6, batch_size=8, seed=2, name="tiny")


def same_weights(a, b) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True))


def test_a_spec_trains_as_its_own_build_and_the_one_loop_would(tmp_path):
    phases: list[str] = []
    trained = driver.run(driver.from_spec(SPEC, "trained here"), tmp_path / "tiny", phase=phases.append)
    assert phases == ["data", "building", "training", "saving"]
    model, task, config = SPEC.build()
    train(model, task, config)
    assert same_weights(trained.model, model)
    assert trained.path == tmp_path / "tiny.safetensors" and trained.path.read_bytes() == trained.checkpoint
    document = trained.document
    assert document["name"] == "tiny" and document["description"] == "trained here: tiny"
    assert document["spec"] == dataclasses.asdict(SPEC) and document["train"] == dict(vars(config))
    assert document["metrics"] == trained.metrics and "task_options" not in document
    assert same_weights(checkpoints.load_bytes(trained.checkpoint).model, model)


def test_a_zoo_recipe_measures_its_learning_curve_and_finished_can_end_a_run_unsaved():
    recipe = dataclasses.replace(zoo.recipe("memory-gru"), config={"emb_dim": 4, "hidden_dim": 4},
                                 train={**zoo.entry("memory-gru").train, "steps": 4, "warmup": 1}, curve_steps=(2,))
    steps: list[int] = []
    trained = driver.run(recipe, progress=lambda p: steps.append(p.step))
    assert steps == [1, 2, 3, 4]
    assert [point["step"] for point in trained.metrics["learning_curve"]] == [2]
    assert trained.document["name"] == "memory-gru" and trained.document["seed"] == recipe.seed

    ended = driver.run(recipe, stop=lambda: True, finished=lambda result: not result.stopped)
    assert ended.result.steps == 0 and not ended.saved and ended.metrics is None
    assert same_weights(ended.model, recipe.build())  # untrained: the seeded initial weights
