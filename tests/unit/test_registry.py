"""The registry: shipped and visitor models behind one reference, views decided by what a model can trace."""

import pickle

import pytest
from checkpoint_files import rewrite_meta, tiny_checkpoint
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seqviz import checkpoints, registry, views, zoo
from seqviz.checkpoints import CheckpointError
from seqviz.store.models import checked  # what an upload, and a file read back from a lab, goes through


@pytest.fixture(scope="module")
def lstm_file() -> bytes:
    return tiny_checkpoint("lstm-classifier")


@pytest.fixture(scope="module")
def dot_file() -> bytes:
    return tiny_checkpoint("dot-translator")


def test_shipped_models_are_all_readable_without_problems():
    shipped, broken = registry.shipped()
    assert set(shipped) == set(zoo.NAMES) and not broken
    for name, entry in shipped.items():
        assert entry.ref.shipped and entry.ref.label == name and not registry.is_yours(name)
        assert entry.ref.fingerprint == checkpoints.fingerprint(entry.path.read_bytes())


def test_missing_and_damaged_shipped_files_are_named_with_the_fix(tmp_path):
    good = zoo.path("dot")
    (tmp_path / good.name).write_bytes(good.read_bytes())
    (tmp_path / "lstm.safetensors").write_bytes(b"not a checkpoint at all")
    shipped, broken = registry.shipped(tmp_path)
    assert list(shipped) == ["dot"]
    assert "missing" in broken["additive"].problem
    assert "damaged" in broken["lstm"].problem
    assert "python -m seqviz train lstm" in broken["lstm"].advice


def test_views_fit_shipped_models_by_their_family_traits_and_every_fitting_model_traces():
    headers = {name: zoo.metadata(name) for name in zoo.NAMES}  # no model loaded to decide

    def fitting(view):
        return {name for name, meta in headers.items() if views.fits(view, meta["family"], meta["task"])}

    assert fitting("email-classifier") == {"bow", "rnn", "gru", "lstm", "attention-lstm", "transformer"}
    assert fitting("saliency") == {"rnn", "gru", "lstm", "attention-lstm", "transformer"}
    assert fitting("recurrent") == {"rnn", "gru", "lstm", "memory-rnn", "memory-gru", "memory-lstm"}
    assert fitting("memory") == {"memory-rnn", "memory-gru", "memory-lstm"}
    assert fitting("gates") == {"lstm", "memory-lstm", "plain", "additive", "dot"}
    assert fitting("translator") == {"plain", "additive", "dot", "transformer-translator"}
    assert fitting("alignment") == {"additive", "dot", "transformer-translator"}
    assert fitting("self-attention") == {"transformer"}
    assert fitting("cross-attention") == {"transformer-translator"}
    assert fitting("attention-step") == {"additive", "dot"}
    tokens = "where is my parcel ? it never arrived .".split()  # "it": the pronoun view reads it
    for view in views.VIEWS.values():  # the traits never promise a trace the model cannot give
        if view.needs_sentence:
            for name in fitting(view.name):
                checkpoint = zoo.load(name)
                trace = view.trace(checkpoint.model, checkpoint.vocabularies, tokens)
                # what View.trace promises: a value (numpy, no tensor of the model) safe to cache and share
                assert trace is not None and trace != {} and trace != [], (view.name, name)
                pickled = pickle.dumps(trace)
                assert b"torch" not in pickled, (view.name, name, "the trace holds torch objects")


def test_names_are_cleaned_and_bounded():
    name = registry.clean_name("\u202e\u200b <b>x</b>\x00\n" + "y" * 200)
    assert "\x00" not in name and "\u202e" not in name and "\u200b" not in name and "\n" not in name
    assert len(name) <= 48 and name.endswith("…")
    assert registry.clean_name(" .-my model-. ") == "my model" and registry.clean_name("\x00\u200b") == "model"


@pytest.mark.parametrize(("change", "message"), [
    (lambda doc: doc.update(task="translation"), "cannot be trained on the translation task"),
    (lambda doc: doc.update(task="weather"), "task is 'weather'"),
    (lambda doc: doc.update(labels=list("abcd"), config={**doc["config"], "labels": list("abcd")}),
     "must answer with the labels"),
])
def test_a_model_must_fit_its_task(lstm_file, change, message):
    with pytest.raises(CheckpointError, match=message):
        checked(rewrite_meta(lstm_file, change))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_mutated_files_are_refused_or_loaded_never_crash(lstm_file, data):
    raw = bytearray(lstm_file)
    for _ in range(data.draw(st.integers(1, 4))):
        action = data.draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        at = data.draw(st.integers(0, max(0, len(raw) - 1)))
        if action == "flip" and raw:
            raw[at] ^= data.draw(st.integers(1, 255))
        elif action == "insert":
            raw[at:at] = data.draw(st.binary(min_size=1, max_size=16))
        elif action == "delete":
            del raw[at : at + data.draw(st.integers(1, 16))]
        else:
            del raw[at:]
    try:
        checked(bytes(raw))
    except CheckpointError as error:
        assert str(error)
