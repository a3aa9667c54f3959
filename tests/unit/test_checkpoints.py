"""The checkpoint format: round trips, same bytes for same weights, and a clear CheckpointError for bad files."""

from __future__ import annotations

import json
import os
import pickle
import struct

import numpy as np
import pytest
import torch

from seqviz import checkpoints
from seqviz.checkpoints import CheckpointError, load, load_bytes, save, weights_bytes
from seqviz.models import build
from seqviz.text import Vocab

WORDS = [["the", "parcel", "never", "arrived", "."], ["my", "invoice", "is", "wrong", "?"]]
LABELS = ("lost_parcel", "missing_item", "damaged_item", "billing")
SIZES = {
    "bow": {},
    "rnn": {"emb_dim": 6, "hidden_dim": 8},
    "gru": {"emb_dim": 6, "hidden_dim": 8},
    "lstm": {"emb_dim": 6, "hidden_dim": 8},
    "transformer": {"d_model": 8, "n_heads": 2, "d_ff": 16},
}


@pytest.fixture(scope="module")
def vocab() -> Vocab:
    return Vocab.build(WORDS)


def make(family: str, vocab: Vocab, **overrides):
    torch.manual_seed(0)
    model = build(family, {"vocab_size": len(vocab), "labels": LABELS, **SIZES[family], **overrides})
    if family == "bow":
        model.fit([vocab.encode(s) for s in WORDS], [0, 3])
    return model.eval()


def meta_for(vocab: Vocab) -> dict:
    return {"task": "emails", "seed": 0, "steps": 10, "train_seconds": 1.5, "metrics": {"test_accuracy": 0.5},
            "vocabularies": {"tokens": vocab}, "name": "tiny"}


def probs(model, vocab):
    ids = torch.tensor([vocab.encode(WORDS[0])])
    return model.predict_proba(ids, torch.tensor([ids.shape[1]]))


@pytest.mark.parametrize("family", list(SIZES))
def test_round_trip(family, vocab, tmp_path):
    model = make(family, vocab)
    weights_path, json_path = save(tmp_path / "tiny", model, meta_for(vocab))
    assert weights_path.name == "tiny.safetensors" and json_path.name == "tiny.json"
    loaded = load(tmp_path / "tiny")
    assert loaded.family == family and loaded.task == "emails" and loaded.labels == LABELS
    assert loaded.vocabularies["tokens"] == vocab
    assert loaded.metrics == {"test_accuracy": 0.5}
    np.testing.assert_array_equal(probs(loaded.model, vocab), probs(model, vocab))
    document = json.loads(json_path.read_text())
    for key in ("format", "format_version", "family", "config", "params", "vocabularies", "labels", "task",
                "seed", "steps", "train_seconds", "metrics"):
        assert key in document
    if family != "bow":
        assert not loaded.model.training
        assert not any(p.requires_grad for p in loaded.model.parameters())
    again = load_bytes(*checkpoints.dumps(model, meta_for(vocab)))  # as a download, then an upload
    np.testing.assert_array_equal(probs(again.model, vocab), probs(model, vocab))


def test_same_weights_same_bytes(vocab, tmp_path):
    save(tmp_path / "a", make("lstm", vocab), meta_for(vocab))
    save(tmp_path / "b", make("lstm", vocab), meta_for(vocab))
    assert (tmp_path / "a.safetensors").read_bytes() == (tmp_path / "b.safetensors").read_bytes()


def test_loading_leaves_the_global_random_generator_alone(vocab, tmp_path):
    save(tmp_path / "m", make("gru", vocab), meta_for(vocab))
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    load(tmp_path / "m")
    assert torch.equal(torch.rand(3), expected)


@pytest.fixture
def saved(vocab, tmp_path):
    save(tmp_path / "m", make("lstm", vocab), meta_for(vocab))
    return tmp_path / "m"


def test_a_pickle_is_refused_and_never_unpickled(saved, tmp_path):
    marker = tmp_path / "unpickled"

    class Trap:
        def __reduce__(self):
            return (os.makedirs, (str(marker),))

    for payload in (pickle.dumps(Trap()), pickle.dumps({"embedding.weight": np.zeros(3)})):
        (saved.parent / "m.safetensors").write_bytes(payload)
        with pytest.raises(CheckpointError, match="not a safetensors file"):
            load(saved)
    torch.save(make("lstm", Vocab.build(WORDS)).state_dict(), saved.parent / "m.safetensors")
    with pytest.raises(CheckpointError, match="not a safetensors file"):
        load(saved)
    assert not marker.exists()


