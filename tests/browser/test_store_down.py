"""The lab store goes down in the middle of a class and comes back: a real PostgreSQL server (tests/databases.py)
behind `streamlit run app.py` (SEQVIZ_DATABASE_URL), stopped by its PID while a visitor works, then started again.
The server is the test run's one PostgreSQL (tests/conftest.py's ``postgres``, also the unit tests'), the app's
store a database of its own on it (owned by the app's role, no tables until the app makes them; dropped after);
the server is started again whatever happens.

Pages that do not need the store keep working; *Your models* and /train say plainly what is wrong; nothing raises;
once the database is back, the visitor's lab, with the model they uploaded before, is back by itself.
"""

from __future__ import annotations

import contextlib
import secrets

import pytest
from browsing import ROOT, SHOTS, assert_no_exception, go_to, upload_checkpoint, wait_for_app
from databases import APP_ROLE
from playwright.sync_api import expect

from seqviz import browser as harness

pytestmark = pytest.mark.browser
LSTM_FILE = ROOT / "assets" / "models" / "lstm.safetensors"
UNAVAILABLE = "cannot be used now"  # seqviz.store.engine.unavailable's words


@contextlib.contextmanager
def _database_of_its_own(server):
    """The URL of a new, empty database on ``server`` that the app's role owns; dropped afterwards."""
    import sqlalchemy as sa
    from sqlalchemy.pool import NullPool

    name = f"seqviz_down_{secrets.token_hex(6)}"
    admin = sa.create_engine(server.admin_url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(sa.text(f"CREATE DATABASE {name} OWNER {APP_ROLE}"))
        yield sa.engine.make_url(server.url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(sa.text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        admin.dispose()


@contextlib.contextmanager
def _started_again(database):
    """The shared server running again on the way out, whatever the test did to it (the unit tests use it after)."""
    try:
        yield
    finally:
        if database.pid is None:
            database.start()


def test_the_store_down_mid_class_then_back(browser, postgres, tmp_path):
    database = postgres
    with _database_of_its_own(database) as url, _started_again(database), harness.streamlit_server(
            tmp_path / "server.log", {"SEQVIZ_DATABASE_URL": url}) as server:
        context = harness.new_context(browser)
        page = harness.new_page(context)
        page.goto(f"{server.url}/order")
        wait_for_app(page)
        upload_checkpoint(page, LSTM_FILE, models_before=0)
        sidebar = page.get_by_test_id("stSidebar")

        database.stop()
        go_to(page, "Attention", "attention")  # a page that needs no store: all of it works
        harness.wait_painted(page)
        assert_no_exception(page)
        expect(page.get_by_test_id("stMain").get_by_text("0.474").first).to_be_visible()  # the worked example
        expect(sidebar.get_by_text(UNAVAILABLE).first).to_be_visible(timeout=30_000)
        go_to(page, "Train your own", "train")
        wait_for_app(page)
        assert_no_exception(page)
        expect(page.get_by_test_id("stMain").get_by_text("Training is not available now").first).to_be_visible(
            timeout=30_000)
        expect(page.get_by_role("button", name="Start training")).to_be_disabled()
        assert_no_exception(page)
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "store-down-train.png"))

        database.start()
        go_to(page, "Order matters", "order")  # the next runs try the store again (at most every few seconds)
        expander = sidebar.get_by_test_id("stExpander").filter(has_text="Your models (1)")
        expect(expander).to_have_count(1, timeout=60_000)
        assert_no_exception(page)
        page.screenshot(path=str(SHOTS / "store-back-order.png"))
        context.close()
