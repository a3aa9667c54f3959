"""Speed a class feels (issue 9), measured from outside: the real server, Debian's Chromium, /proc.

Every figure here comes from ``streamlit run app.py --server.headless true`` on a free port, driven by Debian's
Chromium through Playwright (no browser is downloaded), and from the server's /proc entries. Nothing is asserted;
the machine may be shared and noisy, so its load average is sampled during every measure and reported beside it.

The server, Chromium and what *painted* means are seqviz.browser's, the harness the browser tests, the load tests
and the smoke check share: its recorder, injected into every page before Streamlit loads, notes on the page's
own clock every websocket frame, the last change to the page's content (DOM mutations in the main area and the
sidebar, 2D canvas calls) and the paint after it, long tasks, and ``t0``, the key or pointer press of an armed
action. What this module adds is the measuring:

- the same websocket frames, captured by Playwright and decoded as Streamlit ``ForwardMsg`` protobufs in this
  process, say which frame is the ``script_finished`` message of the action's run (the script ran to its end;
  a successful whole run, or fragment run) and what the bytes carried (chart specs, tables, text...);
- an action is timed from ``t0`` to the paint after the last change, once its ``script_finished`` has arrived and
  the page is painted with ``QUIET_MS`` of stillness (that wait not counted). Because Streamlit removes a run's
  stale elements when its ``script_finished`` arrives, what is on screen then is the new run's; for a typed
  sentence the share box's address (written at the end of every page's script) is checked to hold the new
  sentence.

Sentences come from the project's own translation grammar (seqviz.data.translation), seeded, never repeated
in one run: every typed sentence is new to the server's caches, as a class's sentences would be.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote_plus

from benchmarks.training import LoadSampler
from seqviz import browser as harness

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "test-output"
QUIET_MS = harness.QUIET_MS  # nothing changed on the page for this long: the action is over (300 ms)
REFERENCE = "rnn-memory"  # the page every other page is compared with
CLASS_CORES = 2  # the host the issue sizes a class for
SENTENCE_EVERY_S = 10  # one sentence per student every 10 s
GOALS = {
    "typing": "every page's typing-to-painted median within 2x of /rnn-memory's",
    "widgets": "moving a widget to painted no slower than /rnn-memory's typing median",
    "cpu": "at most 0.15 CPU-seconds of the server per view, 10 sessions at once",
    "healthy": "`streamlit run app.py` to a healthy server in at most 2 s",
    "first_chart": "a fresh server to the first chart painted on /attention in at most 5 s",
    "no_torch": "pages that need no model (/, /rnn-memory) never import torch",
}
# The widgets the issue names (page, kind, label); a widget the page no longer has is reported, not fatal.
WIDGETS = (
    ("rnn-memory", "slider", "Recurrent weight w"),
    ("attention", "slider", "Output word"),
    ("lstm-gates", "selectbox", "Unit"),
    ("lstm-gates", "slider", "Units to show"),
    ("vanishing-gradients", "slider", "Sequence length T"),
    ("vanishing-gradients", "slider", "Scale the plain RNNs"),
    ("vanishing-gradients", "slider", "Training steps so far"),
)
PAINTED = (
    "an action (Enter in the Sentence box, an arrow key on a slider's thumb, a click on an option) is timed on the "
    "page's own clock, from the key or pointer press to the paint after the last change on the page, once "
    "Streamlit's `script_finished` message of a successful run has arrived (a whole run for a typed sentence or a "
    "page switch; a fragment's run counts for a widget), the app reads `data-test-script-state=notRunning`, every "
    "`stVegaLiteChart` holds its svg or canvas, and nothing in the main area or the sidebar (DOM mutations, 2D "
    f"canvas calls) has changed for {QUIET_MS} ms (that wait not counted). A typed sentence must also be in the "
    "share box's address, which each page writes at the end of its script.")
GROWTH_PAGES = ("attention", "lstm-gates")
GROWTH_LENGTHS = (5, 20, 60)


# ---------------------------------------------------------------------------------------------------------
# The server, seen from /proc


_TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str]:
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2:].split()  # fields from the 3rd (state) on


def _children(pid: int) -> list[int]:
    kids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int(_stat(int(entry.name))[1]) == pid:
                    kids.append(int(entry.name))
            except (OSError, ValueError, IndexError):
                pass
    return kids


class Server(harness.Server):
    """A running ``streamlit run app.py`` (seqviz.browser.streamlit_server); its CPU seconds and memory from /proc."""

    def cpu_seconds(self) -> float:
        """utime + stime of the server (all its threads), its reaped children, and its live children."""
        fields = _stat(self.pid)
        total = sum(int(fields[i]) for i in (11, 12, 13, 14))
        for kid in _children(self.pid):
            try:
                kid_fields = _stat(kid)
                total += sum(int(kid_fields[i]) for i in (11, 12, 13, 14))
            except (OSError, ValueError, IndexError):
                pass
        return total / _TICK

    def memory_mb(self) -> dict:
        status = Path(f"/proc/{self.pid}/status").read_text()
        out = {}
        for key in ("VmRSS", "VmHWM"):
            found = re.search(rf"^{key}:\s+(\d+) kB", status, re.M)
            out[key] = int(found.group(1)) / 1024 if found else None
        return out

    def has_torch(self) -> bool:
        """Whether the server has loaded torch's library (seen in its memory map, from outside)."""
        return "libtorch" in Path(f"/proc/{self.pid}/maps").read_text()


@contextmanager
def running_server(log_name: str = "benchmark-browser-streamlit.log"):
    with harness.streamlit_server(LOGS / log_name) as served:
        yield Server(**vars(served))


# ---------------------------------------------------------------------------------------------------------
# Sentences: the project's grammar, seeded, never one twice


class Sentences:
    def __init__(self, seed: int = 9) -> None:
        import numpy as np

        self._rng = np.random.default_rng(seed)
        self._seen: set[str] = set()

    def _one(self, n_tokens: int) -> str:
        from seqviz.data.translation import render_english, sample_sentence

        return " ".join(render_english(sample_sentence(self._rng, n_tokens)))

    def new(self, n_tokens: int) -> str:
        """A sentence of exactly ``n_tokens`` tokens (longer than the grammar's 45: two sentences) not given before."""
        for _ in range(1000):
            parts, left = [], n_tokens
            while left > 45:
                take = min(45, left - 5)
                parts.append(self._one(take))
                left -= take
            parts.append(self._one(left))
            text = " ".join(parts)
            if text not in self._seen:
                self._seen.add(text)
                return text
        raise RuntimeError(f"no new sentence of {n_tokens} tokens")

    def typical(self) -> str:
        """A new sentence of 6 to 12 tokens, as a visitor types."""
        return self.new(int(self._rng.integers(6, 13)))


