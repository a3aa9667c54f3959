"""One checkpoint format for every model: one ``NAME.safetensors`` file, weights and description together.

The file is an ordinary safetensors file (a little-endian u64 header length, a JSON header, the raw
tensor bytes). The header's ``__metadata__`` holds one entry, ``{"seqviz": "<JSON document>"}``
(safetensors metadata values are strings), and that document says everything needed to rebuild the
model and to read its numbers:

    {"format": "seqviz-checkpoint", "format_version": 2, "family": "lstm",
     "config": {...the family's config dataclass...}, "params": 21700,
     "vocabularies": {"tokens": ["<pad>", "<unk>", "<bos>", "<eos>", ...]}, "labels": [...],
     "task": "emails", "data_seed": 0, "seed": 0, "steps": 3000, "train_seconds": 95.1,
     "train": {...hyperparameters...}, "metrics": {...held-out metrics...}, "name": "lstm"}

:func:`read_meta` reads only the header (no torch), so a page can show a model's metrics without loading
it; :func:`fingerprint` (sha256 of the bytes) names a file in every cache. Loading validates everything
before it builds anything: sizes, the header, the document's fields and types, the family, the config
(with bounds on every size, seqviz.limits), the vocabularies against the embedding sizes, and the
tensors' names, dtypes and shapes against a model of that config built on the "meta" device (no memory,
no computation), then NaN and infinity. Nothing is ever unpickled. Any problem raises
:class:`CheckpointError` with one sentence a person can act on. Loaded models are in eval mode with
gradients switched off, so one instance can be cached and shared by every visitor.

Files outlive a new config field. The document carries its ``format_version``; a field added to a config
later is declared with :func:`added_in` (the version it came with, and the value that reproduces the models
written before it), and loading a file of an older version fills it with that value before the config is
checked. A file of the current version that lacks a field is refused, as is a version newer than this seqviz
(one sentence: update seqviz). tests/data/checkpoints/ keeps files written by each version, loaded by the tests
forever after.
"""

from __future__ import annotations

import dataclasses
import hashlib
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
FORMAT_VERSION = 2  # what this seqviz writes; bumped when a config field is added (see added_in)
OLDEST_FORMAT_VERSION = 2  # the oldest it reads (1 was two files, NAME.safetensors + NAME.json)
ADDED_IN, BEFORE = "seqviz_added_in", "seqviz_before"  # a config field's metadata keys (see added_in)
METADATA_KEY = "seqviz"  # the entry of the safetensors header's __metadata__ that holds the document
MAX_FILE_BYTES = 64 * 1024 * 1024  # a checkpoint larger than this is refused unread
MAX_HEADER_BYTES = 8 * 1024 * 1024  # the safetensors header: tensor table plus the JSON document
MAX_JSON_BYTES = 4 * 1024 * 1024  # the JSON document inside it
MAX_JSON_DEPTH = 16  # nesting of lists and objects in the document (the zoo's deepest is 6)
MAX_PARAMETERS = 16_000_000  # numbers a checkpoint may hold (the zoo's largest model has far fewer)

_SAFETENSORS_DTYPES = {"float32": "F32", "float64": "F64", "float16": "F16", "int64": "I64", "int32": "I32",
                       "bool": "BOOL", "bfloat16": "BF16", "uint8": "U8"}


def added_in(version: int, before: Any, **options) -> Any:
    """A config field that arrived with checkpoint format ``version``; files of older versions lack it and are
    read with ``before``, the value that reproduces the models they hold (or a function of the file's other
    config fields that returns it). ``options`` are :func:`dataclasses.field`'s (``default=`` for new models)::

        norm: bool = added_in(3, before=False, default=True)  # LayerNorm on h_t (files before version 3: none)

    Adding such a field bumps :data:`FORMAT_VERSION` to ``version``; tests/unit/test_checkpoints.py checks that
    every config field declares a version this seqviz writes, and loads files kept from every version since 2.
    """
    metadata = {**options.pop("metadata", {}), ADDED_IN: version, BEFORE: before}
    return dataclasses.field(metadata=metadata, **options)


class CheckpointError(ValueError):
    """A file that is not a valid seqviz checkpoint; the message says what is wrong, in plain words."""


