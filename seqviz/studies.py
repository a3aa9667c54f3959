"""Held-out studies shipped beside the zoo's models: measured once, read by every server at once.

A view that measures a model on held-out data (its ``held_out``: /explain's τ over held-out sentences, the
translations with attention replaced, the emails' permutation test) takes seconds per model. A visitor's own model
is measured live, once per server; a shipped model carries its studies in ``<model>.studies.json`` beside its
checkpoint, so /explain opens at once on a fresh server and thirty students opening it wait for nothing:

    {"fingerprint": the checkpoint's, "code": the measuring code's version, "studies": {view name: study}}

A file whose fingerprint or code version does not match is not read (the study is then measured live, as for a
visitor's model), and tests/unit/test_studies.py fails until ``python -m seqviz.studies`` writes it again. The
numbers are those of the machine that measured them, as a checkpoint's own held-out metrics are.

Studies are dicts of numbers, strings, lists and the analysis' dataclasses; they are stored as JSON (no pickle), a
dataclass as its fields and its class's name, read back only into classes of seqviz.analysis.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import json
import os
import sys
from pathlib import Path

import numpy as np

from seqviz.run_identity import sources_version

MEASURING_CODE = ("analysis", "tasks", "data", "models", "text.py", "limits.py")  # under seqviz/, with the views
SUFFIX = ".studies.json"
_CLASS, _TUPLE = "__dataclass__", "__tuple__"


def study_views() -> list:
    """The views whose held-out studies ship beside the zoo's models (``ships_study``: summaries of seconds of
    measuring, a few kilobytes; not the held-out states a view searches)."""
    from seqviz import views

    return [view for view in views.VIEWS.values() if view.ships_study]


@functools.cache
def code_version() -> str:
    """The version of the code a study's numbers follow from (sha256 of its sources and of the modules of the views
    that measure; once per process)."""
    modules = sorted({f"views/{Path(sys.modules[type(view).__module__].__file__).name}" for view in study_views()})
    return sources_version((*MEASURING_CODE, *modules))


def path_for(checkpoint_path: Path) -> Path:
    return Path(checkpoint_path).with_suffix(SUFFIX)


def encode(value):
    """A study as JSON-ready values (dataclasses tagged with their class, tuples kept as tuples)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {_CLASS: f"{type(value).__module__}:{type(value).__qualname__}", **fields}
    if isinstance(value, dict):
        return {str(key): encode(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return {_TUPLE: [encode(item) for item in value]}
    if isinstance(value, list):
        return [encode(item) for item in value]
    if isinstance(value, np.ndarray):
        return encode(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    return value


def decode(value):
    """:func:`encode` undone; a dataclass named outside seqviz.analysis is refused (ValueError)."""
    if isinstance(value, list):
        return [decode(item) for item in value]
    if not isinstance(value, dict):
        return value
    if _TUPLE in value:
        return tuple(decode(item) for item in value[_TUPLE])
    if _CLASS in value:
        module, _, name = str(value[_CLASS]).partition(":")
        if not module.startswith("seqviz.analysis."):
            raise ValueError(f"a study names a class outside seqviz.analysis: {value[_CLASS]!r:.80}")
        cls = getattr(importlib.import_module(module), name)
        return cls(**{key: decode(item) for key, item in value.items() if key != _CLASS})
    return {key: decode(item) for key, item in value.items()}


def read(checkpoint_path: Path, fingerprint: str) -> dict:
    """The studies shipped beside this checkpoint (view name -> study), {} when there are none or they are stale
    (another checkpoint's, or measured by other code) or unreadable."""
    path = path_for(checkpoint_path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        if document.get("fingerprint") != fingerprint or document.get("code") != code_version():
            return {}
        return {str(view): decode(study) for view, study in document["studies"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def measure(checkpoint) -> dict:
    """Every held-out study the views make of this model (view name -> study)."""
    from seqviz.tasks import make_task

    task = make_task(checkpoint.task, vocabularies=checkpoint.vocabularies)
    return {view.name: view.held_out(checkpoint.model, task) for view in study_views()
            if view.fits(checkpoint.family, checkpoint.task)}


def write(checkpoint_path: Path, checkpoint, studies: dict) -> Path:
    """Write the studies beside the checkpoint (atomically: a reader never sees half a file)."""
    path = path_for(checkpoint_path)
    document = {"fingerprint": checkpoint.fingerprint, "code": code_version(), "studies": encode(studies)}
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(partial, path)
    return path


def main(argv: list[str] | None = None) -> int:
    """python -m seqviz.studies [NAME ...]: measure and write the shipped models' studies (all, or those named);
    with no names, the tasks' model fields too (seqviz.task_fields), which follow from the same code."""
    from seqviz import checkpoints, registry
    from seqviz import task_fields as fields
    from seqviz.runtime import configure_torch

    configure_torch()
    shipped, _ = registry.shipped()
    named = argv if argv is not None else sys.argv[1:]
    if not named:
        print(f"tasks: model fields -> {fields.write()}", flush=True)
    names = named or list(shipped)
    for name in names:
        checkpoint = checkpoints.load(shipped[name].path)
        studies = measure(checkpoint)
        if studies:
            print(f"{name}: {', '.join(studies)} -> {write(shipped[name].path, checkpoint, studies)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
