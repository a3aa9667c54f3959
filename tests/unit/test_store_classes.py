"""Classes in the store (seqviz.store.classes, .board, .experiments), on SQLite and PostgreSQL: codes and the teacher's
key (kept hashed), joining and being handed an experiment's value, posting and taking back, what only the teacher
may do, thirty posts at once, "Use this model", automatic posting, the class's activity, purging."""

import hashlib
from dataclasses import asdict, replace

import pytest
import sqlalchemy as sa
from store_fixtures import backend, every_value, in_threads, named, spec

from seqviz import limits
from seqviz.store import board, classes, labs, models, runs
from seqviz.store.experiments import Experiment, next_value, ready_made

T0 = 1_700_000_000.0
DAY = 86400
MEMORY = {"accuracy_by_distance": {"1": 1.0, "20": 0.625, "60": 0.25}, "accuracy_at_20": 0.625}


@pytest.fixture
def store(db):
    """The ``db`` store with no classes: PostgreSQL's store is emptied table by table from the labs down, and the
    classes table hangs off none of them."""
    if backend(db) == "postgresql":
        with db.transaction() as session:
            session.execute(sa.text("DELETE FROM classes"))
    return db


def lab(db) -> str:
    return labs.open_lab(db, None, now=T0).id


def finished(db, lab_id: str, name: str = "run", seed: int = 0):
    """A finished run of the lab with its model in the lab: (run id, spec dict, fingerprint)."""
    model, _ = models.add(db, lab_id, named(name, seed), origin="trained here")
    run_id = runs.create(db, lab_id, spec(name), now=T0)
    runs.end(db, run_id, "finished", metrics=MEMORY, train_seconds=3.5,
             model_id=models.model_id(db, lab_id, model.fingerprint))
    return run_id, asdict(spec(name)), model.fingerprint


def post(db, code, lab_id, nickname="ana", name="run", seed=0) -> int:
    run_id, fields, fingerprint = finished(db, lab_id, name, seed)
    return board.post(db, code, lab_id, run_id=run_id, nickname=nickname, spec=fields, metrics=MEMORY,
                      train_seconds=3.5, fingerprint=fingerprint)


def test_a_class_has_a_short_code_and_a_long_key_kept_only_as_its_sha256(store):
    teacher = lab(store)
    made = classes.start(store, "Year 12 \u202e<b>", teacher, now=T0)
    assert len(made.code) == limits.CLASS_CODE_CHARS and set(made.code) <= set(labs.CODE_ALPHABET)
    assert len(made.key) >= 32 and made.key != made.code
    stored = every_value(store)
    assert made.key not in stored and hashlib.sha256(made.key.encode()).hexdigest() in stored
    found = classes.find(store, made.code.lower())  # typed in lower case, O for 0 and so on: still found
    assert found.id == made.id and found.name == "Year 12 <b>" and not found.closed and not found.auto_post
    assert classes.membership(store, made.id, teacher).teacher
    assert len({classes.start(store, "x", now=T0).code for _ in range(20)}) == 20


@pytest.mark.parametrize("code", ["", "ABC", "A" * 9, "<script>", "ABCD\x00EFG", "ÄBCDEFGH", "../../etc", None, 42,
                                  "A" * 10_000, "ABCD EFGH" * 3, "U" * 8])
def test_a_malformed_code_opens_nothing_and_asks_the_store_nothing(code):
    assert classes.normalise_code(code) is None
    assert classes.find(None, code) is None  # no database touched: None has no transaction


def test_a_wrong_or_deleted_code_gets_a_plain_refusal(store):
    made = classes.start(store, "c", now=T0)
    student = lab(store)
    wrong = "".join("0" if ch != "0" else "1" for ch in made.code)
    with pytest.raises(classes.ClassNotFound, match="No class has this code"):
        classes.join(store, wrong, student)
    classes.delete_class(store, made.code, key=made.key)
    assert classes.find(store, made.code) is None
    for call in (lambda: classes.join(store, made.code, student), lambda: board.posts(store, made.code)):
        with pytest.raises(classes.ClassNotFound):
            call()


