"""The store when its database fails, and under load (seqviz.store.engine): a read-only SQLite folder or file, a
full disk, a PostgreSQL server stopped and started again, a commit that fails; thirty sessions and two training
workers writing at once. Every failure is a StoreUnavailable with a sentence and no password, leaves nothing
half-written, and passes: the same Database works again once its database is back.

Tests run as root, whom chmod does not stop (CAP_DAC_OVERRIDE). A read-only folder is made with the immutable flag
(``chattr +i`` on the folder and the file): the kernel refuses to write, create or remove there for root too, and
only a process with CAP_LINUX_IMMUTABLE (the test) can clear it. A full disk is SQLite's own ceiling,
``PRAGMA max_page_count`` at the file's size, set on every connection the store takes from its pool: the database
cannot grow, and SQLite answers exactly as on a full disk (SQLITE_FULL, "database or disk is full")."""

import contextlib
import multiprocessing
import os
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from store_fixtures import (
    TABLES,
    backend,
    count,
    counts,
    in_threads,
    named,
    spec,
    worker,
)

from seqviz import limits
from seqviz.progress import Report
from seqviz.store import Database, StoreUnavailable, labs, models, runs


@contextlib.contextmanager
def read_only(*paths: Path):
    """The paths read-only, for root too: the immutable flag (chmod when the tests do not run as root)."""
    if os.geteuid() != 0:
        modes = {path: path.stat().st_mode for path in paths}
        for path in paths:
            path.chmod(0o555 if path.is_dir() else 0o444)
        try:
            yield
        finally:
            for path, mode in modes.items():
                path.chmod(mode)
        return
    subprocess.run(["chattr", "+i", *map(str, paths)], check=True, capture_output=True)
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", *map(str, paths)], check=True, capture_output=True)


def _filled(url: str):
    """A store with a lab, a model and a run; disposed (its files closed, as after a server stopped)."""
    db = Database(url)
    lab = labs.open_lab(db, None)
    models.add(db, lab.id, named("kept"))
    run_id = runs.create(db, lab.id, spec("kept"))
    before = counts(db)
    db.dispose()
    return lab, run_id, before


def _calls(lab, run_id):
    """One of every kind of store call: name -> call(db)."""
    return {
        "open a lab": lambda db: labs.open_lab(db, lab.key),
        "open a new lab": lambda db: labs.open_lab(db, None),
        "is there a lab": lambda db: labs.exists(db, lab.id),
        "a transfer code": lambda db: labs.transfer_code(db, lab.id),
        "forget": lambda db: labs.forget(db, lab.id),
        "purge": lambda db: labs.purge(db),
        "list models": lambda db: models.listed(db, lab.id),
        "add a model": lambda db: models.add(db, lab.id, named("while it failed")),
        "a model's file": lambda db: models.data(db, lab.id, "0" * 64),
        "new run": lambda db: runs.create(db, lab.id, spec("while it failed")),
        "begin": lambda db: runs.begin(db, run_id, "worker", 1),
        "report": lambda db: runs.report(db, run_id, Report(step=1)),
        "states": lambda db: runs.states(db, lab.id),
        "stop": lambda db: runs.request_stop(db, lab.id, run_id),
        "counts": lambda db: runs.counts(db),
    }


def _all_unavailable(db, lab, run_id, *words: str, secret: str | None = None) -> None:
    for name, call in _calls(lab, run_id).items():
        with pytest.raises(StoreUnavailable) as failed:
            call(db)
        message = str(failed.value)
        assert message.endswith((".", ")")) or len(message) > 40, (name, message)
        assert "\n" not in message and "Traceback" not in message and "[SQL" not in message, (name, message)
        assert all(word in message for word in words), (name, message)
        assert secret is None or secret not in message, name


def _all_there(db, lab, before) -> None:
    assert counts(db) == before
    assert labs.open_lab(db, lab.key).id == lab.id
    assert [m.name for m in models.listed(db, lab.id)] == ["kept"]
    assert models.add(db, lab.id, named("after"))[1]
    assert [s.name for s in runs.states(db, lab.id)] == ["kept"]


def test_a_read_only_sqlite_folder(tmp_path):
    folder = tmp_path / "store"
    url = f"sqlite:///{folder / 'seqviz.db'}"
    lab, run_id, before = _filled(url)
    assert sorted(p.name for p in folder.iterdir()) == ["seqviz.db"]
    db = Database(url)  # a server starting while the folder is read-only
    with read_only(folder / "seqviz.db", folder):
        _all_unavailable(db, lab, run_id, str(folder / "seqviz.db"), "read-only")
    _all_there(db, lab, before)  # the same Database, once the folder is writable again
    db.dispose()


