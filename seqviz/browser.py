"""The one browser harness: Chromium launched as every browser check launches it, and what "painted" means.

Used by the browser tests (tests/browser, their moves in tests/browsing.py), the load tests (tests/load), the smoke
check (seqviz/smoke.py) and the benchmarks (benchmarks/browser_tab.py, benchmarks/training.py, benchmarks/board.py).
It drives Debian's Chromium (``/usr/bin/chromium``, or ``SEQVIZ_CHROMIUM``; never a downloaded browser) through
Playwright, which is a development requirement (requirements-dev.txt): it is imported only inside the functions that
need it, so this module imports with the app's requirements alone.

**Painted.** A view is painted when, all at once:

- the run finished: the app reads ``data-test-script-state="notRunning"`` (and, when the view began with an
  action at ``since`` on the page's clock, a run began after it: the state was seen "running", or a message came
  from the server, since a quick rerun's messages can arrive in one batch that never shows "running");
- no skeleton: every element's code has arrived (a busy server sends ~200 script files; a late one shows
  ``stSkeleton``);
- charts drawn: every ``[data-testid=stVegaLiteChart]`` holds its ``svg`` or ``canvas``;
- the page still: nothing in the main area or the sidebar (DOM mutations, 2D canvas calls) changed for
  ``quiet_ms``, and the animation frame after the last change was painted (or three times ``quiet_ms`` passed).

The recorder (:data:`RECORDER_JS`) watches for those changes from before Streamlit's own scripts run in every
context made by :func:`new_context`, and is installed late where a page lacks it. It also records, on the
page's clock, what the benchmark measures: every websocket message, the script-state changes, long tasks, and
the key or pointer press that starts an armed action (:func:`arm`, :func:`recorded`). The predicate itself is
``window.__bx.look``, defined once below; :func:`look` reads it and :func:`wait_painted` waits for it. The moves
every visitor makes (the Sentence box, the sidebar's links, a number box) are here too, found one way for all.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("SEQVIZ_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = ("--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync")
DESKTOP = {"viewport": {"width": 1400, "height": 1000}}
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True, "device_scale_factor": 2,
         "user_agent": "Mozilla/5.0 (Linux; Android 14; Pixel 7) AppleWebKit/537.36 (KHTML, like Gecko) "
                       "Chrome/139.0.0.0 Mobile Safari/537.36"}
QUIET_MS = 300  # nothing changed on the page for this long: the page is still
PAGE_TIMEOUT_MS = 60_000  # a page's default timeout for every Playwright call

# Runs in every page before Streamlit (and late, where a page lacks it). Statements, so that it can be both an
# init script and the head of a predicate.
RECORDER_JS = r"""
(() => {
  if (window.__bx) return;
  const rec = window.__bx = {armed: false, t0: null, frames: [], states: [], lastChange: performance.now(),
                             lastPaint: 0, longTasks: [], pending: false};
  const changed = () => {
    rec.lastChange = performance.now();
    if (!rec.pending) {
      rec.pending = true;
      requestAnimationFrame(() => { rec.pending = false; setTimeout(() => { rec.lastPaint = performance.now(); }); });
    }
  };
  const Socket = window.WebSocket;
  window.WebSocket = class extends Socket {
    constructor(...args) {
      super(...args);
      rec.frames = [];  // one list per socket, as Playwright's frames are
      this.addEventListener('message', (e) => {
        const d = e.data;
        rec.frames.push([performance.now(), d.byteLength ?? d.size ?? d.length ?? 0]);
      });
    }
  };
  for (const name of ['clearRect', 'fillRect', 'fill', 'stroke', 'fillText', 'drawImage']) {
    const own = CanvasRenderingContext2D.prototype[name];
    CanvasRenderingContext2D.prototype[name] = function (...args) { changed(); return own.apply(this, args); };
  }
  // Content only: the main area and the sidebar (not the toolbar or the running-man widget, which change
  // after a run for reasons of their own).
  const CONTENT = '[data-testid=stMain], [data-testid=stSidebar]';
  new MutationObserver((records) => {
    let content = false;
    for (const m of records) {
      if (m.type === 'attributes' && m.attributeName === 'data-test-script-state')
        rec.states.push([performance.now(), m.target.getAttribute('data-test-script-state')]);
      if (!content) {
        const e = m.target.nodeType === 1 ? m.target : m.target.parentElement;
        content = !!(e && e.closest(CONTENT));
      }
    }
    if (content) changed();
  }).observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
  try {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) rec.longTasks.push([e.startTime, e.duration]);
    }).observe({type: 'longtask', buffered: true});
  } catch (e) {}
  const press = (e) => { if (rec.armed) { rec.t0 = e.timeStamp; rec.armed = false; } };
  document.addEventListener('keydown', press, true);
  document.addEventListener('pointerdown', press, true);
  rec.arm = () => { rec.armed = true; rec.t0 = null; rec.longTasks = []; };
  // Painted: see the module's docstring. ``since``: null, or the page-clock time of the action that began the view;
  // ``needs``: selectors that must be on the page as well.
  rec.look = (quiet, since, needs) => {
    const app = document.querySelector('[data-testid=stApp]');
    const state = app ? app.getAttribute('data-test-script-state') : null;
    const charts = [...document.querySelectorAll('[data-testid=stVegaLiteChart]')];
    const undrawn = charts.flatMap((c, i) => c.querySelector('svg, canvas') ? [] : [i]);
    const skeleton = !!document.querySelector('[data-testid=stSkeleton]');
    const missing = (needs || []).filter((s) => !document.querySelector(s));
    const t0 = since ?? 0;
    const ran = rec.states.some(([t, s]) => t >= t0 && s === 'running') || rec.frames.some(([t]) => t >= t0);
    const now = performance.now();
    const quietMs = now - rec.lastChange;
    const still = quietMs >= quiet && (rec.lastPaint >= rec.lastChange || quietMs >= 3 * quiet);
    const painted = state === 'notRunning' && !skeleton && !undrawn.length && !missing.length && still
                    && (since === null || ran);
    return {painted, state, skeleton, charts: charts.length, undrawn, missing, ran, still, now,
            quiet: quietMs, painted_at: Math.max(rec.lastChange, rec.lastPaint),
            exceptions: document.querySelectorAll('[data-testid=stException]').length};
  };
})();
"""
_LOOK = "([quiet, since, needs]) => { " + RECORDER_JS + " return window.__bx.look(quiet, since, needs); }"
_PAINTED = "([quiet, since, needs]) => { " + RECORDER_JS + " return window.__bx.look(quiet, since, needs).painted; }"


class MissingChromium(RuntimeError):
    """Debian's Chromium is not where the harness looks for it."""


