"""Where the lab store lives and how it is reached: one engine per process, its schema brought up to date.

- **Default: a SQLite file**, ``seqviz.db`` in the data folder: ``SEQVIZ_DATA_DIR`` when set, else
  ``~/.local/share/seqviz`` (``$XDG_DATA_HOME/seqviz``). Nothing to set up; WAL mode (readers never wait for
  the writer), a busy timeout (a writer waits its turn instead of failing with "database is locked"),
  foreign keys on (a forgotten lab takes its models and runs with it).
- **PostgreSQL by one setting**: ``SEQVIZ_DATABASE_URL=postgresql+psycopg://user:password@host/db`` (the lecture
  hall). Any SQLAlchemy URL works there; the tests run the store on both.

The web server, its training workers and the command line read the same settings, so they find one store.
Every write happens in a transaction (:func:`transaction`); a database that cannot be reached raises
:class:`StoreUnavailable` with a sentence a teacher can act on.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import sessionmaker

from seqviz import limits

URL_ENV = "SEQVIZ_DATABASE_URL"
DATA_DIR_ENV = "SEQVIZ_DATA_DIR"


class StoreUnavailable(RuntimeError):
    """The lab store cannot be read or written now; the message says why, in words."""


def data_dir(env: dict | None = None) -> Path:
    """The folder of the default SQLite store (and nothing else): SEQVIZ_DATA_DIR, else the XDG data folder."""
    env = os.environ if env is None else env
    chosen = env.get(DATA_DIR_ENV, "").strip()
    if chosen:
        return Path(chosen).expanduser()
    base = env.get("XDG_DATA_HOME", "").strip() or str(Path.home() / ".local" / "share")
    return Path(base) / "seqviz"


def database_url(env: dict | None = None) -> str:
    """SEQVIZ_DATABASE_URL, else the SQLite file in :func:`data_dir`."""
    env = os.environ if env is None else env
    url = env.get(URL_ENV, "").strip()
    return url or f"sqlite:///{data_dir(env) / 'seqviz.db'}"


def describe(url: str) -> str:
    """Where the store is, for messages: the SQLite file's path, or the server without its password."""
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
    except Exception:  # a malformed setting
        return f"the database named by {URL_ENV} (it is not a database URL)"
    if parsed.get_backend_name() == "sqlite":
        return f"the SQLite file {parsed.database}"
    return f"the {parsed.get_backend_name()} database {parsed.database} at {parsed.host}:{parsed.port or ''}"


def _switch_to_wal(cursor) -> None:
    """WAL mode, kept in the file once set. Making a new file WAL takes a lock SQLite does not wait for (its busy
    handler is not called): processes opening a new store at once see "database is locked" at once. Each tries
    again for up to the busy timeout; the first to switch leaves the file WAL and the others find it so."""
    import sqlite3

    deadline = time.monotonic() + limits.STORE_BUSY_TIMEOUT_S
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _sqlite_pragmas(connection, _record) -> None:
    connection.isolation_level = None  # pysqlite begins no transaction of its own: _sqlite_begin does
    cursor = connection.cursor()
    _switch_to_wal(cursor)
    cursor.execute(f"PRAGMA busy_timeout={int(limits.STORE_BUSY_TIMEOUT_S * 1000)}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")  # WAL's safe setting: a crash loses no committed transaction
    cursor.close()


# What SQLite says when a connection cannot write or read the file as it is now (opened while the file was read-only,
# say): such a connection is dropped from the pool, so the next one opens the file afresh once it is writable again.
_SQLITE_STALE = ("readonly", "unable to open database file", "disk i/o error")


def _sqlite_error(context) -> None:
    said = str(context.original_exception).replace("read-only", "readonly").lower()
    if any(words in said for words in _SQLITE_STALE):
        context.is_disconnect = True


def _sqlite_begin(connection) -> None:
    """A writing transaction takes SQLite's write lock as it begins (BEGIN IMMEDIATE), so it waits its turn under
    the busy timeout; a deferred one that read first could only fail with "database is locked" when it writes."""
    reading = connection.get_execution_options().get("seqviz_reading", False)
    connection.exec_driver_sql("BEGIN" if reading else "BEGIN IMMEDIATE")


