"""Helpers for the lab store's tests (tests/unit/test_store_*.py): a fresh store on SQLite or PostgreSQL, checkpoint
files, run specs, rows counted in every table, store calls run in threads at once and meeting at their first write.

The ``db`` fixture (tests/conftest.py) gives each test a fresh `seqviz.store.Database` on both backends: a new
SQLite file in the test's folder, or the tests' PostgreSQL server (the ``postgres`` fixture) whose app database is
migrated once per session and emptied (TRUNCATE) before each test. A test that needs an empty database (no tables)
asks `PostgresStore.fresh_database` for one of its own.

Nothing here imports torch: the training workers of the concurrency test (spawned processes) import this module.
"""

from __future__ import annotations

import contextlib
import functools
import secrets
import threading
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool

ROOT = Path(__file__).resolve().parents[2]
TABLES = ("labs", "lab_keys", "lab_transfers", "models", "runs", "run_followers", "run_snapshots")
BACKENDS = ("sqlite", "postgresql")


def backend(db) -> str:
    return sa.engine.make_url(db.url).get_backend_name()


class PostgresStore:
    """The PostgreSQL server's app database with the store's schema, for the whole session."""

    def __init__(self, server):
        from seqviz.store.engine import make_engine, migrate

        self.server = server
        self.url = server.url
        engine = make_engine(self.url)
        try:
            migrate(engine)
        finally:
            engine.dispose()

    def empty(self) -> None:
        """Every table emptied, identities restarted: the next test finds the store as new."""
        engine = sa.create_engine(self.url, poolclass=NullPool)
        try:
            with engine.begin() as connection:
                connection.execute(sa.text(f"TRUNCATE {', '.join(TABLES)} RESTART IDENTITY CASCADE"))
        finally:
            engine.dispose()

    @contextlib.contextmanager
    def fresh_database(self):
        """The URL of a new, empty database that the app's role owns (no tables at all); dropped afterwards."""
        name = f"seqviz_{secrets.token_hex(6)}"
        admin = sa.create_engine(self.server.admin_url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
        try:
            with admin.connect() as connection:
                connection.execute(sa.text(f"CREATE DATABASE {name} OWNER seqviz_app"))
            yield sa.engine.make_url(self.url).set(database=name).render_as_string(hide_password=False)
        finally:
            with admin.connect() as connection:
                connection.execute(sa.text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            admin.dispose()


@contextlib.contextmanager
def empty_database_url(request, kind: str, tmp_path: Path):
    """The URL of an empty database (no tables) of the backend ``kind``."""
    if kind == "sqlite":
        yield f"sqlite:///{tmp_path / 'empty' / 'seqviz.db'}"
    else:
        with request.getfixturevalue("postgres_store").fresh_database() as url:
            yield url


# --- Reading the store's tables directly ------------------------------------------------------------------


def count(db, table: str, where: str = "", **params) -> int:
    with db.engine.connect() as connection:
        return connection.execute(sa.text(f"SELECT count(*) FROM {table} {where}"), params).scalar_one()


def counts(db) -> dict[str, int]:
    return {table: count(db, table) for table in TABLES}


def every_value(db) -> list:
    """Every value of every column of every table the database has (the store's and Alembic's)."""
    values = []
    with db.engine.connect() as connection:
        for table in sa.inspect(connection).get_table_names():
            values += [value for row in connection.execute(sa.text(f"SELECT * FROM {table}")) for value in row]
    return values


# --- What the store keeps ---------------------------------------------------------------------------------

BOW = ROOT / "assets" / "models" / "bow.safetensors"  # 5.5 kB: the smallest shipped model


@functools.cache
def bow() -> bytes:
    return BOW.read_bytes()


@functools.cache
def named(name: str, seed: int = 0) -> bytes:
    """The shipped bag-of-words model under another name (and seed): a valid checkpoint file of its own."""
    from checkpoint_files import rewrite_meta

    return rewrite_meta(bow(), lambda document: document.update(name=name, seed=seed))


def spec(name: str = "", steps: int = 50):
    """A small, valid run spec (seqviz.runs.RunSpec)."""
    from seqviz.runs import RunSpec

    return RunSpec(task="memory", family="rnn", embedding=8, hidden=8, steps=steps, name=name)


# --- Making transactions meet -----------------------------------------------------------------------------


@contextlib.contextmanager
def meeting_at_first_write(db=None, parties: int = 2, timeout_s: float = 0.5):
    """Each thread's first flush (its transaction's first write) waits until ``parties`` threads are there, at most
    ``timeout_s``: transactions that all read before any writes, unless the store makes one wait for another (a row
    lock; the first then goes on alone after the timeout). With ``db`` on SQLite nobody waits: it lets one writing
    transaction in at a time (BEGIN IMMEDIATE), so they cannot meet there."""
    if db is not None and backend(db) == "sqlite":
        yield
        return
    barrier = threading.Barrier(parties)
    arrived: set[int] = set()

    def wait(_session, _flush_context, _instances) -> None:
        if threading.get_ident() in arrived:
            return
        arrived.add(threading.get_ident())
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait(timeout_s)

    sa.event.listen(Session, "before_flush", wait)
    try:
        yield
    finally:
        sa.event.remove(Session, "before_flush", wait)


def in_threads(*calls, timeout_s: float = 30.0) -> list:
    """Run the calls at once, one thread each; returns each one's result or the exception it raised."""
    results: list = [None] * len(calls)

    def run(i, call):
        try:
            results[i] = call()
        except BaseException as error:  # the test looks at it
            results[i] = error

    threads = [threading.Thread(target=run, args=(i, call), daemon=True) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout_s)
        assert not thread.is_alive(), "a store call did not return"
    return results


# --- A training worker, in a process of its own -----------------------------------------------------------


def worker(url: str, run_ids: list[str], reports: int, start, errors) -> None:
    """What a training worker writes (spawned process): begin each run, report ``reports`` times (a loss, a
    snapshot now and then), save a point, end it. Waits for ``start`` (a Barrier); exceptions go to ``errors``."""
    import os
    import pickle
    import traceback

    from seqviz.progress import Report
    from seqviz.store import Database, runs

    try:
        db = Database(url)
        db.engine  # noqa: B018  (connected and migrated before the start)
        start.wait(60)
        for run_id in run_ids:
            assert runs.begin(db, run_id, f"worker-{os.getpid()}", os.getpid()) is not None
        for step in range(1, reports + 1):
            for run_id in run_ids:
                snapshots = [(step, pickle.dumps({"step": step}))] if step % 10 == 0 else []
                runs.report(db, run_id, Report(phase="training", step=step, trained_s=step / 10,
                                               losses=[(step, 1.0 / step)], snapshots=snapshots))
                if step % 15 == 0:
                    runs.save_point(db, run_id, step, b"state %d" % step)
        for run_id in run_ids:
            runs.end(db, run_id, "finished", step=reports, train_seconds=reports / 10)
        db.dispose()
    except BaseException:  # reported to the test
        errors.put(traceback.format_exc())


def first_use(url: str, start, errors) -> None:
    """A store's first use (spawned process): its own Database on ``url`` opens a lab, after ``start`` (a Barrier)."""
    import traceback

    from alembic import command, config  # noqa: F401  (imported before the start, as the test's process has them)

    from seqviz.store import Database, labs

    try:
        db = Database(url)
        sa.engine.make_url(url).get_dialect().import_dbapi()
        start.wait(60)
        labs.open_lab(db, None)
        db.dispose()
    except BaseException:  # reported to the test
        errors.put(traceback.format_exc())
