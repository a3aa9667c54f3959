"""Tests written for mutmut's survivors in seqviz/store/labs.py (issue 28, scripts/mutation seqviz/store/labs.py), on
SQLite and PostgreSQL: what a call without ``now`` reads from the clock, the rows a lab, its keys and its codes
get, the bounds of ``seen`` and of a join's megabytes at their edge and one past, a browser joining its own lab,
the runs two labs follow when they become one, and the runs other labs follow when a lab is forgotten or purged."""

from __future__ import annotations

import collections
import re
import threading
import time

import pytest
import sqlalchemy as sa
from store_fixtures import backend, count, in_threads, named, spec

from seqviz import limits
from seqviz.store import labs, models, runs
from seqviz.store.schema import Model

T0 = 1_700_000_000.0  # a "now": a whole number of seconds, exact in a float
DAY = 86400


def _rows(db, query: str, **params) -> list[tuple]:
    with db.engine.connect() as connection:
        return [tuple(row) for row in connection.execute(sa.text(query), params)]


# --- The clock, when no ``now`` is given ----------------------------------------------------------------------


def test_open_lab_without_now_takes_the_clocks_time(db):
    before = time.time()
    lab = labs.open_lab(db, None)
    after = time.time()
    assert before <= labs.last_seen(db, lab.id) <= after
    (created, seen), = _rows(db, "SELECT created_at, last_seen_at FROM labs WHERE id = :lab", lab=lab.id)
    (key_created,), = _rows(db, "SELECT created_at FROM lab_keys WHERE lab_id = :lab", lab=lab.id)
    assert created == seen == key_created
    labs.open_lab(db, lab.key, now=T0)
    assert labs.last_seen(db, lab.id) == T0
    before = time.time()
    assert labs.open_lab(db, lab.key).id == lab.id
    assert before <= labs.last_seen(db, lab.id) <= time.time()


def test_seen_transfer_code_join_and_purge_without_now_take_the_clocks_time(db):
    lab = labs.open_lab(db, None, now=T0)
    before = time.time()
    labs.seen(db, lab.id)
    assert before <= labs.last_seen(db, lab.id) <= time.time()
    before = time.time()
    code = labs.transfer_code(db, lab.id)
    (expires,), = _rows(db, "SELECT expires_at FROM lab_transfers")
    assert before + limits.LAB_TRANSFER_MINUTES * 60 <= expires <= time.time() + limits.LAB_TRANSFER_MINUTES * 60
    labs.open_lab(db, lab.key, now=T0)
    before = time.time()
    assert labs.join(db, code, None).id == lab.id
    assert before <= labs.last_seen(db, lab.id) <= time.time()
    idle = labs.open_lab(db, None, now=time.time() - limits.LAB_KEEP_DAYS * DAY - 60)
    assert labs.purge(db) == 1
    assert not labs.exists(db, idle.id) and labs.exists(db, lab.id)


# --- The rows a lab, its keys and its codes get ------------------------------------------------------------


def test_a_new_lab_is_128_random_bits_in_hex_opened_now_with_one_key_made_now(db):
    ids = {labs.open_lab(db, None, now=T0 + n).id for n in range(20)}
    assert len(ids) == 20
    for lab_id in ids:
        assert len(lab_id) == 32 and set(lab_id) <= set("0123456789abcdef")
    lab = labs.open_lab(db, None, now=T0 + 100)
    assert _rows(db, "SELECT created_at, last_seen_at FROM labs WHERE id = :lab", lab=lab.id) == [(T0 + 100,) * 2]
    assert _rows(db, "SELECT key_hash, created_at FROM lab_keys WHERE lab_id = :lab", lab=lab.id) == [
        (labs.digest(lab.key), T0 + 100)]
    labs.open_lab(db, lab.key, now=T0 + 200)  # opening refreshes last_seen only
    assert _rows(db, "SELECT created_at, last_seen_at FROM labs WHERE id = :lab", lab=lab.id) == [(T0 + 100,
                                                                                                  T0 + 200)]


