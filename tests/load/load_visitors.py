"""Visitors of the load tests' server (tests/load): :class:`Visitor`, a browser of its own (a Chromium context: its
own cookies, so its own lab) with one tab whose views time themselves, made by conftest.py's ``visitors`` fixture;
and :class:`AppSession`, a session without a browser that speaks Streamlit's own websocket protocol. conftest.py
imports both back.
"""

from __future__ import annotations

import contextlib
import itertools
import re
import time

from seqviz import browser as harness

# --- Visitors whose pages time themselves ------------------------------------------------------------

# A view is timed by the page itself (seqviz.browser's recorder, on performance.now()) however late the test looks
# at it: from the Enter that began it (or the navigation) to the page's last change, once painted. A busy classroom
# needs the page still for longer than the harness's default before a view counts as painted.
QUIET_MS = 500
READY = ('[data-testid=stSidebar] input[aria-label="Sentence"]', "[data-testid=stMain] h1")  # the app is there
RETYPE_AFTER_S = 15  # a typed sentence whose rerun has not begun after this long is typed again, once


class Visitor:
    """One browser of its own (a context: its own cookies, so its own lab) with one tab, a session of its own;
    ``name`` says who it is in messages."""

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

    def reload(self) -> None:
        """Reload the tab (the same browser: its cookie, so its lab; a new session), without waiting for the app."""
        self.page.reload(wait_until="commit")
        self.t0 = 0.0
        self.typed = None

    def lab_key(self) -> str | None:
        """The lab key this browser keeps (the cookie seqviz_lab that the page writes), or None yet."""
        return next((c["value"] for c in self.context.cookies() if c["name"] == "seqviz_lab"), None)

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


# --- Sessions without a browser -----------------------------------------------------------------------