class NotPainted(Exception):
    """A view was not painted in time; the message says which part of "painted" never held."""


# --- Chromium -----------------------------------------------------------------------------------------------


def resolver_rules(resolve: dict[str, str] | None) -> list[str]:
    """Chromium's flag that sends each host's requests to its address (as curl's --resolve)."""
    if not resolve:
        return []
    return ["--host-resolver-rules=" + ", ".join(f"MAP {host} {address}" for host, address in resolve.items())]


def launch(playwright, *, executable: str | None = None, resolve: dict[str, str] | None = None, args=()):
    """Headless Chromium from ``playwright`` (a sync_playwright()), with the harness's flags (and ``args``)."""
    executable = executable or CHROMIUM
    if not Path(executable).exists():
        raise MissingChromium(f"No Chromium at {executable}: run `scripts/ensure-chromium` (as root) first.")
    return playwright.chromium.launch(executable_path=executable, headless=True,
                                      args=[*CHROMIUM_FLAGS, *resolver_rules(resolve), *args])


@contextlib.contextmanager
def chromium(**launch_options):
    """A Playwright of its own and a Chromium from it (for tools; tests share one Playwright per run)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = launch(p, **launch_options)
        try:
            yield browser
        finally:
            browser.close()


def new_context(browser, device: dict = DESKTOP, **options):
    """A visitor of their own (own cookies, own session), the painted recorder in every page it opens.
    ``device``: DESKTOP or PHONE; ``options`` add to it (accept_downloads, color_scheme, viewport...)."""
    context = browser.new_context(**{**device, **options})
    context.add_init_script(RECORDER_JS)
    return context


def new_page(context, timeout_ms: float = PAGE_TIMEOUT_MS):
    page = context.new_page()
    page.set_default_timeout(timeout_ms)
    return page


def new_visitor(browser, *, timeout_ms: float = PAGE_TIMEOUT_MS, **options):
    """A visitor of their own with one tab: (context, page), as :func:`new_context` and :func:`new_page` make them."""
    context = new_context(browser, **options)
    return context, new_page(context, timeout_ms)


# --- A visitor's moves --------------------------------------------------------------------------------------


def sentence_box(page):
    """The Sentence box, in the sidebar of every page."""
    return page.get_by_role("textbox", name="Sentence", exact=True)


def sidebar_link(page, title: str):
    """The sidebar's link to the page titled ``title``: it keeps the session (a reload or page.goto opens a new one,
    which forgets the visitor's models)."""
    return page.get_by_test_id("stSidebarNav").get_by_text(title, exact=True)


