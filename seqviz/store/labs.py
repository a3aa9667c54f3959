"""Labs: a browser's random key, kept by the browser; the store knows only its hash.

- :func:`new_key` makes a key (128 random bits, URL-safe base64); :func:`open_lab` finds the lab a key opens and
  refreshes its last-seen time, or makes a new lab with a new key when the key is missing, malformed, forged,
  stale or deleted: a key the store does not know is never adopted, so nobody can plant a key in a browser and
  read what it makes later.
- :func:`transfer_code` makes a short one-time code that :func:`join` turns into a key of the same lab for another
  browser ("take my lab to another device"); the code is kept hashed, works once, and expires.
- :func:`forget` deletes a lab and everything it made; :func:`purge` deletes the labs idle longer than
  seqviz.limits.LAB_KEEP_DAYS.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from dataclasses import dataclass

from sqlalchemy import delete, select, update

from seqviz import limits
from seqviz.store.engine import Database
from seqviz.store.schema import Lab, LabKey, LabTransfer, Model, Run, RunFollower

KEY_PATTERN = re.compile(rf"[A-Za-z0-9_-]{{{len(secrets.token_urlsafe(limits.LAB_KEY_BYTES))}}}")
CODE_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford's base32: no I, L, O or U to misread


@dataclass(frozen=True)
class OpenedLab:
    id: str  # the lab's id in the store (never shown, never the key)
    key: str  # the browser's key for it: the same one it sent, or a new one to keep in its cookie
    new: bool  # True when this is a fresh lab (the key sent, if any, opened nothing)


def new_key() -> str:
    return secrets.token_urlsafe(limits.LAB_KEY_BYTES)


def digest(secret: str) -> str:
    """sha256 of a key or code: 128 random bits need no slow hash, and the store never holds the secret."""
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def valid_key(key) -> bool:
    return isinstance(key, str) and KEY_PATTERN.fullmatch(key) is not None


def open_lab(db: Database, key: str | None, now: float | None = None) -> OpenedLab:
    """The lab ``key`` opens (its last-seen time refreshed), or a fresh lab with a fresh key."""
    now = time.time() if now is None else now
    with db.transaction() as session:
        if valid_key(key):
            lab_id = session.scalar(select(LabKey.lab_id).where(LabKey.key_hash == digest(key)))
            # The key's lab may go (purge, forget) between that read and this write: then it opens nothing.
            if lab_id is not None and session.execute(update(Lab).where(Lab.id == lab_id)
                                                      .values(last_seen_at=now)).rowcount:
                return OpenedLab(lab_id, key, new=False)
        return _create(session, now)


def _create(session, now: float) -> OpenedLab:
    lab = Lab(id=secrets.token_hex(16), created_at=now, last_seen_at=now)
    key = new_key()
    session.add(lab)
    session.flush()
    session.add(LabKey(key_hash=digest(key), lab_id=lab.id, created_at=now))
    return OpenedLab(lab.id, key, new=True)


def exists(db: Database, lab_id: str) -> bool:
    with db.transaction(reading=True) as session:
        return session.get(Lab, lab_id) is not None


def seen(db: Database, lab_id: str, now: float | None = None) -> None:
    """Note that somebody of the lab is looking (a page polled); written at most every LAB_SEEN_EVERY_S."""
    now = time.time() if now is None else now
    with db.transaction() as session:
        session.execute(update(Lab).where(Lab.id == lab_id, Lab.last_seen_at < now - limits.LAB_SEEN_EVERY_S)
                        .values(last_seen_at=now))


def last_seen(db: Database, lab_id: str) -> float | None:
    with db.transaction(reading=True) as session:
        return session.scalar(select(Lab.last_seen_at).where(Lab.id == lab_id))


def transfer_code(db: Database, lab_id: str, now: float | None = None) -> str:
    """A one-time code for another browser to join this lab, valid LAB_TRANSFER_MINUTES; earlier codes end."""
    now = time.time() if now is None else now
    code = random_code(limits.LAB_TRANSFER_CHARS)
    with db.transaction() as session:
        session.execute(delete(LabTransfer).where(LabTransfer.lab_id == lab_id))
        session.add(LabTransfer(code_hash=digest(code), lab_id=lab_id,
                                expires_at=now + limits.LAB_TRANSFER_MINUTES * 60))
    return code


def random_code(chars: int) -> str:
    """``chars`` random characters of CODE_ALPHABET: a code a person reads off one screen and types on another."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(chars))


def read_code(typed, chars: int) -> str | None:
    """A typed or linked code of ``chars`` characters in the alphabet's form (spaces and dashes dropped, O read as
    0, I and L as 1), or None when it cannot be one (then no query is made)."""
    if not isinstance(typed, str) or len(typed) > 4 * chars:
        return None
    code = re.sub(r"[\s-]", "", typed).upper().translate(str.maketrans("OIL", "011"))
    if len(code) != chars or any(ch not in CODE_ALPHABET for ch in code):
        return None
    return code


