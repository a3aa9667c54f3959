"""Labs in the store (seqviz.store.labs), on SQLite and PostgreSQL: keys kept hashed and never adopted, transfer
codes that work once and expire, a joining browser's models and runs moving in, forgetting and purging."""

import base64
import hashlib
import threading

import pytest
import sqlalchemy as sa
from store_fixtures import TABLES, backend, count, counts, every_value, in_threads, meeting_at_first_write, named, spec

from seqviz import limits
from seqviz.progress import Report
from seqviz.store import labs, models, runs

T0 = 1_700_000_000.0  # a "now" for the tests: a whole number of seconds, exact in a float
DAY = 86400


def test_a_new_key_is_128_random_bits_of_url_safe_base64():
    keys = {labs.new_key() for _ in range(200)}
    assert len(keys) == 200
    for key in keys:
        assert len(key) == 22 and set(key) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        assert len(base64.urlsafe_b64decode(key + "==")) == 16
        assert labs.valid_key(key)
    assert len({base64.urlsafe_b64decode(key + "==")[0] for key in keys}) > 100  # the bits vary


def test_the_store_keeps_only_the_keys_sha256(db):
    opened = labs.open_lab(db, None, now=T0)
    joined = labs.join(db, labs.transfer_code(db, opened.id, now=T0), None, now=T0)
    code = labs.transfer_code(db, opened.id, now=T0)  # a code left waiting in the store
    assert opened.new and not joined.new and joined.id == opened.id and joined.key != opened.key
    with db.engine.connect() as connection:
        hashes = set(connection.execute(sa.text("SELECT key_hash FROM lab_keys WHERE lab_id = :lab"),
                                        {"lab": opened.id}).scalars())
        code_hashes = set(connection.execute(sa.text("SELECT code_hash FROM lab_transfers")).scalars())
    assert hashes == {hashlib.sha256(key.encode()).hexdigest() for key in (opened.key, joined.key)}
    assert code_hashes == {hashlib.sha256(labs.normalise_code(code).encode()).hexdigest()}
    values = every_value(db)
    assert len(values) > 10
    for secret in (opened.key, joined.key, code):
        for value in values:
            text = value.decode("latin-1") if isinstance(value, bytes) else str(value)
            assert secret not in text


def test_the_same_key_opens_the_same_lab_and_refreshes_its_last_seen_time(db):
    first = labs.open_lab(db, None, now=T0)
    again = labs.open_lab(db, first.key, now=T0 + 3600)
    assert (again.id, again.key, again.new) == (first.id, first.key, False)
    assert labs.last_seen(db, first.id) == T0 + 3600
    assert labs.exists(db, first.id) and count(db, "labs") == 1 and count(db, "lab_keys") == 1


def test_seen_writes_the_last_seen_time_at_most_every_few_seconds(db):
    lab = labs.open_lab(db, None, now=T0)
    labs.seen(db, lab.id, now=T0 + limits.LAB_SEEN_EVERY_S / 2)
    assert labs.last_seen(db, lab.id) == T0
    labs.seen(db, lab.id, now=T0 + limits.LAB_SEEN_EVERY_S + 1)
    assert labs.last_seen(db, lab.id) == T0 + limits.LAB_SEEN_EVERY_S + 1


def _stale_key(db):
    key = labs.open_lab(db, None, now=T0 - 400 * DAY).key
    assert labs.purge(db, now=T0) == 1
    return key


def _forgotten_key(db):
    opened = labs.open_lab(db, None, now=T0)
    labs.forget(db, opened.id)
    return opened.key


KEYS = {
    "forged": lambda db: labs.new_key(),
    "stale (purged)": _stale_key,
    "deleted (forgotten)": _forgotten_key,
    "10 kB": lambda db: "A" * 10_000,
    "empty": lambda db: "",
    "None": lambda db: None,
    "non-ASCII": lambda db: "é" * 22,
    "non-ASCII, 22 bytes": lambda db: "ключключключкл",
    "SQL": lambda db: "' OR '1'='1' --",
    "SQL of a key's length": lambda db: "x'OR'1'='1'--AAAAAAAAA"[:22],
    "a key with a newline": lambda db: labs.new_key() + "\n",
    "bytes": lambda db: b"AAAAAAAAAAAAAAAAAAAAAA",
    "a number": lambda db: 12345,
}


