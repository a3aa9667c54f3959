"""The class board's bounds of seqviz.limits at their shipped values (seqviz.store.classes, .board, .experiments), on
SQLite and PostgreSQL: exactly at the bound is kept or accepted, one past it is refused with its message or cut.
(The same posting limits with smaller, patched values: test_store_classes.py.)"""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from store_fixtures import backend

from seqviz import limits
from seqviz.store import board, classes, labs
from seqviz.store.experiments import Experiment

T0 = 1_700_000_000.0
SPEC = {"task": "memory", "family": "rnn", "embedding": 8, "hidden": 8, "steps": 50}  # what a post keeps of a run


@pytest.fixture
def store(db):
    """The ``db`` store with no classes (PostgreSQL's is emptied from the labs down; classes hang off none)."""
    if backend(db) == "postgresql":
        with db.transaction() as session:
            session.execute(sa.text("DELETE FROM classes"))
    return db


def lab(db) -> str:
    return labs.open_lab(db, None, now=T0).id


def post(db, code, lab_id: str, n: int, nickname: str = "ana") -> int:
    return board.post(db, code, lab_id, run_id=f"run {n}", nickname=nickname, spec=SPEC, metrics={}, now=T0 + n)


# ---- names, nicknames, codes and keys -----------------------------------------------------------------------------


def test_a_class_name_of_class_name_chars_is_kept_whole_and_a_longer_one_cut(store):
    n = limits.CLASS_NAME_CHARS
    at = classes.start(store, "<b>" + "n" * (n - 3), now=T0)
    assert classes.find(store, at.code).name == "<b>" + "n" * (n - 3)  # as typed: text, never markup
    past = classes.start(store, "n" * n + "X", now=T0)
    assert classes.find(store, past.code).name == "n" * n


def test_a_nickname_of_class_nickname_chars_is_posted_whole_and_a_longer_one_cut_and_shown_as_text(store):
    n = limits.CLASS_NICKNAME_CHARS
    made = classes.start(store, "c", now=T0)
    ana, ben = lab(store), lab(store)
    for who in (ana, ben):
        classes.join(store, made.code, who)
    whole = "**" + "a" * (n - 4) + "**"  # markdown's bold, kept as the characters typed
    post(store, made.code, ana, 1, nickname=whole)
    post(store, made.code, ben, 2, nickname="<i>" + "b" * (n - 3) + "X")
    assert [p.nickname for p in board.posts(store, made.code)] == [whole, "<i>" + "b" * (n - 3)]
    assert classes.membership(store, made.id, ben).nickname == "<i>" + "b" * (n - 3)
    assert classes.clean_nickname("c" * n) == "c" * n and classes.clean_nickname("c" * (n + 1)) == "c" * n


def test_a_class_code_is_read_at_class_code_chars_and_not_one_more_or_less():
    n = limits.CLASS_CODE_CHARS
    assert classes.normalise_code("7" * n) == "7" * n
    assert classes.normalise_code("7" * (n - 1)) is None and classes.normalise_code("7" * (n + 1)) is None
    typed = "-".join("7" * n).ljust(4 * n, " ")  # up to 4 typed characters a code character (the box's max_chars)
    assert len(typed) == 4 * n and classes.normalise_code(typed) == "7" * n
    assert classes.normalise_code(typed + " ") is None


def test_the_teacher_key_is_class_key_bytes_and_a_key_one_character_off_is_not_the_teachers(store):
    made = classes.start(store, "c", now=T0)
    assert len(made.key) == -(-4 * limits.CLASS_KEY_BYTES // 3)  # URL-safe base64 without padding: 32 characters
    assert classes.is_teacher(store, made.code, key=made.key)
    for near in (made.key[:-1], made.key + "A", "A" + made.key):
        assert not classes.is_teacher(store, made.code, key=near)


# ---- how much a board holds ---------------------------------------------------------------------------------------


def test_a_lab_posts_up_to_class_max_posts_per_lab_and_not_one_more(store):
    most = limits.CLASS_MAX_POSTS_PER_LAB
    made = classes.start(store, "c", now=T0)
    ana, ben = lab(store), lab(store)
    for who in (ana, ben):
        classes.join(store, made.code, who)
    for n in range(most):
        post(store, made.code, ana, n)
    with pytest.raises(board.PostRefused, match=f"You have {most} posts on this board already"):
        post(store, made.code, ana, most)
    post(store, made.code, ben, most, nickname="ben")  # another lab still may
    assert len(board.posts(store, made.code)) == most + 1


def test_a_board_keeps_class_max_posts_and_refuses_the_next(store):
    most, per_lab = limits.CLASS_MAX_POSTS, limits.CLASS_MAX_POSTS_PER_LAB
    made = classes.start(store, "c", now=T0)
    students = [lab(store) for _ in range(-(-most // per_lab) + 1)]  # enough labs, and one with no post yet
    for who in students:
        classes.join(store, made.code, who)
    for n in range(most):
        post(store, made.code, students[n // per_lab], n)
    assert len(board.posts(store, made.code)) == most
    with pytest.raises(board.PostRefused, match=rf"The board is full \({most} posts\)"):
        post(store, made.code, students[-1], most)
    assert len(board.posts(store, made.code)) == most


# ---- an experiment's values ---------------------------------------------------------------------------------------


def _experiment(values) -> Experiment:
    return Experiment("seeds", "memory", "rnn", "seed", tuple(values), base={"embedding": 8, "hidden": 8})


def test_an_experiment_varies_up_to_class_max_values_and_not_one_more_or_none():
    most = limits.CLASS_MAX_VALUES
    assert _experiment(range(most)).check().values == tuple(range(most))
    assert _experiment([7]).check().values == (7,)
    for values in (range(most + 1), ()):
        with pytest.raises(ValueError, match=f"over 1 to {most} values"):
            _experiment(values).check()
