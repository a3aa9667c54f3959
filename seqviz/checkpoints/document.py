"""The checkpoint's description: the JSON document in the file's header, what it holds and how it is checked.

    {"format": "seqviz-checkpoint", "format_version": 2, "family": "lstm",
     "config": {...the family's config dataclass...}, "params": 21700,
     "vocabularies": {"tokens": ["<pad>", "<unk>", "<bos>", "<eos>", ...]}, "labels": [...],
     "task": "emails", "data_seed": 0, "seed": 0, "steps": 3000, "train_seconds": 95.1,
     "train": {...hyperparameters...}, "metrics": {...held-out metrics...}, "name": "lstm"}

:func:`meta_document` writes it; :func:`parse_meta` checks the format, the version and every common field (no
torch); :func:`config_from_meta` and :func:`vocabularies_from_meta` turn it into the family's config (every field's
type and bounds) and the vocabularies (against the embedding sizes).

Files outlive a new config field. The document carries its ``format_version``; a field added to a config later
is declared with :func:`added_in` (the version it came with, and the value that reproduces the models written
before it), and reading a file of an older version fills it with that value before the config is checked. A file
of the current version that lacks a field is refused, as is a version newer than this seqviz (one sentence:
update seqviz). tests/data/checkpoints/ keeps files written by each version, loaded by the tests forever after.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import types
import typing
from typing import Any

import numpy as np

from seqviz.checkpoints.file import (
    MAX_JSON_BYTES,
    CheckpointError,
    document_text,
    header_of,
    no_duplicates,
    read_header,
)

FORMAT = "seqviz-checkpoint"
FORMAT_VERSION = 2  # what this seqviz writes; bumped when a config field is added (see added_in)
OLDEST_FORMAT_VERSION = 2  # the oldest it reads (1 was two files, NAME.safetensors + NAME.json)
ADDED_IN, BEFORE = "seqviz_added_in", "seqviz_before"  # a config field's metadata keys (see added_in)
MAX_JSON_DEPTH = 16  # nesting of lists and objects in the document (the zoo's deepest is 6)
RESERVED = ("format", "format_version", "family", "config", "params")  # taken from the model, never from meta


def added_in(version: int, before: Any, **options) -> Any:
    """A config field that arrived with checkpoint format ``version``; files of older versions lack it and are
    read with ``before``, the value that reproduces the models they hold (or a function of the file's other
    config fields that returns it). ``options`` are :func:`dataclasses.field`'s (``default=`` for new models)::

        norm: bool = added_in(3, before=False, default=True)  # LayerNorm on h_t (files before version 3: none)

    Adding such a field bumps :data:`FORMAT_VERSION` to ``version``; tests/unit/test_checkpoint_versions.py checks
    that every config field declares a version this seqviz writes, and loads files kept from every version since 2.
    """
    metadata = {**options.pop("metadata", {}), ADDED_IN: version, BEFORE: before}
    return dataclasses.field(metadata=metadata, **options)


# ---------------------------------------------------------------------------------------------------------
# Writing


def _json_ready(value):
    """Config values and metrics as JSON: tuples become lists, nan becomes null."""
    if isinstance(value, dict):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_ready(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, np.generic):
        return _json_ready(value.item())
    if hasattr(value, "to_json"):
        return value.to_json()
    return value


def meta_document(model, meta: dict) -> dict:
    """The JSON document describing ``model``; ``meta`` adds task, seed, vocabularies, metrics and so on."""
    from seqviz.models import family_of, num_parameters

    clash = set(RESERVED) & set(meta)
    if clash:
        raise ValueError(f"meta may not set {sorted(clash)}: they are taken from the model")
    if "vocabularies" not in meta:
        raise ValueError("a checkpoint needs its vocabularies: meta['vocabularies']")
    document = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "family": family_of(model),
        "config": dataclasses.asdict(model.config),
        "params": num_parameters(model),
    }
    if hasattr(model.config, "labels") and "labels" not in meta:
        document["labels"] = list(model.config.labels)
    document.update(meta)
    return _json_ready(document)


# ---------------------------------------------------------------------------------------------------------
# Reading: the document's fields, then the config and the vocabularies


def read_meta(source: bytes | str | os.PathLike) -> dict:
    """The checkpoint's JSON document (family, config, task, metrics...), from the header only; no torch.

    ``source`` is the file's bytes or its path (then only the header is read from disk).
    """
    if isinstance(source, bytes | bytearray | memoryview):
        header, _ = header_of(bytes(source))
    else:
        header = read_header(source)
    return parse_meta(document_text(header))


def parse_meta(text: str | bytes) -> dict:
    """The JSON document, checked for the format and the fields every checkpoint has (no torch needed)."""
    if len(text) > MAX_JSON_BYTES:
        raise CheckpointError(f"The checkpoint's description is larger than {MAX_JSON_BYTES // 2**20} MB.")
    try:
        meta = json.loads(text, object_pairs_hook=no_duplicates)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise CheckpointError(f"The checkpoint's description is not valid JSON ({str(error)[:80]}).") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError('The checkpoint\'s description is not a seqviz one (no "format": "seqviz-checkpoint").')
    if _depth(meta) > MAX_JSON_DEPTH:
        raise CheckpointError(f"The checkpoint's description is nested more than {MAX_JSON_DEPTH} levels deep.")
    _check_version(meta.get("format_version"))
    required = {"family": str, "config": dict, "vocabularies": dict}
    optional = {"task": str, "seed": int, "data_seed": int, "steps": int, "params": int, "train_seconds": (int, float),
                "final_loss": (int, float), "metrics": dict, "train": dict, "labels": list, "name": str,
                "description": str, "task_options": dict}
    for key in required:
        if key not in meta:
            raise CheckpointError(f"The checkpoint's description has no {key!r} field.")
    for key, kind in {**required, **optional}.items():
        value = meta.get(key)
        if value is None and key in optional:
            continue
        if not isinstance(value, kind) or isinstance(value, bool):
            raise CheckpointError(f"The checkpoint's field {key!r} has the wrong type ({type(value).__name__}).")
    for key in ("family", "task", "name", "description"):
        if isinstance(meta.get(key), str) and len(meta[key]) > 500:
            raise CheckpointError(f"The checkpoint's field {key!r} is longer than 500 characters.")
    return meta


def _check_version(version) -> None:
    if not isinstance(version, int) or isinstance(version, bool):
        raise CheckpointError("The checkpoint's description has no valid format_version.")
    if OLDEST_FORMAT_VERSION <= version <= FORMAT_VERSION:
        return
    reads = (f"version {FORMAT_VERSION}" if OLDEST_FORMAT_VERSION == FORMAT_VERSION
             else f"versions {OLDEST_FORMAT_VERSION} to {FORMAT_VERSION}")
    if abs(version) >= 10**6:
        raise CheckpointError("The checkpoint's format_version is not one seqviz knows.")
    if version > FORMAT_VERSION:
        raise CheckpointError(f"The checkpoint was written by a newer seqviz (format version {version}); this one "
                              f"reads {reads}: update seqviz to open it.")
    raise CheckpointError(f"The checkpoint uses format version {version}, older than this seqviz reads ({reads}).")


def _depth(value) -> int:
    """How deeply lists and objects nest in a parsed JSON value (iterative: no recursion limit to hit)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            level += 1
            deepest = max(deepest, level)
            if level > MAX_JSON_DEPTH:
                return level
            stack.extend((child, level) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def config_from_meta(meta: dict):
    """``(family, config)``: the family's config dataclass from a checked document (fields added since its version
    filled in, every value checked against the field's type), or CheckpointError."""
    from seqviz.models import FAMILIES

    family = meta["family"]
    if family not in FAMILIES:
        raise CheckpointError(
            f"The checkpoint is for a model family seqviz does not know ({family[:40]!r}); "
            f"known families: {', '.join(FAMILIES)}."
        )
    config_class = FAMILIES[family].config_class
    fields = {f.name: f for f in dataclasses.fields(config_class)}
    given = _upgraded(meta["config"], fields.values(), meta["format_version"])
    unknown, missing = sorted(set(given) - set(fields)), sorted(set(fields) - set(given))
    if unknown or missing:
        parts = [f"unknown fields {unknown[:5]}"] if unknown else []
        parts += [f"missing fields {missing}"] if missing else []
        raise CheckpointError(f"The {family} config does not match this seqviz: {'; '.join(parts)}."[:300])
    hints = typing.get_type_hints(config_class)
    values = {name: _check_config_value(family, name, hints.get(name), given[name]) for name in fields}
    try:
        config = config_class(**values)
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"The {family} config is not valid: {error}") from None
    return family, config


