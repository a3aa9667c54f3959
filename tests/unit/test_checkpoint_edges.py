"""Every check of checkpoint validation at its edge: exactly at the bound (accepted) and one past it (refused, with
its message). The parameters a file may describe, the document's size and nesting, its text fields' lengths, the
number of vocabularies, ids a vocabulary decodes, the weights' numbers (NaN, +inf, -inf) and the file's exact length.
"""

from __future__ import annotations

import json
import struct
from types import SimpleNamespace

import numpy as np
import pytest
from checkpoint_files import join, split, tiny_checkpoint

from seqviz import checkpoints, limits
from seqviz.checkpoints import CheckpointError, document, file, loading
from seqviz.text import SPECIALS, Vocab

KIND = "lstm-classifier"


def minimal(**fields) -> dict:
    """The smallest document parse_meta accepts."""
    return {"format": document.FORMAT, "format_version": document.FORMAT_VERSION, "family": "lstm", "config": {},
            "vocabularies": {}, **fields}


# ---- the document: size, nesting, field lengths -----------------------------------------------------------------


@pytest.mark.parametrize("key", ["family", "task", "name", "description"])
def test_a_text_field_of_500_characters_is_read_and_of_501_refused(key):
    assert document.parse_meta(json.dumps(minimal(**{key: "x" * 500})))[key] == "x" * 500
    with pytest.raises(CheckpointError, match=f"field '{key}' is longer than 500 characters"):
        document.parse_meta(json.dumps(minimal(**{key: "x" * 501})))


def test_a_field_of_500_characters_counts_characters_not_bytes():
    name = "é" * 500  # 1000 bytes of UTF-8
    assert document.parse_meta(json.dumps(minimal(name=name), ensure_ascii=False))["name"] == name


def test_a_document_of_max_json_bytes_is_read_and_one_more_refused():
    text = json.dumps(minimal())
    at_bound = text + " " * (document.MAX_JSON_BYTES - len(text))  # JSON allows trailing whitespace
    assert len(at_bound) == document.MAX_JSON_BYTES
    assert document.parse_meta(at_bound)["family"] == "lstm"
    with pytest.raises(CheckpointError, match=f"larger than {document.MAX_JSON_BYTES // 2**20} MB"):
        document.parse_meta(at_bound + " ")


def nested(levels: int) -> dict:
    """A document whose lists and objects nest ``levels`` deep (the document itself is level 1)."""
    value: object = 0
    for _ in range(levels - 2):  # the document and its "metrics" object are two levels
        value = [value]
    return minimal(metrics={"deep": value})


def test_a_document_nested_max_json_depth_levels_is_read_and_one_more_refused():
    assert document._depth(nested(document.MAX_JSON_DEPTH)) == document.MAX_JSON_DEPTH
    document.parse_meta(json.dumps(nested(document.MAX_JSON_DEPTH)))
    with pytest.raises(CheckpointError, match=f"nested more than {document.MAX_JSON_DEPTH} levels deep"):
        document.parse_meta(json.dumps(nested(document.MAX_JSON_DEPTH + 1)))


@pytest.mark.parametrize(("version", "says"), [
    (document.OLDEST_FORMAT_VERSION - 1, "older than this seqviz reads"),
    (document.FORMAT_VERSION + 1, "written by a newer seqviz"),
    (10**6, "not one seqviz knows"),
    (-(10**6), "not one seqviz knows"),
])
def test_format_versions_past_either_end_are_refused(version, says):
    for readable in range(document.OLDEST_FORMAT_VERSION, document.FORMAT_VERSION + 1):
        document.parse_meta(json.dumps(minimal(format_version=readable)))
    with pytest.raises(CheckpointError, match=says):
        document.parse_meta(json.dumps(minimal(format_version=version)))
    just_inside = 10**6 - 1  # the last number still named as newer or older
    with pytest.raises(CheckpointError, match="written by a newer seqviz"):
        document.parse_meta(json.dumps(minimal(format_version=just_inside)))


# ---- vocabularies ------------------------------------------------------------------------------------------------


def vocabularies(n: int) -> dict:
    return {f"v{i}": [*SPECIALS, f"word{i}"] for i in range(n)}


def test_four_vocabularies_are_read_and_five_refused():
    config = SimpleNamespace()  # a config that needs none of them by name
    assert len(document.vocabularies_from_meta({"vocabularies": vocabularies(4)}, config)) == 4
    with pytest.raises(CheckpointError, match="more vocabularies than any seqviz model reads"):
        document.vocabularies_from_meta({"vocabularies": vocabularies(5)}, config)


def test_a_vocabulary_must_have_exactly_the_size_its_embedding_has():
    meta = {"vocabularies": {"tokens": [*SPECIALS, "a", "b"]}}
    assert len(document.vocabularies_from_meta(meta, SimpleNamespace(vocab_size=6))["tokens"]) == 6
    for size in (5, 7):
        with pytest.raises(CheckpointError, match="'tokens' vocabulary has 6 words but the model expects"):
            document.vocabularies_from_meta(meta, SimpleNamespace(vocab_size=size))