def make_engine(url: str) -> Engine:
    """An engine for ``url`` with the store's settings (the SQLite folder is made when missing)."""
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
    except Exception as error:
        raise StoreUnavailable(f"{URL_ENV} is not a database URL ({type(error).__name__}).") from error
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            try:
                Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise StoreUnavailable(f"The data folder for {describe(url)} cannot be made: {error.strerror}.") \
                    from error
        engine = create_engine(url, connect_args={"timeout": limits.STORE_BUSY_TIMEOUT_S, "check_same_thread": False})
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "begin", _sqlite_begin)
        event.listen(engine, "handle_error", _sqlite_error)
        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=5,
                         pool_timeout=limits.STORE_BUSY_TIMEOUT_S,
                         connect_args={"connect_timeout": max(1, int(limits.STORE_CONNECT_TIMEOUT_S))}
                         if parsed.get_backend_name() == "postgresql" else {})


def alembic_config(connection):
    """Alembic's configuration for the store's revisions (seqviz/store/migrations), migrating on ``connection``."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(Path(__file__).with_name("migrations")))
    config.attributes["connection"] = connection
    return config


_MIGRATING = threading.Lock()  # Alembic keeps its running migration in module globals: one at a time per process
_MIGRATION_LOCK_ID = 0x5E0F1A85  # PostgreSQL's advisory lock of the store's migrations


def migrate(engine: Engine) -> None:
    """Bring the database's schema up to the newest revision (Alembic), creating it on first use.

    Processes starting at once on one database (a web server and its workers) migrate one after the other: on
    SQLite the transaction takes the write lock as it begins, on PostgreSQL an advisory lock held until it ends.
    The next finds the schema made and does nothing."""
    from alembic import command

    with _MIGRATING, engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK_ID})")
        command.upgrade(alembic_config(connection), "head")


def lock_for(session, name: str) -> None:
    """Hold a lock named ``name`` until the session's transaction ends: two writers about the same thing that no
    row stands for yet (a run about to be created) take turns. SQLite's writing transactions take turns already
    (BEGIN IMMEDIATE); PostgreSQL takes an advisory lock on 63 bits of the name's sha256."""
    if session.get_bind().dialect.name == "postgresql":
        import hashlib

        number = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big") >> 1
        session.execute(text("SELECT pg_advisory_xact_lock(:n)"), {"n": number})


class Database:
    """One engine and its sessions; the schema is migrated once, on first use."""

    def __init__(self, url: str):
        self.url = url
        self._engine: Engine | None = None
        self._sessions: sessionmaker | None = None
        self._readers: sessionmaker | None = None
        self._lock = threading.Lock()

    @property
    def engine(self) -> Engine:
        with self._lock:
            if self._engine is None:
                engine = make_engine(self.url)
                try:
                    migrate(engine)
                except SQLAlchemyError as error:
                    engine.dispose()
                    raise unavailable(self.url, error) from error
                except OSError as error:
                    engine.dispose()
                    raise StoreUnavailable(f"{describe(self.url)} cannot be used: {error}") from error
                self._engine = engine
                self._sessions = sessionmaker(engine, expire_on_commit=False)
                self._readers = sessionmaker(engine.execution_options(seqviz_reading=True), expire_on_commit=False)
            return self._engine

    @contextlib.contextmanager
    def transaction(self, reading: bool = False):
        """A session whose work is committed whole at the end, or rolled back whole on any error. ``reading``: it
        only reads (SQLite then takes no write lock)."""
        self.engine  # noqa: B018  (connects and migrates on first use)
        try:
            with (self._readers if reading else self._sessions).begin() as session:
                yield session
        except SQLAlchemyError as error:
            raise unavailable(self.url, error) from error

    def dispose(self) -> None:
        with self._lock:
            if self._engine is not None:
                self._engine.dispose()
            self._engine = None


def unavailable(url: str, error: Exception) -> StoreUnavailable:
    """The store's error in words: where it is, and what the database said (its first line, no password)."""
    said = str(getattr(error, "orig", None) or error).strip().splitlines()
    detail = said[0][:200] if said else type(error).__name__
    if "readonly" in detail.replace(" ", "").lower():
        detail += " (the folder or file is read-only)"
    elif "unable to open" in detail.lower():
        detail += " (the folder or file is missing or read-only)"
    elif "disk" in detail.lower() and "full" in detail.lower():
        detail += " (the disk is full)"
    return StoreUnavailable(f"{describe(url)} cannot be used now: {detail}")


_databases: dict[str, Database] = {}
_databases_lock = threading.Lock()


def database(url: str | None = None) -> Database:
    """The process's one Database for ``url`` (default: :func:`database_url`)."""
    url = url or database_url()
    with _databases_lock:
        if url not in _databases:
            _databases[url] = Database(url)
        return _databases[url]
