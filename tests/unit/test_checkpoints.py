"""The checkpoint format: one file, round trips, same bytes for same weights, a clear CheckpointError for bad files."""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import struct
import subprocess
import sys

import checkpoints_support
import numpy as np
import pytest
import torch
from checkpoints_support import LABELS, SIZES, VOCAB, WORDS, Raw, join, make, meta_for, probs, split, with_document
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seqviz import checkpoints
from seqviz.checkpoints import CheckpointError, dumps, fingerprint, load, load_bytes, read_meta, save
from seqviz.models import build
from seqviz.text import Vocab
from seqviz.tracing import trace

lstm_bytes = checkpoints_support.lstm_bytes  # its fixture: a valid LSTM checkpoint's bytes, made once per module


# --- Round trips ------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", list(SIZES))
def test_round_trip(family, tmp_path):
    model = make(family)
    path = save(tmp_path / "tiny", model, meta_for())
    assert path.name == "tiny.safetensors" and sorted(p.name for p in tmp_path.iterdir()) == ["tiny.safetensors"]
    loaded = load(path)
    assert loaded.family == family and loaded.task == "emails" and loaded.labels == LABELS
    assert loaded.vocabularies["tokens"] == VOCAB and loaded.input_vocab == VOCAB and not loaded.translates
    assert loaded.metrics == {"test_accuracy": 0.5}
    assert loaded.fingerprint == fingerprint(path.read_bytes())
    np.testing.assert_array_equal(probs(loaded.model), probs(model))
    document = read_meta(path)
    assert document == read_meta(path.read_bytes()) == loaded.meta
    for key in ("format", "format_version", "family", "config", "params", "vocabularies", "labels", "task",
                "seed", "steps", "train_seconds", "metrics"):
        assert key in document
    if family != "bow":
        assert not loaded.model.training
        assert not any(p.requires_grad for p in loaded.model.parameters())
    again = load_bytes(dumps(model, meta_for()))  # as a download, then an upload
    np.testing.assert_array_equal(probs(again.model), probs(model))
    assert trace(loaded, "email-classifier", WORDS[0]).probs.shape == (4,)


def test_the_file_is_plain_safetensors_with_the_document_in_its_metadata(lstm_bytes):
    from safetensors.numpy import load as load_arrays

    header, _ = split(lstm_bytes)
    assert set(header["__metadata__"]) == {"seqviz"}
    assert json.loads(header["__metadata__"]["seqviz"])["family"] == "lstm"
    assert "rnn.weight_hh_l0" in load_arrays(lstm_bytes)


def test_same_weights_and_meta_same_bytes(tmp_path):
    a, b = save(tmp_path / "a", make("lstm"), meta_for()), save(tmp_path / "b.safetensors", make("lstm"), meta_for())
    assert a.read_bytes() == b.read_bytes() == dumps(make("lstm"), meta_for())
    assert fingerprint(a.read_bytes()) == fingerprint(b.read_bytes()) and len(fingerprint(b"")) == 64
    assert fingerprint(dumps(make("lstm"), {**meta_for(), "seed": 1})) != fingerprint(a.read_bytes())


def test_loading_leaves_the_global_random_generator_alone(tmp_path):
    path = save(tmp_path / "m", make("gru"), meta_for())
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    load(path)
    assert torch.equal(torch.rand(3), expected)


