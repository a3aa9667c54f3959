"""Classes: a teacher's class, the labs in it, and its board of posted runs, in the lab store (so every server of a
lecture hall shows one board, and a visitor moved between servers keeps their class: membership is their lab's).

- :func:`start` makes a class: a short *code* for the students' link (``/class?c=CODE``: public, like a meeting
  code, so kept as it is) and a long *teacher key*, shown once and kept only as its sha256 (like a lab key).
- :func:`join` puts a lab in the class (opening the link again finds it) and hands it a value of the class's
  experiment (seqviz.store.experiments) that the fewest members hold.
- The board's posts are seqviz.store.board's. The teacher's acts (:func:`remove_post`, :func:`set_closed`,
  :func:`set_auto_post`, :func:`set_experiment`, :func:`delete_class`) need the key, or a lab that proved it
  (:func:`claim`); anything else raises :class:`NotTeacher`.
- :func:`purge` deletes classes idle longer than seqviz.limits.CLASS_KEEP_DAYS.

Writes that two servers could race lock the class's row first (``with_for_update``; SQLite lets one writer in at a
time anyway): thirty students posting at once each count the posts before them.
"""

from __future__ import annotations

import re
import secrets
import time
import unicodedata
from dataclasses import dataclass

from sqlalchemy import delete, select, update

from seqviz import limits
from seqviz.store.engine import Database
from seqviz.store.experiments import Experiment, next_value
from seqviz.store.labs import digest, random_code, read_code
from seqviz.store.schema import Class, ClassMember, ClassPost

KEY_PATTERN = re.compile(rf"[A-Za-z0-9_-]{{{len(secrets.token_urlsafe(limits.CLASS_KEY_BYTES))}}}")


class ClassNotFound(LookupError):
    """No class has this code: mistyped, deleted by its teacher, or purged after CLASS_KEEP_DAYS idle."""

    def __init__(self):
        super().__init__(f"No class has this code. It may be mistyped, or the class was deleted by its teacher or "
                         f"removed after {limits.CLASS_KEEP_DAYS:g} days without use. Ask your teacher for the link.")


class NotTeacher(PermissionError):
    """Only the class's teacher (its key, or a lab that proved it) may do this."""

    def __init__(self):
        super().__init__("Only the class's teacher can do this: open the teacher link, or type the teacher key.")


@dataclass(frozen=True)
class NewClass:
    id: str
    code: str  # for the students' link
    key: str  # the teacher's key: shown once, never kept


@dataclass(frozen=True)
class ClassInfo:
    id: str
    code: str
    name: str
    created_at: float
    last_active_at: float
    closed: bool
    auto_post: bool
    experiment: Experiment | None


@dataclass(frozen=True)
class Membership:
    class_id: str
    joined_at: float
    nickname: str | None
    value: object  # the experiment's value handed to this lab (None: none, or the lab is the teacher's)
    teacher: bool


def _info(row: Class) -> ClassInfo:
    return ClassInfo(row.id, row.code, row.name, row.created_at, row.last_active_at, bool(row.closed),
                     bool(row.auto_post), Experiment.from_dict(row.experiment))


def new_code() -> str:
    return random_code(limits.CLASS_CODE_CHARS)


def normalise_code(typed) -> str | None:
    """A typed or linked class code in the alphabet's form, or None (seqviz.store.labs.read_code)."""
    return read_code(typed, limits.CLASS_CODE_CHARS)


def clean_text(text, most: int) -> str:
    """Text a person typed, made safe to keep and show as a single line: control and format characters (NUL, a
    right-to-left override, zero-width joiners) dropped, runs of spaces made one, cut to ``most`` characters."""
    if not isinstance(text, str):
        return ""
    kept = "".join(" " if ch.isspace() else ch for ch in unicodedata.normalize("NFC", text)
                   if ch.isspace() or not unicodedata.category(ch).startswith("C"))
    return " ".join(kept.split())[:most].strip()


def clean_nickname(text) -> str:
    return clean_text(text, limits.CLASS_NICKNAME_CHARS)


