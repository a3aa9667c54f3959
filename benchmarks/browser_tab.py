"""One visitor's tab on the real server, timed: the benchmark's side of seqviz.browser (benchmarks/browser.py).

The server, Chromium, the recorder and what *painted* means are seqviz.browser's, as are the moves every visitor makes
(the Sentence box, the sidebar's links). What this module adds is the measuring:

- the websocket frames, captured by Playwright and decoded as Streamlit ``ForwardMsg`` protobufs in this process,
  say which frame is the ``script_finished`` message of the action's run (the script ran to its end; a successful
  whole run, or fragment run) and what the bytes carried (chart specs, tables, text...);
- an action is timed from ``t0`` (the recorder's armed key or pointer press) to the paint after the last change, once
  its ``script_finished`` has arrived and the page is painted with ``QUIET_MS`` of stillness (that wait not counted).
  Because Streamlit removes a run's stale elements when its ``script_finished`` arrives, what is on screen then is
  the new run's; for a typed sentence the share box's address (written at the end of every page's script) is
  checked to hold the new sentence;
- the server's CPU seconds and memory, from its /proc entries.

Sentences come from the project's own translation grammar (seqviz.data.translation), seeded, never repeated in one
run: every typed sentence is new to the server's caches, as a class's sentences would be.
"""

from __future__ import annotations

import os
import re
import statistics
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote_plus

from seqviz import browser as harness

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "test-output"
QUIET_MS = harness.QUIET_MS  # nothing changed on the page for this long: the action is over (300 ms)
PAINTED = (
    "an action (Enter in the Sentence box, an arrow key on a slider's thumb, a click on an option) is timed on the "
    "page's own clock, from the key or pointer press to the paint after the last change on the page, once "
    "Streamlit's `script_finished` message of a successful run has arrived (a whole run for a typed sentence or a "
    "page switch; a fragment's run counts for a widget), the app reads `data-test-script-state=notRunning`, every "
    "`stVegaLiteChart` holds its svg or canvas, and nothing in the main area or the sidebar (DOM mutations, 2D "
    f"canvas calls) has changed for {QUIET_MS} ms (that wait not counted). A typed sentence must also be in the "
    "share box's address, which each page writes at the end of its script.")


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
FRAGMENT_RUN = "fragment"  # a new_session's mark when a fragment's run begins, not a whole run's


class Tab:
    """A Playwright page with the recorder, its websocket frames captured (bytes) and decoded on demand."""

    def __init__(self, browser, server: Server) -> None:
        self.server = server
        self.context, self.page = harness.new_visitor(browser, timeout_ms=90_000)
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
            elif kind == "new_session" and msg.metadata.run.fragment_ids:
                status = FRAGMENT_RUN  # a fragment's run begins (the lab's watch, every 10 s on every page)
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
            link = harness.sidebar_link(self.page, page_title(url_path))
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
        (``full``: of a whole run, which began with a new_session message after n0; a fragment's run after it, as
        the lab's watch makes every 10 s, leaves it found)."""
        found = None
        started = False
        for i, (kind, status) in enumerate(self.marks[n0:], start=n0):
            if kind == "script_finished":
                ok = status == "FINISHED_SUCCESSFULLY" if full else status in SUCCESS
                if ok and (started or not full):
                    found = i
                elif not full:
                    found = None
            elif kind == "new_session" and not (full and status == FRAGMENT_RUN):
                started = True
                found = None
        return found

    # -- measuring one action

    def arm(self) -> int:
        """Arm the page's recorder (seqviz.browser.arm); the frame count now, where the action's frames begin."""
        n0 = len(self.frames)
        harness.arm(self.page)
        return n0

    def measure(self, n0: int, timeout_s: float = 120, cpu_before: float | None = None, full: bool = False) -> dict:
        """After an armed action: wait until painted (``full``: by a whole run); the figures of that action."""
        self.wait_painted(n0, timeout_s, full)
        cpu = None if cpu_before is None else self.server.cpu_seconds() - cpu_before
        return self._figures(harness.recorded(self.page), n0, cpu)

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

    def painted_ago(self) -> float:
        """Seconds since the page's last paint (on its own clock)."""
        rec = harness.recorded(self.page)
        last = rec["lastPaint"] if rec["lastPaint"] >= rec["lastChange"] else rec["lastChange"]
        return (rec["now"] - last) / 1000

    # -- a visitor's moves

    def type_sentence(self, text: str) -> int:
        """Fill the Sentence box, arm, press Enter (not waiting); the frame count at the press."""
        box = harness.sentence_box(self.page)
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
# Pages and samples


def all_pages() -> list[str]:
    """The url paths of every page with a Sentence box (the sidebar's: every page the router serves)."""
    from seqviz.story import PAGES

    return [p.url_path for p in PAGES]


def page_title(url_path: str) -> str:
    """The page's title: its link's text in the sidebar."""
    from seqviz.story import PAGES

    return next(p.title for p in PAGES if p.url_path == url_path)


def page_label(url_path: str) -> str:
    return f"/{url_path}"


def sample_summary(samples: list[dict]) -> dict:
    """Medians (and max, min) of a measure's samples, each a :meth:`Tab.measure`."""
    secs = [s["seconds"] for s in samples]
    out = {"n": len(secs), "median_s": statistics.median(secs), "max_s": max(secs), "min_s": min(secs),
           "exceptions": sum(s.get("exceptions", 0) for s in samples)}
    for key in ("first_message_s", "script_finished_s", "drawing_after_finish_s", "long_tasks_s", "bytes",
                "messages", "chart_spec_bytes", "chart_data_bytes", "server_cpu_s"):
        values = [s[key] for s in samples if s.get(key) is not None]
        if values:
            out[f"median_{key}"] = statistics.median(values)
    return out