@pytest.mark.parametrize("kind", KEYS)
def test_a_key_the_store_does_not_know_gets_a_new_lab_with_a_new_key(db, kind):
    known = labs.open_lab(db, None, now=T0)
    models.add(db, known.id, named("known lab's model"))
    sent = KEYS[kind](db)
    before = count(db, "labs")
    opened = labs.open_lab(db, sent, now=T0 + 1)
    assert opened.new and opened.key != sent and labs.valid_key(opened.key)
    assert opened.id != known.id and labs.exists(db, opened.id)
    assert count(db, "labs") == before + 1
    assert models.listed(db, opened.id) == []
    assert labs.open_lab(db, opened.key, now=T0 + 2).id == opened.id  # the new key is kept, hashed
    assert labs.open_lab(db, known.key, now=T0 + 2).id == known.id  # and nothing else changed


def test_a_lab_purged_while_its_key_is_being_opened_gives_a_new_lab(db):
    """open_lab reads the key, purge deletes the lab (on PostgreSQL it may, in between), open_lab goes on: the lab
    it returns exists, and its key opens it."""
    old = labs.open_lab(db, None, now=T0)
    later = T0 + limits.LAB_KEEP_DAYS * DAY + 1
    selected, purged = threading.Event(), threading.Event()

    def pause(_connection, _cursor, statement, *_args):
        if statement.lstrip().upper().startswith("SELECT") and "lab_keys" in statement and not selected.is_set():
            selected.set()
            purged.wait(5.0 if backend(db) == "postgresql" else 0.3)  # SQLite: purge waits for this transaction

    def purge():
        selected.wait(10)
        try:
            return labs.purge(db, now=later)  # the lab is older than LAB_KEEP_DAYS then
        finally:
            purged.set()

    sa.event.listen(db.engine, "after_cursor_execute", pause)
    try:
        opened, gone = in_threads(lambda: labs.open_lab(db, old.key, now=later), purge)
    finally:
        sa.event.remove(db.engine, "after_cursor_execute", pause)
    assert not isinstance(opened, BaseException) and not isinstance(gone, BaseException), (opened, gone)
    assert labs.exists(db, opened.id)
    assert labs.open_lab(db, opened.key, now=later).id == opened.id
    assert opened.new == (gone == 1) and opened.new == (backend(db) == "postgresql")


# --- Transfer codes ---------------------------------------------------------------------------------------


def test_a_transfer_code_joins_another_browser_to_the_lab_once(db):
    lab = labs.open_lab(db, None, now=T0)
    code = labs.transfer_code(db, lab.id, now=T0)
    assert len(code) == limits.LAB_TRANSFER_CHARS and set(code) <= set(labs.CODE_ALPHABET)
    joined = labs.join(db, code, None, now=T0 + 60)
    assert (joined.id, joined.new) == (lab.id, False) and joined.key not in (lab.key, code)
    assert labs.open_lab(db, joined.key, now=T0 + 61).id == lab.id
    assert labs.open_lab(db, lab.key, now=T0 + 61).id == lab.id  # the first browser keeps its key
    with pytest.raises(labs.JoinRefused, match="used already"):
        labs.join(db, code, None, now=T0 + 62)
    assert count(db, "lab_keys") == 2 and count(db, "lab_transfers") == 0


def test_a_new_code_ends_the_earlier_ones(db):
    lab = labs.open_lab(db, None, now=T0)
    first = labs.transfer_code(db, lab.id, now=T0)
    second = labs.transfer_code(db, lab.id, now=T0 + 1)
    with pytest.raises(labs.JoinRefused):
        labs.join(db, first, None, now=T0 + 2)
    assert labs.join(db, second, None, now=T0 + 2).id == lab.id


def test_a_code_expires_after_lab_transfer_minutes(db):
    lab = labs.open_lab(db, None, now=T0)
    life = limits.LAB_TRANSFER_MINUTES * 60
    code = labs.transfer_code(db, lab.id, now=T0)
    assert labs.join(db, code, None, now=T0 + life - 1).id == lab.id
    code = labs.transfer_code(db, lab.id, now=T0)
    with pytest.raises(labs.JoinRefused, match=f"older than {limits.LAB_TRANSFER_MINUTES} minutes"):
        labs.join(db, code, None, now=T0 + life + 1)
    assert count(db, "lab_keys") == 2  # the expired code made no key


