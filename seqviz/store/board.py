"""A class's board: the runs its students posted, with what each measured on held-out data, and its model.

:func:`post` puts one of a lab's finished runs on the board under a nickname (the lab must be in the class, the
class open, the board not full); :func:`take_back` removes one of the lab's own posts, never another's (the
teacher removes any: seqviz.store.classes.remove_post). :func:`auto_post` posts a member's finished runs where the
teacher turned that on. :func:`model_data` reads a post's model from its poster's lab, for "Use this model"
(which adds it to the visitor's lab through seqviz.store.models.add, checked as an upload is).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from sqlalchemy import delete, func, select

from seqviz import limits
from seqviz.store.classes import ClassNotFound, clean_nickname, find, locked_class, membership, normalise_code
from seqviz.store.engine import Database
from seqviz.store.schema import Class, ClassMember, ClassPost, Lab, Model, Run, RunFollower

ACTIVE = ("queued", "running")  # seqviz.progress.ACTIVE (not imported: that module is the worker's)


class PostRefused(ValueError):
    """The post was not made; the message says why."""


@dataclass(frozen=True)
class Post:
    id: int
    lab_id: str | None  # the poster's lab (None once it is gone): never shown, only compared with the visitor's
    run_id: str
    nickname: str
    spec: dict  # seqviz.runs.RunSpec's fields
    measures: dict  # held-out measure -> number (:func:`measures`)
    train_seconds: float | None
    fingerprint: str | None
    has_model: bool  # the poster's lab still holds its model ("Use this model" can copy it)
    posted_at: float


def measures(task: str, metrics) -> dict[str, float]:
    """A run's held-out metrics (seqviz.tasks' evaluate) as the board's flat measures, each a share in [0, 1]:
    the task's summary, and for a translator exact match and token accuracy per source-length bucket
    ("exact_match@25-30"): the chapter's curve against sentence length."""
    if not isinstance(metrics, dict):
        return {}
    found: dict[str, object] = {}
    if task == "translation":
        found = {k: metrics.get(k) for k in ("exact_match_le30", "token_accuracy_le30", "exact_match_ge25",
                                             "token_accuracy_ge25")}
        pairs = metrics.get("chapter_pairs_exact")
        found["chapter_pairs"] = pairs / 6 if isinstance(pairs, int | float) else None
        for label, bucket in (metrics.get("buckets") or {}).items():
            if isinstance(bucket, dict):
                found[f"exact_match@{label}"] = bucket.get("exact_match")
                found[f"token_accuracy@{label}"] = bucket.get("token_accuracy")
    elif task == "emails":
        found = {k: metrics.get(k) for k in ("test_accuracy", "twins_accuracy", "twins_same_prediction")}
    elif task == "memory":
        found = {f"accuracy_at_{d}": v for d, v in (metrics.get("accuracy_by_distance") or {}).items()}
    return {str(k)[:40]: float(v) for k, v in found.items()
            if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)}


def post(db: Database, code, lab_id: str, *, run_id: str, nickname, spec: dict, metrics, train_seconds=None,
         fingerprint: str | None = None, now: float | None = None) -> int:
    """Put one of the lab's finished runs on the board; returns the post's id. ``fingerprint``: its model, which
    must be in the lab (the post refers to it; "Use this model" copies it). Raises PostRefused or ClassNotFound."""
    now = time.time() if now is None else now
    nickname = clean_nickname(nickname)
    if not nickname:
        raise PostRefused("Type a nickname first: it is how the class sees your run.")
    if not isinstance(spec, dict) or spec.get("task") not in ("emails", "memory", "translation"):
        raise PostRefused("Only a finished run of this lab can be posted.")
    with db.transaction() as session:
        row = locked_class(session, code)  # posts of one class take turns: each counts the ones before it
        if row.closed:
            raise PostRefused("The class is closed to new posts: the teacher closed it.")
        member = session.get(ClassMember, (row.id, lab_id))
        if member is None:
            raise PostRefused("Open the class link first: only the class's members post to its board.")
        if session.scalar(select(ClassPost.id).where(ClassPost.class_id == row.id, ClassPost.lab_id == lab_id,
                                                     ClassPost.run_id == run_id)) is not None:
            raise PostRefused("This run is on the board already.")
        total, yours = session.execute(select(func.count(ClassPost.id), func.count(ClassPost.id).filter(
            ClassPost.lab_id == lab_id)).where(ClassPost.class_id == row.id)).one()
        if total >= limits.CLASS_MAX_POSTS:
            raise PostRefused(f"The board is full ({limits.CLASS_MAX_POSTS} posts): the teacher can remove some.")
        if yours >= limits.CLASS_MAX_POSTS_PER_LAB:
            raise PostRefused(f"You have {limits.CLASS_MAX_POSTS_PER_LAB} posts on this board already: take one "
                              "back first.")
        model_id = None
        if fingerprint is not None:
            model_id = session.scalar(select(Model.id).where(Model.lab_id == lab_id, Model.fingerprint == fingerprint))
        found = ClassPost(class_id=row.id, lab_id=lab_id, run_id=str(run_id)[:32], nickname=nickname,
                          spec={k: v for k, v in spec.items() if k != "name"}, measures=measures(spec["task"], metrics),
                          train_seconds=None if train_seconds is None else float(train_seconds),
                          fingerprint=fingerprint if model_id is not None else None, model_id=model_id, posted_at=now)
        session.add(found)
        member.nickname = nickname
        row.last_active_at = now
        session.flush()
        return found.id


