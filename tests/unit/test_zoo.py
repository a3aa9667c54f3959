"""The shipped zoo: every checkpoint loads, its JSON has the fields pages read, and it reached its target."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from seqviz import zoo
from seqviz.__main__ import main

SHIPPED = zoo.available()
CLASSIFIERS_AND_MEMORY = ("bow", "rnn", "gru", "lstm", "transformer", "memory-rnn", "memory-gru", "memory-lstm")


def test_every_entry_names_a_known_family_and_task():
    from seqviz.models import FAMILIES
    from seqviz.tasks import TASKS

    assert len(set(zoo.NAMES)) == len(zoo.NAMES) == 12
    for name in zoo.NAMES:
        spec = zoo.entry(name)
        assert spec.family in FAMILIES, name
        assert spec.task in TASKS, name
    with pytest.raises(KeyError, match="no model called"):
        zoo.entry("gpt-5")


def test_the_classifiers_and_memory_models_are_shipped():
    missing = [name for name in CLASSIFIERS_AND_MEMORY if name not in SHIPPED]
    assert not missing, f"run `python -m seqviz train {' '.join(missing)}`"


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_checkpoint_loads_with_its_metadata(name):
    meta = zoo.metadata(name)
    spec = zoo.entry(name)
    for key in ("family", "config", "params", "vocabularies", "task", "seed", "steps", "train_seconds", "metrics"):
        assert key in meta, key
    assert meta["family"] == spec.family and meta["task"] == spec.task and meta["name"] == name
    checkpoint = zoo.load(name)
    assert checkpoint.family == spec.family
    if spec.family != "bow":
        assert not checkpoint.model.training
        assert sum(p.numel() for p in checkpoint.model.parameters()) == meta["params"]


def test_metadata_is_read_without_torch():
    code = (
        "import sys; from seqviz import zoo; meta = zoo.all_metadata(); "
        "assert 'torch' not in sys.modules, 'torch was imported'; print(len(meta))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(out.stdout) == len(SHIPPED)


def test_evaluate_json_lists_every_shipped_model(capsys):
    assert main(["evaluate", "--json", "--stored"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [row["name"] for row in listed] == SHIPPED
    for row in listed:
        for key in ("name", "family", "task", "params", "train_seconds", "metrics"):
            assert key in row


@pytest.mark.skipif("bow" not in SHIPPED, reason="bow is not trained")
def test_evaluate_measures_again_what_training_measured(capsys):
    assert main(["evaluate", "--json", "bow"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    stored = zoo.metadata("bow")["metrics"]
    assert row["metrics"]["test_accuracy"] == pytest.approx(stored["test_accuracy"])
    assert row["metrics"]["twins_accuracy"] == pytest.approx(stored["twins_accuracy"])


def metrics(name: str) -> dict:
    if name not in SHIPPED:
        pytest.skip(f"{name} is not trained")
    return zoo.metadata(name)["metrics"]


@pytest.mark.parametrize("name", ("lstm", "gru", "transformer"))
def test_order_aware_classifiers_reach_their_target(name):
    m = metrics(name)
    assert m["test_accuracy"] >= 0.97 and m["twins_accuracy"] >= 0.95


def test_bag_of_words_fails_on_twins_because_it_gives_both_the_same_answer():
    m = metrics("bow")
    assert m["twins_accuracy"] <= 0.5
    assert m["twins_same_prediction"] == 1.0  # word-identical twins -> identical probabilities


@pytest.mark.parametrize("name", ("memory-lstm", "memory-gru"))
def test_gated_memory_models_remember_twenty_steps_back(name):
    assert metrics(name)["accuracy_by_distance"]["20"] >= 0.95


@pytest.mark.parametrize("name", ("additive", "dot", "transformer-translator"))
def test_attention_translators_reach_their_target(name):
    m = metrics(name)
    assert m["exact_match_le30"] >= 0.95
    assert m["chapter_pairs_exact"] == 6


def test_plain_translator_falls_off_with_length():
    plain, additive = metrics("plain"), metrics("additive")
    assert plain["exact_match_ge25"] <= additive["exact_match_ge25"] - 0.40


def test_zoo_is_small_and_documented():
    total = sum(p.stat().st_size for name in SHIPPED for p in zoo.paths(name))
    assert total < 20 * 2**20
    readme = (zoo.ASSETS_DIR / "README.md").read_text()
    for name in SHIPPED:
        assert f"| {name} |" in readme