def test_a_joined_key_is_made_at_the_join_and_the_lab_is_seen_then(db):
    lab, other = labs.open_lab(db, None, now=T0), labs.open_lab(db, None, now=T0)
    code = labs.transfer_code(db, lab.id, now=T0 + 10)
    assert _rows(db, "SELECT lab_id, expires_at FROM lab_transfers") == [
        (lab.id, T0 + 10 + limits.LAB_TRANSFER_MINUTES * 60)]
    joined = labs.join(db, code, None, now=T0 + 20)
    assert labs.last_seen(db, lab.id) == T0 + 20 and labs.last_seen(db, other.id) == T0
    assert sorted(_rows(db, "SELECT key_hash, lab_id, created_at FROM lab_keys WHERE lab_id = :lab", lab=lab.id)) \
        == sorted([(labs.digest(lab.key), lab.id, T0), (labs.digest(joined.key), lab.id, T0 + 20)])


def test_a_refused_join_says_why_word_for_word(db):
    lab = labs.open_lab(db, None, now=T0)
    with pytest.raises(labs.JoinRefused) as refused:
        labs.join(db, "ABC", lab.id, now=T0)
    assert str(refused.value) == "A code is 10 letters and digits, as the other device shows it."
    with pytest.raises(labs.JoinRefused) as refused:
        labs.join(db, "0123456789", lab.id, now=T0)
    assert str(refused.value) == ("That code opens no lab: it may be mistyped, used already, or older than 10 "
                                  "minutes. Ask the other device for a new one.")


def test_a_new_code_ends_only_its_own_labs_earlier_codes(db):
    one, other = labs.open_lab(db, None, now=T0), labs.open_lab(db, None, now=T0)
    first = labs.transfer_code(db, one.id, now=T0)
    labs.transfer_code(db, other.id, now=T0)
    labs.transfer_code(db, other.id, now=T0)
    assert count(db, "lab_transfers") == 2
    assert labs.join(db, first, None, now=T0 + 1).id == one.id