class AppSession:
    """A session of the app without a browser: Streamlit's own websocket protocol (/_stcore/stream, protobuf
    BackMsg out and ForwardMsg in), spoken as the page's code speaks it: a full run of a page, a button pressed
    (in its fragment when it is in one), a fragment's timed rerun when the server announced one (auto_rerun). It
    sends no cookie, so each is a browser seen for the first time: a lab of its own; ``query``, the address's query
    string, sets the widgets bound to it (``preset=...&tr_seed=3`` on /train). For a class's worth of sessions
    writing at once: thirty Chromium tabs would be this machine's whole load, and would open over minutes, not at
    once. Nothing is drawn; what the server said is kept (``said``) to be searched."""

    FINISHED_EARLY_FOR_RERUN = 2  # ForwardMsg.script_finished: this run made way for another (st.rerun)

    def __init__(self, url: str, name: str, timeout_s: float = 120, query: str = ""):
        from websockets.sync.client import connect

        self.name = name
        self.query = query  # the address's query string, sent with every run as the page sends its own (a=1&b=2)
        self.timeout_s = timeout_s
        self.socket = connect(url.replace("http", "ws", 1) + "/_stcore/stream", subprotocols=["streamlit"],
                              open_timeout=timeout_s, max_size=None).__enter__()  # (closed by close())
        self.page_hash = ""  # the page of the last full run (a fragment's rerun names it)
        self.fragments: dict[str, list[float]] = {}  # fragment id -> [interval s, next rerun (monotonic)]
        self.buttons: dict[str, tuple[str, str]] = {}  # label -> (widget id, its fragment's id or ""), as drawn now
        self.texts: list[str] = []  # what the last run said in alerts and progress bars
        self.exceptions: list[str] = []
        self.said: list[bytes] = []  # every message the server sent
        self.took: list[float] = []  # seconds from each request to its run's end
        self.ended_at: list[tuple[str, float, float]] = []  # (fragment id or "", its interval, monotonic end)
        self.problems: list[str] = []

    def run(self, page: str, press: str | None = None, fragment: str | None = None) -> bool:
        """One script run: the whole of ``page`` (a url path, "" for home), or one fragment's timed rerun. ``press``:
        the label of a button the last runs drew. Returns whether the run ended within the timeout."""
        from streamlit.proto.BackMsg_pb2 import BackMsg

        message = BackMsg()
        state = message.rerun_script
        state.page_name, state.page_script_hash = page, self.page_hash
        state.query_string = self.query
        state.context_info.timezone = "UTC"
        if press is not None:
            widget, fragment = self.buttons[press]
            pressed = state.widget_states.widgets.add()
            pressed.id, pressed.trigger_value = widget, True
        if fragment:
            state.fragment_id, state.is_auto_rerun = fragment, press is None
            self.buttons = {label: drawn for label, drawn in self.buttons.items() if drawn[1] != fragment}
        self.texts = []
        interval = self.fragments.get(fragment or "", [0.0])[0]
        began = time.monotonic()
        self.socket.send(message.SerializeToString())
        if self._until_finished(began + self.timeout_s):
            self.took.append(time.monotonic() - began)
            self.ended_at.append((fragment or "", interval, time.monotonic()))
            return True
        self.problems.append(f"{self.name}: no answer within {self.timeout_s:.0f} s to a run of /{page}"
                             + (f" pressing {press!r}" if press else "") + (" (a fragment)" if fragment else ""))
        self.fragments.pop(fragment or "", None)
        return False

    def _until_finished(self, deadline: float) -> bool:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        while True:
            try:
                data = self.socket.recv(timeout=max(0.01, deadline - time.monotonic()))
            except TimeoutError:
                return False
            self.said.append(data)
            message = ForwardMsg()
            message.ParseFromString(data)
            kind = message.WhichOneof("type")
            if kind == "navigation":  # a full run: its fragments and buttons replace the last one's
                self.page_hash = message.navigation.page_script_hash
                self.fragments, self.buttons = {}, {}
            elif kind == "auto_rerun":
                interval = message.auto_rerun.interval
                self.fragments[message.auto_rerun.fragment_id] = [interval, time.monotonic() + interval]
            elif kind == "delta" and message.delta.WhichOneof("type") == "new_element":
                element = message.delta.new_element
                which = element.WhichOneof("type")
                if which == "button":
                    self.buttons[element.button.label] = (element.button.id, message.delta.fragment_id)
                elif which == "exception":
                    self.exceptions.append(f"{element.exception.type}: {element.exception.message}"[:500])
                elif which == "alert":
                    self.texts.append(element.alert.body)
                elif which == "progress":
                    self.texts.append(element.progress.text)
            elif kind == "script_finished" and message.script_finished != self.FINISHED_EARLY_FOR_RERUN:
                return True

    def poll(self, page: str, seconds: float) -> int:
        """Rerun the page's timed fragments when they are due, as the page would, for ``seconds``; returns how many
        reruns it made."""
        until, made = time.monotonic() + seconds, 0
        while self.fragments:
            fragment, (interval, due) = min(self.fragments.items(), key=lambda item: item[1][1])
            if due > until:
                break
            time.sleep(max(0.0, due - time.monotonic()))
            self.fragments[fragment][1] = time.monotonic() + interval
            self.run(page, fragment=fragment)
            made += 1
        time.sleep(max(0.0, until - time.monotonic()))
        return made

    def latest_rerun(self, since: float) -> float:
        """How late, at most, a timed fragment's rerun ended after ``since`` (time.monotonic()): the time between two
        of its ends past its interval. A page's polling fragments note its lab seen (the sidebar's status line): a
        session that cannot keep up looks less often than the page would."""
        latest = 0.0
        for fragment, interval in {(fragment, interval) for fragment, interval, _ in self.ended_at if fragment}:
            ends = [since, *(t for f, _, t in self.ended_at if f == fragment and t > since)]
            latest = max(latest, *(b - a - interval for a, b in itertools.pairwise(ends)), 0.0)
        return latest

    def lab_keys(self) -> set[str]:
        """The lab keys the server gave this session to keep (the cookie keeper's data; no browser keeps it here)."""
        return {found.decode() for data in self.said for found in re.findall(rb'"key": ?"([A-Za-z0-9_-]{22})"', data)}

    def saw(self, words: bytes) -> bool:
        """Whether anything the server sent this session holds ``words`` (the messages' bytes: their text is UTF-8)."""
        return any(words in data for data in self.said)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.socket.close()