def start(db: Database, name: str, lab_id: str | None = None, experiment: Experiment | None = None,
          auto_post: bool = False, now: float | None = None) -> NewClass:
    """A new class; the lab that started it (if given) is its teacher. The key is returned once, never kept."""
    now = time.time() if now is None else now
    key = secrets.token_urlsafe(limits.CLASS_KEY_BYTES)
    with db.transaction() as session:
        code = new_code()
        while session.scalar(select(Class.id).where(Class.code == code)) is not None:  # 1 in 10^12: try again
            code = new_code()
        row = Class(id=secrets.token_hex(16), code=code, key_hash=digest(key),
                    name=clean_text(name, limits.CLASS_NAME_CHARS) or "A class", created_at=now, last_active_at=now,
                    closed=False, auto_post=bool(auto_post),
                    experiment=None if experiment is None else experiment.check().to_dict())
        session.add(row)
        if lab_id is not None:
            session.flush()
            session.add(ClassMember(class_id=row.id, lab_id=lab_id, joined_at=now, teacher=True))
        return NewClass(row.id, code, key)


def find(db: Database, code) -> ClassInfo | None:
    """The class of a code (None when the code is malformed or opens none)."""
    code = normalise_code(code)
    if code is None:
        return None
    with db.transaction(reading=True) as session:
        row = session.scalar(select(Class).where(Class.code == code))
        return None if row is None else _info(row)


def locked_class(session, code) -> Class:
    """The class's row, locked until the transaction ends; ClassNotFound when there is none."""
    code = normalise_code(code)
    row = None if code is None else session.scalar(select(Class).where(Class.code == code).with_for_update())
    if row is None:
        raise ClassNotFound()
    return row


def _membership(row: ClassMember) -> Membership:
    return Membership(row.class_id, row.joined_at, row.nickname, (row.value or {}).get("value"), bool(row.teacher))


def join(db: Database, code, lab_id: str, now: float | None = None) -> tuple[ClassInfo, Membership]:
    """Put the lab in the class (again: it keeps its value, nickname and posts), hand it a value of the experiment
    when it has none, and note the class active. Raises ClassNotFound."""
    now = time.time() if now is None else now
    with db.transaction() as session:
        row = locked_class(session, code)  # two students joining at once are handed values in turn
        row.last_active_at = now
        member = session.get(ClassMember, (row.id, lab_id))
        if member is None:
            member = ClassMember(class_id=row.id, lab_id=lab_id, joined_at=now, teacher=False)
            session.add(member)
        experiment = Experiment.from_dict(row.experiment)
        if experiment is not None and not member.teacher and experiment.value_of(
                {experiment.setting: (member.value or {}).get("value")}) is None:
            member.value = {"value": _hand_out(session, row.id, experiment)}
        session.flush()
        return _info(row), _membership(member)


def _hand_out(session, class_id: str, experiment: Experiment):
    held = [(v or {}).get("value") for v in session.scalars(
        select(ClassMember.value).where(ClassMember.class_id == class_id, ClassMember.teacher.is_(False)))]
    posted = [experiment.value_of(spec) for spec in session.scalars(
        select(ClassPost.spec).where(ClassPost.class_id == class_id))]
    return next_value(experiment, held, posted)


def membership(db: Database, class_id: str, lab_id: str) -> Membership | None:
    with db.transaction(reading=True) as session:
        row = session.get(ClassMember, (class_id, lab_id))
        return None if row is None else _membership(row)


def classes_of(db: Database, lab_id: str) -> list[ClassInfo]:
    """The classes the lab is in, the one it joined (or opened) last first."""
    with db.transaction(reading=True) as session:
        rows = session.scalars(select(Class).join(ClassMember, ClassMember.class_id == Class.id)
                               .where(ClassMember.lab_id == lab_id).order_by(ClassMember.joined_at.desc())).all()
        return [_info(row) for row in rows]


def set_nickname(db: Database, code, lab_id: str, nickname) -> str:
    """The name the lab's posts go under (the automatic ones too); returns it cleaned."""
    nickname = clean_nickname(nickname)
    with db.transaction() as session:
        row = locked_class(session, code)
        session.execute(update(ClassMember).where(ClassMember.class_id == row.id, ClassMember.lab_id == lab_id)
                        .values(nickname=nickname or None))
    return nickname


