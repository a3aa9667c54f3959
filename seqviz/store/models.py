"""A lab's models: checkpoint files it uploaded or trained, with what pickers show of them.

A file is checked whole before it is kept (:func:`seqviz.checkpoints.load_bytes` and the task's own fit,
:func:`seqviz.registry.check_fits_task`), and again whenever it is read back (the page loads it through the same
checks): the database is never trusted more than an upload. A lab keeps at most seqviz.limits.MAX_LAB_MODELS
models and MAX_LAB_MB of files; a model's name is unique in its lab and never a shipped model's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import delete, func, select

from seqviz import checkpoints, limits
from seqviz.store.engine import Database
from seqviz.store.schema import Lab, Model


@dataclass(frozen=True)
class StoredModel:
    """One of a lab's models, without its bytes (:func:`data` reads them)."""

    fingerprint: str
    name: str
    family: str
    task: str | None
    origin: str  # "uploaded" or "trained here"
    size: int
    created_at: float


def _stored(row: Model) -> StoredModel:
    return StoredModel(row.fingerprint, row.name, row.family, row.task, row.origin, row.size, row.created_at)


def checked(data: bytes):
    """The loaded checkpoint, if ``data`` is a usable seqviz model; raises CheckpointError with a plain sentence."""
    from seqviz.registry import check_fits_task

    checkpoint = checkpoints.load_bytes(data)
    check_fits_task(checkpoint)
    return checkpoint


def listed(db: Database, lab_id: str) -> list[StoredModel]:
    """The lab's models in the order they came."""
    with db.transaction(reading=True) as session:
        rows = session.scalars(select(Model).where(Model.lab_id == lab_id).order_by(Model.id)).all()
        return [_stored(row) for row in rows]


def data(db: Database, lab_id: str, fingerprint: str) -> bytes | None:
    with db.transaction(reading=True) as session:
        return session.scalar(select(Model.data).where(Model.lab_id == lab_id, Model.fingerprint == fingerprint))


def add(db: Database, lab_id: str, data: bytes, filename: str = "model", origin: str = "uploaded",
        taken: set[str] | frozenset[str] = frozenset(), within_limits: bool = True) -> tuple[StoredModel, bool]:
    """Check a checkpoint file and keep it in the lab; returns (the model, whether it is new to the lab).

    Raises CheckpointError when the file is not a usable model or the lab is full (``within_limits=False``, for
    a run the lab was allowed to start, keeps its model even then). ``taken``: names in use (the shipped ones)."""
    from seqviz.registry import clean_name

    data = bytes(data)
    fingerprint = checkpoints.fingerprint(data)
    with db.transaction() as session:
        found = session.scalar(select(Model).where(Model.lab_id == lab_id, Model.fingerprint == fingerprint))
        if found is not None:
            return _stored(found), False
    checkpoint = checked(data)  # outside the transaction: loading takes a moment
    with db.transaction() as session:
        # The lab's row locked (PostgreSQL; SQLite lets one writer in at a time anyway): two tabs adding at once
        # take turns, so the second finds the first's file, name and usage.
        if session.scalar(select(Lab.id).where(Lab.id == lab_id).with_for_update(key_share=True)) is None:
            raise checkpoints.CheckpointError("This lab is no longer in the store (forgotten, or idle too long): "
                                              "reload the page for a new one.")
        found = session.scalar(select(Model).where(Model.lab_id == lab_id, Model.fingerprint == fingerprint))
        if found is not None:
            return _stored(found), False
        count, size = session.execute(select(func.count(Model.id), func.coalesce(func.sum(Model.size), 0))
                                      .where(Model.lab_id == lab_id)).one()
        if within_limits and count >= limits.MAX_LAB_MODELS:
            raise checkpoints.CheckpointError(
                f"Your lab already has {limits.MAX_LAB_MODELS} models: remove one before adding another.")
        if within_limits and size + len(data) > limits.MAX_LAB_MB * 2**20:
            raise checkpoints.CheckpointError(
                f"Your lab's models would take more than {limits.MAX_LAB_MB} MB: remove one before adding this.")
        used = set(taken) | set(session.scalars(select(Model.name).where(Model.lab_id == lab_id)))
        wanted = clean_name(checkpoint.meta.get("name") or Path(str(filename)).stem)
        name, n = wanted, 2
        while name in used:
            name, n = f"{wanted} ({n})", n + 1
        row = Model(lab_id=lab_id, fingerprint=fingerprint, name=name, family=checkpoint.family,
                    task=checkpoint.task, origin=origin, size=len(data), data=data, created_at=time.time())
        session.add(row)
        session.flush()
        return _stored(row), True


def model_id(db: Database, lab_id: str, fingerprint: str) -> int | None:
    with db.transaction(reading=True) as session:
        return session.scalar(select(Model.id).where(Model.lab_id == lab_id, Model.fingerprint == fingerprint))


def remove(db: Database, lab_id: str, fingerprint: str) -> None:
    with db.transaction() as session:
        session.execute(delete(Model).where(Model.lab_id == lab_id, Model.fingerprint == fingerprint))


def usage(db: Database, lab_id: str) -> tuple[int, int]:
    """(models, bytes) the lab keeps."""
    with db.transaction(reading=True) as session:
        count, size = session.execute(select(func.count(Model.id), func.coalesce(func.sum(Model.size), 0))
                                      .where(Model.lab_id == lab_id)).one()
        return int(count), int(size)