def test_only_the_key_or_a_lab_that_proved_it_acts_as_the_teacher(store):
    teacher, student, other = lab(store), lab(store), lab(store)
    made = classes.start(store, "c", now=T0)  # started without a lab: only the key works at first
    classes.join(store, made.code, student)
    mine = post(store, made.code, student)
    forged = made.key[:-1] + ("A" if made.key[-1] != "A" else "B")
    acts = [lambda **who: classes.set_closed(store, made.code, True, **who),
            lambda **who: classes.set_auto_post(store, made.code, True, **who),
            lambda **who: classes.set_experiment(store, made.code, ready_made()["bottleneck"], **who),
            lambda **who: classes.remove_post(store, made.code, mine, **who),
            lambda **who: classes.delete_class(store, made.code, **who)]
    for act in acts:
        for who in ({}, {"key": forged}, {"key": made.code}, {"key": ""}, {"key": "x" * 10_000},
                    {"lab_id": student}, {"lab_id": other}, {"key": forged, "lab_id": student}):
            with pytest.raises(classes.NotTeacher):
                act(**who)
    with pytest.raises(classes.NotTeacher):
        classes.claim(store, made.code, forged, student)
    assert not classes.membership(store, made.id, student).teacher
    found = classes.find(store, made.code)
    assert (found.closed, found.auto_post, found.experiment) == (False, False, None)
    assert [p.id for p in board.posts(store, made.code)] == [mine]

    classes.claim(store, made.code, made.key, teacher)  # the teacher's lab proves the key once
    assert classes.is_teacher(store, made.code, lab_id=teacher) and not classes.is_teacher(store, made.code,
                                                                                          lab_id=student)
    assert classes.remove_post(store, made.code, mine, lab_id=teacher)
    classes.set_closed(store, made.code, True, lab_id=teacher)
    assert classes.find(store, made.code).closed
    classes.delete_class(store, made.code, key=made.key)
    assert classes.find(store, made.code) is None and labs.exists(store, student)  # the students' labs stay


def test_a_student_takes_back_only_their_own_post(store):
    made = classes.start(store, "c", now=T0)
    ana, ben = lab(store), lab(store)
    for who in (ana, ben):
        classes.join(store, made.code, who)
    anas, bens = post(store, made.code, ana, "ana", "a"), post(store, made.code, ben, "ben", "b")
    assert not board.take_back(store, made.code, ana, bens)
    assert not board.take_back(store, made.code, ana, 10_000)
    assert [p.nickname for p in board.posts(store, made.code)] == ["ana", "ben"]
    assert board.take_back(store, made.code, ana, anas)
    assert [p.nickname for p in board.posts(store, made.code)] == ["ben"]


def test_a_post_keeps_the_run_its_measures_and_a_cleaned_nickname(store):
    made = classes.start(store, "c", now=T0)
    student = lab(store)
    classes.join(store, made.code, student)
    hostile = "\u202e<script>alert(1)</script>\x00\u200b  **bold**\n" + "é" * 100
    post_id = post(store, made.code, student, nickname=hostile)
    (found,) = board.posts(store, made.code)
    assert found.id == post_id and found.has_model and found.train_seconds == 3.5
    assert found.nickname == ("<script>alert(1)</script> **bold** " + "é" * 100)[:limits.CLASS_NICKNAME_CHARS]
    assert found.spec == {k: v for k, v in asdict(spec("run")).items() if k != "name"}
    assert found.measures == {"accuracy_at_1": 1.0, "accuracy_at_20": 0.625, "accuracy_at_60": 0.25}
    assert classes.membership(store, made.id, student).nickname == found.nickname
    with pytest.raises(board.PostRefused, match="on the board already"):
        board.post(store, made.code, student, run_id=found.run_id, nickname="x", spec=found.spec, metrics=MEMORY)
    for nickname in ("", "   ", "\x00\u200b\u202e", None, 5):
        with pytest.raises(board.PostRefused, match="nickname"):
            board.post(store, made.code, student, run_id="r", nickname=nickname, spec=found.spec, metrics=MEMORY)
    stranger = lab(store)
    with pytest.raises(board.PostRefused, match="Open the class link"):
        post(store, made.code, stranger, name="s")
    classes.set_closed(store, made.code, True, key=made.key)
    with pytest.raises(board.PostRefused, match="closed"):
        post(store, made.code, student, name="late")