def normalise_code(typed) -> str | None:
    """A typed transfer code in the alphabet's form, or None (read_code)."""
    return read_code(typed, limits.LAB_TRANSFER_CHARS)


class JoinRefused(ValueError):
    """The code opens no lab (wrong, used or expired), or the labs together would hold more than a lab may."""


def join(db: Database, typed_code: str, current_lab: str | None, now: float | None = None) -> OpenedLab:
    """Join the lab a transfer code opens: a new key for this browser. What this browser's own lab held (its
    models and runs) moves into the joined lab, and its own lab is deleted. Raises JoinRefused."""
    now = time.time() if now is None else now
    code = normalise_code(typed_code)
    if code is None:
        raise JoinRefused(f"A code is {limits.LAB_TRANSFER_CHARS} letters and digits, as the other device shows it.")
    with db.transaction() as session:
        # Locked: two browsers typing one code at once wait for each other, and the second finds it used.
        transfer = session.get(LabTransfer, digest(code), with_for_update=True)
        if transfer is None or transfer.expires_at < now:
            raise JoinRefused("That code opens no lab: it may be mistyped, used already, or older than "
                              f"{limits.LAB_TRANSFER_MINUTES} minutes. Ask the other device for a new one.")
        target = transfer.lab_id
        session.delete(transfer)  # one use
        if current_lab is not None and current_lab != target:
            _move(session, current_lab, target)
        key = new_key()
        session.add(LabKey(key_hash=digest(key), lab_id=target, created_at=now))
        session.execute(update(Lab).where(Lab.id == target).values(last_seen_at=now))
        return OpenedLab(target, key, new=False)


def _move(session, source: str, target: str) -> None:
    from sqlalchemy import func

    session.scalar(select(Lab.id).where(Lab.id == target).with_for_update(key_share=True))  # models.add waits
    mine = session.scalars(select(Model).where(Model.lab_id == source)).all()
    theirs = dict(session.execute(select(Model.fingerprint, Model.id).where(Model.lab_id == target)).all())
    moving = [m for m in mine if m.fingerprint not in theirs]
    count, size = session.execute(select(func.count(Model.id), func.coalesce(func.sum(Model.size), 0))
                                  .where(Model.lab_id == target)).one()
    if count + len(moving) > limits.MAX_LAB_MODELS or size + sum(m.size for m in moving) > limits.MAX_LAB_MB * 2**20:
        raise JoinRefused(f"Together the two labs would hold more than {limits.MAX_LAB_MODELS} models or "
                          f"{limits.MAX_LAB_MB} MB: remove some of this browser's models first.")
    names = set(session.scalars(select(Model.name).where(Model.lab_id == target)))
    for model in moving:
        model.lab_id = target
        while model.name in names:
            model.name = f"{model.name} (moved)"
        names.add(model.name)
    session.execute(update(Run).where(Run.lab_id == source).values(lab_id=target))
    both = select(RunFollower.run_id).where(RunFollower.lab_id == target)  # a run both labs follow: theirs stays
    session.execute(delete(RunFollower).where(RunFollower.lab_id == source, RunFollower.run_id.in_(both)))
    session.execute(update(RunFollower).where(RunFollower.lab_id == source).values(lab_id=target))
    for model in mine:  # a run of a file the lab has already keeps its model: the lab's copy of the file
        if model.fingerprint in theirs:
            for table in (Run, RunFollower):
                session.execute(update(table).where(table.model_id == model.id)
                                .values(model_id=theirs[model.fingerprint]))
    session.flush()
    session.execute(delete(Lab).where(Lab.id == source))


def forget(db: Database, lab_id: str) -> None:
    """Delete the lab with its keys, codes, models, runs and snapshots."""
    from seqviz.store.runs import hand_over

    with db.transaction() as session:
        hand_over(session, [lab_id])  # a run other labs follow goes on for them
        session.execute(delete(Lab).where(Lab.id == lab_id))


def purge(db: Database, now: float | None = None) -> int:
    """Delete the labs nobody has opened for LAB_KEEP_DAYS; returns how many went."""
    now = time.time() if now is None else now
    from seqviz.store.runs import hand_over

    with db.transaction() as session:
        idle = list(session.scalars(select(Lab.id).where(Lab.last_seen_at < now - limits.LAB_KEEP_DAYS * 86400)))
        if not idle:
            return 0
        hand_over(session, idle)
        gone = session.execute(delete(Lab).where(Lab.id.in_(idle)))
        return gone.rowcount or 0