def _upgraded(given: dict, fields, version: int) -> dict:
    """A config written by format ``version``, with every field added since then (:func:`added_in`) set to the
    value that reproduces the model it held; a field the version already had stays missing (then refused)."""
    upgraded = dict(given)
    for field in fields:
        if field.name not in given and field.metadata.get(ADDED_IN, 0) > version:
            before = field.metadata[BEFORE]
            upgraded[field.name] = before(given) if callable(before) else before
    return upgraded


def _check_config_value(family: str, name: str, hint, value):
    """``value`` converted to the config field's type, or CheckpointError."""
    problem = CheckpointError(f"The {family} config field {name!r} has a value of the wrong type: {value!r:.60}.")
    origin = typing.get_origin(hint)
    if hint is bool:
        if not isinstance(value, bool):
            raise problem
        return value
    if hint is int:
        if not isinstance(value, int) or isinstance(value, bool) or abs(value) > 10**9:
            raise problem
        return value
    if hint is float:
        if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
            raise problem
        return float(value)
    if hint is str:
        if not isinstance(value, str) or len(value) > 200:
            raise problem
        return value
    if origin is tuple or origin is list:
        (item_hint, *_rest) = typing.get_args(hint) or (Any,)
        if not isinstance(value, list) or len(value) > 10_000:
            raise problem
        items = [_check_config_value(family, name, item_hint, v) for v in value] if item_hint is not Any else value
        return tuple(items) if origin is tuple else items
    if origin is typing.Literal:
        if value not in typing.get_args(hint):
            raise problem
        return value
    if origin in (typing.Union, types.UnionType):
        for option in typing.get_args(hint):
            if option is type(None):  # None is the only value of this option (not "any scalar", the fallback below)
                if value is None:
                    return None
                continue
            try:
                return _check_config_value(family, name, option, value)
            except CheckpointError:
                continue
        raise problem
    if isinstance(value, str | int | float | bool) or value is None:  # a type this check does not know: scalars only
        return value
    raise problem