def test_read_meta_needs_no_torch(tmp_path):
    path = save(tmp_path / "m", make("rnn"), meta_for())
    code = (f"import sys; from seqviz.checkpoints import read_meta; m = read_meta({str(path)!r}); "
            "assert 'torch' not in sys.modules, 'torch was imported'; "
            "assert 'seqviz.views' not in sys.modules, 'the format imported the views'; print(m['family'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "rnn"


def test_save_refuses_meta_that_overrides_the_model_or_lacks_vocabularies(tmp_path):
    with pytest.raises(ValueError, match="taken from the model"):
        save(tmp_path / "x", make("rnn"), {**meta_for(), "family": "gru"})
    with pytest.raises(ValueError, match="vocabularies"):
        dumps(make("rnn"), {"task": "emails"})
    assert not list(tmp_path.iterdir())


TRANSLATORS = {
    "plain": {"kind": "plain", "emb_dim": 4, "hidden": 6, "attn_dim": 4},
    "additive": {"kind": "additive", "emb_dim": 4, "hidden": 6, "attn_dim": 4},
    "dot": {"kind": "dot", "emb_dim": 4, "hidden": 6, "attn_dim": 4},
    "transformer-seq2seq": {"d_model": 8, "n_heads": 2, "d_ff": 8, "enc_layers": 1, "dec_layers": 1},
}
FRENCH = Vocab.build([["le", "colis", "est", "arrivé", "."]])


def translator(family: str):
    torch.manual_seed(0)
    sizes = {"src_vocab_size": len(VOCAB), "tgt_vocab_size": len(FRENCH)}
    return build(family, {**TRANSLATORS[family], **sizes}).eval()


@pytest.mark.parametrize("family", list(TRANSLATORS))
def test_translator_round_trip(family):
    model = translator(family)
    data = dumps(model, {"task": "translation", "vocabularies": {"src": VOCAB, "tgt": FRENCH}})
    loaded = load_bytes(data)
    assert loaded.family == family and loaded.labels is None and loaded.translates and loaded.input_vocab == VOCAB
    src = torch.tensor([VOCAB.encode(WORDS[0])])
    lengths = torch.tensor([src.shape[1]])
    assert loaded.model.translate(src, lengths, 6) == model.translate(src, lengths, 6)
    expected = FRENCH.decode(model.translate(src, lengths, 6)[0])
    assert trace(loaded, "translator", WORDS[0], max_len=6).out_tokens == expected
    if family != "transformer-seq2seq":
        assert trace(loaded, "gates", WORDS[0]).hidden.shape == (len(WORDS[0]), 6)
        other = "dot" if family != "dot" else "plain"
        relabelled = with_document(data, lambda d: d.update(family=other))  # the config still says its kind
        with pytest.raises(CheckpointError, match="family"):
            load_bytes(relabelled)


# --- Hostile files: CheckpointError, and nothing else -------------------------------------------------


def test_a_pickle_is_refused_and_never_unpickled(tmp_path):
    marker = tmp_path / "unpickled"

    class Trap:
        def __reduce__(self):
            return (os.makedirs, (str(marker),))

    path = tmp_path / "m.safetensors"
    for payload in (pickle.dumps(Trap()), pickle.dumps({"embedding.weight": np.zeros(3)})):
        path.write_bytes(payload)
        with pytest.raises(CheckpointError, match="not a safetensors file"):
            load(path)
        with pytest.raises(CheckpointError, match="not a safetensors file"):
            read_meta(path)
    torch.save(make("lstm").state_dict(), path)
    with pytest.raises(CheckpointError, match="not a safetensors file"):
        load(path)
    assert not marker.exists()


def test_truncated_files_are_refused(lstm_bytes):
    for cut in (len(lstm_bytes) - 10, len(lstm_bytes) // 2, 20, 9, 5, 0):
        with pytest.raises(CheckpointError):
            load_bytes(lstm_bytes[:cut])


def test_random_bytes_and_empty_files_are_refused(tmp_path):
    rng = np.random.default_rng(0)
    for size in (0, 7, 100, 5000):
        with pytest.raises(CheckpointError, match="not a safetensors file"):
            load_bytes(rng.bytes(size))
    (tmp_path / "empty.safetensors").write_bytes(b"")
    with pytest.raises(CheckpointError):
        load(tmp_path / "empty.safetensors")
    with pytest.raises(CheckpointError, match="missing"):
        load(tmp_path / "nothing.safetensors")


def test_a_header_claiming_a_huge_tensor_is_refused_unread(lstm_bytes):
    header, body = split(lstm_bytes)
    name = next(k for k in header if k != "__metadata__")
    header[name]["shape"] = [100_000, 250_000]  # 100 GB of float32
    header[name]["data_offsets"] = [0, 100_000 * 250_000 * 4]
    with pytest.raises(CheckpointError, match="do not belong to this model"):
        load_bytes(join(header, body))
    huge_size = struct.pack("<Q", 2**62) + lstm_bytes[8:]
    with pytest.raises(CheckpointError, match="not a safetensors file"):
        load_bytes(huge_size)
    with pytest.raises(CheckpointError, match="not a safetensors file"):
        load_bytes(struct.pack("<Q", 9 * 2**20) + b"{" + b" " * (9 * 2**20))  # a 9 MB header


def test_an_oversized_file_is_refused(monkeypatch, tmp_path):
    monkeypatch.setattr(checkpoints.file, "MAX_FILE_BYTES", 10)
    with pytest.raises(CheckpointError, match="larger than"):
        load_bytes(b"x" * 11)
    (tmp_path / "big.safetensors").write_bytes(b"x" * 11)
    with pytest.raises(CheckpointError, match="larger than"):
        load(tmp_path / "big.safetensors")


def test_a_header_lying_about_offsets_is_refused(lstm_bytes):
    header, body = split(lstm_bytes)
    name = next(k for k in header if k != "__metadata__")
    header[name]["data_offsets"][1] += 4
    with pytest.raises(CheckpointError):
        load_bytes(join(header, body))


def test_safetensors_without_a_seqviz_document_is_refused():
    from safetensors.numpy import save as save_arrays

    for metadata in (None, {"other": "x"}):
        with pytest.raises(CheckpointError, match="not a seqviz checkpoint"):
            load_bytes(save_arrays({"w": np.zeros(3, np.float32)}, metadata=metadata))


def test_weights_of_another_model_are_refused(lstm_bytes):
    """A valid file of another family or size, relabelled with this file's document."""
    document = split(lstm_bytes)[0]["__metadata__"]["seqviz"]
    for other in (make("lstm", hidden_dim=16), make("gru"), make("transformer")):
        header, body = split(dumps(other, meta_for()))
        header["__metadata__"]["seqviz"] = document
        with pytest.raises(CheckpointError, match="do not belong to this model"):
            load_bytes(join(header, body))


def test_nan_weights_are_refused():
    model = make("rnn")
    with torch.no_grad():
        model.head.weight[0, 0] = float("nan")
    with pytest.raises(CheckpointError, match="NaN"):
        load_bytes(dumps(model, meta_for()))


def deep(levels: int):
    value: object = 0
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(family="lstm2000"), "family seqviz does not know"),
        (lambda d: d.update(family="gru"), "do not belong to this model"),
        (lambda d: d.update(format="something-else"), "not a seqviz one"),
        (lambda d: d.update(format_version=99), "format version 99"),
        (lambda d: d.update(format_version=10**30), "format_version"),
        (lambda d: d.update(format_version="2"), "format_version"),
        (lambda d: d.pop("config"), "no 'config' field"),
        (lambda d: d["config"].pop("hidden_dim"), "missing fields"),
        (lambda d: d["config"].update(layers=3), "unknown fields"),
        (lambda d: d["config"].update(hidden_dim="eight"), "wrong type"),
        (lambda d: d["config"].update(hidden_dim=8.0), "wrong type"),
        (lambda d: d["config"].update(hidden_dim=True), "wrong type"),
        (lambda d: d["config"].update(hidden_dim=10**30), "wrong type"),
        (lambda d: d["config"].update(dropout=2.0), "not valid"),
        (lambda d: d["config"].update(hidden_dim=10**8), "hidden_dim must be"),
        (lambda d: d["config"].update(hidden_dim=2000, emb_dim=2000), "more than seqviz loads"),
        (lambda d: d["config"].update(vocab_size=10**6), "vocab_size must be"),
        (lambda d: d["config"].update(labels=["a"] * 1000), "labels must be"),
        (lambda d: d["vocabularies"]["tokens"].pop(), "expects"),
        (lambda d: d["vocabularies"]["tokens"].append("parcel"), "repeats"),
        (lambda d: d["vocabularies"]["tokens"].__setitem__(5, 7), "list of strings"),
        (lambda d: d["vocabularies"]["tokens"].__setitem__(5, ""), "non-empty"),
        (lambda d: d["vocabularies"].update(tokens={"a": 1}), "not valid"),
        (lambda d: d["vocabularies"].update(tokens=["a", "b"]), "vocabulary 'tokens' is not valid"),
        (lambda d: d.update(vocabularies={}), "no 'tokens' vocabulary"),
        (lambda d: d.update(vocabularies=["tokens"]), "wrong type"),
        (lambda d: d.update(labels=["x", "y", "z", "w"]), "labels differ"),
        (lambda d: d.update(seed="zero"), "wrong type"),
        (lambda d: d.update(metrics=[1, 2]), "wrong type"),
        (lambda d: d.update(name="n" * 10_000), "longer than"),
        (lambda d: d.update(metrics={"deep": deep(40)}), "nested"),
        (lambda d: Raw("[" * 100_000 + "]" * 100_000), "not valid JSON|not a seqviz one"),
        (lambda d: Raw('{"format": "seqviz-checkpoint", "format": "x"}'), "repeats a key"),
        (lambda d: Raw("not json at all"), "not valid JSON"),
        (lambda d: Raw("[1, 2]"), "not a seqviz one"),
    ],
)
def test_a_bad_document_is_refused_with_a_reason(lstm_bytes, change, message):
    with pytest.raises(CheckpointError, match=message):
        load_bytes(with_document(lstm_bytes, change))


