"""Shared test settings: every test runs from the repository root with torch on one thread.

Long work that needs little of the tests' attention starts as soon as the tests are collected and runs beside
them, niced, in a process of its own (a `Background`), so the suite's waits and idle core do it:

- the container images, when a test that runs them is selected (IMAGE_TESTS): the lecture hall's packages,
  `scripts/check-container --build-only` (on a fresh machine it first makes the stand-in base image from Debian's
  archive, then pip-installs the image's packages: about 5 minutes) and the balancer's image. Those tests run last
  and, before their own setup, wait for it: they then build again as they always do, from Podman's cache, so a
  failed background build fails them with their own build's message (the background's log is attached);
- a test module's own work: a module that defines ``background_command(output: Path) -> list[str]`` has it started
  when one of its selected tests asks for the ``background`` fixture, which waits for it and gives its output
  (tests/unit/test_presets.py trains its presets so).

A test that waits un-nices the work it waits for. Whatever is still running at the session's end is ended by its
process group (its own PID).

No test writes to a real lab store (seqviz.store): SEQVIZ_DATA_DIR names a folder of this run (removed at its end)
and SEQVIZ_DATABASE_URL is unset, for the tests and for every server, worker and command they start (each inherits
this environment), so nothing reaches ~/.local/share/seqviz or a database a developer's own setting names. A test
that wants PostgreSQL names its own server (tests/databases.py).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "test-output"
STORE_DIR = Path(tempfile.mkdtemp(prefix="seqviz-test-store-"))  # the lab store of this test run (SQLite)
os.environ["SEQVIZ_DATA_DIR"] = str(STORE_DIR)
os.environ.pop("SEQVIZ_DATABASE_URL", None)
NICE = 19  # background work yields to the tests (CFS weight 15 against 1024) but has every idle moment
IMAGE_TESTS = ("tests/browser/test_lecture_hall.py", "tests/hosting/test_container.py")
# What those tests build, in their order: the lecture hall's packages, and its balancer and database built as
# tests/browser/test_lecture_hall.py builds them (same file, build argument and tag, so its build is then cached;
# the ulimits are its containers.conf's, which Podman needs on this machine).
IMAGES_COMMAND = """set -e
scripts/ensure-packages podman-compose containernetworking-plugins golang-github-containernetworking-plugin-dnsname \
    iptables
scripts/check-container --build-only
files=$(ulimit -Hn); { [ "$files" = unlimited ] || [ "$files" -gt 65536 ]; } && files=65536
base="${SEQVIZ_BASE_IMAGE:-localhost/seqviz-base:bookworm-python3.11}"
for image in haproxy:seqviz-balancer postgres:seqviz-postgres; do
    podman --runtime runc build --format docker --network host --ulimit "nofile=$files:$files" \
        --ulimit nproc=4096:4096 --build-arg BASE_IMAGE="$base" \
        --file "hosting/${image%%:*}.Dockerfile" --tag "localhost/${image#*:}:lecture-hall" .