@dataclass(frozen=True)
class Checkpoint:
    """A loaded model with everything its file said about it; it reads sentences with its own vocabularies."""

    model: Any  # eval mode, gradients off unless loaded with frozen=False
    family: str
    config: Any  # the family's config dataclass
    vocabularies: dict  # name -> seqviz.text.Vocab: "tokens" for classifiers, "src" and "tgt" for translators
    meta: dict  # the whole JSON document, as the file says it (a field an older version lacks is in config only)
    fingerprint: str = ""  # fingerprint() of the file it was loaded from

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

    @property
    def translates(self) -> bool:
        """True for a translator (source and target vocabularies), False for a classifier."""
        return "src" in self.vocabularies

    @property
    def input_vocab(self):
        """The vocabulary the model reads a typed sentence with: "src" for translators, "tokens" otherwise."""
        return self.vocabularies["src" if self.translates else "tokens"]

    def trace(self, view: str, tokens, **options):
        """The model's trace of the tokens as the view ``view`` reads it (seqviz.views), with its own vocabularies."""
        from seqviz import views

        return views.get(view).trace(self.model, self.vocabularies, list(tokens), **options)


def fingerprint(data: bytes) -> str:
    """sha256 (hex) of a checkpoint file's bytes: the name of the model in every cache."""
    return hashlib.sha256(bytes(data)).hexdigest()


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
        arrays[name] = np.array(array, order="C", copy=True)  # (np.ascontiguousarray makes a 0-d scalar shape (1,))
    return arrays


def meta_document(model, meta: dict) -> dict:
    """The JSON document describing ``model``; ``meta`` adds task, seed, vocabularies, metrics and so on."""
    from seqviz.models import family_of, num_parameters

    reserved = {"format", "format_version", "family", "config", "params"}
    clash = reserved & set(meta)
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