def set_number(page, label: str, value: int, *, timeout_ms: float = 90_000):
    """Type ``value`` into the main column's number box ``label``, press Enter and wait until painted; the box."""
    box = page.get_by_test_id("stMain").get_by_role("spinbutton", name=label, exact=True)
    box.fill(str(value))
    box.press("Enter")
    wait_painted(page, timeout_ms=timeout_ms)
    return box


# --- Painted ------------------------------------------------------------------------------------------------


def look(page, *, quiet_ms: float = QUIET_MS, since: float | None = None, needs=()) -> dict:
    """What the page says now: ``painted`` and each of its parts (see the module's docstring)."""
    return page.evaluate(_LOOK, [quiet_ms, since, list(needs)])


def why_not(seen: dict) -> str:
    """The first part of "painted" that does not hold in ``seen`` (a :func:`look`)."""
    if seen["state"] != "notRunning":
        return f"the script never finished running (the app reads {seen['state']!r})"
    if seen["skeleton"]:
        return "an element's code never arrived from the server (a skeleton stayed)"
    if seen["undrawn"]:
        return f"chart {seen['undrawn'][0] + 1} of {seen['charts']} did not draw"
    if seen["missing"]:
        return f"nothing on the page matches {seen['missing'][0]}"
    if not seen["ran"]:
        return "no run began after the action"
    return "the page never went still"


def wait_painted(page, *, timeout_ms: float = 90_000, quiet_ms: float = QUIET_MS, since: float | None = None,
                 needs=()) -> dict:
    """Wait until the page is painted; its :func:`look` then. Raises NotPainted (saying why) after ``timeout_ms``."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    arg = [quiet_ms, since, list(needs)]
    try:
        page.wait_for_function(_PAINTED, arg=arg, polling=50, timeout=max(1.0, timeout_ms))
    except PlaywrightTimeout:
        raise NotPainted(why_not(look(page, quiet_ms=quiet_ms, since=since, needs=needs))) from None
    return page.evaluate(_LOOK, arg)


def arm(page) -> None:
    """Arm the recorder: the page's next key or pointer press is an action's start, ``t0`` (long tasks from then)."""
    page.evaluate("() => window.__bx.arm()")


def recorded(page) -> dict:
    """What the recorder holds, on the page's clock (ms): ``t0`` (the armed press), ``frames`` ([time, bytes] per
    websocket message of the current socket), ``states`` ([time, script state]), ``lastChange``, ``lastPaint``,
    ``longTasks`` ([start, duration]), and ``now``."""
    return page.evaluate("() => { const r = window.__bx; return {t0: r.t0, frames: r.frames, states: r.states,"
                         " lastChange: r.lastChange, lastPaint: r.lastPaint, longTasks: r.longTasks,"
                         " now: performance.now()}; }")


# --- A server to drive ---------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    """A running ``streamlit run app.py``: its address, process, and when it was started and answered healthy."""

    url: str
    process: subprocess.Popen
    started: float  # time.perf_counter() when the command was run
    healthy_s: float  # seconds from the command to /_stcore/health answering 200

    @property
    def pid(self) -> int:
        return self.process.pid


def wait_healthy(url: str, process: subprocess.Popen | None = None, timeout_s: float = 120,
                 every_s: float = 0.05) -> bool:
    """Whether ``url``/_stcore/health answered 200 within ``timeout_s`` (asked every ``every_s``; False at once
    when ``process``, the server, has ended)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as reply:
                if reply.status == 200:
                    return True
        except OSError:
            pass
        if (process is not None and process.poll() is not None) or time.monotonic() > deadline:
            return False
        time.sleep(every_s)


def stop(process: subprocess.Popen) -> None:
    """End a server this harness or a test started: terminate, then kill after 10 s."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def streamlit_server(log_path: Path, env: dict[str, str] | None = None, *, timeout_s: float = 120):
    """``streamlit run app.py`` on a free loopback port, its output in ``log_path``: yields a :class:`Server` once
    healthy (/_stcore/health asked every 50 ms), and stops it on the way out."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as log:
        started = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
             "--server.headless", "true", "--server.address", "127.0.0.1"],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
        try:
            if not wait_healthy(url, process, timeout_s):
                raise RuntimeError(f"streamlit did not become healthy: see its log, {log_path}")
            yield Server(url, process, started, time.perf_counter() - started)
        finally:
            stop(process)
