"""tests/unit/test_checkpoints.py's helpers: tiny models of every family with their meta, and valid files rewritten
into hostile ones (a file's header and its seqviz document changed in place)."""

from __future__ import annotations

import json
import struct

import pytest
import torch

from seqviz.checkpoints import dumps
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
VOCAB = Vocab.build(WORDS)


def make(family: str, vocab: Vocab = VOCAB, **overrides):
    torch.manual_seed(0)
    model = build(family, {"vocab_size": len(vocab), "labels": LABELS, **SIZES[family], **overrides})
    if family == "bow":
        model.fit([vocab.encode(s) for s in WORDS], [0, 3])
    return model.eval()


def meta_for(vocab: Vocab = VOCAB) -> dict:
    return {"task": "emails", "seed": 0, "steps": 10, "train_seconds": 1.5, "metrics": {"test_accuracy": 0.5},
            "vocabularies": {"tokens": vocab}, "name": "tiny"}


def probs(model, vocab=VOCAB):
    ids = torch.tensor([vocab.encode(WORDS[0])])
    return model.predict_proba(ids, torch.tensor([ids.shape[1]]))


# --- Rewriting a file's header, to build hostile files from a valid one ------------------------------


def split(data: bytes) -> tuple[dict, bytes]:
    (size,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8 : 8 + size]), data[8 + size :]


def join(header: dict, body: bytes) -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + body


class Raw(str):
    """A document text to put in a file as it is (not JSON of a changed document)."""


def with_document(data: bytes, change) -> bytes:
    """The same file with its seqviz document changed in place by ``change(document)``, or replaced by the
    :class:`Raw` text it returns."""
    header, body = split(data)
    document = json.loads(header["__metadata__"]["seqviz"])
    text = change(document)
    header["__metadata__"]["seqviz"] = text if isinstance(text, Raw) else json.dumps(document)
    return join(header, body)


@pytest.fixture(scope="module")
def lstm_bytes() -> bytes:
    return dumps(make("lstm"), meta_for())