def _typed_variant(code: str) -> str:
    """The code as a person may type it: lower case, in groups, 0 as O and 1 as I or L."""
    typed = code.replace("0", "O").replace("1", "l" if code.count("1") % 2 else "I").lower()
    return f" {typed[:3]}-{typed[3:6]} {typed[6:]} "


def test_a_typed_code_is_read_in_the_alphabets_form():
    assert labs.normalise_code("o1il-0abcd-e") == "0111" + "0ABCDE"
    assert labs.normalise_code(" 7k3m 9p-xq2 z ") == "7K3M9PXQ2Z"
    for typed in (None, 12, "", "0123456789A", "012345678", "01234 5678U", "0" * 41, "０１２３４５６７８９"):
        assert labs.normalise_code(typed) is None, typed


def test_a_code_typed_in_lower_case_with_dashes_and_look_alikes_joins(db):
    lab = labs.open_lab(db, None, now=T0)
    for _ in range(3):
        code = labs.transfer_code(db, lab.id, now=T0)
        typed = _typed_variant(code)
        assert labs.normalise_code(typed) == code
        assert labs.join(db, typed, None, now=T0 + 1).id == lab.id
    with pytest.raises(labs.JoinRefused, match=f"{limits.LAB_TRANSFER_CHARS} letters and digits"):
        labs.join(db, "not a code", None, now=T0 + 1)


def _ended_run(db, lab_id, fingerprint=None, name="run"):
    run_id = runs.create(db, lab_id, spec(name))
    runs.begin(db, run_id, "worker", 1)
    runs.report(db, run_id, Report(step=3, losses=[(1, 0.9), (2, 0.5), (3, 0.25)]))
    model_id = models.model_id(db, lab_id, fingerprint) if fingerprint else None
    runs.end(db, run_id, "finished", step=3, train_seconds=1.0, model_id=model_id)
    return run_id


def test_joining_moves_the_browsers_models_and_runs_into_the_lab_without_doubles(db):
    target = labs.open_lab(db, None, now=T0)
    mine = labs.open_lab(db, None, now=T0)
    shared, own = named("shared"), named("own")
    for data in (shared, named("theirs"), named("clash")):
        models.add(db, target.id, data)
    for data in (shared, own, named("clash ")):  # the last: another file whose name comes out the same, "clash"
        models.add(db, mine.id, data)
    assert [m.name for m in models.listed(db, mine.id)] == ["shared", "own", "clash"]
    shared_run = _ended_run(db, mine.id, models.listed(db, mine.id)[0].fingerprint, "on the shared model")
    own_run = _ended_run(db, mine.id, models.listed(db, mine.id)[1].fingerprint, "on its own model")
    queued = runs.create(db, mine.id, spec("queued"))
    code = labs.transfer_code(db, target.id, now=T0)

    joined = labs.join(db, code, mine.id, now=T0 + 5)

    assert joined.id == target.id and not labs.exists(db, mine.id)
    listed = models.listed(db, target.id)
    fingerprints = [m.fingerprint for m in listed]
    assert len(fingerprints) == len(set(fingerprints)) == 5  # shared, theirs, clash, own, the other clash
    assert {m.name for m in listed} == {"shared", "theirs", "clash", "own", "clash (moved)"}
    assert models.data(db, target.id, models.listed(db, target.id)[3].fingerprint) == own
    moved = {state.id: state for state in runs.states(db, target.id)}
    assert set(moved) == {shared_run, own_run, queued}
    assert moved[queued].status == "queued"
    assert moved[own_run].fingerprint == listed[3].fingerprint
    assert moved[shared_run].fingerprint == listed[0].fingerprint  # its model is the lab's copy of the file
    assert count(db, "labs") == 1 and count(db, "models") == 5 and count(db, "runs") == 3
    assert labs.open_lab(db, mine.key, now=T0 + 6).new  # the browser's old key opens nothing now


