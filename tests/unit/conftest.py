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
