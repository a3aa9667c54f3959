"""The store's schema through Alembic (seqviz/store/migrations), on SQLite and PostgreSQL: a database written at
revision 0001 comes up to the newest with everything in it found through the store, the ORM's tables are exactly
what the migrations make, and stores starting at once on an empty database make it once."""

import hashlib
import json
import multiprocessing
import pickle
from dataclasses import asdict

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from store_fixtures import BACKENDS, empty_database_url, first_use, in_threads, named, spec

from seqviz.store import Database, labs, models, runs
from seqviz.store.engine import alembic_config, make_engine, migrate
from seqviz.store.schema import Base

HEAD = ScriptDirectory.from_config(alembic_config(None)).get_current_head()


@pytest.fixture(params=BACKENDS)
def empty_url(request, tmp_path):
    with empty_database_url(request, request.param, tmp_path) as url:
        yield url


def _revision(engine) -> str:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def _columns(engine, table) -> set[str]:
    return {column["name"] for column in sa.inspect(engine).get_columns(table)}


def test_the_newest_revision_is_the_last_one_written():
    assert HEAD == "0005"


def test_a_database_at_0001_comes_up_to_the_newest_with_everything_found(empty_url):
    engine = make_engine(empty_url)
    with engine.begin() as connection:
        command.upgrade(alembic_config(connection), "0001")
    assert _revision(engine) == "0001" and "attempts" not in _columns(engine, "runs")

    key, data, fields = labs.new_key(), named("from 0001"), asdict(spec("an old run", steps=30))
    lab = "a" * 32
    run = {"lab_id": lab, "spec": json.dumps(fields), "watch": None, "steps": 30, "metric_history": "[]",
           "stop_requested": False, "stop_reason": None, "error": None, "metrics": None, "train_seconds": None,
           "model_id": None, "worker": None, "worker_pid": None, "started_at": None, "ended_at": None}
    with engine.begin() as connection:
        insert = lambda table, **row: connection.execute(  # noqa: E731
            sa.text(f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join(':' + c for c in row)})"), row)
        insert("labs", id=lab, created_at=100.0, last_seen_at=200.0)
        insert("lab_keys", key_hash=hashlib.sha256(key.encode()).hexdigest(), lab_id=lab, created_at=100.0)
        insert("lab_transfers", code_hash="c" * 64, lab_id=lab, expires_at=300.0)
        insert("models", id=1, lab_id=lab, fingerprint=hashlib.sha256(data).hexdigest(), name="from 0001",
               family="bow", task="emails", origin="trained here", size=len(data), data=data, created_at=150.0)
        insert("runs", **run, id="1" * 32, name="queued", status="queued", phase=None, step=0, trained_s=0.0,
               losses="[]", submitted_at=110.0, updated_at=110.0)
        insert("runs", **{**run, "worker": "w", "worker_pid": 9, "started_at": 121.0}, id="2" * 32, name="running",
               status="running", phase="training", step=12, trained_s=3.0, losses="[[10, 0.5], [12, 0.25]]",
               submitted_at=120.0, updated_at=125.0)
        insert("runs", **{**run, "model_id": 1, "started_at": 131.0, "ended_at": 140.0, "train_seconds": 8.0,
                          "metrics": json.dumps({"accuracy": 0.75})},
               id="3" * 32, name="finished", status="finished", phase=None, step=30, trained_s=8.0,
               losses="[[30, 0.1]]", submitted_at=130.0, updated_at=140.0)
        insert("run_snapshots", run_id="2" * 32, step=10, data=pickle.dumps({"step": 10}))

    migrate(engine)
    assert _revision(engine) == HEAD and {"attempts", "saved_step", "note"} <= _columns(engine, "runs")
    assert "saved_state" not in _columns(engine, "runs") and _columns(engine, "run_points") == {"run_id", "state"}
    engine.dispose()

    db = Database(empty_url)
    try:
        opened = labs.open_lab(db, key, now=400.0)
        assert (opened.id, opened.new) == (lab, False) and labs.last_seen(db, lab) == 400.0
        (model,) = models.listed(db, lab)
        assert (model.name, model.family, model.size, model.origin) == ("from 0001", "bow", len(data), "trained here")
        assert models.data(db, lab, model.fingerprint) == data
        states = {state.name: state for state in runs.states(db, lab)}
        assert {name: s.status for name, s in states.items()} == {
            "queued": "queued", "running": "running", "finished": "finished"}
        assert all(s.attempts == 0 and s.note is None for s in states.values())
        assert states["running"].losses == ((10, 0.5), (12, 0.25)) and states["running"].step == 12
        assert states["running"].snapshots == ((10, {"step": 10}),)
        assert states["finished"].fingerprint == model.fingerprint and states["finished"].metrics == {"accuracy": 0.75}
        assert states["queued"].spec == spec("an old run", steps=30) and states["queued"].queue_position == 1
        with db.engine.connect() as connection:
            assert connection.execute(sa.text("SELECT saved_step FROM runs")).all() == [(0,)] * 3
            assert connection.execute(sa.text("SELECT count(*) FROM run_points")).scalar_one() == 0
        began = runs.begin(db, "2" * 32, "new worker", 1)  # a run of the old store goes on from its start
        assert (began["attempts"], began["saved_step"], began["saved_state"]) == (1, 0, None)
        assert runs.states(db, lab, "2" * 32)[0].step == 12
    finally:
        db.dispose()