def test_a_read_only_sqlite_file_reads_and_refuses_writes_until_it_is_writable_again(tmp_path):
    folder = tmp_path / "store"
    url = f"sqlite:///{folder / 'seqviz.db'}"
    lab, _, before = _filled(url)
    db = Database(url)
    with read_only(folder / "seqviz.db"):
        assert labs.exists(db, lab.id) and [m.name for m in models.listed(db, lab.id)] == ["kept"]
        for write in (lambda: labs.open_lab(db, lab.key), lambda: models.add(db, lab.id, named("no")),
                      lambda: runs.create(db, lab.id, spec()), lambda: labs.forget(db, lab.id)):
            with pytest.raises(StoreUnavailable, match="read-only"):
                write()
    _all_there(db, lab, before)
    db.dispose()


@contextlib.contextmanager
def full_disk(db):
    """Every connection the store takes cannot grow the file past its size now; lifted on the way out."""
    with db.engine.connect() as connection:
        pages = connection.exec_driver_sql("PRAGMA page_count").scalar_one()
        unlimited = connection.exec_driver_sql("PRAGMA max_page_count").scalar_one()
    ceiling = {"pages": pages}

    def checkout(dbapi_connection, _record, _proxy):
        dbapi_connection.execute(f"PRAGMA max_page_count={ceiling['pages']}")

    sa.event.listen(db.engine, "checkout", checkout)
    try:
        yield
    finally:
        ceiling["pages"] = unlimited
        with db.engine.connect():
            pass
        sa.event.remove(db.engine, "checkout", checkout)
        db.engine.pool.dispose()  # the connections that had the ceiling go; the Database stays as it was


def test_a_full_disk(tmp_path):
    folder = tmp_path / "store"
    url = f"sqlite:///{folder / 'seqviz.db'}"
    lab, _, before = _filled(url)
    db = Database(url)
    with full_disk(db):
        with pytest.raises(StoreUnavailable, match="the disk is full") as failed:
            models.add(db, lab.id, named("too big for the disk"))
        assert str(folder / "seqviz.db") in str(failed.value)
        assert counts(db) == before  # nothing of it written
        opened = 0
        with pytest.raises(StoreUnavailable, match="the disk is full"):
            for _ in range(1000):  # small writes fit in the pages there are, until they are full
                labs.open_lab(db, None)
                opened += 1
        assert count(db, "labs") == before["labs"] + opened == count(db, "lab_keys")  # no lab without its key
        assert [m.name for m in models.listed(db, lab.id)] == ["kept"]  # reading goes on
        assert [s.name for s in runs.states(db, lab.id)] == ["kept"]
    assert models.add(db, lab.id, named("after"))[1]
    assert labs.open_lab(db, None).new
    db.dispose()


def test_a_stopped_postgresql_server_then_started_again(postgres, postgres_store):
    postgres_store.empty()
    lab, run_id, before = _filled(postgres.url)
    db = Database(postgres.url)
    assert labs.exists(db, lab.id)  # connected: its pool holds a connection to the server
    postgres.stop()
    try:
        started = time.monotonic()
        _all_unavailable(db, lab, run_id, f"127.0.0.1:{postgres.port}", secret=postgres.app_password)
        fresh = Database(postgres.url)  # a server starting while the database is down
        _all_unavailable(fresh, lab, run_id, "postgresql database seqviz", secret=postgres.app_password)
        assert time.monotonic() - started < 30 * limits.STORE_CONNECT_TIMEOUT_S
    finally:
        postgres.start()
    _all_there(db, lab, before)
    assert labs.open_lab(fresh, lab.key).id == lab.id
    db.dispose()
    fresh.dispose()


def test_a_wrong_password_or_address_is_unavailable_in_words_without_the_password(postgres, tmp_path):
    wrong = sa.engine.make_url(postgres.url).set(password="not-the-password-x1")
    db = Database(wrong.render_as_string(hide_password=False))
    with pytest.raises(StoreUnavailable, match="password authentication failed") as failed:
        labs.open_lab(db, None)
    assert "not-the-password-x1" not in str(failed.value) and postgres.app_password not in str(failed.value)
    with pytest.raises(StoreUnavailable, match="not a database URL"):
        labs.open_lab(Database("user:password@no scheme"), None)
    blocked = tmp_path / "a file"
    blocked.write_text("not a folder")
    with pytest.raises(StoreUnavailable, match="cannot be made"):
        labs.open_lab(Database(f"sqlite:///{blocked / 'seqviz.db'}"), None)


