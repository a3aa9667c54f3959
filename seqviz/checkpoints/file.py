"""The checkpoint file itself: a plain safetensors file, read and written here and nowhere else.

A little-endian u64 header length, a JSON header (the tensor table, and ``__metadata__`` holding the seqviz
document as a string under :data:`METADATA_KEY`), then the raw tensor bytes. This module knows the bytes: sizes,
the header, the tensors' table against the tensors a model needs, NaN and infinity, atomic writes. What the
document says is seqviz.checkpoints.document's; models are seqviz.checkpoints.loading's. No torch, no pickle.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from pathlib import Path
from typing import Any

import numpy as np

METADATA_KEY = "seqviz"  # the entry of the safetensors header's __metadata__ that holds the document
MAX_FILE_BYTES = 64 * 1024 * 1024  # a checkpoint larger than this is refused unread
MAX_HEADER_BYTES = 8 * 1024 * 1024  # the safetensors header: tensor table plus the JSON document
MAX_JSON_BYTES = 4 * 1024 * 1024  # the JSON document inside it
SUFFIX = ".safetensors"

SAFETENSORS_DTYPES = {"float32": "F32", "float64": "F64", "float16": "F16", "int64": "I64", "int32": "I32",
                      "bool": "BOOL", "bfloat16": "BF16", "uint8": "U8"}  # numpy/torch dtype name -> safetensors

NOT_SAFETENSORS = "The file is not a safetensors file (seqviz never opens pickled or other formats)."


class CheckpointError(ValueError):
    """A file that is not a valid seqviz checkpoint; the message says what is wrong, in plain words."""


def fingerprint(data: bytes) -> str:
    """sha256 (hex) of a checkpoint file's bytes: the name of the model in every cache."""
    return hashlib.sha256(bytes(data)).hexdigest()


def _too_large(name: str = "The file") -> CheckpointError:
    return CheckpointError(f"{name} is larger than {MAX_FILE_BYTES // 2**20} MB, too large for a seqviz model.")


# ---------------------------------------------------------------------------------------------------------
# Writing


def model_arrays(model) -> dict[str, np.ndarray]:
    """The model's weights as contiguous numpy arrays, by their state_dict names (a 0-d scalar keeps shape ())."""
    arrays = {}
    for name, value in model.state_dict().items():
        array = value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)
        arrays[name] = np.array(array, order="C", copy=True)  # (np.ascontiguousarray makes a 0-d scalar shape (1,))
    return arrays


def encode(arrays: dict[str, np.ndarray], document: dict) -> bytes:
    """The file's bytes: ``arrays`` as safetensors, ``document`` (JSON-ready) in its header. Deterministic."""
    from safetensors.numpy import save as save_arrays

    text = json.dumps(document, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    if len(text.encode("utf-8")) > MAX_JSON_BYTES:
        raise ValueError(f"the checkpoint's description is larger than {MAX_JSON_BYTES // 2**20} MB")
    return save_arrays(arrays, metadata={METADATA_KEY: text})


def with_suffix(path: str | os.PathLike) -> Path:
    """``path`` with ".safetensors" added when it lacks it."""
    path = Path(path)
    return path if path.suffix == SUFFIX else path.with_name(path.name + SUFFIX)


def write(path: str | os.PathLike, data: bytes) -> Path:
    """Write a checkpoint file's bytes (seqviz.checkpoints.dumps) to ``path`` (".safetensors" added when missing),
    atomically; returns the path."""
    path = with_suffix(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


# ---------------------------------------------------------------------------------------------------------
# Reading: the whole file, the header, the document's text, the weights


def read(path: str | os.PathLike) -> bytes:
    """The bytes of the checkpoint file at ``path`` (".safetensors" added when the path is no file and lacks it),
    refused unread when it is missing or too large."""
    path = Path(path)
    if not path.is_file() and path.suffix != SUFFIX:
        path = with_suffix(path)
    if not path.is_file():
        raise CheckpointError(f"{path.name} is missing: there is no checkpoint file at {path}.")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise _too_large(path.name)
    return path.read_bytes()


def _header_size(prefix: bytes, total: int) -> int:
    if len(prefix) < 8 or total < 10:
        raise CheckpointError(NOT_SAFETENSORS)
    (size,) = struct.unpack("<Q", prefix[:8])
    if size < 2 or size > MAX_HEADER_BYTES or size > total - 8:
        raise CheckpointError(NOT_SAFETENSORS)
    return size


def no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    """A ``json.loads`` object hook that refuses an object repeating a key (which value would count?)."""
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a JSON object repeats a key")
    return dict(pairs)


def _parse_header(raw: bytes) -> dict:
    try:
        header = json.loads(raw.decode("utf-8"), object_pairs_hook=no_duplicates)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise CheckpointError(NOT_SAFETENSORS) from None
    if not isinstance(header, dict):
        raise CheckpointError(NOT_SAFETENSORS)
    return header


def header_of(data: bytes) -> tuple[dict, int]:
    """The safetensors header of a whole file's bytes, and its size."""
    if len(data) > MAX_FILE_BYTES:
        raise _too_large()
    size = _header_size(data[:8], len(data))
    return _parse_header(data[8 : 8 + size]), size


def read_header(path: str | os.PathLike) -> dict:
    """The safetensors header of the file at ``path``, reading only the header from disk."""
    path = Path(path)
    try:
        total = path.stat().st_size
        if total > MAX_FILE_BYTES:
            raise _too_large(path.name)
        with path.open("rb") as file:
            size = _header_size(file.read(8), total)
            raw = file.read(size)
    except OSError as error:
        raise CheckpointError(f"{path.name} cannot be read ({error.strerror or error}).") from None
    return _parse_header(raw)


def document_text(header: dict) -> str:
    """The seqviz document's JSON text in a safetensors header (parsed and checked by seqviz.checkpoints.document)."""
    metadata = header.get("__metadata__")
    text = metadata.get(METADATA_KEY) if isinstance(metadata, dict) else None
    if not isinstance(text, str):
        raise CheckpointError("The file is a safetensors file but not a seqviz checkpoint (no seqviz description).")
    return text


def read_weights(
    data: bytes, header: dict, header_size: int, expected: dict[str, tuple[str, tuple[int, ...]]]
) -> dict[str, np.ndarray]:
    """The weights as numpy arrays, after checking the safetensors header against ``expected``
    (name -> (safetensors dtype, shape)): names, dtypes, shapes, offsets, the file's length, then NaN."""
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
            raise CheckpointError(NOT_SAFETENSORS)
        dtype, shape = expected[name]
        if entry.get("dtype") != dtype or entry["shape"] != list(shape):
            raise CheckpointError(
                f"The weights do not belong to this model: {name} is {str(entry.get('dtype'))[:10]} "
                f"{tuple(entry['shape'][:8])}, the model needs {dtype} {shape}."
            )
        offsets = entry.get("data_offsets")
        if not (isinstance(offsets, list) and len(offsets) == 2
                and all(isinstance(o, int) and not isinstance(o, bool) and o >= 0 for o in offsets)):
            raise CheckpointError(NOT_SAFETENSORS)
        end = max(end, offsets[1])
    if 8 + header_size + end != len(data):
        raise CheckpointError("The file is truncated or has extra bytes: it is damaged.")
    try:
        from safetensors.numpy import load as load_arrays

        arrays = load_arrays(data)
    except Exception:  # safetensors' own checks (offsets, overlaps, sizes)
        raise CheckpointError(NOT_SAFETENSORS) from None
    for name, array in arrays.items():
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            raise CheckpointError(f"The weights contain NaN or infinite numbers (in {name}).")
    return arrays