def test_read_meta_checks_the_document_too(lstm_bytes, tmp_path):
    bad = with_document(lstm_bytes, lambda d: d.update(format_version=1))
    with pytest.raises(CheckpointError, match="format version 1"):
        read_meta(bad)
    (tmp_path / "bad.safetensors").write_bytes(bad)
    with pytest.raises(CheckpointError, match="format version 1"):
        read_meta(tmp_path / "bad.safetensors")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_files_load_or_raise_checkpoint_error(lstm_bytes, data):
    """Flip, insert, delete or truncate bytes anywhere: a checkpoint loads, or CheckpointError; nothing else."""
    blob = bytearray(lstm_bytes)
    for _ in range(data.draw(st.integers(1, 4), label="mutations")):
        where = data.draw(st.integers(0, max(0, len(blob) - 1)), label="where")
        action = data.draw(st.sampled_from(["flip", "insert", "delete", "truncate", "header"]), label="action")
        if action == "flip" and blob:
            blob[where] ^= 1 << data.draw(st.integers(0, 7), label="bit")
        elif action == "insert":
            blob[where:where] = data.draw(st.binary(min_size=1, max_size=8), label="inserted")
        elif action == "delete":
            del blob[where : where + data.draw(st.integers(1, 8), label="deleted")]
        elif action == "truncate":
            del blob[where:]
        elif blob:  # a flip inside the header, where most of the structure is
            spot = data.draw(st.integers(0, min(len(blob) - 1, 8 + 4000)), label="header spot")
            blob[spot] ^= 1 << data.draw(st.integers(0, 7), label="header bit")
    try:
        checkpoint = load_bytes(bytes(blob))
    except CheckpointError:
        return
    assert checkpoint.family == "lstm"