def dumps(model, meta: dict) -> bytes:
    """The checkpoint file as bytes: what :func:`save` writes, or a download offers.

    ``meta`` holds at least ``vocabularies`` ({name: Vocab or list of words}); usually also ``task``,
    ``seed``, ``steps``, ``train`` and ``metrics``. Deterministic: the same weights and meta give the same
    bytes, so leave volatile values (training seconds) out of ``meta`` when that matters.
    """
    from safetensors.numpy import save as save_arrays

    text = json.dumps(meta_document(model, meta), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    if len(text.encode("utf-8")) > MAX_JSON_BYTES:
        raise ValueError(f"the checkpoint's description is larger than {MAX_JSON_BYTES // 2**20} MB")
    return save_arrays(model_arrays(model), metadata={METADATA_KEY: text})


def save(path: str | os.PathLike, model, meta: dict) -> Path:
    """Write the checkpoint to ``path`` (".safetensors" added when missing), atomically; returns the path."""
    return write(path, dumps(model, meta))


def write(path: str | os.PathLike, data: bytes) -> Path:
    """Write a checkpoint file's bytes (:func:`dumps`) to ``path`` (".safetensors" added when missing),
    atomically; returns the path."""
    path = Path(path)
    if path.suffix != ".safetensors":
        path = path.with_name(path.name + ".safetensors")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


# ---------------------------------------------------------------------------------------------------------
# Reading: the header, then the document, then the weights


_NOT_SAFETENSORS = "The file is not a safetensors file (seqviz never opens pickled or other formats)."


def _header_size(prefix: bytes, total: int) -> int:
    if len(prefix) < 8 or total < 10:
        raise CheckpointError(_NOT_SAFETENSORS)
    (size,) = struct.unpack("<Q", prefix[:8])
    if size < 2 or size > MAX_HEADER_BYTES or size > total - 8:
        raise CheckpointError(_NOT_SAFETENSORS)
    return size


def _parse_header(raw: bytes) -> dict:
    try:
        header = json.loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise CheckpointError(_NOT_SAFETENSORS) from None
    if not isinstance(header, dict):
        raise CheckpointError(_NOT_SAFETENSORS)
    return header


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a JSON object repeats a key")
    return dict(pairs)


def _header_of(data: bytes) -> tuple[dict, int]:
    """The safetensors header of a whole file's bytes, and its size."""
    if len(data) > MAX_FILE_BYTES:
        raise CheckpointError(f"The file is larger than {MAX_FILE_BYTES // 2**20} MB, too large for a seqviz model.")
    size = _header_size(data[:8], len(data))
    return _parse_header(data[8 : 8 + size]), size


def _document_of(header: dict) -> dict:
    """The seqviz document in a safetensors header, checked for the format and every common field."""
    metadata = header.get("__metadata__")
    text = metadata.get(METADATA_KEY) if isinstance(metadata, dict) else None
    if not isinstance(text, str):
        raise CheckpointError("The file is a safetensors file but not a seqviz checkpoint (no seqviz description).")
    return parse_meta(text)


def read_meta(source: bytes | str | os.PathLike) -> dict:
    """The checkpoint's JSON document (family, config, task, metrics...), from the header only; no torch.

    ``source`` is the file's bytes or its path (then only the header is read from disk).
    """
    if isinstance(source, bytes | bytearray | memoryview):
        header, _ = _header_of(bytes(source))
        return _document_of(header)
    path = Path(source)
    try:
        total = path.stat().st_size
        if total > MAX_FILE_BYTES:
            raise CheckpointError(f"{path.name} is larger than {MAX_FILE_BYTES // 2**20} MB: not a seqviz model.")
        with path.open("rb") as file:
            size = _header_size(file.read(8), total)
            raw = file.read(size)
    except OSError as error:
        raise CheckpointError(f"{path.name} cannot be read ({error.strerror or error}).") from None
    return _document_of(_parse_header(raw))


def parse_meta(text: str | bytes) -> dict:
    """The JSON document, checked for the format and the fields every checkpoint has (no torch needed)."""
    if len(text) > MAX_JSON_BYTES:
        raise CheckpointError(f"The checkpoint's description is larger than {MAX_JSON_BYTES // 2**20} MB.")
    try:
        meta = json.loads(text, object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise CheckpointError(f"The checkpoint's description is not valid JSON ({str(error)[:80]}).") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError('The checkpoint\'s description is not a seqviz one (no "format": "seqviz-checkpoint").')
    if _depth(meta) > MAX_JSON_DEPTH:
        raise CheckpointError(f"The checkpoint's description is nested more than {MAX_JSON_DEPTH} levels deep.")
    version = meta.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise CheckpointError("The checkpoint's description has no valid format_version.")
    if not OLDEST_FORMAT_VERSION <= version <= FORMAT_VERSION:
        reads = (f"version {FORMAT_VERSION}" if OLDEST_FORMAT_VERSION == FORMAT_VERSION
                 else f"versions {OLDEST_FORMAT_VERSION} to {FORMAT_VERSION}")
        if abs(version) >= 10**6:
            raise CheckpointError("The checkpoint's format_version is not one seqviz knows.")
        if version > FORMAT_VERSION:
            raise CheckpointError(f"The checkpoint was written by a newer seqviz (format version {version}); this one "
                                  f"reads {reads}: update seqviz to open it.")
        raise CheckpointError(f"The checkpoint uses format version {version}, older than this seqviz reads ({reads}).")
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


# ---------------------------------------------------------------------------------------------------------
# Loading: validate, then build


def load(path: str | os.PathLike, frozen: bool = True) -> Checkpoint:
    """Load the checkpoint file at ``path`` (".safetensors" added when the path lacks it)."""
    path = Path(path)
    if not path.is_file() and path.suffix != ".safetensors":
        path = path.with_name(path.name + ".safetensors")
    if not path.is_file():
        raise CheckpointError(f"{path.name} is missing: there is no checkpoint file at {path}.")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise CheckpointError(f"{path.name} is larger than {MAX_FILE_BYTES // 2**20} MB, too large for a seqviz model.")
    return load_bytes(path.read_bytes(), frozen=frozen)


def load_bytes(data: bytes, frozen: bool = True) -> Checkpoint:
    """Load a checkpoint from its file's bytes (an upload, say), validating everything first."""
    data = bytes(data)
    header, header_size = _header_of(data)
    meta = _document_of(header)
    family, config = _config_from_meta(meta)
    vocabularies = _vocabularies_from_meta(meta, config)
    expected = _expected_tensors(family, config)
    arrays = _read_weights(data, header, header_size, expected)
    model = _build_with(family, config, arrays)
    model.eval()
    if frozen:
        model.requires_grad_(False)
    return Checkpoint(model=model, family=family, config=config, vocabularies=vocabularies, meta=meta,
                      fingerprint=fingerprint(data))


def _config_from_meta(meta: dict):
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


def _SkipInitialisation():
    """A torch function mode that skips in-place fills (``normal_``, ``uniform_``, ``zero_``...) of meta tensors.

    Filling a skeleton on the meta device computes nothing, yet torch routes it through Python references that
    import torch._dynamo: 1.8 s, the largest part of the first checkpoint a server loads.
    """
    import torch
    from torch.overrides import TorchFunctionMode

    class SkipInitialisation(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = getattr(func, "__name__", "")
            target = args[0] if args else kwargs.get("tensor")  # torch.nn.init passes it by name
            if name.endswith("_") and not name.startswith("_") and isinstance(target, torch.Tensor) and target.is_meta:
                return target
            return func(*args, **kwargs)

    return SkipInitialisation()


def _expected_tensors(family: str, config) -> dict[str, tuple[str, tuple[int, ...]]]:
    """name -> (safetensors dtype, shape) of a fresh model of this config, built without memory."""
    import torch

    from seqviz.models import FAMILIES

    model_class = FAMILIES[family].model_class
    if hasattr(model_class, "expected_shapes"):  # numpy models
        return {name: ("F32", shape) for name, shape in model_class.expected_shapes(config).items()}
    try:
        with torch.random.fork_rng(devices=[]), torch.device("meta"), _SkipInitialisation():
            skeleton = model_class(config)
    except Exception as error:  # a config the model refuses
        raise CheckpointError(f"A {family} model cannot be built from this config: {str(error)[:160]}") from None
    if getattr(skeleton, "family", family) != family:
        raise CheckpointError(f"The checkpoint says family {family!r} but its config builds a "
                              f"{skeleton.family!r} model.")
    expected = {}
    for name, tensor in skeleton.state_dict().items():
        dtype = _SAFETENSORS_DTYPES.get(str(tensor.dtype).removeprefix("torch."), str(tensor.dtype))
        expected[name] = (dtype, tuple(tensor.shape))
    total = sum(math.prod(shape) for _, shape in expected.values())
    if total > MAX_PARAMETERS:
        raise CheckpointError(f"The config describes a model of {total:,} numbers, more than seqviz loads.")
    return expected


def _read_weights(
    data: bytes, header: dict, header_size: int, expected: dict[str, tuple[str, tuple[int, ...]]]
) -> dict[str, np.ndarray]:
    """The weights as numpy arrays, after checking the safetensors header against ``expected``."""
    tensors = {name: entry for name, entry in header.items() if name != "__metadata__"}
    names, wanted = set(tensors), set(expected)
    if names != wanted:
        missing, extra = sorted(wanted - names), sorted(names - wanted)
        parts = ([f"missing {missing[:5]}"] if missing else []) + ([f"unexpected {[n[:40] for n in extra[:5]]}"]
                                                                    if extra else [])
        raise CheckpointError(f"The weights do not belong to this model: {'; '.join(parts)}.")
    end = 0
    for name, entry in tensors.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("shape"), list):
            raise CheckpointError(_NOT_SAFETENSORS)
        dtype, shape = expected[name]
        if entry.get("dtype") != dtype or entry["shape"] != list(shape):
            raise CheckpointError(
                f"The weights do not belong to this model: {name} is {str(entry.get('dtype'))[:10]} "
                f"{tuple(entry['shape'][:8])}, the model needs {dtype} {shape}."
            )
        offsets = entry.get("data_offsets")
        if not (isinstance(offsets, list) and len(offsets) == 2
                and all(isinstance(o, int) and not isinstance(o, bool) and o >= 0 for o in offsets)):
            raise CheckpointError(_NOT_SAFETENSORS)
        end = max(end, offsets[1])
    if 8 + header_size + end != len(data):
        raise CheckpointError("The file is truncated or has extra bytes: it is damaged.")
    try:
        from safetensors.numpy import load as load_arrays

        arrays = load_arrays(data)
    except Exception:  # safetensors' own checks (offsets, overlaps, sizes)
        raise CheckpointError(_NOT_SAFETENSORS) from None
    for name, array in arrays.items():
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            raise CheckpointError(f"The weights contain NaN or infinite numbers (in {name}).")
    return arrays


def _build_with(family: str, config, arrays: dict[str, np.ndarray]):
    from seqviz.models import FAMILIES

    model_class = FAMILIES[family].model_class
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
        raise CheckpointError(f"The weights do not fit the model: {str(error)[:160]}") from None
    return model
