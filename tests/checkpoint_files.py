"""Checkpoint files for tests: small models that are not in the zoo, and hostile files made from them.

The models are really trained, for a few steps, through the one training loop: a dot-attention translator
with hidden 32 and an LSTM email classifier with hidden 16 (the zoo has neither size).
"""

from __future__ import annotations

import functools
import json
import pickle
import struct
from pathlib import Path

TINY = {
    # kind: (task, family, config fields, name, steps)
    "dot-translator": ("translation", "dot", {"kind": "dot", "emb_dim": 32, "hidden": 32, "attn_dim": 32},
                       "tiny-dot", 40),
    "lstm-classifier": ("emails", "lstm", {"emb_dim": 16, "hidden_dim": 16}, "tiny-lstm", 40),
}


@functools.cache
def tiny_checkpoint(kind: str) -> bytes:
    """The single-file checkpoint of a small model trained here for a few steps."""
    from seqviz import checkpoints
    from seqviz.models import build
    from seqviz.tasks import make_task
    from seqviz.train import TrainConfig, train

    task_name, family, config, name, steps = TINY[kind]
    task = make_task(task_name)
    model = build(family, {**config, **task.model_fields()})
    train(model, task, TrainConfig(steps=steps, batch_size=32, warmup=0, lr=1e-2))
    meta = {"name": name, "task": task_name, "seed": 0, "steps": steps, "vocabularies": task.vocabularies}
    return checkpoints.dumps(model, meta)


def split(data: bytes) -> tuple[dict, bytes]:
    """A safetensors file's header (as a dict) and the bytes after it."""
    (size,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8 : 8 + size]), data[8 + size :]


def join(header: dict, body: bytes) -> bytes:
    raw = json.dumps(header).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + body


def rewrite_meta(data: bytes, change) -> bytes:
    """The same weights with the seqviz JSON document changed by ``change(document)`` (in place)."""
    header, body = split(data)
    document = json.loads(header["__metadata__"]["seqviz"])
    change(document)
    header["__metadata__"]["seqviz"] = json.dumps(document)
    return join(header, body)


