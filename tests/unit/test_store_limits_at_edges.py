"""The lab store's bounds of seqviz.limits at their shipped values, on SQLite and PostgreSQL: exactly at the bound
is kept or accepted, one past it is refused (with its message) or pruned. (The same checks with smaller, patched
limits: test_store_models.py, test_store_labs.py, test_store_runs.py. MAX_UPLOAD_MB is Streamlit's uploader's
own check, seqviz.ui.yours: not seqviz's.)"""

from __future__ import annotations

import base64
import pickle

import pytest
from store_fixtures import count, named, spec

from seqviz import limits
from seqviz.checkpoints import CheckpointError
from seqviz.progress import Report
from seqviz.store import labs, models, runs
from seqviz.store.schema import Model

T0 = 1_700_000_000.0  # a "now": a whole number of seconds, exact in a float
LIFE_S = limits.LAB_TRANSFER_MINUTES * 60


def _lab(db, now=T0) -> str:
    return labs.open_lab(db, None, now=now).id


# ---- models a lab keeps ---------------------------------------------------------------------------------------


def test_the_eighth_model_is_kept_and_the_ninth_refused(db):
    lab = _lab(db)
    for n in range(limits.MAX_LAB_MODELS):
        assert models.add(db, lab, named(f"model {n}"))[1]
    assert models.usage(db, lab)[0] == limits.MAX_LAB_MODELS
    with pytest.raises(CheckpointError, match=f"already has {limits.MAX_LAB_MODELS} models: remove one"):
        models.add(db, lab, named("the ninth"))
    assert count(db, "models") == limits.MAX_LAB_MODELS
    models.remove(db, lab, models.listed(db, lab)[0].fingerprint)  # room again for one
    assert models.add(db, lab, named("the ninth"))[1]


def _ballast(db, lab_id: str, size: int) -> None:
    """A model row of ``size`` bytes (zeros, never loaded): what a lab's earlier files take of its MAX_LAB_MB."""
    with db.transaction() as session:
        session.add(Model(lab_id=lab_id, fingerprint="0" * 64, name="earlier files", family="bow", task="emails",
                          origin="uploaded", size=size, data=bytes(size), created_at=T0))


def test_a_file_that_fills_max_lab_mb_exactly_is_kept_and_one_byte_more_refused(db):
    bound = limits.MAX_LAB_MB * 2**20
    exact, over = _lab(db), _lab(db)
    file = named("the last file")
    _ballast(db, exact, bound - len(file))
    assert models.add(db, exact, file)[1]
    assert models.usage(db, exact) == (2, bound)
    _ballast(db, over, bound - len(file) + 1)
    with pytest.raises(CheckpointError, match=f"would take more than {limits.MAX_LAB_MB} MB: remove one"):
        models.add(db, over, file)
    assert models.usage(db, over) == (1, bound - len(file) + 1)


