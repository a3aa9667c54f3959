"""One checkpoint format for every model: one ``NAME.safetensors`` file, weights and description together.

The file is an ordinary safetensors file (a little-endian u64 header length, a JSON header, the raw tensor
bytes). The header's ``__metadata__`` holds one entry, ``{"seqviz": "<JSON document>"}`` (safetensors metadata
values are strings), and that document says everything needed to rebuild the model and to read its numbers.
One way to read and write it, in three parts:

- :mod:`seqviz.checkpoints.file`: the bytes (sizes, the safetensors header, the tensors' table, NaN and
  infinity, atomic writes) and :class:`CheckpointError`;
- :mod:`seqviz.checkpoints.document`: the JSON document (its fields, the format version, the family's config
  with bounds on every size (seqviz.limits), the vocabularies) and :func:`added_in`, the way files outlive a
  new config field;
- :mod:`seqviz.checkpoints.loading`: models to and from files (:func:`dumps`, :func:`save`, :func:`load`,
  :func:`load_bytes`, :class:`Checkpoint`).

:func:`read_meta` reads only the header (no torch), so a page can show a model's metrics without loading it;
:func:`fingerprint` (sha256 of the bytes) names a file in every cache. Loading validates everything before it
builds anything, and nothing is ever unpickled; any problem raises :class:`CheckpointError` with one sentence a
person can act on. What a view draws of a loaded checkpoint is seqviz.tracing's, not the format's.

The names below are the ones callers use; the limits and versions are each module's own (a test that changes
one patches that module: ``seqviz.checkpoints.file.MAX_FILE_BYTES``, ``seqviz.checkpoints.document.FORMAT_VERSION``).
"""

from __future__ import annotations

from seqviz.checkpoints.document import (
    ADDED_IN,
    BEFORE,
    FORMAT,
    FORMAT_VERSION,
    OLDEST_FORMAT_VERSION,
    added_in,
    meta_document,
    parse_meta,
    read_meta,
)
from seqviz.checkpoints.file import MAX_FILE_BYTES, METADATA_KEY, CheckpointError, fingerprint, model_arrays, write
from seqviz.checkpoints.loading import Checkpoint, dumps, load, load_bytes, save

__all__ = [
    "ADDED_IN", "BEFORE", "FORMAT", "FORMAT_VERSION", "MAX_FILE_BYTES", "METADATA_KEY", "OLDEST_FORMAT_VERSION",
    "Checkpoint", "CheckpointError", "added_in", "dumps", "fingerprint", "load", "load_bytes", "meta_document",
    "model_arrays", "parse_meta", "read_meta", "save", "write",
]