def test_the_digest_is_sha256_of_the_secret_in_ascii():
    assert labs.digest("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    with pytest.raises(UnicodeEncodeError):
        labs.digest("é")


# --- Codes: the alphabet, its look-alikes, its length ---------------------------------------------------------


def test_a_random_code_draws_each_of_the_32_characters_about_equally_often():
    drawn = collections.Counter(labs.random_code(3200))
    assert set(drawn) == set("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
    assert all(40 <= n <= 170 for n in drawn.values()), drawn  # 100 expected each (sd 10)
    assert labs.random_code(0) == "" and len(labs.random_code(7)) == 7


def test_a_code_is_read_in_crockfords_alphabet_with_its_look_alikes():
    assert labs.read_code("oOiIlLabcd", 10) == "001111ABCD"
    assert labs.read_code("0123456789", 10) == "0123456789"
    assert labs.read_code("VWXYZ", 5) == "VWXYZ"
    for letter in "UILO":  # U is not in the alphabet; I, L and O read as 1, 1, 0
        assert labs.read_code(letter * 5, 5) == {"U": None, "I": "11111", "L": "11111", "O": "00000"}[letter]
    assert labs.read_code("a\tb\nc d-e", 5) == "ABCDE"
    assert labs.read_code("ABCDE", 4) is None and labs.read_code("ABCDE", 6) is None
    assert labs.read_code(" " * 15 + "ABCDE", 5) == "ABCDE"  # 20 characters: 4 a code character
    assert labs.read_code(" " * 16 + "ABCDE", 5) is None


# --- Who waits for whom ---------------------------------------------------------------------------------------


def test_reading_whether_a_lab_exists_and_when_it_was_seen_never_waits_for_a_writer(db):
    lab = labs.open_lab(db, None, now=T0)
    with db.engine.begin() as writer:  # SQLite: the write lock (BEGIN IMMEDIATE); PostgreSQL: the lab's row
        writer.execute(sa.text("UPDATE labs SET last_seen_at = :t WHERE id = :lab"), {"t": T0 + 9, "lab": lab.id})
        # Both return while the writer holds its lock: they do not wait for it (a wait would end in the busy
        # timeout's error on SQLite, or outlast in_threads' 30 s on PostgreSQL).
        seen, there = in_threads(lambda: labs.last_seen(db, lab.id), lambda: labs.exists(db, lab.id))
        assert (seen, there) == (T0, True)  # what was committed before the writer began


def test_a_join_waits_neither_for_other_labs_rows_nor_for_rows_written_for_its_lab(db):
    """The lab joined is locked against models.add (FOR NO KEY UPDATE), not against a run or key being written for
    it (FOR KEY SHARE), nor any other lab. PostgreSQL only: SQLite lets one writer in at a time."""
    if backend(db) == "sqlite":
        pytest.skip("SQLite has no row locks: one writing transaction at a time")
    target, mine, other = (labs.open_lab(db, None, now=T0) for _ in range(3))
    models.add(db, mine.id, named("mine"))
    code = labs.transfer_code(db, target.id, now=T0)
    with db.engine.begin() as writer:
        writer.execute(sa.text("SELECT id FROM labs WHERE id = :lab FOR UPDATE"), {"lab": other.id})
        writer.execute(sa.text("INSERT INTO lab_keys (key_hash, lab_id, created_at) VALUES (:h, :lab, 0)"),
                       {"h": "f" * 64, "lab": target.id})  # its foreign key: FOR KEY SHARE of the target's row
        joined, = in_threads(lambda: labs.join(db, code, mine.id, now=T0 + 1))  # while the writer holds its locks
    assert joined.id == target.id and [m.name for m in models.listed(db, target.id)] == ["mine"]


def test_a_join_waits_for_an_add_to_the_lab_and_counts_its_model(db, monkeypatch):
    """The join locks the lab joined, as models.add does: a join that comes while an add has written its model
    (not yet committed) waits for it, and counts it. (On SQLite it waits for the write lock anyway.)"""
    monkeypatch.setattr(limits, "MAX_LAB_MODELS", 2)
    target, mine = labs.open_lab(db, None, now=T0), labs.open_lab(db, None, now=T0)
    models.add(db, target.id, named("theirs"))
    models.add(db, mine.id, named("mine"))
    code = labs.transfer_code(db, target.id, now=T0)
    models.checked(named("added"))  # torch imported before: the add's check takes a moment, not seconds
    inserted, counted, joining = threading.Event(), threading.Event(), threading.local()

    def pace(_connection, _cursor, statement, *_args):
        said = " ".join(statement.upper().split())
        if said.startswith("INSERT INTO MODELS") and not inserted.is_set():
            inserted.set()
            counted.wait(2.0)  # the join counts the lab's models now, unless it waits for this add's lock
        elif said.startswith("SELECT COUNT(MODELS.ID)") and getattr(joining, "yes", False):
            counted.set()

    def join():
        joining.yes = True
        inserted.wait(10)
        return labs.join(db, code, mine.id, now=T0 + 1)

    sa.event.listen(db.engine, "after_cursor_execute", pace)
    try:
        added, joined = in_threads(lambda: models.add(db, target.id, named("added")), join)
    finally:
        sa.event.remove(db.engine, "after_cursor_execute", pace)
    assert isinstance(joined, labs.JoinRefused) and added[1], (joined, added)
    assert [m.name for m in models.listed(db, target.id)] == ["theirs", "added"]
    assert labs.exists(db, mine.id)


# --- How often ``seen`` writes -------------------------------------------------------------------------------


def test_seen_writes_only_once_lab_seen_every_s_has_passed(db):
    lab = labs.open_lab(db, None, now=T0)
    labs.seen(db, lab.id, now=T0 + limits.LAB_SEEN_EVERY_S)  # exactly the interval: not yet
    assert labs.last_seen(db, lab.id) == T0
    labs.seen(db, lab.id, now=T0 + limits.LAB_SEEN_EVERY_S + 0.5)
    assert labs.last_seen(db, lab.id) == T0 + limits.LAB_SEEN_EVERY_S + 0.5
    other = labs.open_lab(db, None, now=T0)
    labs.seen(db, lab.id, now=T0 + 100)  # another lab's time stays
    assert labs.last_seen(db, other.id) == T0 and labs.last_seen(db, lab.id) == T0 + 100
    assert labs.last_seen(db, "0" * 32) is None


# --- Joining --------------------------------------------------------------------------------------------------


def test_a_browser_joining_its_own_labs_code_keeps_the_lab_and_all_it_holds(db):
    lab = labs.open_lab(db, None, now=T0)
    models.add(db, lab.id, named("mine"))
    run_id = runs.create(db, lab.id, spec("mine"), now=T0)
    joined = labs.join(db, labs.transfer_code(db, lab.id, now=T0), lab.id, now=T0 + 1)
    assert (joined.id, joined.new) == (lab.id, False) and joined.key != lab.key
    assert labs.exists(db, lab.id) and [m.name for m in models.listed(db, lab.id)] == ["mine"]
    assert [state.id for state in runs.states(db, lab.id)] == [run_id]
    assert labs.open_lab(db, lab.key, now=T0 + 2).id == lab.id == labs.open_lab(db, joined.key, now=T0 + 2).id


def _ballast(db, lab_id: str, size: int) -> None:
    """A model row of ``size`` bytes (zeros, never loaded), as test_store_limits_at_edges.py makes one."""
    with db.transaction() as session:
        session.add(Model(lab_id=lab_id, fingerprint="0" * 64, name="earlier files", family="bow", task="emails",
                          origin="uploaded", size=size, data=bytes(size), created_at=T0))


def test_a_join_may_fill_max_lab_mb_exactly_and_not_one_byte_more(db, monkeypatch):
    target, exact, over = (labs.open_lab(db, None, now=T0) for _ in range(3))
    models.add(db, target.id, named("theirs"))
    theirs = models.usage(db, target.id)[1]
    _ballast(db, exact.id, 3000)
    _ballast(db, over.id, 3001)
    monkeypatch.setattr(limits, "MAX_LAB_MB", (theirs + 3000) / 2**20)  # exact in a float: a power of 2
    code = labs.transfer_code(db, target.id, now=T0)
    message = (f"Together the two labs would hold more than {limits.MAX_LAB_MODELS} models or {limits.MAX_LAB_MB} "
               "MB: remove some of this browser's models first.")
    with pytest.raises(labs.JoinRefused, match=re.escape(message)):
        labs.join(db, code, over.id, now=T0 + 1)
    assert models.usage(db, over.id) == (1, 3001) and models.usage(db, target.id) == (1, theirs)
    assert labs.join(db, code, exact.id, now=T0 + 2).id == target.id
    assert models.usage(db, target.id) == (2, theirs + 3000) and not labs.exists(db, exact.id)


def test_joining_a_lab_without_models_moves_the_browsers_models_up_to_max_lab_mb_exactly(db, monkeypatch):
    target, mine = labs.open_lab(db, None, now=T0), labs.open_lab(db, None, now=T0)
    models.add(db, mine.id, named("mine"))
    size = models.usage(db, mine.id)[1]
    monkeypatch.setattr(limits, "MAX_LAB_MB", size / 2**20)  # the empty lab's files count 0 bytes
    assert labs.join(db, labs.transfer_code(db, target.id, now=T0), mine.id, now=T0 + 1).id == target.id
    assert models.usage(db, target.id) == (1, size) and not labs.exists(db, mine.id)


def test_moved_names_stay_unique_when_a_moved_name_is_one_the_browser_had(db):
    target, mine = labs.open_lab(db, None, now=T0), labs.open_lab(db, None, now=T0)
    models.add(db, target.id, named("a"))
    models.add(db, mine.id, named("a (moved)"))
    models.add(db, mine.id, named("a", seed=1))
    labs.join(db, labs.transfer_code(db, target.id, now=T0), mine.id, now=T0 + 1)
    names = [m.name for m in models.listed(db, target.id)]
    assert sorted(names) == ["a", "a (moved)", "a (moved) (moved)"]


def test_joining_moves_the_runs_the_browser_follows_and_keeps_one_follower_of_a_run_both_follow(db):
    target, mine, third = (labs.open_lab(db, None, now=T0) for _ in range(3))
    both, _ = runs.create_or_join(db, target.id, spec("both"), now=T0, key="both")
    assert runs.create_or_join(db, mine.id, spec("both"), now=T0 + 1, key="both") == (both, "joined")
    followed, _ = runs.create_or_join(db, third.id, spec("followed"), now=T0, key="followed")
    assert runs.create_or_join(db, mine.id, spec("followed"), now=T0 + 2, key="followed") == (followed, "joined")
    kept = runs.create(db, third.id, spec("the third lab's"), now=T0)
    labs.join(db, labs.transfer_code(db, target.id, now=T0), mine.id, now=T0 + 3)
    assert sorted(_rows(db, "SELECT run_id, lab_id, joined_at FROM run_followers")) == sorted(
        [(both, target.id, T0), (followed, third.id, T0), (followed, target.id, T0 + 2), (kept, third.id, T0)])
    assert runs.following(db, both) == [target.id] and runs.following(db, followed) == [third.id, target.id]
    assert sorted(_rows(db, "SELECT id, lab_id FROM runs")) == sorted(
        [(both, target.id), (followed, third.id), (kept, third.id)])


def test_a_moved_run_of_a_file_both_labs_hold_points_at_the_joined_labs_copy(db):
    target, mine, third = (labs.open_lab(db, None, now=T0) for _ in range(3))
    shared = named("shared")
    models.add(db, target.id, shared)
    models.add(db, mine.id, shared)
    models.add(db, third.id, shared)
    theirs, own, others = (models.model_id(db, lab.id, models.listed(db, lab.id)[0].fingerprint)
                           for lab in (target, mine, third))
    run_id = runs.create(db, mine.id, spec("on the shared file"), now=T0)
    runs.begin(db, run_id, "worker", 1)
    runs.end(db, run_id, "finished", step=1, model_id=own)
    other_run = runs.create(db, third.id, spec("the third lab's"), now=T0)
    runs.begin(db, other_run, "worker", 1)
    runs.end(db, other_run, "finished", step=1, model_id=others)
    assert _rows(db, "SELECT model_id FROM run_followers WHERE run_id = :run", run=run_id) == [(own,)]
    labs.join(db, labs.transfer_code(db, target.id, now=T0), mine.id, now=T0 + 1)
    assert _rows(db, "SELECT lab_id, model_id FROM runs WHERE id = :run", run=run_id) == [(target.id, theirs)]
    assert _rows(db, "SELECT lab_id, model_id FROM run_followers WHERE run_id = :run", run=run_id) == [
        (target.id, theirs)]
    assert _rows(db, "SELECT lab_id, model_id FROM runs WHERE id = :run", run=other_run) == [(third.id, others)]
    assert _rows(db, "SELECT model_id FROM run_followers WHERE run_id = :run", run=other_run) == [(others,)]


# --- Forget and purge: a run other labs follow goes on for them ------------------------------------------------


def _followed_run(db, owner: str, follower: str, name: str) -> str:
    run_id, _ = runs.create_or_join(db, owner, spec(name), now=T0, key=name)
    assert runs.create_or_join(db, follower, spec(name), now=T0 + 1, key=name) == (run_id, "joined")
    return run_id


def test_forget_hands_a_run_another_lab_follows_to_that_lab(db):
    owner, follower = labs.open_lab(db, None, now=T0), labs.open_lab(db, None, now=T0)
    run_id = _followed_run(db, owner.id, follower.id, "followed")
    alone = runs.create(db, owner.id, spec("alone"), now=T0)
    labs.forget(db, owner.id)
    assert not labs.exists(db, owner.id) and labs.exists(db, follower.id)
    assert _rows(db, "SELECT id, lab_id FROM runs") == [(run_id, follower.id)]
    assert runs.following(db, run_id) == [follower.id] and alone not in {s.id for s in runs.states(db, follower.id)}


def test_purge_hands_a_run_a_kept_lab_follows_to_that_lab_and_counts_the_labs_gone(db):
    now = T0 + 400 * DAY
    idle = [labs.open_lab(db, None, now=T0) for _ in range(3)]
    kept = labs.open_lab(db, None, now=now)
    run_id = _followed_run(db, idle[0].id, kept.id, "followed")
    assert labs.purge(db, now=now) == 3
    assert not any(labs.exists(db, lab.id) for lab in idle) and labs.exists(db, kept.id)
    assert _rows(db, "SELECT id, lab_id FROM runs") == [(run_id, kept.id)]
    assert labs.purge(db, now=now) == 0


def test_purge_counts_only_the_labs_it_deleted_when_one_went_meanwhile(db):
    """A lab forgotten between purge's read of the idle labs and its delete: on PostgreSQL purge deletes none and
    says 0; on SQLite the forget waits for the purge (one writer at a time), which deletes it and says 1."""
    now = T0 + 400 * DAY
    idle = labs.open_lab(db, None, now=T0)
    selected, forgotten = threading.Event(), threading.Event()

    def pause(_connection, _cursor, statement, *_args):
        said = " ".join(statement.upper().split())
        if said.startswith("SELECT LABS.ID FROM LABS WHERE LABS.LAST_SEEN_AT <") and not selected.is_set():
            selected.set()
            forgotten.wait(5.0 if backend(db) == "postgresql" else 0.3)  # SQLite: forget waits for the purge

    def forget():
        selected.wait(10)
        try:
            labs.forget(db, idle.id)
        finally:
            forgotten.set()

    sa.event.listen(db.engine, "after_cursor_execute", pause)
    try:
        gone, forgot = in_threads(lambda: labs.purge(db, now=now), forget)
    finally:
        sa.event.remove(db.engine, "after_cursor_execute", pause)
    assert selected.is_set() and forgot is None, forgot
    assert gone == (0 if backend(db) == "postgresql" else 1)
    assert not labs.exists(db, idle.id) and count(db, "labs") == 0