def test_translation_measures_include_exact_match_per_source_length():
    metrics = {"exact_match_le30": 0.5, "token_accuracy_le30": 0.75, "exact_match_ge25": 0.125,
               "token_accuracy_ge25": float("nan"), "chapter_pairs_exact": 3,
               "buckets": {"3-9": {"n": 150, "exact_match": 1.0, "token_accuracy": 1.0},
                           "41-45": {"n": 150, "exact_match": 0.0, "token_accuracy": None}}}
    assert board.measures("translation", metrics) == {
        "exact_match_le30": 0.5, "token_accuracy_le30": 0.75, "exact_match_ge25": 0.125, "chapter_pairs": 0.5,
        "exact_match@3-9": 1.0, "token_accuracy@3-9": 1.0, "exact_match@41-45": 0.0}
    assert board.measures("emails", {"test_accuracy": 0.9, "twins_accuracy": True}) == {"test_accuracy": 0.9}
    assert board.measures("memory", None) == {}


def test_the_board_is_full_at_its_limits(store, monkeypatch):
    monkeypatch.setattr(limits, "CLASS_MAX_POSTS", 3)
    monkeypatch.setattr(limits, "CLASS_MAX_POSTS_PER_LAB", 2)
    made = classes.start(store, "c", now=T0)
    ana, ben = lab(store), lab(store)
    for who in (ana, ben):
        classes.join(store, made.code, who)
    post(store, made.code, ana, name="a1")
    post(store, made.code, ana, name="a2")
    with pytest.raises(board.PostRefused, match="2 posts"):
        post(store, made.code, ana, name="a3")
    post(store, made.code, ben, name="b1")
    with pytest.raises(board.PostRefused, match="full"):
        post(store, made.code, ben, name="b2")
    assert len(board.posts(store, made.code)) == 3


def test_thirty_students_posting_at_once_lose_no_post(store):
    made = classes.start(store, "c", now=T0)
    students = [lab(store) for _ in range(30)]
    prepared = []
    for number, who in enumerate(students):
        classes.join(store, made.code, who)
        prepared.append((who, *finished(store, who, f"run{number}", seed=number)))
    results = in_threads(*[
        lambda who=who, run_id=run_id, fields=fields, fingerprint=fingerprint, n=n: board.post(
            store, made.code, who, run_id=run_id, nickname=f"student {n}", spec=fields, metrics=MEMORY,
            fingerprint=fingerprint) for n, (who, run_id, fields, fingerprint) in enumerate(prepared)], timeout_s=60)
    assert all(isinstance(result, int) for result in results), results
    found = board.posts(store, made.code)
    assert sorted(p.nickname for p in found) == sorted(f"student {n}" for n in range(30))
    assert len({p.id for p in found}) == 30 and all(p.has_model for p in found)
    assert board.activity(store, made.code)["posts"] == 30


def test_use_this_model_copies_a_valid_model_into_the_visitors_lab(store):
    made = classes.start(store, "c", now=T0)
    poster, visitor = lab(store), lab(store)
    classes.join(store, made.code, poster)
    post_id = post(store, made.code, poster, name="shared one")
    data = board.model_data(store, made.code, post_id)
    assert data == named("shared one")
    copied, new = models.add(store, visitor, data, origin="class board")
    assert new and copied.fingerprint == board.posts(store, made.code)[0].fingerprint
    assert [m.name for m in models.listed(store, visitor)] == ["shared one"]
    assert board.model_data(store, "ZZZZZZZZ", post_id) is None  # another class's code reads nothing
    models.remove(store, poster, copied.fingerprint)  # the poster removed it: the post stays, without a model
    (found,) = board.posts(store, made.code)
    assert not found.has_model and board.model_data(store, made.code, post_id) is None
    labs.forget(store, poster)  # the poster's lab is gone: the post stays on the board
    assert [p.lab_id for p in board.posts(store, made.code)] == [None]


def test_joining_students_are_handed_the_values_fewest_hold(store):
    bottleneck = ready_made()["bottleneck"]
    made = classes.start(store, "c", lab(store), experiment=bottleneck, now=T0)
    handed = [classes.join(store, made.code, lab(store))[1].value for _ in range(len(bottleneck.values) + 2)]
    assert handed == [*bottleneck.values, *bottleneck.values[:2]]
    again = lab(store)
    first = classes.join(store, made.code, again)[1].value
    assert classes.join(store, made.code, again)[1].value == first  # opening the link again keeps the value
    attention = ready_made()["attention"]
    classes.set_experiment(store, made.code, attention, key=made.key)
    assert classes.join(store, made.code, again)[1].value in attention.values


