"""Every check of checkpoint validation at its edge: exactly at the bound (accepted) and one past it (refused, with
its message). The parameters a file may describe, the document's size and nesting, its text fields' lengths, the
number of vocabularies, ids a vocabulary decodes, the weights' numbers (NaN, +inf, -inf) and the file's exact length.
"""

from __future__ import annotations

import json
import re
import struct
import typing
from types import SimpleNamespace

import numpy as np
import pytest
from checkpoint_files import KEPT_DIR, join, split, tiny_checkpoint

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


@pytest.mark.parametrize("kind", [KIND, "bow"])  # the numpy bag of words is bounded like every torch model
def test_a_model_of_max_parameters_loads_and_one_number_more_is_refused(monkeypatch, kind):
    valid = tiny_checkpoint(kind) if kind == KIND else (KEPT_DIR / f"v2-{kind}.safetensors").read_bytes()
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


# ---- the format version's and the config values' messages, word for word (scripts/mutation's survivors) ----------


def test_format_version_messages_name_the_versions_this_seqviz_reads(monkeypatch):
    newer = ("The checkpoint was written by a newer seqviz (format version {}); this one reads {}: update seqviz to "
             "open it.")
    older = "The checkpoint uses format version {}, older than this seqviz reads ({})."
    for version, message in ((document.FORMAT_VERSION + 1, newer), (document.OLDEST_FORMAT_VERSION - 1, older)):
        reads = f"version {document.FORMAT_VERSION}"
        with pytest.raises(CheckpointError, match=f"^{re.escape(message.format(version, reads))}$"):
            document.parse_meta(json.dumps(minimal(format_version=version)))
    monkeypatch.setattr(document, "OLDEST_FORMAT_VERSION", document.FORMAT_VERSION - 1)
    reads = f"versions {document.FORMAT_VERSION - 1} to {document.FORMAT_VERSION}"
    with pytest.raises(CheckpointError, match=f"^{re.escape(newer.format(document.FORMAT_VERSION + 1, reads))}$"):
        document.parse_meta(json.dumps(minimal(format_version=document.FORMAT_VERSION + 1)))
    for version, message in (("2", "The checkpoint's description has no valid format_version."),
                             (True, "The checkpoint's description has no valid format_version."),
                             (10**6, "The checkpoint's format_version is not one seqviz knows.")):
        with pytest.raises(CheckpointError, match=f"^{re.escape(message)}$"):
            document.parse_meta(json.dumps(minimal(format_version=version)))


@pytest.mark.parametrize(("hint", "accepted", "refused"), [
    (int, [10**9, -(10**9)], [10**9 + 1, -(10**9) - 1, True, 1.0]),
    (float, [1, 2.5, -1e300], [float("inf"), float("-inf"), float("nan"), True, "1"]),
    (str, ["x" * 200, ""], ["x" * 201, 5, None]),
])
def test_a_config_value_at_its_bound_is_read_and_past_it_refused(hint, accepted, refused):
    for value in accepted:
        assert document._check_config_value("lstm", "field", hint, value) == value
    for value in refused:
        message = f"The lstm config field 'field' has a value of the wrong type: {value!r:.60}."
        with pytest.raises(CheckpointError, match=f"^{re.escape(message)}$"):
            document._check_config_value("lstm", "field", hint, value)


@pytest.mark.parametrize(("hint", "accepted", "refused"), [
    (tuple[int, ...], [[], [1, 2], [0] * 10_000], [[0] * 10_001, 5, "ab", (1, 2)]),
    (list[int], [[3]], [{"a": 1}]),
    (typing.List, [[[1], "a"]], ["a"]),  # noqa: UP006 (no item type: any items)
    (typing.Literal["a", "b"], ["a", "b"], ["c", 1, None]),
    (int | None, [3, None], ["3", 2.5, True, [3]]),  # X | None: a value of X or None, nothing else
    (typing.Union[None, int], [3, None], ["3", 2.5]),  # noqa: UP007 (None first, as a Union keeps it)
    (str | None, ["x", None], [3, False]),
    (float | None, [2.5, None], ["2.5", float("nan")]),
    (int | str, [3, "x"], [None, 2.5, [1]]),
    (object, ["x", 1, 2.5, True, None], [[1], {"a": 1}]),  # a type the check does not know: scalars only
])
def test_config_values_of_container_literal_and_union_types(hint, accepted, refused):
    for value in accepted:
        result = document._check_config_value("gru", "field", hint, value)
        assert result == (tuple(value) if typing.get_origin(hint) is tuple else value)
        assert type(result) is (tuple if typing.get_origin(hint) is tuple else type(value))
    for value in refused:
        message = f"The gru config field 'field' has a value of the wrong type: {value!r:.60}."
        with pytest.raises(CheckpointError, match=f"^{re.escape(message)}$"):
            document._check_config_value("gru", "field", hint, value)


