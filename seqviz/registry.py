"""One registry for shipped and visitor models: a model is a value any page can take.

A model is addressed by a :class:`ModelRef`: its name, its family, its task, whether it ships with the
app, and the fingerprint of its checkpoint file (sha256 of the bytes). Every cache of traces and
measurements is keyed by the fingerprint, so two visitors' models never collide, and a visitor's model
never takes a shipped model's place under its name.

- Shipped models are the zoo's single-file checkpoints in ``assets/models/`` (:func:`shipped`).
- A visitor's models (uploaded, or trained in their browser) live in their browser's lab, in the lab store
  (seqviz.store.models): every tab of that browser sees them, after a reload and a server restart too, and
  no other browser does.

What a page can show is a *view* (seqviz.views); which models fit it follows from a reference's family and
task alone, so deciding needs no model loaded.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from seqviz import checkpoints, families, zoo
from seqviz.limits import MAX_MODEL_NAME_CHARS

YOURS_SUFFIX = " (yours)"  # ends a visitor model's label; such a value is never meaningful in a shared link


@dataclass(frozen=True)
class ModelRef:
    name: str  # the zoo's name for a shipped model; for a visitor's, the name they see (unique in the lab)
    fingerprint: str  # checkpoints.fingerprint of the file's bytes: the key of every cache
    family: str  # a key of seqviz.families.FAMILIES
    task: str | None  # the task it was trained on: "emails", "memory", "translation"
    shipped: bool

    @property
    def label(self) -> str:
        """How pickers, charts and the address name it: a shipped model by its zoo name (?model=dot), a
        visitor's by its name and "(yours)" (unique in the lab, and no shipped model's name)."""
        return self.name if self.shipped else f"{self.name}{YOURS_SUFFIX}"


def is_yours(value: str) -> bool:
    """Whether a picker's value (or one in the address) names a visitor's model."""
    return value.endswith(YOURS_SUFFIX)


# --- Shipped models -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Shipped:
    ref: ModelRef
    path: Path
    meta: dict


@dataclass(frozen=True)
class Broken:
    name: str
    path: Path
    problem: str  # one sentence a person can act on

    @property
    def advice(self) -> str:
        return (f"The shipped model {self.name!r} cannot be used: {self.problem} "
                f"Rebuild it with `python -m seqviz train {self.name}`.")


def shipped(directory: Path | None = None) -> tuple[dict[str, Shipped], dict[str, Broken]]:
    """Every zoo model whose file is on disk and readable (header only, no torch), and the ones that are not."""
    good: dict[str, Shipped] = {}
    broken: dict[str, Broken] = {}
    for name in zoo.NAMES:
        path = zoo.path(name, directory)
        if not path.is_file():
            broken[name] = Broken(name, path, f"{path.name} is missing from assets/models/.")
            continue
        data = path.read_bytes()
        try:
            meta = checkpoints.read_meta(data)
        except checkpoints.CheckpointError as error:
            broken[name] = Broken(name, path, f"{path.name} is damaged ({error})")
            continue
        ref = ModelRef(name, checkpoints.fingerprint(data), meta["family"], meta.get("task"), shipped=True)
        good[name] = Shipped(ref, path, meta)
    return good, broken


# --- A visitor's own models ---------------------------------------------------------------------


def clean_name(raw: str) -> str:
    """A short printable name from a file name or a checkpoint's "name" (no control or zero-width characters)."""
    text = unicodedata.normalize("NFC", str(raw))
    text = "".join(ch for ch in text if unicodedata.category(ch)[0] not in "CZ" or ch == " ")
    text = re.sub(r"\s+", " ", text).strip(" .-_")
    if len(text) > MAX_MODEL_NAME_CHARS:
        text = text[: MAX_MODEL_NAME_CHARS - 1].rstrip() + "…"
    return text or "model"


def check_fits_task(checkpoint) -> None:
    """A visitor's model is measured with the task's own evaluation: its task, labels and vocabularies must fit."""
    from seqviz.tasks import TASKS, task_labels

    task = checkpoint.task
    if task not in TASKS:
        raise checkpoints.CheckpointError(
            f"The checkpoint's task is {str(task)[:40]!r}; seqviz models are trained on {', '.join(TASKS)}.")
    expected = task_labels(task)
    if expected is not None and tuple(checkpoint.labels or ()) != tuple(expected):
        raise checkpoints.CheckpointError(
            f"A {task} model must answer with the labels {', '.join(expected)}; this one has "
            f"{', '.join(map(str, checkpoint.labels or ()))[:120] or 'none'}.")
    family = families.get(checkpoint.family)
    needs = {"src", "tgt"} if family.translates else {"tokens"}
    if set(checkpoint.vocabularies) != needs:
        raise checkpoints.CheckpointError(
            f"A {checkpoint.family} model needs the vocabularies {sorted(needs)}, "
            f"not {sorted(checkpoint.vocabularies)}.")
    if TASKS[task].kind not in family.trains_on:
        raise checkpoints.CheckpointError(f"A {checkpoint.family} model cannot be trained on the {task} task.")
