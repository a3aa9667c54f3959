"""Browser tests: Playwright drives Debian's Chromium against `streamlit run app.py` on a free port.

No browser is ever downloaded: the tests use /usr/bin/chromium (README, `scripts/ensure-chromium`), launched and
judged "painted" by seqviz.browser, the harness the load tests, the smoke check and the benchmark share. A
visitor's moves (wait for the app, type, follow a link, upload...) are in tests/browsing.py. Screenshots of every
page are saved under test-output/screenshots/ for a person to look at.
"""

from __future__ import annotations

import pytest
from browsing import ROOT, SHOTS, run_browser

from seqviz import browser as harness

APP_SERVER_NAME = "app2"  # the shared server's SEQVIZ_SERVER_NAME


@pytest.fixture(scope="session")
def app_server(tmp_path_factory):
    """The shared server (seqviz.browser.Server, its store's URL as ``.store``), started once for every browser test
    that needs no server of its own:

    - on a lab store of its own: its run manager never takes the runs of the tests' own stores (or of another
      server's) for runs to recover;
    - with one training worker, so a second run waits in the queue whatever the machine (test_training_in_browser);
    - named app2 (SEQVIZ_SERVER_NAME), as an app server behind the lecture hall's balancer is: only a visitor whose
      balancer cookie says they were moved from another server is told anything (test_hosting's moved visitor)."""
    from seqviz.share import SERVER_NAME_VARIABLE

    SHOTS.mkdir(parents=True, exist_ok=True)
    store = tmp_path_factory.mktemp("app-store")
    env = {"SEQVIZ_DATA_DIR": str(store), "SEQVIZ_TRAIN_WORKERS": "1", SERVER_NAME_VARIABLE: APP_SERVER_NAME}
    with harness.streamlit_server(ROOT / "test-output" / "streamlit.log", env) as server:
        server.store = f"sqlite:///{store / 'seqviz.db'}"
        yield server


@pytest.fixture(scope="session")
def app_url(app_server) -> str:
    return app_server.url


@pytest.fixture(scope="session")
def browser(playwright):
    """The test run's one Chromium (tests/browsing.run_browser, the load tests' too; a visitor is a context of its
    own). It finds test_nginx's and test_lecture_hall's host names at 127.0.0.1, as the smoke check's --resolve
    does."""
    return run_browser(playwright)


@pytest.fixture
def page(browser):
    context = harness.new_context(browser, accept_downloads=True)
    yield harness.new_page(context)
    context.close()