def test_an_item_of_the_wrong_type_is_named_with_its_family_and_field():
    says = r"^The gru config field 'sizes' has a value of the wrong type: 'a'\.$"
    for hint in (list[int], tuple[int, ...]):
        with pytest.raises(CheckpointError, match=says):
            document._check_config_value("gru", "sizes", hint, [1, "a"])


def test_config_that_does_not_match_is_described_word_for_word():
    from seqviz.models import FAMILIES

    header, _ = split(tiny_checkpoint(KIND))
    meta = json.loads(header["__metadata__"]["seqviz"])
    unknown = {f"extra{i}": 1 for i in range(6)}
    start = "The lstm config does not match this seqviz: "
    for config, says in (({**meta["config"], **unknown}, "unknown fields ['extra0', 'extra1', 'extra2', 'extra3', "
                                                          "'extra4']"),
                         ({k: v for k, v in meta["config"].items() if k != "emb_dim"}, "missing fields ['emb_dim']")):
        with pytest.raises(CheckpointError, match=f"^{re.escape(f'{start}{says}.')}$"):
            document.config_from_meta({**meta, "config": config})
    both = {**{k: v for k, v in meta["config"].items() if k != "emb_dim"}, "extra0": 1}
    says = f"{start}unknown fields ['extra0']; missing fields ['emb_dim']."
    with pytest.raises(CheckpointError, match=f"^{re.escape(says)}$"):
        document.config_from_meta({**meta, "config": both})
    family = "f" * 50
    says = (f"The checkpoint is for a model family seqviz does not know ({family[:40]!r}); "
            f"known families: {', '.join(FAMILIES)}.")
    with pytest.raises(CheckpointError, match=f"^{re.escape(says)}$"):
        document.config_from_meta({**meta, "family": family})


@pytest.mark.parametrize(("key", "value"), [
    ("task", 5), ("seed", "0"), ("data_seed", 1.5), ("steps", True), ("params", "9"), ("train_seconds", "1"),
    ("final_loss", [0.5]), ("metrics", []), ("train", "fast"), ("labels", {"a": 1}), ("name", 1), ("description", []),
    ("task_options", 3),
])
def test_every_optional_field_of_the_wrong_type_is_named(key, value):
    message = f"The checkpoint's field {key!r} has the wrong type ({type(value).__name__})."
    with pytest.raises(CheckpointError, match=f"^{re.escape(message)}$"):
        document.parse_meta(json.dumps(minimal(**{key: value})))


def test_a_description_that_is_no_json_or_no_seqviz_one_says_so_word_for_word():
    text = " " * 10**6 + "{x"  # the parser's message names the column: longer than the 80 characters kept of it
    with pytest.raises(ValueError) as parser:
        json.loads(text)
    assert len(str(parser.value)) > 81
    says = f"The checkpoint's description is not valid JSON ({str(parser.value)[:80]})."
    with pytest.raises(CheckpointError, match=f"^{re.escape(says)}$"):
        document.parse_meta(text)
    says = 'The checkpoint\'s description is not a seqviz one (no "format": "seqviz-checkpoint").'
    for text in ("[]", json.dumps({**minimal(), "format": "other"})):
        with pytest.raises(CheckpointError, match=f"^{re.escape(says)}$"):
            document.parse_meta(text)


def test_a_config_value_of_the_wrong_type_names_the_family_and_field_and_a_long_mismatch_is_cut_at_300():
    header, _ = split(tiny_checkpoint(KIND))
    meta = json.loads(header["__metadata__"]["seqviz"])
    says = "The lstm config field 'emb_dim' has a value of the wrong type: 'x'."
    with pytest.raises(CheckpointError, match=f"^{re.escape(says)}$"):
        document.config_from_meta({**meta, "config": {**meta["config"], "emb_dim": "x"}})
    long_names = {f"{'u' * 80}{i}": 1 for i in range(5)}
    with pytest.raises(CheckpointError) as refused:
        document.config_from_meta({**meta, "config": {**meta["config"], **long_names}})
    assert len(str(refused.value)) == 300 and str(refused.value).startswith("The lstm config does not match")