def test_a_running_runs_saved_point_at_0004_moves_beside_its_row_and_the_run_goes_on_from_it(empty_url):
    engine = make_engine(empty_url)
    with engine.begin() as connection:
        command.upgrade(alembic_config(connection), "0004")
        connection.execute(sa.text("INSERT INTO labs (id, created_at, last_seen_at) VALUES (:id, 1.0, 1.0)"),
                           {"id": "a" * 32})
        connection.execute(sa.text(
            "INSERT INTO runs (id, lab_id, name, spec, status, step, steps, trained_s, losses, metric_history, "
            "stop_requested, attempts, saved_step, saved_state, submitted_at, updated_at) VALUES (:id, :lab, 'r', "
            ":spec, 'running', 12, 30, 3.0, '[]', '[]', false, 1, 10, :state, 1.0, 2.0)"),
            {"id": "1" * 32, "lab": "a" * 32, "spec": json.dumps(asdict(spec("r", steps=30))), "state": b"at 10"})
    migrate(engine)
    engine.dispose()
    db = Database(empty_url)
    try:
        began = runs.begin(db, "1" * 32, "new worker", 1)
        assert (began["saved_state"], began["saved_step"], began["attempts"]) == (b"at 10", 10, 2)
    finally:
        db.dispose()


def test_the_orm_tables_are_exactly_what_the_migrations_make(empty_url):
    engine = make_engine(empty_url)
    migrate(engine)
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []
        assert set(sa.inspect(connection).get_table_names()) == {*Base.metadata.tables, "alembic_version"}
    engine.dispose()


def test_migrating_a_database_at_the_newest_revision_changes_nothing(empty_url):
    db = Database(empty_url)
    opened = labs.open_lab(db, None, now=1.0)
    migrate(db.engine)
    db.dispose()
    again = Database(empty_url)
    assert labs.open_lab(again, opened.key, now=2.0).id == opened.id and _revision(again.engine) == HEAD
    again.dispose()


def test_stores_starting_at_once_on_an_empty_database_make_its_tables_once(empty_url):
    """A process (a training worker, say) and two threads (servers of one process) with a Database each, all on an
    empty database at once: each waits for the one that makes the tables, then finds them."""
    context = multiprocessing.get_context("spawn")
    start, errors = context.Barrier(3), context.Queue()
    processes = [context.Process(target=first_use, args=(empty_url, start, errors))]
    for process in processes:
        process.start()
    stores = [Database(empty_url) for _ in range(2)]

    def use(db):
        start.wait(60)
        return labs.open_lab(db, None)

    try:
        results = in_threads(*[lambda db=db: use(db) for db in stores], timeout_s=60)
        for process in processes:
            process.join(60)
        assert [process.exitcode for process in processes] == [0]
        assert errors.empty(), errors.get()
        assert all(isinstance(result, labs.OpenedLab) for result in results), results
        with stores[0].engine.connect() as connection:
            assert connection.execute(sa.text("SELECT count(*) FROM labs")).scalar_one() == 3
            assert connection.execute(sa.text("SELECT version_num FROM alembic_version")).scalars().all() == [HEAD]
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
                process.join()
        for db in stores:
            db.dispose()
