"""The load, fault and classroom tests' helpers (tests/load): the test server and what /proc says about it
(:class:`Server`), the health check sampled from a thread (:class:`Sampler`), the figures written to
test-output/load-figures.json, and the moves on /train that the fault and classroom tests share. The visitors
are tests/load/load_visitors.py's; conftest.py imports both modules' helpers back (``from conftest import
Sampler`` still works).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import statistics
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

from browsing import ROOT, wait_for_app
from playwright.sync_api import expect
from polling import wait_until

from seqviz.progress import ACTIVE

OUTPUT = ROOT / "test-output"
FIGURES = OUTPUT / "load-figures.json"
LOG = OUTPUT / "load-streamlit.log"
ORPHAN_TIMEOUT_S = 4  # the test server's SEQVIZ_TRAIN_ORPHAN_TIMEOUT_S (the app's default is 600: ten minutes)
# What the server's workers wait past ORPHAN_TIMEOUT_S before a lab counts as gone: a look may be this much newer
# than the store says (seqviz.limits.LAB_SEEN_EVERY_S as the server computes it, min(5 s, a quarter of the timeout)).
LAB_SEEN_EVERY_S = min(5.0, ORPHAN_TIMEOUT_S / 4)
TRAIN_THREAD = "seqviz-run"  # the OS name seqviz.worker gives the thread that trains a run (and the threads it starts)
CLK_TCK = os.sysconf("SC_CLK_TCK")
LOCKED = "database is locked"  # SQLite's words when a write found no turn within the busy timeout


# --- The server and what /proc says about it ---------------------------------------------------------


class Server:
    def __init__(self, url: str, process: subprocess.Popen, store_dir: Path):
        from seqviz.store import database
        from seqviz.store.engine import database_url

        self.url = url
        self.process = process
        self.pid = process.pid
        self.store_dir = store_dir
        self.store_url = database_url({"SEQVIZ_DATA_DIR": str(store_dir)})  # what the server finds from its env
        self.store = database(self.store_url)  # the same SQLite file, read from this process

    def environment(self) -> dict[str, str]:
        """The server process's environment, as the OS gave it (/proc/<pid>/environ)."""
        raw = Path(f"/proc/{self.pid}/environ").read_bytes()
        return dict(entry.split("=", 1) for entry in raw.decode(errors="replace").split("\0") if "=" in entry)

    def runs(self, lab_id: str | None = None) -> list[dict]:
        """The store's runs (of one lab, or all), oldest first, as plain rows (no saved points, no curves)."""
        from sqlalchemy import select

        from seqviz.store.schema import Run

        columns = (Run.id, Run.lab_id, Run.name, Run.status, Run.stop_reason, Run.step, Run.steps, Run.model_id,
                   Run.submitted_at, Run.started_at, Run.ended_at, Run.attempts)
        query = select(*columns).order_by(Run.submitted_at)
        if lab_id is not None:
            query = query.where(Run.lab_id == lab_id)
        with self.store.transaction(reading=True) as session:
            return [dict(row._mapping) for row in session.execute(query)]

    def run(self, run_id: str) -> dict | None:
        return next((row for row in self.runs() if row["id"] == run_id), None)

    def lab_of(self, visitor) -> str | None:
        """The id of the lab the visitor's browser holds the key of (its cookie seqviz_lab), or None."""
        from sqlalchemy import select

        from seqviz.store import labs
        from seqviz.store.schema import LabKey

        key = visitor.lab_key()
        if key is None:
            return None
        with self.store.transaction(reading=True) as session:
            return session.scalar(select(LabKey.lab_id).where(LabKey.key_hash == labs.digest(key)))

    def lab_ids(self) -> set[str]:
        from sqlalchemy import select

        from seqviz.store.schema import Lab

        with self.store.transaction(reading=True) as session:
            return set(session.scalars(select(Lab.id)))

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

    def training_workers(self) -> list[int]:
        """Process ids of the Dask worker processes themselves (multiprocessing's spawned children). Where the
        setproctitle package is installed (mutmut brings it), Dask renames such a process "dask worker [address]"."""
        import psutil

        found = []
        for pid in self.workers():
            with contextlib.suppress(psutil.Error):
                command = " ".join(psutil.Process(pid).cmdline())
                if "spawn_main" in command or command.startswith("dask worker"):
                    found.append(pid)
        return found

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


# --- Moves on /train that the fault and classroom tests share --------------------------------------------

STEP_TEXT = re.compile(r"Step (\d+) of (\d+)")
QUICK_PRESET = "Quick: LSTM email classifier"


def choose(page, label: str, option: str) -> None:
    """Pick ``option`` in a Streamlit selectbox."""
    page.get_by_test_id("stMain").get_by_role("combobox", name=label, exact=True).click()
    page.get_by_role("option", name=option, exact=True).click()
    expect(page.get_by_test_id("stMain").get_by_role("combobox", name=label, exact=True)).to_have_value(option)
    wait_for_app(page)  # the pick reruns the page, which refills the form


def set_number(page, label: str, value: int) -> None:
    box = page.get_by_test_id("stMain").get_by_role("spinbutton", name=label, exact=True)
    for _ in range(3):  # a rerun still landing can put the old number back: set it again
        box.fill(str(value))
        box.press("Enter")
        wait_for_app(page)
        if box.input_value() == str(value):
            return
    expect(box).to_have_value(str(value))


def step_shown(page) -> int | None:
    try:
        found = STEP_TEXT.search(page.get_by_test_id("stMain").inner_text(timeout=5_000))
    except Exception:  # redrawn while read
        return None
    return int(found.group(1)) if found else None


def runs_on_page(page) -> list[str]:
    return [h.strip() for h in page.get_by_test_id("stMain").locator("h3").all_inner_texts()]


def expect_runs_on_page(page, names: list[str], timeout_s: float = 30) -> None:
    """The page's runs (their h3 names) become ``names`` within ``timeout_s``: a page that has just shown a message
    may still be drawing the runs below it (a snapshot read then found none, under load)."""
    from playwright.sync_api import expect

    expect(page.get_by_test_id("stMain").locator("h3")).to_have_text(names, timeout=timeout_s * 1000)


def start_training(visitor) -> None:
    """Press Start training, then make the visitor's next move: a sentence typed in the sidebar, a full run of the
    page. From that run on, the sidebar's status line polls the run every POLL_S (2 s) and notes the lab seen.
    Without it, a /train tab whose run began in its last run notes its lab seen only with Your models' watch, every
    10 s, past this server's orphan timeout, so the run stops while its visitor watches it: that is an app bug,
    test_a_visitor_watching_their_run_on_train_keeps_it (a strict xfail)."""
    visitor.page.get_by_test_id("stMain").get_by_role("button", name="Start training", exact=True).click()
    wait_for_app(visitor.page)
    visitor.type("where is my parcel ?")
    visitor.wait_painted(60)


def ended(server, run_id: str, timeout_s: float = 60) -> dict | None:
    """The run's row once it has ended (None if it had not within ``timeout_s``)."""
    return wait_until(lambda: (lambda row: row if row and row["status"] not in ACTIVE else None)(server.run(run_id)),
                      timeout_s, every_s=0.1)


def no_run_going(server, timeout_s: float = 60) -> bool:
    """Whether, within ``timeout_s``, no run of the store is queued or training and no worker thread trains."""
    return bool(wait_until(lambda: not any(r["status"] in ACTIVE for r in server.runs())
                           and not server.threads(TRAIN_THREAD), timeout_s))

