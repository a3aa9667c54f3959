"""Fixtures shared by the unit tests."""

import contextlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL 15 server for the whole session (tests/databases.py: ``.url`` for the app's role,
    ``.admin_url``, ``.pid``, ``.stop()``, ``.start()``). Installed from Debian's archive when missing; when it
    cannot be, the fixture fails with scripts/ensure-packages' message (never skips)."""
    from databases import PostgresError, postgres_server

    with contextlib.ExitStack() as stack:
        try:
            server = stack.enter_context(postgres_server(ROOT))
        except PostgresError as error:
            pytest.fail(str(error), pytrace=False)
        yield server


@pytest.fixture(scope="session")
def postgres_store(postgres):
    """The ``postgres`` server's app database with the lab store's schema (store_fixtures.PostgresStore)."""
    from store_fixtures import PostgresStore

    return PostgresStore(postgres)


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path):
    """A fresh, empty lab store (seqviz.store.Database), once on SQLite (a new file) and once on PostgreSQL (the
    session's database, emptied first); disposed afterwards."""
    from seqviz.store import Database

    if request.param == "sqlite":
        database = Database(f"sqlite:///{tmp_path / 'store' / 'seqviz.db'}")
    else:
        store = request.getfixturevalue("postgres_store")
        store.empty()
        database = Database(store.url)
    yield database
    database.dispose()
