"""Tests written for mutmut's survivors in seqviz/store/models.py (issue 28, scripts/mutation seqviz/store/models.py),
on SQLite and PostgreSQL: add's defaults (the name "model", origin "uploaded", the clock's time), its refusals word
for word, the order models are listed in, and who waits for whom (readers for no writer, an add for no other lab's
row nor for a run being written for its lab)."""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa
from checkpoint_files import rewrite_meta
from store_fixtures import backend, bow, in_threads, named

from seqviz import limits
from seqviz.checkpoints import CheckpointError, fingerprint
from seqviz.store import labs, models

T0 = 1_700_000_000.0
CHECKED = models.checked  # the real one, for a spy to call


def _lab(db) -> str:
    return labs.open_lab(db, None, now=T0).id


def test_a_file_without_a_name_added_without_a_file_name_is_called_model_and_was_uploaded_now(db):
    lab = _lab(db)
    data = rewrite_meta(bow(), lambda document: document.pop("name"))
    before = time.time()
    model, new = models.add(db, lab, bytearray(data))
    after = time.time()
    assert new and (model.name, model.origin, model.family, model.task) == ("model", "uploaded", "bow", "emails")
    assert before <= model.created_at <= after and models.listed(db, lab) == [model]
    assert type(models.data(db, lab, model.fingerprint)) is bytes and models.data(db, lab, model.fingerprint) == data
    assert models.add(db, lab, named("model"))[0].name == "model (2)"


def test_checked_gives_the_loaded_checkpoint_of_a_usable_file_and_refuses_another():
    checkpoint = models.checked(bow())
    assert (checkpoint.family, checkpoint.task) == ("bow", "emails")
    with pytest.raises(CheckpointError):
        models.checked(b"not a checkpoint")


def test_a_full_lab_refuses_in_words(db, monkeypatch):
    lab = _lab(db)
    monkeypatch.setattr(limits, "MAX_LAB_MODELS", 1)
    models.add(db, lab, named("one"))
    with pytest.raises(CheckpointError) as refused:
        models.add(db, lab, named("two"))
    assert str(refused.value) == "Your lab already has 1 models: remove one before adding another."
    monkeypatch.setattr(limits, "MAX_LAB_MODELS", 8)
    monkeypatch.setattr(limits, "MAX_LAB_MB", 0.01)  # 10,485 bytes: two files of 5.9 kB are more
    with pytest.raises(CheckpointError) as refused:
        models.add(db, lab, named("two"))
    assert str(refused.value) == "Your lab's models would take more than 0.01 MB: remove one before adding this."


def test_a_lab_that_is_gone_is_refused_in_words(db):
    with pytest.raises(CheckpointError) as refused:
        models.add(db, "0" * 32, named("too late"))
    assert str(refused.value) == ("This lab is no longer in the store (forgotten, or idle too long): reload the page "
                                  "for a new one.")


def test_models_are_listed_in_the_order_they_came_even_after_a_row_was_rewritten(db):
    """A join rewrites a moved model's row (its lab_id): on PostgreSQL the new row version lies after the others,
    so only ORDER BY id keeps the order the models came in."""
    lab, other = _lab(db), _lab(db)
    models.add(db, lab, named("first"))
    models.add(db, other, named("second"))
    models.add(db, lab, named("third"))
    labs.join(db, labs.transfer_code(db, lab, now=T0), other, now=T0 + 1)
    assert [m.name for m in models.listed(db, lab)] == ["first", "second", "third"]
    ids = [models.model_id(db, lab, m.fingerprint) for m in models.listed(db, lab)]
    assert ids == sorted(ids) and len(set(ids)) == 3
    assert models.usage(db, lab) == (3, sum(m.size for m in models.listed(db, lab)))


def test_usage_and_model_id_are_plain_ints(db):
    lab = _lab(db)
    model, _ = models.add(db, lab, named("one"))
    count, size = models.usage(db, lab)
    assert (type(count), type(size)) == (int, int) and (count, size) == (1, model.size)
    assert type(models.model_id(db, lab, model.fingerprint)) is int
    assert models.model_id(db, lab, fingerprint(named("another"))) is None


def test_reading_a_labs_models_never_waits_for_a_writer(db):
    lab = _lab(db)
    model, _ = models.add(db, lab, named("one"))
    with db.engine.begin() as writer:  # SQLite: the write lock (BEGIN IMMEDIATE); PostgreSQL: the model's row
        writer.execute(sa.text("UPDATE models SET name = 'renamed' WHERE lab_id = :lab"), {"lab": lab})
        # Each returns while the writer holds its lock: none waits for it (a wait would end in the busy timeout's
        # error on SQLite, or outlast in_threads' 30 s on PostgreSQL).
        results = in_threads(lambda: models.listed(db, lab), lambda: models.data(db, lab, model.fingerprint),
                             lambda: models.model_id(db, lab, model.fingerprint), lambda: models.usage(db, lab))
    assert results[0] == [model] and results[1] == named("one") and isinstance(results[2], int)
    assert results[3] == (1, model.size)


def test_an_add_waits_neither_for_other_labs_rows_nor_for_rows_written_for_its_lab(db):
    """The lab is locked against another add or a join (FOR NO KEY UPDATE), not against a run or key being
    written for it (FOR KEY SHARE), nor any other lab. PostgreSQL only: SQLite lets one writer in at a time."""
    if backend(db) == "sqlite":
        pytest.skip("SQLite has no row locks: one writing transaction at a time")
    lab, other = _lab(db), _lab(db)
    with db.engine.begin() as writer:
        writer.execute(sa.text("SELECT id FROM labs WHERE id = :lab FOR UPDATE"), {"lab": other})
        writer.execute(sa.text("INSERT INTO lab_keys (key_hash, lab_id, created_at) VALUES (:h, :lab, 0)"),
                       {"h": "f" * 64, "lab": lab})  # its foreign key: FOR KEY SHARE of the lab's row
        added, = in_threads(lambda: models.add(db, lab, named("mine")))  # while the writer holds its locks
    assert added[1] and [m.name for m in models.listed(db, lab)] == ["mine"]


def test_remove_takes_only_the_model_named(db):
    lab = _lab(db)
    first, _ = models.add(db, lab, named("first"))
    second, _ = models.add(db, lab, named("second"))
    models.remove(db, lab, first.fingerprint)
    assert models.listed(db, lab) == [second] and models.data(db, lab, first.fingerprint) is None
    assert models.data(db, lab, second.fingerprint) == named("second")


def test_a_file_the_lab_keeps_already_is_found_without_loading_it_again(db, monkeypatch):
    lab, other = _lab(db), _lab(db)
    kept, _ = models.add(db, lab, named("kept"))
    checked = []
    monkeypatch.setattr(models, "checked", lambda data: checked.append(data) or CHECKED(data))
    assert models.add(db, lab, named("kept")) == (kept, False) and checked == []
    assert models.add(db, other, named("kept"))[1] and checked == [named("kept")]  # another lab's is its own