# --- The teacher ------------------------------------------------------------------------------------------


def _is_teacher(session, row: Class, key, lab_id: str | None) -> bool:
    if isinstance(key, str) and KEY_PATTERN.fullmatch(key) and secrets.compare_digest(digest(key), row.key_hash):
        return True
    return lab_id is not None and bool(session.scalar(select(ClassMember.teacher).where(
        ClassMember.class_id == row.id, ClassMember.lab_id == lab_id)))


def _as_teacher(session, code, key, lab_id) -> Class:
    row = locked_class(session, code)
    if not _is_teacher(session, row, key, lab_id):
        raise NotTeacher()
    return row


def claim(db: Database, code, key, lab_id: str, now: float | None = None) -> None:
    """The lab proves the teacher's key: from now on it manages the class without typing it (a reload, another
    server). Raises NotTeacher for a wrong key (the lab stays a student) or ClassNotFound."""
    now = time.time() if now is None else now
    with db.transaction() as session:
        row = locked_class(session, code)
        if not _is_teacher(session, row, key, None):
            raise NotTeacher()
        member = session.get(ClassMember, (row.id, lab_id))
        if member is None:
            session.add(ClassMember(class_id=row.id, lab_id=lab_id, joined_at=now, teacher=True))
        else:
            member.teacher, member.value = True, None


def is_teacher(db: Database, code, key=None, lab_id: str | None = None) -> bool:
    with db.transaction(reading=True) as session:
        row = session.scalar(select(Class).where(Class.code == normalise_code(code)))
        return row is not None and _is_teacher(session, row, key, lab_id)


def set_closed(db: Database, code, closed: bool, *, key=None, lab_id=None) -> None:
    with db.transaction() as session:
        row = _as_teacher(session, code, key, lab_id)
        row.closed, row.last_active_at = bool(closed), time.time()


def set_auto_post(db: Database, code, on: bool, *, key=None, lab_id=None) -> None:
    with db.transaction() as session:
        row = _as_teacher(session, code, key, lab_id)
        row.auto_post, row.last_active_at = bool(on), time.time()


def set_experiment(db: Database, code, experiment: Experiment | None, *, key=None, lab_id=None) -> None:
    """A new experiment (or none): every student is handed a value of it again as they next open the class."""
    checked = None if experiment is None else experiment.check().to_dict()
    with db.transaction() as session:
        row = _as_teacher(session, code, key, lab_id)
        row.experiment, row.last_active_at = checked, time.time()
        session.execute(update(ClassMember).where(ClassMember.class_id == row.id).values(value=None))


def remove_post(db: Database, code, post_id: int, *, key=None, lab_id=None) -> bool:
    with db.transaction() as session:
        row = _as_teacher(session, code, key, lab_id)
        return bool(session.execute(delete(ClassPost).where(ClassPost.class_id == row.id,
                                                            ClassPost.id == post_id)).rowcount)


def delete_class(db: Database, code, *, key=None, lab_id=None) -> None:
    """The class, its members and its posts go (the students' labs and models stay)."""
    with db.transaction() as session:
        row = _as_teacher(session, code, key, lab_id)
        session.execute(delete(Class).where(Class.id == row.id))


SEEN_EVERY_S = 3600.0  # a class's use is written at most this often (the board is looked at every few seconds)


def seen(db: Database, code, now: float | None = None) -> None:
    """Somebody looked at the class's board: a class that is looked at is in use, and is not purged."""
    now = time.time() if now is None else now
    with db.transaction() as session:
        session.execute(update(Class).where(Class.code == normalise_code(code),
                                            Class.last_active_at < now - SEEN_EVERY_S).values(last_active_at=now))


def purge(db: Database, now: float | None = None) -> int:
    """Delete the classes nobody has used for CLASS_KEEP_DAYS; returns how many went."""
    now = time.time() if now is None else now
    with db.transaction() as session:
        gone = session.execute(delete(Class).where(Class.last_active_at < now - limits.CLASS_KEEP_DAYS * 86400))
        return gone.rowcount or 0
