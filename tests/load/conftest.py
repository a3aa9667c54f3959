"""A classroom on one server: the load, fault and browser hostile-input tests share one `streamlit run app.py`.

The server is this folder's own (not the browser tests'), so what it measures is its own: its CPU seconds and
peak memory come from /proc/<pid>, and it runs with SEQVIZ_TRAIN_ORPHAN_TIMEOUT_S=4, so a closed tab's run is
reaped within seconds instead of a minute (seqviz.limits). The server, Chromium and "painted" are seqviz.browser's
(the harness the browser tests, the smoke check and the benchmark share); the visitors' moves are the browser
tests' own (tests/browsing.py).

Figures are recorded, never asserted: they go to test-output/load-figures.json, one section per test.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from browsing import ROOT, SHOTS, launch

from seqviz import browser as harness

OUTPUT = ROOT / "test-output"
FIGURES = OUTPUT / "load-figures.json"
LOG = OUTPUT / "load-streamlit.log"
ORPHAN_TIMEOUT_S = 4  # the test server's SEQVIZ_TRAIN_ORPHAN_TIMEOUT_S (the app's default is 60)
TRAIN_THREAD = "seqviz-run"  # the OS name seqviz.worker gives the worker thread that trains a run
CLK_TCK = os.sysconf("SC_CLK_TCK")


def pytest_collection_modifyitems(items):
    """The load test last of this folder: the fault and hostile-input tests before it have loaded torch and most
    models in the server, as a class would find it some minutes after the first student (the order of every
    other test is kept)."""
    last = [item for item in items if item.path.name == "test_classroom_load.py"]
    if last:
        items[:] = [item for item in items if item not in last] + last


# --- The server and what /proc says about it ---------------------------------------------------------


class Server:
    def __init__(self, url: str, process: subprocess.Popen):
        self.url = url
        self.process = process
        self.pid = process.pid

    def cpu_seconds(self) -> float:
        """User + system CPU seconds of the whole server process so far (every thread, living or ended)."""
        return _cpu(Path(f"/proc/{self.pid}/stat"))

    def memory_mb(self) -> dict[str, float]:
        """Resident memory now (VmRSS) and its peak so far (VmHWM), in MB."""
        found = {}
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(value.split()[0]) / 1024
        return {"rss_mb": round(found["VmRSS"], 1), "peak_mb": round(found["VmHWM"], 1)}

    def workers(self) -> list[int]:
        """Process ids of the server's training workers (its Dask cluster's processes: nannies and workers)."""
        import psutil

        try:
            return [child.pid for child in psutil.Process(self.pid).children(recursive=True)]
        except psutil.Error:
            return []

    def workers_memory_mb(self) -> float:
        """Resident memory of the server's training worker processes together, in MB."""
        import psutil

        total = 0
        for pid in self.workers():
            try:
                total += psutil.Process(pid).memory_info().rss
            except psutil.Error:  # ended while we looked
                continue
        return round(total / 2**20, 1)

    def threads(self, name: str) -> dict[int, float]:
        """tid -> CPU seconds of the living threads called ``name`` of the server and its training workers (a
        worker names the thread that trains a run ``seqviz-run`` while the run lasts)."""
        found = {}
        for pid in [self.pid, *self.workers()]:
            try:
                tasks = list(Path(f"/proc/{pid}/task").iterdir())
            except OSError:  # the process ended while we looked
                continue
            for task in tasks:
                try:
                    if (task / "comm").read_text().strip() == name:
                        found[int(task.name)] = _cpu(task / "stat")
                except (OSError, ValueError):  # the thread ended while we looked
                    continue
        return found

    def log_text(self) -> str:
        return LOG.read_text(encoding="utf-8", errors="replace")


def _cpu(stat: Path) -> float:
    fields = stat.read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime


