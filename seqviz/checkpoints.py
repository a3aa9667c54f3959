"""One checkpoint format for every model: ``NAME.safetensors`` (weights) + ``NAME.json`` (what they are).

The JSON says everything needed to rebuild the model and to read its numbers:

    {"format": "seqviz-checkpoint", "format_version": 1, "family": "lstm",
     "config": {...the family's config dataclass...}, "params": 21700,
     "vocabularies": {"tokens": ["<pad>", "<unk>", "<bos>", "<eos>", ...]}, "labels": [...],
     "task": "emails", "data_seed": 0, "seed": 0, "steps": 3000, "train_seconds": 95.1,
     "train": {...hyperparameters...}, "metrics": {...held-out metrics...}, "name": "lstm"}

Loading validates everything before it builds anything: sizes, the JSON's fields and types, the
family, the config, the vocabularies, and the weights' tensor names, dtypes and shapes against a
model of that config built on the "meta" device (no memory, no computation). Nothing is ever
unpickled: weights are read with safetensors only. Any problem raises :class:`CheckpointError` with a
sentence a person can act on. Loaded models are in eval mode with gradients switched off, so one
instance can be cached and shared by every visitor.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import struct
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

FORMAT = "seqviz-checkpoint"
FORMAT_VERSION = 1
MAX_WEIGHTS_BYTES = 64 * 1024 * 1024  # a weights file larger than this is refused unread
MAX_JSON_BYTES = 4 * 1024 * 1024  # a JSON file larger than this is refused unread
MAX_PARAMETERS = 16_000_000  # numbers a checkpoint may hold (the zoo's largest model has far fewer)
MAX_HEADER_BYTES = 1024 * 1024  # a safetensors header describing our tensors is a few kilobytes

_SAFETENSORS_DTYPES = {"float32": "F32", "float64": "F64", "float16": "F16", "int64": "I64", "int32": "I32",
                       "bool": "BOOL", "bfloat16": "BF16", "uint8": "U8"}


class CheckpointError(ValueError):
    """A file that is not a valid seqviz checkpoint; the message says what is wrong, in plain words."""


@dataclass(frozen=True)
class Checkpoint:
    """A loaded model with everything its JSON said about it."""

    model: Any  # eval mode, gradients off unless loaded with frozen=False
    family: str
    config: Any  # the family's config dataclass
    vocabularies: dict  # name -> seqviz.text.Vocab: "tokens" for classifiers, "src" and "tgt" for translators
    meta: dict  # the whole JSON

    @property
    def labels(self) -> tuple[str, ...] | None:
        labels = self.meta.get("labels")
        return tuple(labels) if labels is not None else None

    @property
    def task(self) -> str | None:
        return self.meta.get("task")

    @property
    def metrics(self) -> dict:
        return self.meta.get("metrics") or {}


# ---------------------------------------------------------------------------------------------------------
# Saving


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


def model_arrays(model) -> dict[str, np.ndarray]:
    """The model's weights as contiguous numpy arrays, by their state_dict names."""
    arrays = {}
    for name, value in model.state_dict().items():
        array = value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)
        arrays[name] = np.ascontiguousarray(array)
    return arrays


def weights_bytes(model) -> bytes:
    """The safetensors bytes of the model's weights: no metadata, no timestamps, same weights -> same bytes."""
    from safetensors.numpy import save

    return save(model_arrays(model))


def meta_document(model, meta: dict) -> dict:
    """The JSON document describing ``model``; ``meta`` adds task, seed, vocabularies, metrics and so on."""
    from seqviz.models import family_of, num_parameters

    reserved = {"format", "format_version", "family", "config", "params"}
    clash = reserved & set(meta)
    if clash:
        raise ValueError(f"meta may not set {sorted(clash)}: they are taken from the model")
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