# ---------------------------------------------------------------------------------------------------------
# One browser tab on the app


def _decode(frame: bytes) -> tuple[str, int, object]:
    """(kind, bytes, the ForwardMsg) of one websocket frame."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    msg = ForwardMsg.FromString(frame)
    kind = msg.WhichOneof("type") or "empty"
    if kind == "delta":
        delta_kind = msg.delta.WhichOneof("type")
        kind = f"delta.{delta_kind}"
        if delta_kind == "new_element":
            kind = f"element.{msg.delta.new_element.WhichOneof('type')}"
        elif delta_kind == "add_block":
            kind = "block"
    return kind, len(frame), msg


SUCCESS = {"FINISHED_SUCCESSFULLY", "FINISHED_FRAGMENT_RUN_SUCCESSFULLY"}


class Tab:
    """A Playwright page with the recorder, its websocket frames captured (bytes) and decoded on demand."""

    def __init__(self, browser, server: Server) -> None:
        self.server = server
        self.context = harness.new_context(browser)
        self.page = harness.new_page(self.context, timeout_ms=90_000)
        self.frames: list[bytes] = []
        self.marks: list[tuple[str, str | None]] = []  # per frame: its kind, and a script_finished's status
        self.at: str | None = None  # the page on screen (url path)
        self.page.on("websocket", self._on_socket)

    def _on_socket(self, ws) -> None:
        frames: list[bytes] = []
        marks: list[tuple[str, str | None]] = []
        self.frames, self.marks = frames, marks  # a new socket: new lists (the page's recorder does the same)

        def received(payload) -> None:
            raw = payload if isinstance(payload, bytes) else payload.encode()
            kind, _, msg = _decode(raw)
            status = None
            if kind == "script_finished":
                status = msg.DESCRIPTOR.fields_by_name["script_finished"].enum_type.values_by_number[
                    msg.script_finished].name
            frames.append(raw)
            marks.append((kind, status))

        ws.on("framereceived", received)

    def close(self) -> None:
        self.context.close()

    # -- opening pages

    def goto(self, url_path: str, sentence: str | None = None, timeout_s: float = 120) -> float:
        """Open /url_path (a new session); wait until painted. Seconds from the request to painted."""
        query = f"?s={quote_plus(sentence)}" if sentence is not None else ""
        began = time.perf_counter()
        self.frames, self.marks = [], []
        self.page.goto(f"{self.server.url}/{url_path}{query}", wait_until="commit")
        self.wait_painted(None, timeout_s)
        self.at = url_path
        return time.perf_counter() - began

    def visit(self, url_path: str) -> float:
        """Go to /url_path: the first time by its address (a new session), then by the sidebar's link (the same
        session, as a visitor moves). Seconds from the request or the click to painted."""
        if self.at is None:
            seconds = self.goto(url_path)
        elif self.at == url_path:
            return 0.0
        else:
            from seqviz.story import PAGES

            title = next(p.title for p in PAGES if p.url_path == url_path)
            link = self.page.get_by_test_id("stSidebarNav").get_by_text(title, exact=True)
            n0 = self.arm()
            link.click()
            seconds = self.measure(n0, full=True)["seconds"]
        self.at = url_path
        return seconds

    def start_goto(self, url_path: str) -> None:
        self.frames, self.marks = [], []
        self.at = url_path
        self.page.goto(f"{self.server.url}/{url_path}", wait_until="commit")

    def wait_painted(self, n0: int | None, timeout_s: float = 120, full: bool = False) -> None:
        """Wait for a successful script_finished after frame ``n0`` (None: any, as on opening; ``full``: of a
        whole run, not a fragment's), then the page painted (seqviz.browser, with QUIET_MS of stillness)."""
        deadline = time.perf_counter() + timeout_s
        while self._finished_index(n0 or 0, full) is None:
            if time.perf_counter() > deadline:
                raise TimeoutError("no script_finished message" + (" of a whole run" if full else ""))
            self.page.wait_for_timeout(25)
        left = max(1.0, deadline - time.perf_counter())
        harness.wait_painted(self.page, timeout_ms=left * 1000, quiet_ms=QUIET_MS)

    def _finished_index(self, n0: int, full: bool = False) -> int | None:
        """Index of the last successful script_finished at or after frame n0 not followed by a new run's start
        (``full``: of a whole run, which began with a new_session message after n0)."""
        found = None
        started = False
        for i, (kind, status) in enumerate(self.marks[n0:], start=n0):
            if kind == "script_finished":
                ok = status == "FINISHED_SUCCESSFULLY" if full else status in SUCCESS
                found = i if ok and (started or not full) else None
            elif kind == "new_session":
                started = True
                found = None
        return found

    # -- measuring one action

    def arm(self) -> int:
        n0 = len(self.frames)
        self.page.evaluate("() => window.__bx.arm()")
        return n0

    def measure(self, n0: int, timeout_s: float = 120, cpu_before: float | None = None, full: bool = False) -> dict:
        """After an armed action: wait until painted (``full``: by a whole run); the figures of that action."""
        self.wait_painted(n0, timeout_s, full)
        cpu = None if cpu_before is None else self.server.cpu_seconds() - cpu_before
        rec = self.page.evaluate("() => { const r = window.__bx;"
                                 " return {t0: r.t0, frames: r.frames, states: r.states, lastChange: r.lastChange,"
                                 " lastPaint: r.lastPaint, longTasks: r.longTasks}; }")
        return self._figures(rec, n0, cpu)

    def _figures(self, rec: dict, n0: int, cpu: float | None) -> dict:
        t0 = rec["t0"]
        if t0 is None:
            raise RuntimeError("the action's key or pointer press was not seen by the page")
        frames = self.frames[n0:]
        page_frames = rec["frames"][-len(frames):] if frames else []
        aligned = len(rec["frames"]) == len(self.frames) and all(
            n == len(f) for (_, n), f in zip(page_frames, frames, strict=True))
        kinds: dict[str, int] = {}
        chart_spec = chart_data = exceptions = 0
        first = finished = None  # on the page's clock
        for i, raw in enumerate(frames):
            kind, size, msg = _decode(raw)
            kinds[kind] = kinds.get(kind, 0) + size
            exceptions += kind == "element.exception"
            if kind == "element.vega_lite_chart":
                chart = msg.delta.new_element.vega_lite_chart
                chart_spec += len(chart.spec.encode())
                chart_data += sum(len(d.data.data) for d in chart.datasets) + len(chart.data.data)
            if aligned:
                if first is None:
                    first = page_frames[i][0]
                if kind == "script_finished":
                    finished = page_frames[i][0]
        # The paint after the last change (the change itself when no animation frame came after it), never
        # before the run's end arrived.
        painted = max(rec["lastChange"], rec["lastPaint"] if rec["lastPaint"] >= rec["lastChange"] else 0,
                      finished or t0, t0)
        ran = any(t >= t0 and s == "running" for t, s in rec["states"])
        busy = sum(d for s, d in rec["longTasks"] if s >= t0 and s <= painted)
        out = {"seconds": (painted - t0) / 1000, "bytes": sum(len(f) for f in frames), "messages": len(frames),
               "bytes_by_kind": kinds, "chart_spec_bytes": chart_spec, "chart_data_bytes": chart_data,
               "first_message_s": None if first is None else (first - t0) / 1000,
               "script_finished_s": None if finished is None else (finished - t0) / 1000,
               "drawing_after_finish_s": None if finished is None else (painted - finished) / 1000,
               "long_tasks_s": busy / 1000, "running_state_seen": ran, "frames_aligned": aligned,
               "exceptions": exceptions}
        if cpu is not None:
            out["server_cpu_s"] = cpu
        return out

    # -- a visitor's moves

    def sentence_box(self):
        return self.page.get_by_role("textbox", name="Sentence", exact=True)

    def type_sentence(self, text: str) -> int:
        """Fill the Sentence box, arm, press Enter (not waiting); the frame count at the press."""
        box = self.sentence_box()
        box.fill(text)
        n0 = self.arm()
        box.press("Enter")
        return n0

    def share_address(self) -> str | None:
        codes = self.page.get_by_test_id("stSidebar").get_by_test_id("stCode")
        return codes.last.inner_text() if codes.count() else None

    def fresh(self, text: str) -> bool | None:
        """Whether the share box's address holds ``text`` (None when the page has no share box)."""
        address = self.share_address()
        return None if address is None else quote_plus(text) in address

    def widget(self, kind: str, label: str):
        """The widget of ``kind`` (slider, selectbox) whose label starts with ``label``, or None."""
        test_id = {"slider": "stSlider", "selectbox": "stSelectbox"}[kind]
        title = self.page.get_by_test_id("stWidgetLabel").filter(has_text=re.compile("^" + re.escape(label)))
        found = self.page.get_by_test_id("stMain").get_by_test_id(test_id).filter(has=title)
        return found.first if found.count() else None

    def move_widget(self, kind: str, label: str, to: str | None = None) -> tuple[int, str, str] | None:
        """Move the widget labelled ``label`` one notch (arm, act, not waiting). A slider: the arrow key ``to``
        (None: right, or left at the end) on its thumb; a select box: the option ``to`` (None: the first that is
        not the current one) clicked. (frames at the press, what was done, what undoes it); None when the page
        has no such widget."""
        box = self.widget(kind, label)
        if box is None:
            return None
        if kind == "slider":
            thumb = box.get_by_role("slider").first
            if to is None:
                now, top = thumb.get_attribute("aria-valuenow"), thumb.get_attribute("aria-valuemax")
                to = "ArrowLeft" if now is not None and now == top else "ArrowRight"
            thumb.focus()
            n0 = self.arm()
            thumb.press(to)
            return n0, to, "ArrowLeft" if to == "ArrowRight" else "ArrowRight"
        combo = box.get_by_role("combobox")
        current = combo.input_value().strip()
        combo.click()
        options = self.page.get_by_role("listbox").get_by_role("option")
        try:
            options.first.wait_for(state="visible", timeout=1500)
        except Exception:  # Streamlit 1.67's select box: a click focuses it, the arrow key opens the list
            combo.press("ArrowDown")
            options.first.wait_for(state="visible")
        names = [t.strip() for t in options.all_inner_texts()]
        choice = names.index(to) if to in names else next((i for i, n in enumerate(names) if n != current), None)
        if choice is None:
            self.page.keyboard.press("Escape")
            return None
        n0 = self.arm()
        options.nth(choice).click()
        return n0, names[choice], current


# ---------------------------------------------------------------------------------------------------------
# The measures


def _pages() -> list[str]:
    """The url paths of every page with a Sentence box (the sidebar's: every page the router serves)."""
    from seqviz.story import PAGES

    return [p.url_path for p in PAGES]


def _label(url_path: str) -> str:
    return f"/{url_path}"


def _summary(samples: list[dict]) -> dict:
    secs = [s["seconds"] for s in samples]
    out = {"n": len(secs), "median_s": statistics.median(secs), "max_s": max(secs), "min_s": min(secs),
           "exceptions": sum(s.get("exceptions", 0) for s in samples)}
    for key in ("first_message_s", "script_finished_s", "drawing_after_finish_s", "long_tasks_s", "bytes",
                "messages", "chart_spec_bytes", "chart_data_bytes", "server_cpu_s"):
        values = [s[key] for s in samples if s.get(key) is not None]
        if values:
            out[f"median_{key}"] = statistics.median(values)
    return out


def typing(browser, server: Server, sentences: Sentences, per_page: int, pages: list[str] | None = None) -> dict:
    """Typing to painted on every page: go there (its first run loads its models: the warm-up), then type
    ``per_page`` new sentences (one visitor; the server's CPU seconds per typed sentence recorded with it)."""
    rows = {}
    tab = Tab(browser, server)
    try:
        with LoadSampler() as load:
            for url_path in pages or _pages():
                try:
                    opened = tab.visit(url_path)  # the page's first run loads its models: the warm-up
                    samples = []
                    for _ in range(per_page):
                        text = sentences.typical()
                        cpu = server.cpu_seconds()
                        sample = tab.measure(tab.type_sentence(text), cpu_before=cpu, full=True)
                        sample.update(tokens=len(text.split()), fresh=tab.fresh(text))
                        samples.append(sample)
                    rows[_label(url_path)] = {"open_s": opened, **_summary(samples),
                                              "fresh": all(s["fresh"] is not False for s in samples),
                                              "charts": tab.page.get_by_test_id("stVegaLiteChart").count(),
                                              "samples": samples}
                except Exception as error:  # one page failing keeps the others, in a new tab
                    rows[_label(url_path)] = {"error": f"{type(error).__name__}: {error}"}
                    tab.close()
                    tab = Tab(browser, server)
    finally:
        tab.close()
    reference = rows.get(_label(REFERENCE), {}).get("median_s")
    for row in rows.values():
        if reference and "median_s" in row:
            row["ratio"] = row["median_s"] / reference
    measured = [r for r in rows.values() if "ratio" in r]
    met = bool(measured) and len(measured) == len(rows) and all(r["ratio"] <= 2 for r in measured)
    worst = max(rows, key=lambda k: rows[k].get("median_s", -1))
    return {"pages": rows, "reference": _label(REFERENCE), "reference_median_s": reference, "slowest": worst,
            "goal": {"goal": GOALS["typing"], "met": met,
                     "measured": ", ".join(f"{k} {r['ratio']:.1f}x" for k, r in rows.items() if "ratio" in r)
                     + "".join(f"; {k}: {r['error']}" for k, r in rows.items() if "error" in r)},
            **load.summary()}


def widgets(browser, server: Server, sentences: Sentences, moves: int, reference_s: float | None) -> dict:
    """Each named widget moved once to a new value, then ``moves`` times back and forth, to painted."""
    rows = []
    with LoadSampler() as load:
        by_page: dict[str, list[tuple[str, str]]] = {}
        for url_path, kind, label in WIDGETS:
            by_page.setdefault(url_path, []).append((kind, label))
        tab = Tab(browser, server)
        try:
            for url_path, found in by_page.items():
                try:
                    tab.visit(url_path)
                except Exception as error:  # the page did not open: its widgets say so, in a new tab
                    rows += [{"page": _label(url_path), "widget": label, "kind": kind,
                              "error": f"{type(error).__name__}: {error}"} for kind, label in found]
                    tab.close()
                    tab = Tab(browser, server)
                    continue
                for kind, label in found:
                    row = {"page": _label(url_path), "widget": label, "kind": kind}
                    try:
                        moved = None
                        for _ in range(3):  # a page that came up without the widget is opened again (home, then
                            # the sidebar's link: its address alone brought it up without it again), and said so
                            if tab.widget(kind, label) is not None:
                                cpu = server.cpu_seconds()
                                moved = tab.move_widget(kind, label)
                                break
                            row["opened_without_it"] = row.get("opened_without_it", 0) + 1
                            tab.goto("")
                            tab.visit(url_path)
                        if moved is None:
                            raise LookupError("no such widget on the page")
                        first = tab.measure(moved[0], cpu_before=cpu)
                        row.update(first_move_s=first["seconds"], first_move=first)
                        ahead, back = moved[1], moved[2]
                        samples = []
                        for i in range(moves):  # back and forth between two values, both seen once already
                            cpu = server.cpu_seconds()
                            moved = tab.move_widget(kind, label, back if i % 2 == 0 else ahead)
                            if moved is None:
                                raise LookupError("the widget went away")
                            sample = tab.measure(moved[0], cpu_before=cpu)
                            sample["value"] = moved[1]
                            samples.append(sample)
                        row.update(_summary(samples), samples=samples)
                        if reference_s:
                            row["ratio_to_reference_typing"] = row["median_s"] / reference_s
                    except Exception as error:
                        row["error"] = f"{type(error).__name__}: {error}"
                    rows.append(row)
        finally:
            tab.close()
    measured = [r for r in rows if "median_s" in r]
    met = reference_s is not None and len(measured) == len(rows) and all(
        r["median_s"] <= reference_s for r in measured)
    text = ", ".join(f"{r['page']} {r['widget']} {r['median_s']:.2f} s" for r in measured)
    missing = [f"{r['page']} {r['widget']}: {r['error']}" for r in rows if "error" in r]
    return {"widgets": rows, "reference_typing_s": reference_s,
            "goal": {"goal": GOALS["widgets"], "met": met,
                     "measured": (f"/rnn-memory typing {reference_s:.2f} s; " if reference_s else "")
                     + text + ("; " + "; ".join(missing) if missing else "")},
            **load.summary()}


def sessions(browser, server: Server, sentences: Sentences, rounds: int, pages: list[str],
             memory: dict, counts: tuple[int, ...] = (5, 10)) -> dict:
    """Sessions at once: ``counts[0]`` opened on the first page (memory read), then more up to each next count
    (memory read); then per page, every tab goes there (the sidebar's link; not when already there) and types a
    new sentence, all at once, ``rounds`` times: the server's CPU seconds per typed sentence, per page switch
    and per session opened."""
    from seqviz.story import PAGES

    titles = {p.url_path: p.title for p in PAGES}
    tabs: list[Tab] = []
    waves = []
    navigations = []
    try:
        with LoadSampler() as load:
            for count in counts:
                new = [Tab(browser, server) for _ in range(count - len(tabs))]
                cpu = server.cpu_seconds()
                began = time.perf_counter()
                for tab in new:
                    tab.start_goto(pages[0])
                for tab in new:
                    tab.wait_painted(None)
                tabs += new
                navigations.append({"page": _label(pages[0]), "views": len(new), "opened": True,
                                    "cpu_s": server.cpu_seconds() - cpu, "wall_s": time.perf_counter() - began})
                memory[f"{count} sessions"] = server.memory_mb()
            for _ in range(rounds):
                for url_path in pages:
                    cpu = server.cpu_seconds()
                    began = time.perf_counter()
                    starts = []
                    moving = [tab for tab in tabs if tab.at != url_path]
                    for tab in moving:
                        starts.append(tab.arm())
                        link = tab.page.get_by_test_id("stSidebarNav").get_by_text(titles[url_path], exact=True)
                        link.click()
                        tab.at = url_path
                    for tab, n0 in zip(moving, starts, strict=True):
                        tab.wait_painted(n0, full=True)
                    if moving:
                        navigations.append({"page": _label(url_path), "views": len(moving), "opened": False,
                                            "cpu_s": server.cpu_seconds() - cpu,
                                            "wall_s": time.perf_counter() - began})
                    cpu = server.cpu_seconds()
                    began = time.perf_counter()
                    starts = [tab.type_sentence(sentences.typical()) for tab in tabs]
                    samples = [tab.measure(n0, full=True) for tab, n0 in zip(tabs, starts, strict=True)]
                    waves.append({"page": _label(url_path), "views": len(tabs), "cpu_s": server.cpu_seconds() - cpu,
                                  "wall_s": time.perf_counter() - began,
                                  "median_s": statistics.median(s["seconds"] for s in samples),
                                  "max_s": max(s["seconds"] for s in samples)})
            memory[f"{len(tabs)} sessions, after typing"] = server.memory_mb()
    finally:
        for tab in tabs:
            tab.close()
    views = sum(w["views"] for w in waves)
    cpu = sum(w["cpu_s"] for w in waves)
    per_page = {}
    for w in waves:
        row = per_page.setdefault(w["page"], {"views": 0, "cpu_s": 0.0, "medians": []})
        row["views"] += w["views"]
        row["cpu_s"] += w["cpu_s"]
        row["medians"].append(w["median_s"])
    for row in per_page.values():
        row["cpu_per_view_s"] = row["cpu_s"] / row["views"]
        row["median_typing_s"] = statistics.median(row.pop("medians"))
    nav_views = sum(n["views"] for n in navigations if not n["opened"])
    nav_cpu = sum(n["cpu_s"] for n in navigations if not n["opened"])
    open_views = sum(n["views"] for n in navigations if n["opened"])
    open_cpu = sum(n["cpu_s"] for n in navigations if n["opened"])
    return {"sessions": len(tabs), "views": views, "cpu_s": cpu, "cpu_per_view_s": cpu / views if views else None,
            "wall_s": sum(w["wall_s"] for w in waves), "per_page": per_page, "waves": waves,
            "navigations": navigations, "navigation_cpu_per_view_s": nav_cpu / nav_views if nav_views else None,
            "opening_cpu_per_session_s": open_cpu / open_views if open_views else None,
            **load.summary()}


def _class_size(cpu_per_view: float | None) -> float | None:
    return None if not cpu_per_view else CLASS_CORES * SENTENCE_EVERY_S / cpu_per_view


def cpu_per_view(typed: dict, many: dict) -> dict:
    """One session's figure from the typing measure (every typed sentence, its CPU seconds); many sessions' from
    their waves."""
    samples = [s for row in typed["pages"].values() for s in row.get("samples", []) if "server_cpu_s" in s]
    one = sum(s["server_cpu_s"] for s in samples) / len(samples) if samples else None
    per_page = {page: row["median_server_cpu_s"] for page, row in typed["pages"].items()
                if "median_server_cpu_s" in row}
    figure = many.get("cpu_per_view_s")
    n = many.get("sessions", 0)
    met = figure is not None and figure <= 0.15
    return {"one_session": {"views": len(samples), "cpu_per_view_s": one, "median_per_page_s": per_page,
                            "class_size": _class_size(one)},
            "many_sessions": many | {"class_size": _class_size(figure)},
            "goal": {"goal": GOALS["cpu"], "met": met,
                     "measured": (f"{figure:.3f} CPU-s per view with {n} sessions" if figure else "not measured")
                     + (f", {one:.3f} with one" if one else "")
                     + (f" (a quick run: {n} sessions, not 10)" if n and n != 10 else "")}}


def growth(browser, server: Server, sentences: Sentences, per_length: int) -> dict:
    """Typing to painted against the sentence's length, on /attention and /lstm-gates."""
    rows = {}
    with LoadSampler() as load:
        tab = Tab(browser, server)
        for url_path in GROWTH_PAGES:
            try:
                tab.visit(url_path)
                row = {}
                for n in GROWTH_LENGTHS:
                    samples = []
                    for _ in range(per_length):
                        text = sentences.new(n)
                        cpu = server.cpu_seconds()
                        sample = tab.measure(tab.type_sentence(text), cpu_before=cpu, full=True)
                        sample["fresh"] = tab.fresh(text)
                        samples.append(sample)
                    row[str(n)] = {**_summary(samples), "fresh": all(s["fresh"] is not False for s in samples)}
                rows[_label(url_path)] = row
            except Exception as error:
                rows[_label(url_path)] = {"error": f"{type(error).__name__}: {error}"}
                tab.close()
                tab = Tab(browser, server)
        tab.close()
    return {"pages": rows, **load.summary()}


def _painted_ago(tab: Tab) -> float:
    """Seconds since the page's last paint (on its own clock)."""
    return tab.page.evaluate("() => { const r = window.__bx; const last = r.lastPaint >= r.lastChange ?"
                             " r.lastPaint : r.lastChange; return (performance.now() - last) / 1000; }")


def _open_attention(tab: Tab, out: dict, since: float) -> None:
    """Open /attention; the seconds from ``since`` (perf_counter) to its first chart drawn and to painted."""
    tab.frames, tab.marks = [], []
    tab.page.goto(f"{tab.server.url}/attention", wait_until="commit")
    drawn = "[data-testid=stVegaLiteChart] svg, [data-testid=stVegaLiteChart] canvas"
    tab.page.locator(drawn).first.wait_for(state="visible", timeout=180_000)
    out["first_chart_s"] = time.perf_counter() - since
    tab.wait_painted(None, 180)
    out["painted_s"] = time.perf_counter() - since - _painted_ago(tab)
    out["memory_mb"] = tab.server.memory_mb()


def cold_start(browser, server: Server | None = None) -> dict:
    """Cold start. Full (no ``server``): a fresh server to healthy, then /attention opened at once: its first
    chart drawn and the page painted, from the `streamlit run` command; then another fresh server opening /,
    /rnn-memory and /attention in turn, torch looked for in its memory map after each. Quick: ``server``, just
    started, does the second part, and /attention's figures are its healthy time plus /attention's own opening
    (after the pages without models)."""
    quick = server is not None
    out: dict = {"how": "quick: healthy + opening /attention after / and /rnn-memory" if quick else
                 "full: /attention opened first on a fresh server"}
    with LoadSampler() as load:
        if not quick:
            with running_server("benchmark-browser-cold.log") as fresh:
                out["healthy_s"] = fresh.healthy_s
                tab = Tab(browser, fresh)
                try:
                    _open_attention(tab, out, fresh.started)
                finally:
                    tab.close()
        with nullcontext(server) if quick else running_server("benchmark-browser-torch.log") as server:
            out.setdefault("healthy_s", server.healthy_s)
            out["torch_after"] = {"start": server.has_torch()}
            tab = Tab(browser, server)
            try:
                for url_path in ("", REFERENCE):
                    tab.goto(url_path)
                    out["torch_after"][_label(url_path)] = server.has_torch()
                if quick:
                    opened: dict = {}
                    _open_attention(tab, opened, time.perf_counter())
                    out.update(first_chart_s=server.healthy_s + opened["first_chart_s"],
                               painted_s=server.healthy_s + opened["painted_s"], memory_mb=opened["memory_mb"])
                else:
                    tab.goto("attention")
                out["torch_after"]["/attention"] = server.has_torch()
            finally:
                tab.close()
    no_torch = not any(v for k, v in out["torch_after"].items() if k != "/attention")
    out["goals"] = [
        {"goal": GOALS["healthy"], "met": out["healthy_s"] <= 2, "measured": f"{out['healthy_s']:.2f} s"},
        {"goal": GOALS["first_chart"], "met": out["first_chart_s"] <= 5,
         "measured": f"first chart {out['first_chart_s']:.2f} s, page painted {out['painted_s']:.2f} s"},
        {"goal": GOALS["no_torch"], "met": no_torch,
         "measured": "libtorch in the server's memory map after: " + ", ".join(
             f"{k} {'yes' if v else 'no'}" for k, v in out["torch_after"].items())},
    ]
    out.update(load.summary())
    return out


WHO_IMPORTS_TORCH = r"""
import sys, traceback
from pathlib import Path
root = str(Path.cwd())
first = []
class Spy:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" and not first:
            first.append([f"{Path(f.filename).relative_to(root)}:{f.lineno}" for f in traceback.extract_stack()
                          if f.filename.startswith(root) and "/.venv/" not in f.filename])
        return None
sys.meta_path.insert(0, Spy())
from streamlit.testing.v1 import AppTest
at = AppTest.from_file("app.py", default_timeout=300)
at.run()
at.switch_page(sys.argv[1]).run()
print("RESULT", {"torch": "torch" in sys.modules, "chain": first[0] if first else None,
                 "exception": [str(e.value) for e in at.exception]})
"""


def who_imports_torch(scripts=("app_pages/home.py", "app_pages/rnn_memory.py")) -> dict:
    """Each page run alone in a fresh process (AppTest): does it import torch, and from which line first."""
    import ast

    out = {}
    for script in scripts:
        done = subprocess.run([sys.executable, "-c", WHO_IMPORTS_TORCH, script], cwd=ROOT, capture_output=True,
                              text=True, timeout=300)
        line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
        out[script] = ast.literal_eval(line[7:]) if line else {"error": done.stderr[-500:]}
    return out


def where_time_goes(page: str, typed: dict, sentences: Sentences, runs: int) -> dict:
    """The slowest page: the browser's figures from the typing measure, and the script's own time (AppTest in a
    subprocess, the page after one warm-up sentence, then ``runs`` new sentences)."""
    row = typed["pages"][page]
    samples = row.get("samples", [])
    kinds: dict[str, list[int]] = {}
    for s in samples:
        for kind, size in s["bytes_by_kind"].items():
            kinds.setdefault(kind, []).append(size)
    bytes_by_kind = dict(sorted(((k, statistics.median(v)) for k, v in kinds.items()), key=lambda kv: -kv[1]))
    texts = [sentences.typical() for _ in range(runs + 1)]
    script = _script_seconds(page, texts) if runs else {"error": "not measured in a quick run"}
    out = {"page": page, "typing_median_s": row.get("median_s"), "browser": {
        k: row.get(f"median_{k}") for k in ("first_message_s", "script_finished_s", "drawing_after_finish_s",
                                            "long_tasks_s", "bytes", "messages", "chart_spec_bytes",
                                            "chart_data_bytes", "server_cpu_s")},
           "median_bytes_by_kind": bytes_by_kind, "apptest": script}
    return out


SCRIPT_TIME = r"""
import json, sys, time
from streamlit.testing.v1 import AppTest
from seqviz.story import PAGES
url_path, texts = sys.argv[1], json.loads(sys.argv[2])
script = next(p.script for p in PAGES if "/" + p.url_path == url_path)
at = AppTest.from_file("app.py", default_timeout=300)
at.run()
at.switch_page(script).run()
times = []
for i, text in enumerate(texts):
    began = time.perf_counter()
    at.sidebar.text_input(key="s").set_value(text).run()
    if i:
        times.append(time.perf_counter() - began)
print("RESULT", json.dumps({"seconds": times, "exception": [str(e.value) for e in at.exception]}))
"""


def _script_seconds(page: str, texts: list[str]) -> dict:
    done = subprocess.run([sys.executable, "-c", SCRIPT_TIME, page, json.dumps(texts)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    if not line:
        return {"error": done.stderr[-800:]}
    result = json.loads(line[7:])
    result["median_s"] = statistics.median(result["seconds"]) if result["seconds"] else None
    return result


# ---------------------------------------------------------------------------------------------------------
# Everything, and the report


@dataclass
class Plan:
    per_page: int = 12  # typed sentences per page after the page's first run (medians of 6 moved by 0.05 s run to run)
    moves: int = 10  # moves per widget after its first move
    rounds: int = 1  # rounds over the pages with every session
    per_length: int = 3  # sentences per length in the growth measure
    script_runs: int = 5  # AppTest runs of the slowest page
    ten_pages: list[str] = field(default_factory=list)  # empty: every page
    session_counts: tuple[int, ...] = (5, 10)  # sessions open at once, memory read at each
    quick: bool = False  # cold start on the measuring server, no AppTest subprocesses

    @classmethod
    def quick_plan(cls) -> Plan:
        return cls(per_page=2, moves=1, rounds=1, per_length=1, script_runs=0, ten_pages=["attention"],
                   session_counts=(3,), quick=True)


def measure(plan: Plan, parts: tuple[str, ...] = ("typing", "widgets", "cpu", "growth", "cold")) -> dict:
    """Run the parts asked for (cold start first: it needs a quiet, fresh server)."""
    figures: dict = {"plan": plan.__dict__, "painted_signal": PAINTED}
    sentences = Sentences()
    began = time.perf_counter()
    with harness.chromium() as browser:
        figures["browser_version"] = browser.version
        if "cold" in parts and not plan.quick:
            figures["cold_start"] = _guard(cold_start, browser)
            figures["cold_start"]["apptest"] = _guard(who_imports_torch)
            _progress(f"cold start done, {time.perf_counter() - began:.0f} s")
        if {"typing", "widgets", "cpu", "growth"} & set(parts) or ("cold" in parts and plan.quick):
            with running_server() as server:
                memory = {"just started": server.memory_mb()}
                figures["memory_mb"] = memory
                if "cold" in parts and plan.quick:  # on this server, just started: no second server
                    figures["cold_start"] = _guard(cold_start, browser, server)
                    _progress(f"cold start done, {time.perf_counter() - began:.0f} s")
                typed = None
                if "typing" in parts or "cpu" in parts or "widgets" in parts:
                    typed = typing(browser, server, sentences, plan.per_page)
                    figures["typing"] = typed
                    memory["1 session, every page"] = server.memory_mb()
                    _progress(f"typing done, {time.perf_counter() - began:.0f} s")
                    slowest = typed["slowest"]
                    if "median_s" in typed["pages"].get(slowest, {}):
                        figures["where_time_goes"] = _guard(where_time_goes, slowest, typed, sentences,
                                                            plan.script_runs)
                if "widgets" in parts:
                    figures["widgets"] = widgets(browser, server, sentences, plan.moves,
                                                 typed and typed.get("reference_median_s"))
                    _progress(f"widgets done, {time.perf_counter() - began:.0f} s")
                if "growth" in parts:
                    figures["growth"] = growth(browser, server, sentences, plan.per_length)
                    _progress(f"growth done, {time.perf_counter() - began:.0f} s")
                if "cpu" in parts:
                    ten = _guard(sessions, browser, server, sentences, plan.rounds, plan.ten_pages or _pages(),
                                 memory, plan.session_counts)
                    figures["cpu_per_view"] = cpu_per_view(typed, ten) if "error" not in ten else ten
                    _progress(f"sessions at once done, {time.perf_counter() - began:.0f} s")
                memory["end"] = server.memory_mb()
    figures["seconds"] = time.perf_counter() - began
    return figures


def _guard(fn, *args) -> dict:
    try:
        return fn(*args)
    except Exception as error:  # keep the rest of the report
        return {"error": f"{type(error).__name__}: {error}"}


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _s(value, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _kb(value) -> str:
    return "–" if value is None else f"{value / 1024:.0f}"


def _exception_note(counts: dict) -> str:
    bad = {k: v for k, v in counts.items() if v}
    if not bad:
        return ""
    return (" The app sent an exception box (a bug) on: " + ", ".join(f"{k} ({v} time{'s' * (v > 1)})"
                                                                     for k, v in bad.items()) + ".")


def _goal_line(g: dict) -> str:
    return f"- {'met' if g['met'] else 'MISSED'}: {g['goal']}. {g['measured']}."


def _load(r: dict) -> str:
    if "load_min" not in r:
        return ""
    return f"load average {r['load_min']:.1f}-{r['load_max']:.1f} (mean {r['load_mean']:.1f})"


def markdown(figures: dict, previous: dict | None = None) -> str:
    """The browser sections of benchmarks/report.md; ``previous``: the last report's browser figures, whose
    typing medians and CPU per view are shown beside these (what the changes between the two runs bought)."""
    previous = previous or {}
    before = {p: r.get("median_s") for p, r in previous.get("typing", {}).get("pages", {}).items()}
    parts = ["## Speed a class feels (Chromium against the real server)",
             f"`streamlit run app.py` on a free port, Debian's Chromium {figures.get('browser_version', '')} through "
             "Playwright, the server's CPU and memory from /proc. The painted signal: "
             + figures.get("painted_signal", "") + f" Measured in {figures.get('seconds', 0):.0f} s."]
    typed = figures.get("typing")
    if typed:
        rows = ["| page | median s | max s | ratio to /rnn-memory | first message s | script finished s | "
                "drawing after s | long tasks s | KB sent | server CPU s | charts | open s | last report's median s |",
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for page, r in typed["pages"].items():
            if "error" in r:
                rows.append(f"| {page} | {r['error']} |" + " |" * 12)
                continue
            rows.append(f"| {page} | {r['median_s']:.2f} | {r['max_s']:.2f} | {_s(r.get('ratio'), 1)} | "
                        f"{_s(r.get('median_first_message_s'))} | {_s(r.get('median_script_finished_s'))} | "
                        f"{_s(r.get('median_drawing_after_finish_s'))} | {_s(r.get('median_long_tasks_s'))} | "
                        f"{_kb(r.get('median_bytes'))} | {_s(r.get('median_server_cpu_s'))} | {r['charts']} | "
                        f"{r['open_s']:.1f} | {_s(before.get(page))} |")
        n = max((r.get("n", 0) for r in typed["pages"].values()), default=0)
        stale = [p for p, r in typed["pages"].items() if r.get("fresh") is False]
        parts += ["### Typing to painted",
                  "One visitor, one tab, page after page (by the sidebar's link; the page's first run, which loads "
                  f"its models, is the warm-up; open s: link to painted), then {n} new sentences of 6 to 12 "
                  "tokens, each filled into the Sentence box and sent with Enter; median and max of key press to "
                  "painted. Breakdown (medians, from the key press): the first websocket message back, the "
                  "`script_finished` message, drawing after it until painted; long tasks: the page's main thread "
                  "busy in stretches of 50 ms or more; KB sent: websocket payload the page received for the "
                  "rerun; server CPU: the server's CPU seconds for the rerun. " + _load(typed) + ".",
                  "\n".join(rows),
                  ("Every typed sentence was in the share box's address when painted." if not stale else
                   f"The share box did NOT show the new sentence on {', '.join(stale)}.")
                  + _exception_note({p: r.get("exceptions", 0) for p, r in typed["pages"].items()}),
                  _goal_line(typed["goal"])]
    where = figures.get("where_time_goes")
    if where and "error" not in where:
        b = where["browser"]
        kinds = ", ".join(f"{k} {v / 1024:.1f} KB" for k, v in list(where["median_bytes_by_kind"].items())[:8])
        script = where["apptest"]
        script_text = (f"{script['median_s']:.2f} s (median of {len(script['seconds'])} new sentences)"
                       if script.get("median_s") is not None else f"not measured ({script.get('error', '')[-200:]})")
        parts += [f"### Where the time goes on the slowest page, {where['page']}",
                  f"Typing to painted {_s(where['typing_median_s'])} s (median). Script alone (AppTest, in a "
                  f"process of its own, after one sentence): {script_text}. In the browser: the first "
                  f"message back after {_s(b['first_message_s'])} s, `script_finished` at "
                  f"{_s(b['script_finished_s'])} s, "
                  f"then {_s(b['drawing_after_finish_s'])} s of drawing until painted; the main thread was busy "
                  f"{_s(b['long_tasks_s'])} s in long tasks. The server spent {_s(b['server_cpu_s'])} CPU-s per "
                  "rerun.",
                  f"Sent per rerun (median): {_kb(b['bytes'])} KB in {b['messages'] or 0:.0f} messages; chart specs "
                  f"{_kb(b['chart_spec_bytes'])} KB of JSON (inline data included) and {_kb(b['chart_data_bytes'])} KB "
                  f"of Arrow datasets. By message: {kinds}."]
    elif where:
        parts.append(f"### Where the time goes\n\nNot measured: {where['error']}")
    wid = figures.get("widgets")
    if wid:
        rows = ["| page | widget | median s | max s | ratio to /rnn-memory typing | first move s | script finished s |"
                " KB sent | server CPU s |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        for r in wid["widgets"]:
            if "error" in r:
                rows.append(f"| {r['page']} | {r['widget']} | {r['error']} | | | | | | |")
                continue
            rows.append(f"| {r['page']} | {r['widget']} | {r['median_s']:.2f} | {r['max_s']:.2f} | "
                        f"{_s(r.get('ratio_to_reference_typing'), 1)} | {_s(r.get('first_move_s'))} | "
                        f"{_s(r.get('median_script_finished_s'))} | {_kb(r.get('median_bytes'))} | "
                        f"{_s(r.get('median_server_cpu_s'))} |")
        n = max((r.get("n", 0) for r in wid["widgets"]), default=0)
        parts += ["### Moving a widget to painted",
                  "Each widget on its page (one tab, after the page's first run): one first move to a value not shown "
                  "yet (first move s: what a class's first student waits), then "
                  f"{n} move{'s' * (n != 1)} back and forth between "
                  "the two values (both computed once already: what the rerun itself costs), an arrow key on a "
                  "slider's thumb or a click on another option of a select box, key or pointer press to painted; "
                  "median and max of those. " + _load(wid) + "."
                  + _exception_note({f"{r['page']} {r['widget']}": r.get("exceptions", 0)
                                     + r.get("first_move", {}).get("exceptions", 0) for r in wid["widgets"]})
                  + "".join(f" {r['page']} came up without its {r['widget']} {r['opened_without_it']} time(s) "
                            "(a bug of the page: it was opened again, through the home page and the sidebar's "
                            "link)." for r in wid["widgets"]
                            if r.get("opened_without_it")),
                  "\n".join(rows), _goal_line(wid["goal"])]
    cpu = figures.get("cpu_per_view")
    if cpu and "error" in cpu:
        parts.append(f"### Server CPU per view\n\nNot measured: {cpu['error']}")
    elif cpu:
        one, many = cpu["one_session"], cpu["many_sessions"]
        n = many.get("sessions", 0)
        rows = [f"| page | CPU-s per view, 1 session (median) | CPU-s per view, {n} sessions | typing median s, {n} "
                "sessions at once |", "|---|---:|---:|---:|"]
        for page in one["median_per_page_s"] | many.get("per_page", {}):
            t = many.get("per_page", {}).get(page, {})
            rows.append(f"| {page} | {_s(one['median_per_page_s'].get(page), 3)} | {_s(t.get('cpu_per_view_s'), 3)} |"
                        f" {_s(t.get('median_typing_s'))} |")
        parts += ["### Server CPU per view",
                  "A view: a new sentence typed on a page and painted. The server's CPU seconds (utime + stime of "
                  "every thread, of reaped and live children, /proc/PID/stat) over the views served, on a warmed "
                  f"server. One session: every sentence of the typing measure ({one['views']} views, "
                  f"{_s(one['cpu_per_view_s'], 3)} CPU-s each). {n} sessions: {n} browser contexts in one "
                  "Chromium, all on the same page (through the sidebar's link), each typing a new sentence at "
                  f"once, page after page: {many.get('views', 0)} views, {_s(many.get('cpu_per_view_s'), 3)} CPU-s "
                  f"each, {_s(many.get('wall_s'), 1)} s of waves. Beside the views: going to a page by the sidebar's "
                  f"link cost {_s(many.get('navigation_cpu_per_view_s'), 3)} CPU-s per tab, opening a session (the "
                  f"app loaded in a new tab) {_s(many.get('opening_cpu_per_session_s'), 3)} CPU-s. Chromium's tabs "
                  "draw on the same 2 cores as the server. " + _load(many) + ".",
                  "\n".join(rows),
                  f"Class size a {CLASS_CORES}-core host holds at one sentence per student every {SENTENCE_EVERY_S} s "
                  f"({CLASS_CORES} × {SENTENCE_EVERY_S} s / CPU-s per view): {_s(many.get('class_size'), 0)} students "
                  f"(from the {n}-session figure), {_s(one.get('class_size'), 0)} (from one session's).",
                  _goal_line(cpu["goal"])]
        last = previous.get("cpu_per_view", {})
        if last.get("many_sessions", {}).get("cpu_per_view_s") is not None:
            parts.append(f"The last report: {last['many_sessions']['cpu_per_view_s']:.3f} CPU-s per view with "
                         f"{last['many_sessions'].get('sessions')} sessions, "
                         f"{_s(last.get('one_session', {}).get('cpu_per_view_s'), 3)} with one.")
    memory = figures.get("memory_mb")
    if memory:
        parts += ["### Server memory against visitors",
                  "VmRSS / VmHWM (peak) of the server from /proc/PID/status, MB: "
                  + "; ".join(f"{k}: {_s(v['VmRSS'], 0)} / {_s(v['VmHWM'], 0)}" for k, v in memory.items()) + "."]
    grow = figures.get("growth")
    if grow:
        rows = ["| page | tokens | median s | max s | script finished s | KB sent | server CPU s |",
                "|---|---:|---:|---:|---:|---:|---:|"]
        for page, r in grow["pages"].items():
            if "error" in r:
                rows.append(f"| {page} | {r['error']} | | | | | |")
                continue
            for n, x in r.items():
                rows.append(f"| {page} | {n} | {x['median_s']:.2f} | {x['max_s']:.2f} | "
                            f"{_s(x.get('median_script_finished_s'))} | {_kb(x.get('median_bytes'))} | "
                            f"{_s(x.get('median_server_cpu_s'))} |")
        per = max((x.get("n", 0) for r in grow["pages"].values() if "error" not in r for x in r.values()), default=0)
        parts += ["### Growth with the sentence's length",
                  f"{per} new sentence(s) of each length (the project's grammar; 60 tokens: two sentences) typed on "
                  "each page, key press to painted. " + _load(grow) + ".", "\n".join(rows)]
    cold = figures.get("cold_start")
    if cold and "error" in cold:
        parts.append(f"### Cold start\n\nNot measured: {cold['error']}")
    elif cold:
        chains = cold.get("apptest")
        if chains is None:
            chain_text = "not run (quick)"
        elif "error" in chains:
            chain_text = chains["error"]
        else:
            chain_text = "; ".join(
                f"{script}: {'imports torch' if r.get('torch') else 'no torch'}"
                + (f" (first from {' → '.join(r['chain'][-4:])})" if r.get("chain") else "")
                for script, r in chains.items())
        if cold["how"].startswith("full"):
            opened = ("/attention opened at once in Chromium (already running): its first chart drawn "
                      f"{_s(cold.get('first_chart_s'))} s after the command, the page painted after "
                      f"{_s(cold.get('painted_s'))} s")
        else:
            opened = ("/attention opened after / and /rnn-memory (quick: one server): healthy time plus "
                      f"/attention's own opening, first chart {_s(cold.get('first_chart_s'))} s, painted "
                      f"{_s(cold.get('painted_s'))} s")
        parts += ["### Cold start",
                  f"A fresh `streamlit run app.py`: healthy (`/_stcore/health` answers, polled every 50 ms) after "
                  f"{_s(cold['healthy_s'])} s; {opened} (memory then {_s(cold.get('memory_mb', {}).get('VmRSS'), 0)} "
                  "MB). Torch, seen from outside (libtorch in the server's /proc/PID/maps) on a fresh server "
                  "opening /, /rnn-memory then /attention: "
                  + ", ".join(f"{k} {'loaded' if v else 'not loaded'}" for k, v in cold["torch_after"].items())
                  + f". Each page alone in a fresh process (AppTest, the first import of torch traced): {chain_text}. "
                  + _load(cold) + ".",
                  "\n".join(_goal_line(g) for g in cold["goals"])]
    return "\n\n".join(parts)


if __name__ == "__main__":  # python -m benchmarks.browser [--quick]: these sections alone, printed
    plan = Plan.quick_plan() if "--quick" in sys.argv else Plan()
    result = measure(plan)
    print(markdown(result))
    (LOGS / "benchmark-browser.json").write_text(json.dumps(result, indent=1, ensure_ascii=False, default=str))
