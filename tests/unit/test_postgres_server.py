"""The tests' PostgreSQL server (tests/databases.py, the ``postgres`` fixture), driven as the app will drive it:
SQLAlchemy 2 with psycopg 3. The app's role writes and reads in its own database and can do nothing else; passwords
are checked; the server stops and starts again with its data; and it cannot outlive the tests' process."""

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa
from databases import APP_ROLE, _running, _start_time
from polling import wait_until
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

ROOT = Path(__file__).resolve().parents[2]


def _engine(url) -> sa.Engine:
    return sa.create_engine(url, poolclass=NullPool, connect_args={"connect_timeout": 5})


def _table(engine: sa.Engine) -> sa.Table:
    """A table of this test's own, made in the app's database."""
    table = sa.Table(f"notes_{uuid.uuid4().hex[:8]}", sa.MetaData(),
                     sa.Column("id", sa.Integer, primary_key=True), sa.Column("text", sa.String(100), nullable=False))
    table.create(engine)
    return table


def _denied(error: pytest.ExceptionInfo) -> bool:
    return isinstance(error.value.orig, psycopg.errors.InsufficientPrivilege)


def test_the_app_role_makes_a_table_and_writes_and_reads_a_row_in_a_transaction(postgres):
    url = make_url(postgres.url)
    assert (url.drivername, url.username, url.host, url.database) == ("postgresql+psycopg", APP_ROLE, "127.0.0.1",
                                                                      "seqviz")
    assert url.port == postgres.port and url.password
    engine = _engine(postgres.url)
    table = _table(engine)
    with engine.begin() as connection:
        connection.execute(table.insert().values(id=1, text="attention"))
        assert connection.execute(sa.select(table.c.text)).scalar_one() == "attention"  # inside the transaction
    with engine.connect() as connection:
        assert connection.execute(sa.select(table.c.text).where(table.c.id == 1)).scalar_one() == "attention"
    with pytest.raises(ZeroDivisionError), engine.begin() as connection:  # a failed transaction leaves nothing
        connection.execute(table.insert().values(id=2, text="rolled back"))
        raise ZeroDivisionError
    with engine.connect() as connection:
        assert connection.execute(sa.select(sa.func.count()).select_from(table)).scalar_one() == 1
    engine.dispose()


def test_the_app_role_can_do_nothing_else(postgres):
    app = _engine(postgres.url).execution_options(isolation_level="AUTOCOMMIT")
    with app.connect() as connection:
        role = connection.execute(sa.text("SELECT rolsuper, rolcreatedb, rolcreaterole, rolreplication, "
                                          "rolbypassrls FROM pg_roles WHERE rolname = current_user")).one()
        assert tuple(role) == (False,) * 5
        for statement in ("CREATE DATABASE elsewhere", "CREATE ROLE intruder LOGIN PASSWORD 'x'",
                          "ALTER ROLE seqviz_app CREATEDB", "CREATE SCHEMA private"):
            with pytest.raises(sa.exc.ProgrammingError) as error:
                connection.execute(sa.text(statement))
            assert _denied(error), statement
    admin = _engine(postgres.admin_url).execution_options(isolation_level="AUTOCOMMIT")
    other = f"other_{uuid.uuid4().hex[:8]}"
    with admin.connect() as connection:
        connection.execute(sa.text(f"CREATE DATABASE {other}"))
    other_admin = _engine(postgres.admin_url_for(other))
    with other_admin.begin() as connection:
        connection.execute(sa.text("CREATE TABLE secrets (text text); INSERT INTO secrets VALUES ('the key')"))
    for database in ("postgres", "template1"):  # not even a connection to the cluster's other databases
        elsewhere = _engine(make_url(postgres.url).set(database=database))
        with pytest.raises(sa.exc.OperationalError, match="permission denied for database"), elsewhere.connect():
            pass
    # A database the admin makes later has PostgreSQL's default ACL (PUBLIC may connect): nothing there to read
    # or to make.
    with _engine(make_url(postgres.url).set(database=other)).connect() as connection:
        for statement in ("SELECT * FROM secrets", "CREATE TABLE mine (text text)"):
            with pytest.raises(sa.exc.ProgrammingError) as error:
                connection.execute(sa.text(statement))
            assert _denied(error), statement
            connection.rollback()
    seqviz_admin = _engine(postgres.admin_url_for("seqviz"))  # nor the admin's own tables in the app's database
    table = f"admin_{uuid.uuid4().hex[:8]}"
    with seqviz_admin.begin() as connection:
        connection.execute(sa.text(f"CREATE TABLE {table} (text text); INSERT INTO {table} VALUES ('the key')"))
    with app.connect() as connection, pytest.raises(sa.exc.ProgrammingError) as error:
        connection.execute(sa.text(f"SELECT * FROM {table}"))
    assert _denied(error)
    with seqviz_admin.begin() as connection:
        connection.execute(sa.text(f"DROP TABLE {table}"))
    other_admin.dispose()
    with admin.connect() as connection:
        connection.execute(sa.text(f"DROP DATABASE {other}"))


def test_a_wrong_password_is_refused(postgres):
    for url in (make_url(postgres.url).set(password="wrong"), make_url(postgres.admin_url).set(password="wrong"),
                make_url(postgres.url).set(password="")):
        with pytest.raises(sa.exc.OperationalError, match="password"), _engine(url).connect():
            pass


def test_stop_fails_new_connections_and_start_brings_the_server_back_with_its_data(postgres):
    engine = _engine(postgres.url)
    table = _table(engine)
    with engine.begin() as connection:
        connection.execute(table.insert().values(id=1, text="kept"))
    first = postgres.pid
    held = engine.connect()  # a connection open across the stop: ended by the fast shutdown
    try:
        postgres.stop()
        assert postgres.pid is None and not _running(first)
        with pytest.raises(sa.exc.OperationalError), engine.connect():
            pass
        with pytest.raises(sa.exc.OperationalError):
            held.execute(sa.select(1))
    finally:
        held.invalidate()
        held.close()
        if postgres.pid is None:
            postgres.start()  # the next tests get a running server whatever happened here
    assert postgres.pid not in (None, first)
    with engine.connect() as connection:
        assert connection.execute(sa.select(table.c.text)).scalar_one() == "kept"
    engine.dispose()


OUTLIVE = """
import sys, time
sys.path.insert(0, sys.argv[1] + "/tests")
from pathlib import Path
from databases import postgres_server
with postgres_server(Path(sys.argv[1])) as server:
    print(server.pid, server.folder, flush=True)
    time.sleep(300)
"""


def test_the_server_does_not_outlive_the_tests_process():
    """A process that started a server is killed (SIGKILL: no teardown): its watchdog stops the server and removes
    its folder."""
    owner = subprocess.Popen([sys.executable, "-c", OUTLIVE, str(ROOT)], stdout=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        pid, folder = owner.stdout.readline().split()
        pid, folder = int(pid), Path(folder)
        assert _running(pid) and folder.is_dir()
        started = _start_time(pid)
    finally:
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait(10)
        owner.stdout.close()
    assert wait_until(lambda: not (_running(pid) and _start_time(pid) == started), timeout_s=30), \
        f"postgres (PID {pid}) outlived the process that started it"
    assert wait_until(lambda: not folder.exists(), timeout_s=10), f"{folder} was left behind"