def _write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def dumps(model, meta: dict) -> tuple[bytes, bytes]:
    """The two files of a checkpoint as bytes (weights, JSON): what :func:`save` writes, or a download offers.

    ``meta`` holds at least ``vocabularies`` ({name: Vocab or list of words}); usually also ``task``,
    ``seed``, ``steps``, ``train_seconds``, ``train`` and ``metrics``.
    """
    if "vocabularies" not in meta:
        raise ValueError("a checkpoint needs its vocabularies: meta['vocabularies']")
    text = json.dumps(meta_document(model, meta), indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    return weights_bytes(model), text.encode("utf-8")


def save(path_stem: str | os.PathLike, model, meta: dict) -> tuple[Path, Path]:
    """Write ``STEM.safetensors`` and ``STEM.json`` (see :func:`dumps`); returns their paths."""
    weights, document = dumps(model, meta)
    stem = Path(path_stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    weights_path, json_path = stem.with_name(stem.name + ".safetensors"), stem.with_name(stem.name + ".json")
    _write_atomically(weights_path, weights)
    _write_atomically(json_path, document)
    return weights_path, json_path


# ---------------------------------------------------------------------------------------------------------
# Loading: validate, then build


def load(path_stem: str | os.PathLike, frozen: bool = True) -> Checkpoint:
    """Load ``STEM.safetensors`` + ``STEM.json`` (``STEM`` may also name either file)."""
    stem = Path(path_stem)
    if stem.suffix in (".json", ".safetensors"):
        stem = stem.with_suffix("")
    weights_path, json_path = stem.with_name(stem.name + ".safetensors"), stem.with_name(stem.name + ".json")
    for path, limit in ((weights_path, MAX_WEIGHTS_BYTES), (json_path, MAX_JSON_BYTES)):
        if not path.is_file():
            raise CheckpointError(f"{path.name} is missing: a checkpoint is a .safetensors file and a .json file.")
        if path.stat().st_size > limit:
            raise CheckpointError(f"{path.name} is larger than {limit // 2**20} MB, too large for a seqviz model.")
    return load_bytes(weights_path.read_bytes(), json_path.read_bytes(), frozen=frozen)


def load_bytes(weights: bytes, meta_json: bytes | str, frozen: bool = True) -> Checkpoint:
    """Load a checkpoint from the two files' contents (an upload, say), validating everything first."""
    if len(weights) > MAX_WEIGHTS_BYTES:
        raise CheckpointError(f"The weights file is larger than {MAX_WEIGHTS_BYTES // 2**20} MB.")
    meta = parse_meta(meta_json)
    family, _, model_class, config = _config_from_meta(meta)
    vocabularies = _vocabularies_from_meta(meta, config)
    expected = _expected_tensors(family, config)
    arrays = _read_weights(weights, expected)
    model = _build_with(model_class, config, arrays)
    model.eval()
    if frozen:
        model.requires_grad_(False)
    return Checkpoint(model=model, family=family, config=config, vocabularies=vocabularies, meta=meta)


def parse_meta(meta_json: bytes | str) -> dict:
    """The JSON document, checked for the format and the fields every checkpoint has (no torch needed)."""
    if len(meta_json) > MAX_JSON_BYTES:
        raise CheckpointError(f"The JSON file is larger than {MAX_JSON_BYTES // 2**20} MB: not a seqviz checkpoint.")
    try:
        text = meta_json.decode("utf-8") if isinstance(meta_json, bytes | bytearray) else meta_json
        meta = json.loads(text)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise CheckpointError(f"The JSON file is not valid JSON text ({error}).") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(
            'The JSON file is not a seqviz checkpoint description (no "format": "seqviz-checkpoint").'
        )
    version = meta.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise CheckpointError("The checkpoint's JSON has no valid format_version.")
    if version != FORMAT_VERSION:
        raise CheckpointError(
            f"The checkpoint uses format version {version}; this seqviz reads version {FORMAT_VERSION}."
        )
    required = {"family": str, "config": dict, "vocabularies": dict}
    optional = {"task": str, "seed": int, "data_seed": int, "steps": int, "params": int, "train_seconds": (int, float),
                "metrics": dict, "train": dict, "labels": list, "name": str}
    for key in required:
        if key not in meta:
            raise CheckpointError(f"The checkpoint's JSON has no {key!r} field.")
    for key, kind in {**required, **optional}.items():
        value = meta.get(key)
        if value is None and key in optional:
            continue
        if not isinstance(value, kind) or isinstance(value, bool):
            raise CheckpointError(f"The checkpoint's JSON field {key!r} has the wrong type ({type(value).__name__}).")
    return meta


def _config_from_meta(meta: dict):
    from seqviz.models import FAMILIES, SEQ2SEQ_KINDS

    family = meta["family"]
    if family not in FAMILIES:
        raise CheckpointError(
            f"The checkpoint is for a model family seqviz does not know ({family[:40]!r}); "
            f"known families: {', '.join(FAMILIES)}."
        )
    config_class, model_class = FAMILIES[family]
    fields = {f.name: f for f in dataclasses.fields(config_class)}
    given = meta["config"]
    unknown, missing = sorted(set(given) - set(fields)), sorted(set(fields) - set(given))
    if unknown or missing:
        parts = ([f"unknown fields {unknown}"] if unknown else []) + ([f"missing fields {missing}"] if missing else [])
        raise CheckpointError(f"The {family} config does not match this seqviz: {'; '.join(parts)}.")
    hints = typing.get_type_hints(config_class)
    values = {name: _check_config_value(family, name, hints.get(name), given[name]) for name in fields}
    try:
        config = config_class(**values)
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"The {family} config is not valid: {error}") from None
    if family in SEQ2SEQ_KINDS and getattr(config, "kind", family) != family:
        raise CheckpointError(f"The checkpoint says family {family!r} but its config has kind {config.kind!r}.")
    return family, config_class, model_class, config


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
            if option is type(None) and value is None:
                return None
            try:
                return _check_config_value(family, name, option, value)
            except CheckpointError:
                continue
        raise problem
    if isinstance(value, str | int | float | bool) or value is None:  # a type this check does not know: scalars only
        return value
    raise problem


def _vocabularies_from_meta(meta: dict, config) -> dict:
    from seqviz.text import Vocab

    vocabularies = {}
    for name, items in meta["vocabularies"].items():
        try:
            vocabularies[name] = Vocab.from_json(items)
        except (ValueError, TypeError, KeyError) as error:
            raise CheckpointError(f"The checkpoint's vocabulary {name!r} is not valid: {error}") from None
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


def _expected_tensors(family: str, config) -> dict[str, tuple[str, tuple[int, ...]]]:
    """name -> (safetensors dtype, shape) of a fresh model of this config, built without memory."""
    import torch

    from seqviz.models import FAMILIES

    model_class = FAMILIES[family][1]
    if hasattr(model_class, "expected_shapes"):  # numpy models
        return {name: ("F32", shape) for name, shape in model_class.expected_shapes(config).items()}
    try:
        with torch.device("meta"):
            skeleton = model_class(config)
    except Exception as error:  # a config the model refuses
        raise CheckpointError(f"A {family} model cannot be built from this config: {error}") from None
    expected = {}
    for name, tensor in skeleton.state_dict().items():
        dtype = _SAFETENSORS_DTYPES.get(str(tensor.dtype).removeprefix("torch."), str(tensor.dtype))
        expected[name] = (dtype, tuple(tensor.shape))
    total = sum(math.prod(shape) for _, shape in expected.values())
    if total > MAX_PARAMETERS:
        raise CheckpointError(f"The config describes a model of {total:,} numbers, more than seqviz loads.")
    return expected


def _read_weights(data: bytes, expected: dict[str, tuple[str, tuple[int, ...]]]) -> dict[str, np.ndarray]:
    """The weights as numpy arrays, after checking the safetensors header against ``expected``."""
    if len(data) > MAX_WEIGHTS_BYTES:
        raise CheckpointError(f"The weights file is larger than {MAX_WEIGHTS_BYTES // 2**20} MB.")
    not_safetensors = CheckpointError(
        "The weights file is not a safetensors file (seqviz never opens pickled or other formats)."
    )
    if len(data) < 8:
        raise not_safetensors
    (header_size,) = struct.unpack("<Q", data[:8])
    if header_size > min(MAX_HEADER_BYTES, len(data) - 8):
        raise not_safetensors
    try:
        header = json.loads(data[8 : 8 + header_size].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise not_safetensors from None
    if not isinstance(header, dict):
        raise not_safetensors
    header.pop("__metadata__", None)
    names, wanted = set(header), set(expected)
    if names != wanted:
        missing, extra = sorted(wanted - names), sorted(names - wanted)
        parts = ([f"missing {missing[:5]}"] if missing else []) + ([f"unexpected {extra[:5]}"] if extra else [])
        raise CheckpointError(f"The weights do not belong to this model: {'; '.join(parts)}.")
    end = 0
    for name, entry in header.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("shape"), list):
            raise not_safetensors
        dtype, shape = expected[name]
        if entry.get("dtype") != dtype or tuple(entry["shape"]) != shape:
            raise CheckpointError(
                f"The weights do not belong to this model: {name} is {entry.get('dtype')} "
                f"{tuple(entry['shape'])}, the model needs {dtype} {shape}."
            )
        offsets = entry.get("data_offsets")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets)):
            raise not_safetensors
        end = max(end, offsets[1])
    if 8 + header_size + end != len(data):
        raise CheckpointError("The weights file is truncated or has extra bytes: it is damaged.")
    try:
        from safetensors.numpy import load

        arrays = load(bytes(data))
    except Exception:  # safetensors' own checks (offsets, overlaps, alignment)
        raise not_safetensors from None
    for name, array in arrays.items():
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            raise CheckpointError(f"The weights contain NaN or infinite numbers (in {name}).")
    return arrays


def _build_with(model_class, config, arrays: dict[str, np.ndarray]):
    if hasattr(model_class, "expected_shapes"):
        model = model_class(config)
        model.load_state_dict(arrays)
        return model
    import torch

    with torch.random.fork_rng(devices=[]):  # building initialises weights; leave the global generator alone
        model = model_class(config)
    state = {name: torch.from_numpy(np.array(array)) for name, array in arrays.items()}
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as error:  # already checked above; kept as a last line of defence
        raise CheckpointError(f"The weights do not fit the model: {error}") from None
    return model