def vocabularies_from_meta(meta: dict, config) -> dict:
    """name -> seqviz.text.Vocab from a checked document, each against the size its embedding has in ``config``."""
    from seqviz.text import Vocab

    vocabularies = {}
    if len(meta["vocabularies"]) > 4:
        raise CheckpointError("The checkpoint has more vocabularies than any seqviz model reads.")
    for name, items in meta["vocabularies"].items():
        try:
            vocabularies[name] = Vocab.from_json(items)
        except (ValueError, TypeError, KeyError) as error:
            raise CheckpointError(
                f"The checkpoint's vocabulary {name[:40]!r} is not valid: {str(error)[:120]}") from None
    sizes = {"vocab_size": "tokens", "src_vocab_size": "src", "tgt_vocab_size": "tgt"}
    for field, name in sizes.items():
        if hasattr(config, field):
            if name not in vocabularies:
                raise CheckpointError(f"The checkpoint has no {name!r} vocabulary, which its model needs.")
            if len(vocabularies[name]) != getattr(config, field):
                raise CheckpointError(
                    f"The {name!r} vocabulary has {len(vocabularies[name])} words but the model expects "
                    f"{getattr(config, field)}."
                )
    labels = meta.get("labels")
    if labels is not None and hasattr(config, "labels") and tuple(labels) != tuple(config.labels):
        raise CheckpointError("The checkpoint's labels differ from its model config's labels.")
    return vocabularies