def test_the_ready_made_experiments_are_runs_a_student_may_train():
    made = ready_made()
    assert set(made) == {"bottleneck", "attention"}
    for experiment in made.values():
        assert experiment.check() is experiment and experiment.task == "translation"
        specs = [experiment.spec(value) for value in experiment.values]
        assert len(set(specs)) == len(specs)
        assert Experiment.from_dict(experiment.to_dict()) == experiment
    assert [s.hidden for s in map(made["bottleneck"].spec, made["bottleneck"].values)] == [8, 16, 32, 64, 96, 128]
    assert {made["attention"].spec(v).family for v in made["attention"].values} == {"plain", "additive", "dot"}
    with pytest.raises(ValueError, match="hidden 256"):
        replace(made["bottleneck"], values=(64, 256)).check()
    with pytest.raises(ValueError, match="setting"):
        replace(made["bottleneck"], setting="name").check()
    assert next_value(made["bottleneck"], [8, 16], [8, 32, 999]) == 64


def test_automatic_posting_posts_a_members_runs_finished_since_joining(store):
    made = classes.start(store, "c", now=T0)
    student = lab(store)
    old_run, _, _ = finished(store, student, "before")
    classes.join(store, made.code, student, now=T0 + 10)  # after "before" ended (by the test's clock, T0 + 10)
    states = runs.states(store, student, snapshots=False)
    assert board.auto_post(store, made.code, student, states) == 0  # off
    classes.set_auto_post(store, made.code, True, key=made.key)
    states = [replace(s, ended_at=T0 if s.id == old_run else T0 + 20)
              for s in runs.states(store, student, snapshots=False)]
    assert board.auto_post(store, made.code, student, states) == 0  # it ended before the student joined
    finished(store, student, "after")
    states = [replace(s, ended_at=T0 if s.id == old_run else T0 + 20)
              for s in runs.states(store, student, snapshots=False)]
    assert board.auto_post(store, made.code, student, states) == 1
    assert board.auto_post(store, made.code, student, states) == 0  # once
    (found,) = board.posts(store, made.code)
    assert found.nickname == "a student" and found.has_model and found.run_id != old_run


def test_the_class_counts_students_connected_and_training(store):
    made = classes.start(store, "c", lab(store), now=T0)
    ana, ben, cleo = lab(store), lab(store), lab(store)
    for who in (ana, ben, cleo):
        classes.join(store, made.code, who)
    with store.transaction() as session:  # ana and ben looked a moment ago, cleo an hour ago
        session.execute(sa.text("UPDATE labs SET last_seen_at = :t WHERE id IN (:a, :b)"),
                        {"t": T0 + 3600, "a": ana, "b": ben})
        session.execute(sa.text("UPDATE labs SET last_seen_at = :t WHERE id = :c"), {"t": T0, "c": cleo})
    runs.create(store, ana, spec("training"), now=T0)
    assert board.activity(store, made.code, now=T0 + 3610) == {"students": 3, "connected": 2, "training": 1,
                                                                 "posts": 0}


def test_classes_idle_longer_than_the_limit_are_purged(store):
    old = classes.start(store, "old", now=T0)
    kept = classes.start(store, "kept", now=T0)
    classes.join(store, kept.code, lab(store), now=T0 + (limits.CLASS_KEEP_DAYS - 1) * DAY)
    assert classes.purge(store, now=T0 + limits.CLASS_KEEP_DAYS * DAY + 1) == 1
    assert classes.find(store, old.code) is None and classes.find(store, kept.code) is not None
    assert classes.classes_of(store, lab(store)) == []


def test_a_class_whose_board_is_looked_at_is_in_use_and_not_purged(db):
    import time as clock

    from seqviz import limits as bounds
    from seqviz.store import classes as found_classes

    old = clock.time() - (bounds.CLASS_KEEP_DAYS + 1) * 86400
    watched = found_classes.start(db, "watched", now=old)
    idle = found_classes.start(db, "idle", now=old)
    found_classes.seen(db, watched.code)
    found_classes.seen(db, watched.code)  # (written at most hourly: nothing more)
    assert found_classes.purge(db) >= 1  # (on PostgreSQL, other tests' idle classes may go too)
    assert found_classes.find(db, watched.code) is not None and found_classes.find(db, idle.code) is None