def test_a_truncated_file_is_refused(saved):
    path = saved.parent / "m.safetensors"
    data = path.read_bytes()
    for cut in (len(data) - 10, len(data) // 2, 20, 5):
        path.write_bytes(data[:cut])
        with pytest.raises(CheckpointError):
            load(saved)


def test_random_bytes_are_refused(saved):
    rng = np.random.default_rng(0)
    for size in (0, 7, 100, 5000):
        (saved.parent / "m.safetensors").write_bytes(rng.bytes(size))
        with pytest.raises(CheckpointError, match="not a safetensors file"):
            load(saved)
    (saved.parent / "m.json").write_bytes(rng.bytes(300))
    with pytest.raises(CheckpointError, match="JSON"):
        load(saved)


def test_weights_of_another_model_are_refused(vocab, tmp_path):
    save(tmp_path / "small", make("lstm", vocab), meta_for(vocab))
    save(tmp_path / "big", make("lstm", vocab, hidden_dim=16), meta_for(vocab))
    save(tmp_path / "gru", make("gru", vocab), meta_for(vocab))
    json_small = (tmp_path / "small.json").read_bytes()
    with pytest.raises(CheckpointError, match=r"do not belong to this model: .* needs F32 \(4, 8\)"):
        load_bytes((tmp_path / "big.safetensors").read_bytes(), json_small)
    with pytest.raises(CheckpointError, match="do not belong to this model"):
        load_bytes((tmp_path / "gru.safetensors").read_bytes(), json_small)
    save(tmp_path / "tr", make("transformer", vocab), meta_for(vocab))
    with pytest.raises(CheckpointError, match="missing"):
        load_bytes((tmp_path / "tr.safetensors").read_bytes(), json_small)


def rewrite_json(saved, change) -> None:
    path = saved.with_name(saved.name + ".json")
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(family="lstm2000"), "family seqviz does not know"),
        (lambda d: d.update(format="something-else"), "not a seqviz checkpoint"),
        (lambda d: d.update(format_version=99), "format version 99"),
        (lambda d: d.pop("config"), "no 'config' field"),
        (lambda d: d["config"].pop("hidden_dim"), "missing fields"),
        (lambda d: d["config"].update(layers=3), "unknown fields"),
        (lambda d: d["config"].update(hidden_dim="eight"), "wrong type"),
        (lambda d: d["config"].update(hidden_dim=8.0), "wrong type"),
        (lambda d: d["config"].update(dropout=2.0), "not valid"),
        (lambda d: d["config"].update(hidden_dim=10**8), "more than seqviz loads"),
        (lambda d: d["vocabularies"]["tokens"].pop(), "expects"),
        (lambda d: d["vocabularies"].update(tokens=["a", "b"]), "vocabulary 'tokens' is not valid"),
        (lambda d: d.update(vocabularies={}), "no 'tokens' vocabulary"),
        (lambda d: d.update(labels=["x", "y", "z", "w"]), "labels differ"),
        (lambda d: d.update(seed="zero"), "wrong type"),
    ],
)
def test_a_bad_json_is_refused_with_a_reason(saved, change, message):
    rewrite_json(saved, change)
    with pytest.raises(CheckpointError, match=message):
        load(saved)


def test_json_that_is_not_an_object_or_not_json(saved):
    for text in ("[1, 2]", "{not json", '"text"'):
        (saved.parent / "m.json").write_text(text)
        with pytest.raises(CheckpointError):
            load(saved)


def test_missing_file_and_oversized_file(saved, monkeypatch):
    (saved.parent / "m.json").unlink()
    with pytest.raises(CheckpointError, match=r"m\.json is missing"):
        load(saved)
    monkeypatch.setattr(checkpoints, "MAX_WEIGHTS_BYTES", 10)
    with pytest.raises(CheckpointError, match="larger than"):
        load_bytes(b"x" * 11, b"{}")


def test_nan_weights_are_refused(vocab, tmp_path):
    model = make("rnn", vocab)
    with torch.no_grad():
        model.head.weight[0, 0] = float("nan")
    save(tmp_path / "nan", model, meta_for(vocab))
    with pytest.raises(CheckpointError, match="NaN"):
        load(tmp_path / "nan")


def test_a_header_lying_about_offsets_is_refused(saved):
    path = saved.parent / "m.safetensors"
    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + size])
    name = next(iter(header.keys() - {"__metadata__"}))
    header[name]["data_offsets"][1] += 4
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data[8 + size :])
    with pytest.raises(CheckpointError):
        load(saved)


def test_save_refuses_meta_that_overrides_the_model(vocab, tmp_path):
    with pytest.raises(ValueError, match="taken from the model"):
        save(tmp_path / "x", make("rnn", vocab), {**meta_for(vocab), "family": "gru"})
    assert weights_bytes(make("rnn", vocab)) == weights_bytes(make("rnn", vocab))


TRANSLATORS = {
    "plain": {"kind": "plain", "emb_dim": 4, "hidden": 6, "attn_dim": 4},
    "additive": {"kind": "additive", "emb_dim": 4, "hidden": 6, "attn_dim": 4},
    "dot": {"kind": "dot", "emb_dim": 4, "hidden": 6, "attn_dim": 4},
    "transformer-seq2seq": {"d_model": 8, "n_heads": 2, "d_ff": 8, "enc_layers": 1, "dec_layers": 1},
}


@pytest.mark.parametrize("family", list(TRANSLATORS))
def test_translator_round_trip(family, vocab, tmp_path):
    french = Vocab.build([["le", "colis", "est", "arrivé", "."]])
    torch.manual_seed(0)
    sizes = {"src_vocab_size": len(vocab), "tgt_vocab_size": len(french)}
    model = build(family, {**TRANSLATORS[family], **sizes}).eval()
    save(tmp_path / "t", model, {"task": "translation", "vocabularies": {"src": vocab, "tgt": french}})
    loaded = load(tmp_path / "t")
    assert loaded.family == family and loaded.labels is None
    src = torch.tensor([vocab.encode(WORDS[0])])
    lengths = torch.tensor([src.shape[1]])
    assert loaded.model.translate(src, lengths, 6) == model.translate(src, lengths, 6)
    if family != "transformer-seq2seq":
        other = "dot" if family != "dot" else "plain"
        rewrite_json(tmp_path / "t", lambda d: d["config"].update(kind=other))
        with pytest.raises(CheckpointError, match="kind"):
            load(tmp_path / "t")