def take_back(db: Database, code, lab_id: str, post_id: int) -> bool:
    """Remove one of the lab's own posts; another lab's post is left as it is (False)."""
    with db.transaction() as session:
        row = locked_class(session, code)
        return bool(session.execute(delete(ClassPost).where(ClassPost.class_id == row.id, ClassPost.id == post_id,
                                                            ClassPost.lab_id == lab_id)).rowcount)


def posts(db: Database, code) -> list[Post]:
    """The board, oldest post first. Raises ClassNotFound."""
    with db.transaction(reading=True) as session:
        row = session.scalar(select(Class).where(Class.code == normalise_code(code)))
        if row is None:
            raise ClassNotFound()
        return [Post(p.id, p.lab_id, p.run_id, p.nickname, dict(p.spec), dict(p.measures), p.train_seconds,
                     p.fingerprint, p.model_id is not None, p.posted_at)
                for p in session.scalars(select(ClassPost).where(ClassPost.class_id == row.id)
                                         .order_by(ClassPost.posted_at, ClassPost.id))]


def model_data(db: Database, code, post_id: int) -> bytes | None:
    """The file of a post's model, from its poster's lab (None when the poster removed it or their lab is gone)."""
    with db.transaction(reading=True) as session:
        return session.scalar(select(Model.data).join(ClassPost, ClassPost.model_id == Model.id).join(
            Class, Class.id == ClassPost.class_id).where(Class.code == normalise_code(code), ClassPost.id == post_id))


def posted_runs(db: Database, code, lab_id: str) -> set[str]:
    with db.transaction(reading=True) as session:
        return set(session.scalars(select(ClassPost.run_id).join(Class, Class.id == ClassPost.class_id)
                                   .where(Class.code == normalise_code(code), ClassPost.lab_id == lab_id)))


def auto_post(db: Database, code, lab_id: str, states, now: float | None = None) -> int:
    """Where the teacher turned automatic posting on: post the lab's runs that finished since it joined and are not
    on the board (``states``: seqviz.progress.RunState). Returns how many were posted."""
    found = find(db, code)
    mine = membership(db, found.id, lab_id) if found is not None else None
    if found is None or not found.auto_post or found.closed or mine is None or mine.teacher:
        return 0
    done, count = posted_runs(db, code, lab_id), 0
    for state in states:
        if (state.status != "finished" or not state.metrics or state.id in done
                or (state.ended_at or 0) < mine.joined_at):
            continue
        try:
            post(db, code, lab_id, run_id=state.id, nickname=mine.nickname or "a student",
                 spec=state.spec.to_dict(), metrics=state.metrics, train_seconds=state.train_seconds,
                 fingerprint=state.fingerprint, now=now)
            count += 1
        except PostRefused:
            break  # full, or closed meanwhile: the next look tries again
    return count


def activity(db: Database, code, now: float | None = None) -> dict[str, int]:
    """Students (members but the teacher), how many of them are connected (their lab seen within
    CLASS_CONNECTED_S) and training (a run of theirs, or one they follow, queued or running), and posts."""
    now = time.time() if now is None else now
    with db.transaction(reading=True) as session:
        row = session.scalar(select(Class).where(Class.code == normalise_code(code)))
        if row is None:
            raise ClassNotFound()
        students = select(ClassMember.lab_id).where(ClassMember.class_id == row.id, ClassMember.teacher.is_(False))
        members = session.scalar(select(func.count()).select_from(students.subquery()))
        connected = session.scalar(select(func.count(Lab.id)).where(
            Lab.id.in_(students), Lab.last_seen_at >= now - limits.CLASS_CONNECTED_S))
        # Every lab asking for a run follows it (the first too), and one that stopped following trains nothing.
        followed = select(RunFollower.lab_id).join(Run, Run.id == RunFollower.run_id).where(
            Run.status.in_(ACTIVE), RunFollower.left_at.is_(None), RunFollower.lab_id.in_(students))
        training = len(set(session.scalars(followed)))
        count = session.scalar(select(func.count(ClassPost.id)).where(ClassPost.class_id == row.id))
        return {"students": int(members), "connected": int(connected), "training": training, "posts": int(count)}
