"""Checkpoints outlive a new config field: files kept from every format version load forever after, with the
same outputs; a field added later fills older files with the value that reproduces them; a newer version, or a
current one that lacks a field, is refused with one sentence."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import numpy as np
import pytest
from checkpoint_files import KEPT_DIR, kept_outputs, rewrite_meta

from seqviz import checkpoints
from seqviz.checkpoints import CheckpointError, added_in, load_bytes

RECORDS = sorted(KEPT_DIR.glob("v*.json"))
KEPT = {name: entry for record in RECORDS for name, entry in json.loads(record.read_text("utf-8")).items()}


def same_outputs(got: dict, kept: dict) -> None:
    assert set(got) == set(kept)
    if "out_tokens" in kept:
        assert got["out_tokens"] == kept["out_tokens"]
        np.testing.assert_allclose(np.array(got["attention"]), np.array(kept["attention"]), rtol=0, atol=1e-5)
    if "probs" in kept:
        assert got["probs"] == pytest.approx(kept["probs"], rel=1e-4, abs=1e-7)


def test_files_are_kept_from_every_version_this_seqviz_reads():
    versions = range(checkpoints.OLDEST_FORMAT_VERSION, checkpoints.FORMAT_VERSION + 1)
    assert [record.name for record in RECORDS] == [f"v{version}.json" for version in versions], (
        "a new format version keeps its files: run `python tests/checkpoint_files.py` once")


@pytest.mark.parametrize("name", sorted(KEPT))
def test_a_kept_file_is_unchanged_and_its_model_says_what_it_said(name):
    data = (KEPT_DIR / name).read_bytes()
    assert hashlib.sha256(data).hexdigest() == KEPT[name]["sha256"], f"{name} was rewritten: kept files never are"
    checkpoint = load_bytes(data)
    same_outputs(kept_outputs(checkpoint, KEPT[name]["sentence"]), KEPT[name]["outputs"])


def grow(monkeypatch, config_class: type, name: str, kind: type, declared) -> None:
    """Give ``config_class`` a new field in place (as a later seqviz would), undone after the test."""
    grown = dataclasses.make_dataclass(config_class.__name__, [(name, kind, declared)], bases=(config_class,))
    monkeypatch.setattr(config_class, "__init__", grown.__init__)
    monkeypatch.setattr(config_class, "__dataclass_fields__", grown.__dataclass_fields__)
    monkeypatch.setattr(config_class, "__annotations__", {**config_class.__annotations__, name: kind})


@pytest.fixture
def lstm_v2():
    name = "v2-lstm.safetensors"
    return (KEPT_DIR / name).read_bytes(), KEPT[name]


def test_a_field_added_later_reads_an_older_file_with_the_value_that_reproduces_it(monkeypatch, lstm_v2):
    data, kept = lstm_v2
    config_class = type(load_bytes(data).config)
    future = checkpoints.FORMAT_VERSION + 1
    monkeypatch.setattr(checkpoints.document, "FORMAT_VERSION", future)  # the document module writes and reads it
    grow(monkeypatch, config_class, "norm", bool, added_in(future, before=False, default=True))
    grow(monkeypatch, config_class, "cell_dim", int, added_in(future, before=lambda old: old["hidden_dim"], default=1))

    old = load_bytes(data)
    assert old.config.norm is False and old.config.cell_dim == old.config.hidden_dim  # as the model was written
    assert "norm" not in old.meta["config"]  # the document is what the file says
    same_outputs(kept_outputs(old, kept["sentence"]), kept["outputs"])
    assert config_class(vocab_size=8).norm is True  # a new model gets the new default

    resaved = load_bytes(checkpoints.dumps(old.model, {"vocabularies": old.vocabularies, "name": "resaved"}))
    assert resaved.meta["format_version"] == future and resaved.meta["config"]["norm"] is False

    current_but_lacking = rewrite_meta(data, lambda document: document.update(format_version=future))
    with pytest.raises(CheckpointError, match=r"missing fields \['cell_dim', 'norm'\]"):
        load_bytes(current_but_lacking)


def test_a_newer_format_version_is_refused_with_a_plain_sentence(lstm_v2):
    data, _ = lstm_v2
    newer = rewrite_meta(data, lambda document: document.update(format_version=checkpoints.FORMAT_VERSION + 1))
    with pytest.raises(CheckpointError, match=r"written by a newer seqviz .*: update seqviz to open it"):
        load_bytes(newer)


def test_every_config_field_added_later_says_its_version_and_old_value():
    from seqviz.models import FAMILIES

    for family in FAMILIES.values():
        for field in dataclasses.fields(family.config_class):
            if checkpoints.ADDED_IN in field.metadata:
                version = field.metadata[checkpoints.ADDED_IN]
                assert checkpoints.OLDEST_FORMAT_VERSION < version <= checkpoints.FORMAT_VERSION, field.name
                assert checkpoints.BEFORE in field.metadata, field.name


def test_a_field_added_without_its_old_value_is_what_the_kept_files_catch(monkeypatch, lstm_v2):
    data, _ = lstm_v2
    grow(monkeypatch, type(load_bytes(data).config), "norm", bool, dataclasses.field(default=True))
    with pytest.raises(CheckpointError, match=r"missing fields \['norm'\]"):
        load_bytes(data)