def test_a_scalar_parameter_keeps_its_shape_in_the_file():
    """A learned scalar (a 0-d parameter, e.g. an attention temperature) is written as shape (), not (1,): loading
    it back into the model that made it would fail on the shape."""
    import torch
    from safetensors.numpy import load, save

    from seqviz.checkpoints import model_arrays

    model = torch.nn.Module()
    model.temperature = torch.nn.Parameter(torch.tensor(2.5))
    model.weight = torch.nn.Parameter(torch.ones(2, 3).t())  # (a transposed view: not contiguous)
    arrays = model_arrays(model)
    assert arrays["temperature"].shape == () and arrays["weight"].shape == (3, 2)
    back = load(save(arrays))
    assert back["temperature"].shape == () and float(back["temperature"]) == 2.5
    fresh = torch.nn.Module()
    fresh.temperature = torch.nn.Parameter(torch.tensor(0.0))
    fresh.weight = torch.nn.Parameter(torch.zeros(3, 2))
    fresh.load_state_dict({name: torch.from_numpy(value) for name, value in back.items()})
    assert fresh.temperature.item() == 2.5


@dataclasses.dataclass(frozen=True)
class ScaledConfig:
    vocab_size: int = 6
    labels: tuple[str, ...] = ("a", "b")


class Scaled(torch.nn.Module):
    """A registered family's model with a learned scalar (a 0-d parameter), as an attention temperature is."""

    family = "scaled-test"

    def __init__(self, config: ScaledConfig):
        super().__init__()
        self.config = config
        self.temperature = torch.nn.Parameter(torch.tensor(1.0))
        self.head = torch.nn.Linear(config.vocab_size, len(config.labels))


def test_a_scalar_parameter_round_trips_through_a_checkpoint(monkeypatch):
    """dumps, the file's tensor table, the meta-device skeleton the table is checked against, and the model
    loaded back all keep a 0-d parameter's shape ()."""
    from safetensors.numpy import load as load_arrays

    from seqviz.families import FAMILIES, Family

    here = f"{__name__}:"
    monkeypatch.setitem(FAMILIES, Scaled.family, Family(
        name=Scaled.family, label="scaled", colour="#000000", task_kind="classification", trains_on=(),
        config_path=here + "ScaledConfig", model_path=here + "Scaled"))
    torch.manual_seed(0)
    model = Scaled(ScaledConfig()).eval()
    with torch.no_grad():
        model.temperature.fill_(2.5)
    data = dumps(model, {"vocabularies": {"tokens": Vocab.build([["x", "y"]])}})
    assert split(data)[0]["temperature"]["shape"] == [] and load_arrays(data)["temperature"].shape == ()
    loaded = load_bytes(data)
    assert loaded.family == Scaled.family and loaded.model.temperature.shape == ()
    assert loaded.model.temperature.item() == 2.5
    assert torch.equal(loaded.model.head.weight, model.head.weight)
    assert load_bytes(dumps(loaded.model, {"vocabularies": loaded.vocabularies})).model.temperature.item() == 2.5