done
"""
WAIT_S = 600  # at most this long for background work once a test waits for it; then it is ended, the test fails
_JOBS = pytest.StashKey[dict]()


class Background:
    """A command run niced in its own session (process group = its PID), output to a log under test-output/."""

    def __init__(self, name: str, command: list[str], output: Path | None = None):
        OUTPUT.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.output = output
        self.log = OUTPUT / f"background-{name}.txt"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        with open(self.log, "w", encoding="utf-8") as log:
            self.process = subprocess.Popen(["nice", "-n", str(NICE), *command], cwd=ROOT, env=env,
                                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)

    def wait(self, timeout: float = WAIT_S) -> int | None:
        """Its exit status, once it has ended (un-niced while waited for); None when it ran past ``timeout``
        (it is then ended)."""
        if self.process.poll() is None:
            self._renice(0)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.stop()
                return None
        return self.process.returncode

    def tail(self, lines: int = 40) -> str:
        text = self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        for sig, grace in ((signal.SIGTERM, 15), (signal.SIGKILL, 15)):
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.process.wait(grace)
                return
            except subprocess.TimeoutExpired:
                continue

    def _renice(self, nice: int) -> None:
        """Every thread of the process and its descendants (Podman's build steps included) to ``nice``: best
        effort, as only root may lower a nice value."""
        parents = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rpartition(")")[2].split()
                parents[int(stat.parent.name)] = int(fields[1])
            except (OSError, ValueError, IndexError):
                continue
        family, grew = {self.process.pid}, True
        while grew:
            more = {pid for pid, parent in parents.items() if parent in family} - family
            family |= more
            grew = bool(more)
        for pid in family:
            for task in Path(f"/proc/{pid}/task").glob("[0-9]*"):
                with contextlib.suppress(OSError):
                    os.setpriority(os.PRIO_PROCESS, int(task.name), nice)


def _needs_images(item: pytest.Item) -> bool:
    return item.nodeid.startswith(IMAGE_TESTS)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    """The tests that need the container images last, so their background build has the whole run to finish
    (the order of every other test is kept)."""
    last = [item for item in items if _needs_images(item)]
    if last:
        items[:] = [item for item in items if not _needs_images(item)] + last


def pytest_collection_finish(session):
    jobs = session.config.stash.setdefault(_JOBS, {})
    if session.config.option.collectonly or (session.testsfailed
                                             and not session.config.option.continue_on_collection_errors):
        return  # nothing will run
    if os.geteuid() == 0 and any(_needs_images(item) for item in session.items):
        jobs["images"] = Background("images", ["sh", "-c", IMAGES_COMMAND])
    for item in session.items:
        module = getattr(item, "module", None)
        command = getattr(module, "background_command", None)
        if command and module.__name__ not in jobs and "background" in getattr(item, "fixturenames", ()):
            output = OUTPUT / f"background-{module.__name__.rpartition('.')[2]}.out"
            output.unlink(missing_ok=True)
            jobs[module.__name__] = Background(module.__name__.rpartition(".")[2], command(output), output)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    job = item.config.stash.get(_JOBS, {}).get("images")
    if job is not None and _needs_images(item):
        status = job.wait()
        if status != 0:
            item.add_report_section("setup", "background image build",
                                    f"{job.log} ({'ran too long' if status is None else f'exit {status}'}):\n"
                                    + job.tail())


def pytest_sessionfinish(session):
    for job in session.config.stash.get(_JOBS, {}).values():
        job.stop()
    shutil.rmtree(STORE_DIR, ignore_errors=True)


@pytest.fixture(scope="module")
def background(request) -> Path:
    """The output file of this module's ``background_command``, once the command has ended well."""
    job = request.config.stash.get(_JOBS, {}).get(request.module.__name__)
    if job is None:
        pytest.fail(f"{request.module.__name__} asks for its background work, which was never started")
    status = job.wait()
    if status != 0:
        pytest.fail(f"{' '.join(job.process.args)} {'ran too long' if status is None else f'exited {status}'}; "
                    f"its log, {job.log}:\n{job.tail()}")
    return job.output


@pytest.fixture(autouse=True, scope="session")
def _repository_root():
    os.chdir(ROOT)
    yield


@pytest.fixture(scope="module")
def one_thread():
    """Torch on one thread for a module of small-tensor tests: fastest, and kind to a shared machine."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="session")
def playwright():
    """The one Playwright of the whole test run, shared by the browser and the load tests' Chromiums.

    Playwright's sync API runs one instance per thread: a second ``sync_playwright()`` started while the first is
    alive fails, so every folder that drives a browser launches its Chromium from this one.
    """
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        yield p


# --- The lab store's databases (tests/unit's store and run engine tests; any test may ask) -------------------
# Here, not in tests/unit/conftest.py: the page tests import helpers with `from conftest import ...`, and a second
# conftest module collected after theirs would take that name.


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