def test_a_commit_that_fails_leaves_nothing_half_written(db):
    lab = labs.open_lab(db, None)
    models.add(db, lab.id, named("kept"))
    run_id = runs.create(db, lab.id, spec())
    code = labs.transfer_code(db, lab.id)
    before = counts(db)

    fingerprint = models.listed(db, lab.id)[0].fingerprint
    wrote = {"now": False}

    def note(_connection, _cursor, statement, *_args):
        wrote["now"] |= statement.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))

    def fail(_connection):  # a transaction that wrote fails as it commits (reads go on)
        if wrote["now"]:
            wrote["now"] = False
            raise sa.exc.OperationalError("COMMIT", {}, Exception("server closed the connection unexpectedly"))

    writes = {"open a new lab": lambda: labs.open_lab(db, None), "add": lambda: models.add(db, lab.id, named("half")),
              "new run": lambda: runs.create(db, lab.id, spec()), "join": lambda: labs.join(db, code, None),
              "forget": lambda: labs.forget(db, lab.id), "begin": lambda: runs.begin(db, run_id, "worker", 1),
              "remove": lambda: models.remove(db, lab.id, fingerprint),
              "purge": lambda: labs.purge(db, now=time.time() + 1e9)}
    sa.event.listen(db.engine, "before_cursor_execute", note)
    sa.event.listen(db.engine, "commit", fail)
    try:
        for name, write in writes.items():
            with pytest.raises(StoreUnavailable, match="server closed the connection"):
                write()
            assert counts(db) == before, name
    finally:
        sa.event.remove(db.engine, "commit", fail)
        sa.event.remove(db.engine, "before_cursor_execute", note)
    assert counts(db) == before
    assert runs.states(db, lab.id)[0].status == "queued"
    assert labs.join(db, code, None).id == lab.id  # the code was not used up


def test_sqlite_readers_never_wait_for_a_writer_and_writers_wait_their_turn(tmp_path):
    path = tmp_path / "store" / "seqviz.db"
    db = Database(f"sqlite:///{path}")
    lab = labs.open_lab(db, None)
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")  # another process's long write
    holder.execute("UPDATE labs SET created_at = 1")
    released = threading.Timer(0.5, holder.execute, ("COMMIT",))
    try:
        # Read while the write lock is held (it is released only after): a reader that took the lock as a writer
        # does would wait out the busy timeout and fail.
        started = time.monotonic()
        assert labs.exists(db, lab.id) and models.listed(db, lab.id) == [] and runs.counts(db)["queued"] == 0
        assert time.monotonic() - started < limits.STORE_BUSY_TIMEOUT_S / 2
        started = time.monotonic()
        released.start()
        assert labs.open_lab(db, lab.key).id == lab.id  # waits for the commit, then writes
        assert time.monotonic() - started >= 0.45
        assert labs.exists(db, lab.id) and count(db, "labs", "WHERE created_at = 1") == 1  # the other's write stays
    finally:
        released.cancel()
        holder.close()
        db.dispose()


# --- Many writers at once ---------------------------------------------------------------------------------

SESSIONS = 30
REPORTS = 40


def test_thirty_sessions_and_two_workers_writing_at_once_lose_nothing(db):
    shared = labs.open_lab(db, None)  # one browser's lab, open in every session's tab
    worker_labs = [labs.open_lab(db, None).id for _ in range(2)]
    run_ids = [[runs.create(db, worker_labs[w], spec(f"worker {w} run {r}")) for r in range(2)] for w in range(2)]
    files = [named(f"session {n}") for n in range(SESSIONS)]
    context = multiprocessing.get_context("spawn")
    start, errors = context.Barrier(3), context.Queue()
    processes = [context.Process(target=worker, args=(db.url, run_ids[w], REPORTS, start, errors)) for w in range(2)]
    for process in processes:
        process.start()
    sessions_start = threading.Barrier(SESSIONS)

    def session(n):
        sessions_start.wait(60)
        opened = labs.open_lab(db, None)
        assert labs.open_lab(db, opened.key).id == opened.id
        models.add(db, opened.id, files[n])
        models.add(db, shared.id, named("every tab's file"))
        labs.seen(db, shared.id)
        runs.states(db, worker_labs[n % 2])
        runs.counts(db)
        return opened

    try:
        start.wait(120)  # the workers are connected: all begin at once
        results = in_threads(*[lambda n=n: session(n) for n in range(SESSIONS)], timeout_s=120)
        for process in processes:
            process.join(120)
        assert [process.exitcode for process in processes] == [0, 0]
        assert errors.empty(), errors.get()
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
                process.join()
    assert all(isinstance(result, labs.OpenedLab) for result in results), [
        r for r in results if not isinstance(r, labs.OpenedLab)][:3]
    assert count(db, "labs") == count(db, "lab_keys") == 3 + SESSIONS
    assert count(db, "models") == SESSIONS + 1 and len(models.listed(db, shared.id)) == 1
    assert all([m.name for m in models.listed(db, r.id)] == [f"session {n}"] for n, r in enumerate(results))
    for w, lab in enumerate(worker_labs):
        for state in runs.states(db, lab):
            assert state.status == "finished" and state.step == REPORTS, (backend(db), state.status)
            assert [step for step, _ in state.losses] == list(range(1, REPORTS + 1))
            assert [step for step, _ in state.snapshots] == list(range(10, REPORTS + 1, 10))
        assert {s.id for s in runs.states(db, lab)} == set(run_ids[w])
    assert runs.counts(db) == {"queued": 0, "running": 0}
    assert set(counts(db)) == set(TABLES)