def test_a_join_that_would_hold_more_than_max_lab_models_is_refused(db, monkeypatch):
    monkeypatch.setattr(limits, "MAX_LAB_MODELS", 3)
    target, mine = labs.open_lab(db, None, now=T0), labs.open_lab(db, None, now=T0)
    models.add(db, target.id, named("t1"))
    models.add(db, target.id, named("t2"))
    models.add(db, mine.id, named("m1"))
    models.add(db, mine.id, named("m2"))
    code = labs.transfer_code(db, target.id, now=T0)
    with pytest.raises(labs.JoinRefused, match="more than 3 models"):
        labs.join(db, code, mine.id, now=T0 + 1)
    assert [m.name for m in models.listed(db, target.id)] == ["t1", "t2"]
    assert [m.name for m in models.listed(db, mine.id)] == ["m1", "m2"]
    assert count(db, "lab_keys") == 2
    models.add(db, mine.id, named("t2"))  # the same file as the target's: not counted twice
    models.remove(db, mine.id, models.listed(db, mine.id)[1].fingerprint)
    assert labs.join(db, code, mine.id, now=T0 + 2).id == target.id  # exactly at the limit: 3
    assert [m.name for m in models.listed(db, target.id)] == ["t1", "t2", "m1"]


def test_one_code_used_by_two_browsers_at_once_joins_one(db):
    lab = labs.open_lab(db, None, now=T0)
    code = labs.transfer_code(db, lab.id, now=T0)
    with meeting_at_first_write(db):
        results = in_threads(lambda: labs.join(db, code, None, now=T0 + 1),
                             lambda: labs.join(db, code, None, now=T0 + 1))
    joined = [r for r in results if isinstance(r, labs.OpenedLab)]
    refused = [r for r in results if isinstance(r, labs.JoinRefused)]
    assert len(joined) == 1 and len(refused) == 1, results
    assert count(db, "lab_keys") == 2


# --- Forget and purge -------------------------------------------------------------------------------------


def _full_lab(db, name: str, now: float = T0):
    """A lab with two keys, a waiting code, two models, an ended run and a running one with snapshots."""
    import pickle

    lab = labs.open_lab(db, None, now=now)
    labs.join(db, labs.transfer_code(db, lab.id, now=now), None, now=now)
    labs.transfer_code(db, lab.id, now=now)
    models.add(db, lab.id, named(f"{name} a"))
    models.add(db, lab.id, named(f"{name} b"))
    _ended_run(db, lab.id, models.listed(db, lab.id)[0].fingerprint)
    run_id = runs.create(db, lab.id, spec())
    runs.begin(db, run_id, "worker", 1)
    runs.report(db, run_id, Report(step=1, snapshots=[(1, pickle.dumps("a")), (2, pickle.dumps("b"))]))
    labs.open_lab(db, lab.key, now=now)  # the run's writes leave last_seen as it was
    return lab


def test_forget_deletes_the_lab_with_its_keys_codes_models_runs_and_snapshots(db):
    kept = _full_lab(db, "kept")
    before = counts(db)
    gone = _full_lab(db, "gone")
    assert counts(db) == {table: 2 * n for table, n in before.items()}
    assert all(before[table] > 0 for table in TABLES)
    labs.forget(db, gone.id)
    assert counts(db) == before
    assert not labs.exists(db, gone.id) and labs.exists(db, kept.id)
    assert labs.open_lab(db, gone.key, now=T0).new
    assert [m.name for m in models.listed(db, kept.id)] == ["kept a", "kept b"]


def test_purge_deletes_the_labs_idle_longer_than_lab_keep_days(db):
    keep = limits.LAB_KEEP_DAYS * DAY
    now = T0 + 400 * DAY
    at_limit = _full_lab(db, "at the limit", now=now - keep)
    over = _full_lab(db, "a second over", now=now - keep - 1)
    recent = _full_lab(db, "recent", now=now - 60)
    one_lab = {table: n // 3 for table, n in counts(db).items()}
    assert labs.purge(db, now=now) == 1
    assert not labs.exists(db, over.id) and labs.exists(db, at_limit.id) and labs.exists(db, recent.id)
    assert counts(db) == {table: 2 * n for table, n in one_lab.items()}
    assert labs.purge(db, now=now) == 0
    assert labs.purge(db, now=now + 1) == 1 and not labs.exists(db, at_limit.id)
    assert labs.open_lab(db, over.key, now=now).new and not labs.open_lab(db, recent.key, now=now).new