@pytest.fixture(scope="session")
def classroom():
    """`streamlit run app.py` on a free port, reaping closed tabs' runs after ORPHAN_TIMEOUT_S, with one training
    worker whatever the host's cores (so the second of two runs waits in the queue)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    # The server's file watcher is off (.streamlit/config.toml), as in scripts/serve.
    with harness.streamlit_server(LOG, {"SEQVIZ_TRAIN_ORPHAN_TIMEOUT_S": str(ORPHAN_TIMEOUT_S),
                                        "SEQVIZ_TRAIN_WORKERS": "1"}) as server:
        yield Server(server.url, server.process)


@pytest.fixture(scope="session")
def chromium(playwright):
    """One Chromium for every visitor of this folder (each visitor is a context of its own: its own session).

    Launched from the test run's one Playwright (tests/conftest.py): the browser tests' is alive too."""
    browser = launch(playwright)
    yield browser
    browser.close()


# --- Visitors whose pages time themselves ------------------------------------------------------------

# A view is timed by the page itself (seqviz.browser's recorder, on performance.now()) however late the test looks
# at it: from the Enter that began it (or the navigation) to the page's last change, once painted. A busy classroom
# needs the page still for longer than the harness's default before a view counts as painted.
QUIET_MS = 500
READY = ('[data-testid=stSidebar] input[aria-label="Sentence"]', "[data-testid=stMain] h1")  # the app is there
RETYPE_AFTER_S = 15  # a typed sentence whose rerun has not begun after this long is typed again, once


class Visitor:
    """One browser tab with its own session; ``name`` says who it is in messages."""

    def __init__(self, browser, name: str):
        self.name = name
        self.context = harness.new_context(browser, accept_downloads=True)
        self.page = harness.new_page(self.context)
        self.dialogs: list[str] = []  # alert(), confirm(): nothing a visitor types may open one
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.t0: float | None = None  # performance.now() when the view being timed began
        self.typed: str | None = None  # the last sentence typed
        self.typed_again = 0  # how often a typed sentence had to be typed again (see type_again)
        self.closed = False
        self.pending: dict[int, str] = {}  # requests without an answer yet (a script chunk that never loads)
        self.failed: list[str] = []  # requests that failed, with Chromium's reason
        self.page.on("request", lambda r: self.pending.__setitem__(id(r), r.url))
        self.sent: list[str] = []  # websocket frames the page sent: (monotonic s, bytes, whether it holds the typed)
        self.page.on("websocket", lambda ws: (
            self.sent.append(f"{time.monotonic():.2f} open {ws.url}"),
            ws.on("framesent", lambda payload: self.sent.append(
                f"{time.monotonic():.2f} sent {len(payload)} B"
                + (" with the typed sentence" if self.typed and self.typed.encode() in
                   (payload if isinstance(payload, bytes) else payload.encode()) else ""))),
            ws.on("framereceived", lambda payload: self.sent.append(f"{time.monotonic():.2f} got {len(payload)} B")),
            ws.on("close", lambda _: self.sent.append(f"{time.monotonic():.2f} closed"))))
        self.page.on("requestfinished", lambda r: self.pending.pop(id(r), None))
        self.page.on("requestfailed", lambda r: (self.pending.pop(id(r), None),
                                                 self.failed.append(f"{r.url} ({r.failure})")))

    def open(self, url: str) -> None:
        """Go to ``url`` without waiting for the app (see :meth:`look`)."""
        self.page.goto(url, wait_until="commit")
        self.t0 = 0.0  # the page's clock starts with the navigation

    def type(self, text: str) -> None:
        """Type ``text`` in the Sentence box and press Enter, without waiting for the rerun."""
        box = self.page.get_by_role("textbox", name="Sentence", exact=True)
        for _ in range(3):  # a rerun that was still landing can put the old value back: type it again
            box.fill(text)
            if box.input_value() == text:
                break
            self.page.wait_for_timeout(300)
        self.typed = text
        self.t0 = self.page.evaluate("performance.now()")
        self.sent.append(f"{time.monotonic():.2f} Enter")
        box.press("Enter")

    def look(self) -> dict:
        """seqviz.browser.look: painted, and each of its parts. The first view has no rerun to wait for (the app
        starts on its own); a typed sentence's view needs a run begun after its Enter."""
        since = None if not self.t0 else self.t0
        return harness.look(self.page, quiet_ms=QUIET_MS, since=since, needs=READY)

    def painted(self, seen: dict | None = None) -> float | None:
        """Seconds from the view's start to its last change, once it is painted; else None."""
        seen = seen or self.look()
        return (seen["painted_at"] - (self.t0 or 0.0)) / 1000 if seen["painted"] else None

    def type_again(self) -> None:
        """Type the last sentence again, when its Enter started no rerun (seen on a machine so busy that the
        message was lost): the box believes it was taken, so clear it first (an empty sentence is a rerun too)."""
        box = self.page.get_by_role("textbox", name="Sentence", exact=True)
        box.fill("")
        box.press("Enter")
        self.page.wait_for_timeout(1_000)
        self.type(self.typed)
        self.typed_again += 1

    def stalled(self, seen: dict, since: float) -> bool:
        """Whether a typed sentence's rerun has not begun RETYPE_AFTER_S after ``since`` (time.monotonic())."""
        return (self.typed is not None and not seen["ran"] and seen["state"] == "notRunning"
                and time.monotonic() > since + RETYPE_AFTER_S)

    def wait_painted(self, timeout_s: float = 90) -> float:
        began = time.monotonic()
        deadline = began + timeout_s
        retyped = False
        while time.monotonic() < deadline:
            seen = self.look()
            took = self.painted(seen)
            if took is not None:
                return took
            if not retyped and self.stalled(seen, began):
                retyped = True
                self.type_again()
            self.page.wait_for_timeout(100)
        raise AssertionError(f"{self.name}: the view was not painted within {timeout_s:.0f} s: {self.diagnosis()}")

    def diagnosis(self) -> str:
        """What the page says about its last script runs, for a failure's message."""
        try:
            return (f"script states {self.page.evaluate('window.__bx.states.slice(-6)')}, t0 {self.t0}, "
                    f"now {self.look()}, box {self.page.get_by_role('textbox', name='Sentence').input_value()!r}, "
                    f"requests unanswered {sorted(self.pending.values())}, failed {self.failed}, "
                    f"websocket {self.socket_story()}, now {time.monotonic():.2f}, main {self.main_text()[:300]!r}")
        except Exception as error:  # the page is gone
            return f"(no diagnosis: {error})"

    def socket_story(self) -> list[str]:
        """The websocket's frames since the last two Enters, runs of received frames folded into one line."""
        enters = [i for i, line in enumerate(self.sent) if line.endswith("Enter")]
        story: list[str] = []
        for line in self.sent[enters[-2] if len(enters) > 1 else 0:]:
            if " got " in line and story and " got " in story[-1]:
                first, _, count = story[-1].partition(" got ")
                n = int(count.split()[0]) + 1 if "frames" in count else 2
                story[-1] = f"{first} got {n} frames to {line.split()[0]}"
            else:
                story.append(line)
        return story

    def main_text(self) -> str:
        return self.page.get_by_test_id("stMain").inner_text()

    def sidebar_text(self) -> str:
        return self.page.get_by_test_id("stSidebar").inner_text()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.context.close()


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