def test_vocab_decodes_ids_from_0_to_its_last_and_refuses_one_past_either_end():
    vocab = Vocab([*SPECIALS, "a", "b"])
    assert vocab.decode([0, len(vocab) - 1]) == ["<pad>", "b"]
    assert vocab.decode(np.array([5, 4])) == ["b", "a"]  # numpy ids too
    for outside in (-1, len(vocab), -len(vocab)):  # -1 would read the last word through Python's indexing
        with pytest.raises(ValueError, match=f"id {outside} is outside a vocabulary of 6 tokens"):
            vocab.decode([4, outside])


# ---- the weights and the file -------------------------------------------------------------------------------------


def with_first_weight(data: bytes, value: float) -> bytes:
    """The file with the first number of its first float32 tensor set to ``value`` (lengths unchanged)."""
    header, body = split(data)
    name = next(n for n, e in header.items() if n != "__metadata__" and e["dtype"] == "F32")
    start = header[name]["data_offsets"][0]
    return join(header, body[:start] + struct.pack("<f", value) + body[start + 4:])


def test_the_largest_finite_weights_load():
    valid = tiny_checkpoint(KIND)
    for value in (float(np.finfo(np.float32).max), float(np.finfo(np.float32).min), 0.0, -0.0):
        checkpoints.load_bytes(with_first_weight(valid, value))


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")], ids=["nan", "+inf", "-inf"])
def test_nan_and_infinite_weights_are_refused(value):
    with pytest.raises(CheckpointError, match="The weights contain NaN or infinite numbers"):
        checkpoints.load_bytes(with_first_weight(tiny_checkpoint(KIND), value))


def test_a_file_of_exactly_its_weights_length_loads_and_one_byte_more_or_less_is_refused():
    valid = tiny_checkpoint(KIND)
    header, header_size = file.header_of(valid)
    document_ = document.parse_meta(file.document_text(header))
    family, config = document.config_from_meta(document_)
    expected = loading._expected_tensors(family, config)
    assert set(file.read_weights(valid, header, header_size, expected)) == set(expected)
    for damaged in (valid + b"\0", valid[:-1]):
        with pytest.raises(CheckpointError, match=r"The file is truncated or has extra bytes: it is damaged\."):
            file.read_weights(damaged, header, header_size, expected)  # this check's own message, not safetensors'
        with pytest.raises(CheckpointError, match="damaged"):
            checkpoints.load_bytes(damaged)


def parameters_of(data: bytes) -> int:
    header, _ = split(data)
    return sum(int(np.prod(e["shape"])) for n, e in header.items() if n != "__metadata__")


def test_a_model_of_max_parameters_loads_and_one_number_more_is_refused(monkeypatch):
    valid = tiny_checkpoint(KIND)
    count = parameters_of(valid)
    monkeypatch.setattr(loading, "MAX_PARAMETERS", count)  # the bound, exactly at this model
    checkpoints.load_bytes(valid)
    monkeypatch.setattr(loading, "MAX_PARAMETERS", count - 1)  # this model is now one number past it
    with pytest.raises(CheckpointError, match=f"a model of {count:,} numbers, more than seqviz loads"):
        checkpoints.load_bytes(valid)


def test_the_real_parameter_bound_refuses_a_config_just_past_it():
    """A config describing the loader's MAX_PARAMETERS and one a few hundred numbers past it (not 7x): an LSTM
    classifier's vocabulary grown word by word, each word 512 numbers of its embedding table."""
    header, _ = split(tiny_checkpoint(KIND))
    meta = json.loads(header["__metadata__"]["seqviz"])
    meta["config"]["emb_dim"] = 512

    def numbers(vocab_size: int) -> int:  # the loader's own count, on its skeleton (CheckpointError past the bound)
        meta["config"]["vocab_size"] = vocab_size
        return sum(int(np.prod(s)) for _, s in loading._expected_tensors(*document.config_from_meta(meta)).values())

    low, high = len(SPECIALS), limits.MAX_MODEL_VOCAB  # the most a config may say (limits.MAX_MODEL_VOCAB)
    while high - low > 1:
        middle = (low + high) // 2
        try:
            numbers(middle)
            low = middle
        except CheckpointError as error:
            assert "more than seqviz loads" in str(error), error
            high = middle
    assert loading.MAX_PARAMETERS - 512 < numbers(low) <= loading.MAX_PARAMETERS  # accepted, at the bound
    past = numbers(low) + 512 - loading.MAX_PARAMETERS  # how far past the bound one more word goes
    with pytest.raises(CheckpointError, match=f"a model of {numbers(low) + 512:,} numbers, more than seqviz loads"):
        numbers(high)
    assert high == low + 1 and 0 < past <= 512


def test_a_file_of_max_file_bytes_is_read_and_one_byte_more_refused(monkeypatch):
    valid = tiny_checkpoint(KIND)
    monkeypatch.setattr(file, "MAX_FILE_BYTES", len(valid))
    checkpoints.load_bytes(valid)
    monkeypatch.setattr(file, "MAX_FILE_BYTES", len(valid) - 1)
    with pytest.raises(CheckpointError, match="too large for a seqviz model"):
        checkpoints.load_bytes(valid)
