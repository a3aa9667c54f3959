"""A classroom on one server: the load, fault and browser hostile-input tests share one `streamlit run app.py`.

The server is this folder's own (not the browser tests'), so what it measures is its own: its CPU seconds and
peak memory come from /proc/<pid>. Its lab store is a SQLite file of its own, in a folder of the test run's store
folder (tests/conftest.py's SEQVIZ_DATA_DIR, removed at the run's end; SEQVIZ_DATABASE_URL unset): the tests
read what it keeps (labs, runs, models) from that file, and check that the server was given that folder. It runs
with SEQVIZ_TRAIN_ORPHAN_TIMEOUT_S=4, so a run nobody of its lab looks at (every tab of its browser closed) is
stopped within seconds instead of the app's ten minutes (seqviz.limits), and with one training worker.

A visitor is a browser context of its own (its own cookies: its own lab) with one tab. The server, Chromium and
"painted" are seqviz.browser's (the harness the browser tests, the smoke check and the benchmark share); the
visitors' moves are the browser tests' own (tests/browsing.py). :class:`AppSession` is a session without a
browser: Streamlit's own websocket protocol, for as many sessions at once as a class has.

The helpers are tests/load/load_support.py's and tests/load/load_visitors.py's, imported back here.

Figures are recorded, never asserted: they go to test-output/load-figures.json, one section per test.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest
from browsing import SHOTS, run_browser
from load_support import (  # noqa: F401  (the tests' helpers, imported from here too: `from conftest import ...`)
    CLK_TCK,
    FIGURES,
    LAB_SEEN_EVERY_S,
    LOG,
    ORPHAN_TIMEOUT_S,
    OUTPUT,
    TRAIN_THREAD,
    Sampler,
    Server,
    quantile,
    record,
    tracebacks_since,
)
from load_visitors import QUIET_MS, READY, RETYPE_AFTER_S, AppSession, Visitor  # noqa: F401  (as above)

from seqviz import browser as harness

# The load tests, last of this folder and in this order (one file until it grew past 400 lines).
LOAD_TESTS = ("test_classroom_load.py", "test_classroom_sessions.py")


def pytest_collection_modifyitems(items):
    """The load tests last of this folder: the fault and hostile-input tests before them have loaded torch and most
    models in the server, as a class would find it some minutes after the first student (the order of every
    other test is kept)."""
    last = [item for item in items if item.path.name in LOAD_TESTS]
    if last:
        items[:] = [item for item in items if item not in last] + last


# --- The server and what /proc says about it ---------------------------------------------------------


@pytest.fixture(scope="session")
def classroom():
    """`streamlit run app.py` on a free port, its lab store a SQLite file in a folder of the test run's store folder,
    stopping the runs of labs nobody looks at after ORPHAN_TIMEOUT_S, with one training worker whatever the host's
    cores (so the second of two runs waits in the queue)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    run_store = Path(os.environ["SEQVIZ_DATA_DIR"])  # tests/conftest.py's: this test run's, removed at its end
    store_dir = run_store / "load-server"
    env = {"SEQVIZ_DATA_DIR": str(store_dir), "SEQVIZ_TRAIN_ORPHAN_TIMEOUT_S": str(ORPHAN_TIMEOUT_S),
           "SEQVIZ_TRAIN_WORKERS": "1"}
    assert "SEQVIZ_DATABASE_URL" not in os.environ, "tests/conftest.py unsets it: no test may reach a real store"
    # The server's file watcher is off (.streamlit/config.toml), as in scripts/serve.
    with harness.streamlit_server(LOG, env) as started:
        server = Server(started.url, started.process, store_dir)
        given = server.environment()
        assert given.get("SEQVIZ_DATA_DIR") == str(store_dir) and "SEQVIZ_DATABASE_URL" not in given, (
            f"the server was not given the test store: SEQVIZ_DATA_DIR={given.get('SEQVIZ_DATA_DIR')!r}, "
            f"SEQVIZ_DATABASE_URL={given.get('SEQVIZ_DATABASE_URL')!r}")
        assert store_dir.is_relative_to(run_store) and not store_dir.is_relative_to(Path.home() / ".local")
        try:
            yield server
        finally:
            server.store.dispose()


@pytest.fixture(scope="session")
def chromium(playwright):
    """One Chromium for every visitor of this folder (each visitor is a context of its own: its own session): the
    test run's one (tests/browsing.run_browser), the browser tests' too."""
    return run_browser(playwright)


# --- Visitors whose pages time themselves (tests/load/load_visitors.py) ----------------------------------


@pytest.fixture
def visitors(chromium):
    """Make visitors with ``visitors(name)``; every one left open is closed at the end."""
    made: list[Visitor] = []

    def make(name: str) -> Visitor:
        made.append(Visitor(chromium, name))
        return made[-1]

    yield make
    for visitor in made:
        with contextlib.suppress(Exception):  # a browser that went away
            visitor.close()