def test_two_labs_joined_may_hold_max_lab_models_together_and_not_one_more(db):
    most = limits.MAX_LAB_MODELS
    target, exact, over = (labs.open_lab(db, None, now=T0) for _ in range(3))
    for n in range(most // 2):
        models.add(db, target.id, named(f"theirs {n}"))
    for n in range(most - most // 2):
        models.add(db, exact.id, named(f"mine {n}"))
    for n in range(most - most // 2 + 1):
        models.add(db, over.id, named(f"more {n}"))
    code = labs.transfer_code(db, target.id, now=T0)
    with pytest.raises(labs.JoinRefused, match=f"more than {most} models"):
        labs.join(db, code, over.id, now=T0 + 1)
    assert models.usage(db, over.id)[0] == most - most // 2 + 1  # nothing moved
    assert labs.join(db, code, exact.id, now=T0 + 2).id == target.id  # exactly the limit together
    assert models.usage(db, target.id)[0] == most and not labs.exists(db, exact.id)


# ---- keys and transfer codes --------------------------------------------------------------------------------------


def test_a_lab_key_is_lab_key_bytes_of_url_safe_base64_and_no_other_length_opens_the_lab(db):
    key = labs.new_key()
    assert len(base64.urlsafe_b64decode(key + "=" * (-len(key) % 4))) == limits.LAB_KEY_BYTES
    chars = -(-4 * limits.LAB_KEY_BYTES // 3)  # base64 without its padding: 22 characters for 16 bytes
    assert len(key) == chars and labs.valid_key(key)
    lab = labs.open_lab(db, None, now=T0)
    assert labs.open_lab(db, lab.key, now=T0 + 1) == labs.OpenedLab(lab.id, lab.key, new=False)
    for near in (lab.key[:-1], lab.key + "A", "A" + lab.key):  # one character short, one more
        assert not labs.valid_key(near)
        opened = labs.open_lab(db, near, now=T0 + 2)
        assert opened.new and opened.id != lab.id and opened.key != near
    assert labs.valid_key("A" * chars) and not labs.valid_key("A" * (chars - 1))
    assert not labs.valid_key("A" * (chars + 1))


def test_a_transfer_code_is_read_at_lab_transfer_chars_and_not_one_more_or_less():
    n = limits.LAB_TRANSFER_CHARS
    assert labs.normalise_code("7" * n) == "7" * n
    assert labs.normalise_code("7" * (n - 1)) is None and labs.normalise_code("7" * (n + 1)) is None
    # Typed with spaces and dashes: read up to 4 characters a code character, no more (the text box's max_chars).
    typed = "-".join("7" * n).ljust(4 * n, " ")
    assert len(typed) == 4 * n and labs.normalise_code(typed) == "7" * n
    assert labs.normalise_code(typed + " ") is None


def test_a_transfer_code_works_at_lab_transfer_minutes_and_not_a_moment_after(db):
    lab = _lab(db)
    code = labs.transfer_code(db, lab, now=T0)
    assert labs.join(db, code, None, now=T0 + LIFE_S).id == lab  # exactly at its end: still works
    code = labs.transfer_code(db, lab, now=T0)
    with pytest.raises(labs.JoinRefused, match=f"older than {limits.LAB_TRANSFER_MINUTES} minutes"):
        labs.join(db, code, None, now=T0 + LIFE_S + 0.001)
    assert count(db, "lab_keys") == 2  # the lab's first key and the one joined in time: none for the late code


# ---- runs a lab keeps --------------------------------------------------------------------------------------------


def _ended(db, lab_id: str, n: int) -> str:
    run_id = runs.create(db, lab_id, spec(f"run {n}"), now=T0 + n)
    runs.begin(db, run_id, "worker", 1)
    runs.end(db, run_id, "finished", step=1)
    return run_id


def test_a_lab_keeps_its_newest_ended_runs_up_to_the_limit_and_the_next_prunes_the_oldest(db):
    kept = limits.TRAIN_MAX_KEPT_PER_OWNER
    lab, other = _lab(db), _lab(db)
    theirs = _ended(db, other, 0)
    ended = [_ended(db, lab, n) for n in range(1, kept + 1)]
    assert [s.id for s in runs.states(db, lab, snapshots=False)] == ended[::-1]  # all six, newest first
    ended.append(_ended(db, lab, kept + 1))  # the seventh
    assert [s.id for s in runs.states(db, lab, snapshots=False)] == ended[:0:-1]  # the oldest went
    assert count(db, "runs", "WHERE id = :id", id=ended[0]) == 0
    assert [s.id for s in runs.states(db, other, snapshots=False)] == [theirs]  # another lab's run stays


def _snapshot(step: int) -> tuple[int, bytes]:
    return step, pickle.dumps({"step": step})


def test_snapshots_are_kept_up_to_the_limit_and_the_next_one_thins_them(db):
    most = limits.TRAIN_MAX_SNAPSHOTS
    lab = _lab(db)
    run_id = runs.create(db, lab, spec(), now=T0)
    runs.begin(db, run_id, "worker", 1)
    for step in range(1, most + 1):
        runs.report(db, run_id, Report(step=step, snapshots=[_snapshot(step)]))
    (state,) = runs.states(db, lab, run_id)
    assert [s for s, _ in state.snapshots] == list(range(1, most + 1))  # all forty, none thinned
    runs.report(db, run_id, Report(step=most + 1, snapshots=[_snapshot(most + 1)]))
    (state,) = runs.states(db, lab, run_id)
    steps = [s for s, _ in state.snapshots]
    assert steps == list(range(1, most + 2, 2))  # every other one went: the newest and the first stay
    assert len(steps) == most // 2 + 1 and state.snapshots[-1] == (most + 1, {"step": most + 1})