# --- The health check, sampled from a thread ---------------------------------------------------------


class Sampler:
    """Asks /_stcore/health every ``every_s`` seconds, and notes the CPU of the server's training threads."""

    def __init__(self, server: Server, every_s: float = 0.2, timeout_s: float = 20):
        self.server = server
        self.every_s = every_s
        self.timeout_s = timeout_s
        self.latencies: list[float] = []
        self.while_training: list[float] = []  # the latencies of checks made while a run was training
        self.failures: list[str] = []
        self.training_cpu: dict[int, float] = {}  # tid -> the last CPU seconds seen of a training thread
        self.rss_max_mb = 0.0  # the server's largest resident memory seen while sampling
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="health-sampler", daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=self.timeout_s + 5)

    def _loop(self) -> None:
        while not self._stop.is_set():
            training = {}
            try:
                training = self.server.threads(TRAIN_THREAD)
                self.training_cpu.update(training)
                self.rss_max_mb = max(self.rss_max_mb, self.server.memory_mb()["rss_mb"])
            except OSError:
                pass
            began = time.perf_counter()
            try:
                with urllib.request.urlopen(f"{self.server.url}/_stcore/health", timeout=self.timeout_s) as reply:
                    reply.read()
                    if reply.status != 200:
                        self.failures.append(f"status {reply.status}")
                self.latencies.append(time.perf_counter() - began)
                if training:
                    self.while_training.append(self.latencies[-1])
            except OSError as error:
                self.failures.append(f"{type(error).__name__}: {error}")
            self._stop.wait(max(0.0, self.every_s - (time.perf_counter() - began)))

    def p95_while_training(self) -> float | None:
        return quantile(self.while_training, 0.95)

    def figures(self) -> dict:
        return {"health_checks": len(self.latencies), "health_failures": len(self.failures),
                "health_p50_s": quantile(self.latencies, 0.5), "health_p95_s": quantile(self.latencies, 0.95),
                "health_max_s": round(max(self.latencies), 3) if self.latencies else None}


def quantile(values, q: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return round(values[0], 3)
    return round(statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1], 3)


def record(section: str, figures: dict) -> None:
    """Write ``figures`` under ``section`` in test-output/load-figures.json (other sections kept) and print them."""
    OUTPUT.mkdir(parents=True, exist_ok=True)
    try:
        everything = json.loads(FIGURES.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        everything = {}
    everything[section] = {"measured_at": time.strftime("%Y-%m-%d %H:%M:%S"), **figures}
    FIGURES.write_text(json.dumps(everything, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"\n{section}: " + json.dumps(figures, indent=2, ensure_ascii=False))


def tracebacks_since(server: Server, offset: int) -> list[str]:
    """Lines of the server's log after ``offset`` characters that show an error."""
    text = server.log_text()[offset:]
    return [line for line in text.splitlines() if "Traceback" in line or "Error" in line or "Exception" in line]
