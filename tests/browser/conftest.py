"""Browser tests: Playwright drives Debian's Chromium against `streamlit run app.py` on a free port.

No browser is ever downloaded: the tests use /usr/bin/chromium (README, `scripts/ensure-chromium`), launched and
judged "painted" by seqviz.browser, the harness the load tests, the smoke check and the benchmark share. A
visitor's moves (wait for the app, type, follow a link, upload...) are in tests/browsing.py. Screenshots of every
page are saved under test-output/screenshots/ for a person to look at.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

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


@pytest.fixture(scope="session")
def image_files(tmp_path_factory) -> Path:
    """A copy of what `COPY . .` puts in the container image (test_hosting.copy_build_context: the repository less
    what .dockerignore leaves out)."""
    from test_hosting import copy_build_context

    context = tmp_path_factory.mktemp("image") / "app"
    copied = copy_build_context(context)
    assert "scripts/serve" in copied and "app.py" in copied
    assert not any(p.startswith((".git/", ".venv/", "tests/")) for p in copied)
    return context


@pytest.fixture(scope="session")
def hosted(image_files, tmp_path_factory):
    """`scripts/serve` (the Dockerfile's CMD) from the image's files, PORT free, SEQVIZ_BASE_PATH=seqviz, on a lab
    store of its own: yields the base URL. Started once for test_hosting (the smoke check, the health check and a
    deep link under a base path) and test_lab (the lab's cookie scoped to the base path). It listens on loopback
    only (its extra arguments go to `streamlit run`, the last --server.address wins): it lives as long as the test
    run, and test_start_makes_no_outbound_call checks the command's own 0.0.0.0 in a network namespace."""
    from test_hosting import BASE_PATH, LOGS, _venv_path

    LOGS.mkdir(parents=True, exist_ok=True)
    port = harness.free_port()
    log_path = LOGS / "hosting-streamlit.log"
    env = {**os.environ, "PORT": str(port), "SEQVIZ_BASE_PATH": BASE_PATH, "PATH": _venv_path(),
           "PYTHONUNBUFFERED": "1", "SEQVIZ_DATA_DIR": str(tmp_path_factory.mktemp("hosted-store"))}
    with open(log_path, "w") as log:
        server = subprocess.Popen([str(image_files / "scripts" / "serve"), "--server.address", "127.0.0.1"],
                                  cwd=image_files, env=env,
                                  stdout=log, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}/{BASE_PATH}"
            assert harness.wait_healthy(url, server, 90), f"{url}/_stcore/health never answered; see {log_path}"
            yield url
        finally:
            harness.stop(server)