class _Payload:
    """Unpickling this would create a file: a loader that unpickles anything would run it."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def hostile_files(valid: bytes, marker: Path) -> dict[str, bytes]:
    """name -> bytes of files that must all be refused with a clear message."""
    header, body = split(valid)
    first = next(k for k in header if k != "__metadata__")
    huge = dict(header)
    huge[first] = {**header[first], "shape": [100_000, 250_000], "data_offsets": [0, 100_000_000_000]}

    def set_family(doc):
        doc["family"] = "gru"

    def shrink_vocabulary(doc):
        for name, words in doc["vocabularies"].items():
            doc["vocabularies"][name] = words[:-3]

    def absurd_sizes(doc):
        doc["config"]["hidden_dim"] = 10**8

    def wrong_task(doc):
        doc["task"] = "translation"

    def not_a_name(doc):
        doc["name"] = {"not": "a string"}

    flipped = bytearray(valid)
    for i in range(12, len(flipped), max(1, len(flipped) // 40)):
        flipped[i] ^= 0xA5
    return {
        "pickle.safetensors": pickle.dumps({"weights": _Payload(marker)}),
        "random.safetensors": bytes(range(256)) * 40,
        "empty.safetensors": b"",
        "truncated.safetensors": valid[: len(valid) // 2],
        "bit-flipped.safetensors": bytes(flipped),
        "huge-tensor.safetensors": join(huge, body),
        "other-family.safetensors": rewrite_meta(valid, set_family),
        "vocabulary-mismatch.safetensors": rewrite_meta(valid, shrink_vocabulary),
        "absurd-config.safetensors": rewrite_meta(valid, absurd_sizes),
        "wrong-task.safetensors": rewrite_meta(valid, wrong_task),
        "bad-name.safetensors": rewrite_meta(valid, not_a_name),
        "no-metadata.safetensors": join({k: v for k, v in header.items() if k != "__metadata__"}, body),
    }


# ---------------------------------------------------------------------------------------------------------
# Files kept from every checkpoint format version: tests/unit/test_checkpoints.py loads them forever after.

KEPT_DIR = Path(__file__).resolve().parent / "data" / "checkpoints"
SENTENCE = "the parcel arrived , but never the charger that was supposed to be in it .".split()
KEPT = {
    # kind: (task, family, config fields): one of each config class, tiny; trained by the one driver, a few steps
    "bow": ("emails", "bow", {"alpha": 1.0}),
    "lstm": ("emails", "lstm", {"emb_dim": 4, "hidden_dim": 4, "dropout": 0.0}),
    "transformer": ("emails", "transformer", {"d_model": 4, "n_heads": 2, "n_layers": 1, "d_ff": 8, "max_len": 64,
                                              "dropout": 0.0}),
    "dot": ("translation", "dot", {"kind": "dot", "emb_dim": 8, "hidden": 8, "attn_dim": 8, "bidirectional": True,
                                   "dropout": 0.0}),
    "transformer-seq2seq": ("translation", "transformer-seq2seq", {"d_model": 8, "n_heads": 2, "enc_layers": 1,
                                                                   "dec_layers": 1, "d_ff": 16, "dropout": 0.0}),
}
KEPT_STEPS = {"emails": 30, "translation": 200}  # enough for a translator to say more than one word again and again
KEPT_WORDS = 8  # a translator's first words are kept, and their attention


def kept_outputs(checkpoint, tokens) -> dict:
    """What a kept file's model says on ``tokens``: a classifier's probabilities, a translator's words and
    attention weights (an LSTM translator's alignment; a transformer's cross-attention)."""
    import numpy as np

    from seqviz.tracing import trace as trace_of

    if not checkpoint.translates:
        return {"probs": np.asarray(trace_of(checkpoint, "email-classifier", tokens).probs, dtype=float).tolist()}
    trace = trace_of(checkpoint, "translator", tokens, max_len=KEPT_WORDS)
    weights = trace.alignment if hasattr(trace, "alignment") else trace.cross
    return {"out_tokens": list(trace.out_tokens), "attention": np.asarray(weights, dtype=float).tolist()}


def keep_this_version() -> Path:
    """Write ``v{FORMAT_VERSION}-KIND.safetensors`` for every kind of :data:`KEPT`, and ``v{FORMAT_VERSION}.json``
    with their sha256 and outputs on :data:`SENTENCE`. Run once per format version, by hand
    (``python tests/checkpoint_files.py``); it never overwrites a kept file."""
    import hashlib

    from seqviz import checkpoints, driver
    from seqviz.runtime import configure_torch

    configure_torch()
    version = checkpoints.FORMAT_VERSION
    record = KEPT_DIR / f"v{version}.json"
    if record.exists():
        raise FileExistsError(f"{record} is kept already: files of a version are written once, never again")
    KEPT_DIR.mkdir(parents=True, exist_ok=True)
    kept = {}
    for kind, (task, family, config) in KEPT.items():
        recipe = driver.Recipe(name=f"kept v{version} {kind}", description=f"a tiny {family} kept by the tests",
                               family=family, task=task, config=config,
                               train={"steps": KEPT_STEPS[task], "batch_size": 16, "warmup": 0, "lr": 1e-2})
        path = KEPT_DIR / f"v{version}-{kind}.safetensors"
        data = driver.run(recipe).checkpoint
        data = rewrite_meta(data, lambda document: document.update(train_seconds=0.0))  # no volatile bytes
        path.write_bytes(data)
        kept[path.name] = {"sha256": hashlib.sha256(data).hexdigest(), "sentence": SENTENCE,
                           "outputs": kept_outputs(checkpoints.load(path), SENTENCE)}
    lines = [f" {json.dumps(name)}: {json.dumps(entry, ensure_ascii=False)}" for name, entry in kept.items()]
    record.write_text("{\n" + ",\n".join(lines) + "\n}\n", encoding="utf-8")
    return record


if __name__ == "__main__":
    print(keep_this_version())
