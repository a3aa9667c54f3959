"""This browser's lab: the lab of the store (seqviz.store) that this session works in, and the cookie that names it.

A lab belongs to a browser, which keeps the lab's random key in the cookie ``seqviz_lab``; the store keeps only the
key's hash (seqviz.store.labs). The session finds its lab once, as it starts, and keeps it in its state:
:func:`lab_id` is that lab, or None while the store cannot be used (:func:`problem` says why; every page that does
not need the store works regardless, and the next full run, at most every RETRY_EVERY_S, tries again).

**Why a cookie, not the browser's localStorage.** The browser sends its cookies with the request that opens the
session's websocket, and the server reads them there (``st.context.cookies``): the lab is known on the session's
first run, with no round trip through the page and no rerun. A reload, a second tab and a new session after a
server restart send the same cookie. Its Path is the app's base path (``server.baseUrlPath``), so two apps on one
host never see each other's labs. It lives LAB_KEEP_DAYS, refreshed once per session, as long as the store keeps an
idle lab: the server deletes the labs nobody has opened for that long as it starts and every PURGE_EVERY_S.
SameSite=Lax: a link followed from another site opens the visitor's lab, but no other site's frame, script or form
sends it; Secure whenever the page is served over https.

It cannot be HttpOnly: Streamlit's server sets no cookies of its own, so the one place that can write it is
JavaScript on the page (a small component, :data:`_KEEPER`), and a cookie that JavaScript writes is one JavaScript
can read. The key is never put into an address or a share link: only this cookie and the component carry it.

A key the store does not know (none, mistyped, forged, of a forgotten or purged lab) opens a fresh lab with a fresh
key, which the component then writes (seqviz.store.labs.open_lab). When this session's lab is gone (forgotten, or
joined to another lab, in another tab), the component reads the browser's cookie back and the session opens the
lab it names now, so a tab never writes over what another tab of the browser has just set.
"""

from __future__ import annotations

import contextlib
import secrets
import threading
import time
from dataclasses import dataclass

import streamlit as st

from seqviz import limits
from seqviz.store import Database, StoreUnavailable, database, labs

COOKIE = "seqviz_lab"
RETRY_EVERY_S = 5.0  # while the store is unavailable, a full run tries it again at most this often
PURGE_EVERY_S = 3600.0  # this server deletes the labs idle longer than LAB_KEEP_DAYS this often (and as it starts)
_STATE_KEY = "_lab"  # session state: this session's _State
_KEEPER_KEY = "_lab_cookie"  # the cookie keeper's element

# The cookie keeper: it is given only what the server made (the lab's key, the app's path, a lifetime and two
# random one-time tokens), never anything a visitor typed. It writes the cookie once per ``write`` token, and sends
# the cookie's value back once per ``ask`` token. It draws nothing.
_KEEPER_JS = """
export default function ({ data, setTriggerValue }) {
  if (!data) return;
  const name = "seqviz_lab";
  if (data.write && data.key && window.__seqvizLabWrote !== data.write) {
    window.__seqvizLabWrote = data.write;
    const secure = location.protocol === "https:" ? "; Secure" : "";
    document.cookie = `${name}=${data.key}; Path=${data.path}; Max-Age=${data.max_age}; SameSite=Lax${secure}`;
  }
  if (data.ask && window.__seqvizLabAsked !== data.ask) {
    window.__seqvizLabAsked = data.ask;
    const found = document.cookie.split(";").map((c) => c.trim()).find((c) => c.startsWith(name + "="));
    setTriggerValue("found", found ? found.slice(name.length + 1) : "");
  }
}
"""
_KEEPER_CSS = ":host { display: none; }"
_KEEPER = st.components.v2.component("seqviz_lab_cookie", js=_KEEPER_JS, css=_KEEPER_CSS)


@dataclass
class _State:
    lab: str | None = None  # the lab's id in the store (never shown)
    key: str | None = None  # this browser's key of it: what the cookie holds
    write: str | None = None  # a token: the browser writes the cookie once for it (a new key, or the session's refresh)
    ask: str | None = None  # a token: the browser sends its cookie back once for it (this session's lab is gone)
    ask_after: float = 0.0  # time.monotonic() before which it is not asked again (see _found)
    problem: str | None = None  # why the store cannot be used now
    tried_at: float = -1e9  # time.monotonic() of the last try while there was a problem
    seen_at: float = -1e9  # time.monotonic() of the last "seen" this session wrote
    memo: dict | None = None  # name -> value, for this full run only (per_run)


def db() -> Database:
    """The process's one lab store (seqviz.store.database: SEQVIZ_DATABASE_URL, or the SQLite file)."""
    return database()


def _state() -> _State:
    if _STATE_KEY not in st.session_state:
        st.session_state[_STATE_KEY] = _State()
    return st.session_state[_STATE_KEY]


def begin() -> None:
    """Once per full run (app.py): find or check this session's lab, keep the browser's cookie, note the lab seen."""
    state = _state()
    state.memo = {}
    _purge_now_and_then()
    _resolve(state)
    with st.sidebar:
        _KEEPER(key=_KEEPER_KEY, on_found_change=_found, width="content", height=0,
                data={"key": state.key, "path": cookie_path(), "max_age": int(limits.LAB_KEEP_DAYS * 86400),
                      "write": state.write, "ask": state.ask})
    seen()


def lab_id() -> str | None:
    """This session's lab, or None while the store cannot be used (:func:`problem` says why)."""
    state = _state()
    if state.lab is None and state.problem is None:  # asked before any full run did (a test, say)
        _resolve(state)
    return None if state.problem else state.lab


def sent_unknown_key() -> bool:
    """Whether the browser sent a lab key this store does not know (this session then opened a fresh lab)."""
    sent = _cookie_key()
    return bool(sent) and lab_id() is not None and sent != _state().key


def problem() -> str | None:
    """Why the lab store cannot be used now, in words (StoreUnavailable's message), or None."""
    return _state().problem


def recovered() -> bool:
    """Whether the store works (again): while it does not, try it (at most every RETRY_EVERY_S)."""
    state = _state()
    if state.problem is not None:
        _resolve(state)
    return state.problem is None


def failed(error: StoreUnavailable) -> None:
    """The store failed under this run: say so (the next full run tries again)."""
    state = _state()
    state.problem, state.tried_at = str(error), time.monotonic()


def seen() -> None:
    """Note that somebody of the lab is looking (each full run, and the pages' polling fragments); this session
    writes it at most every LAB_SEEN_EVERY_S, and the store no more often than that for the whole lab."""
    state = _state()
    found = lab_id()
    if found is None or time.monotonic() - state.seen_at < limits.LAB_SEEN_EVERY_S:
        return
    state.seen_at = time.monotonic()
    try:
        labs.seen(db(), found)
    except StoreUnavailable as error:
        failed(error)


def per_run(name: str, compute):
    """``compute()``, once per full run of this session (a fragment's run sees the full run's value)."""
    state = _state()
    if state.memo is None:
        state.memo = {}
    if name not in state.memo:
        state.memo[name] = compute()
    return state.memo[name]


def changed(name: str) -> None:
    """Forget the per-run value ``name`` (the lab's models after an upload, say)."""
    state = _state()
    if state.memo:
        state.memo.pop(name, None)


def cookie_path() -> str:
    """The cookie's Path: the app's base path (server.baseUrlPath), "/" when it has none."""
    base = (st.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{base}" if base else "/"


def _cookie_key() -> str | None:
    """The lab key the browser sent as the session began (st.context.cookies), or None."""
    value = st.context.cookies.get(COOKIE)
    return value if isinstance(value, str) else None


def _token() -> str:
    return secrets.token_hex(8)


def _switch(state: _State, opened: labs.OpenedLab) -> None:
    """Work in ``opened`` from now on, and have the browser keep its key (written once more: the refresh)."""
    state.lab, state.key, state.write, state.ask, state.ask_after = opened.id, opened.key, _token(), None, 0.0
    state.memo = {}


def _resolve(state: _State) -> None:
    """Open the lab the cookie names (a fresh one when it names none); on later runs, check it is still there."""
    if state.problem is not None and time.monotonic() - state.tried_at < RETRY_EVERY_S:
        return
    try:
        if state.lab is None:
            _switch(state, labs.open_lab(db(), _cookie_key()))
        elif not labs.exists(db(), state.lab) and time.monotonic() >= state.ask_after:
            state.ask = state.ask or _token()  # gone: ask the browser which lab its cookie names now
        state.problem = None
    except StoreUnavailable as error:
        failed(error)


_purged = {"at": None}
_purge_lock = threading.Lock()


def _purge_now_and_then() -> None:
    """Delete the labs nobody has opened for LAB_KEEP_DAYS: once as this server starts, then every PURGE_EVERY_S."""
    with _purge_lock:
        now = time.monotonic()
        if _purged["at"] is not None and now - _purged["at"] < PURGE_EVERY_S:
            return
        _purged["at"] = now
    with contextlib.suppress(StoreUnavailable):  # the session says what is wrong (_resolve); purging waits its turn
        labs.purge(db())


def _found() -> None:
    """The browser's answer to "ask": the cookie it holds now. Open that lab (a fresh one if it names none)."""
    state = _state()
    answer = getattr(st.session_state.get(_KEEPER_KEY), "found", None)
    if state.ask is None or answer is None:
        return
    if answer == state.key and not state.ask_after:
        # Still this session's own key: the tab that forgot or joined may not have written its new key yet. Ask
        # once more a little later (the next full run after that: the watch's) before making a lab of its own.
        state.ask, state.ask_after = None, time.monotonic() + 2.0
        return
    try:
        _switch(state, labs.open_lab(db(), answer if isinstance(answer, str) else None))
    except StoreUnavailable as error:
        failed(error)


# --- Taking a lab along, and forgetting it (the sidebar's Your models shows these; seqviz.ui.models) -------------


def transfer_code() -> str:
    """A one-time code that joins another browser to this lab (raises StoreUnavailable)."""
    found = lab_id()
    if found is None:
        raise StoreUnavailable(problem() or "The lab store cannot be used now.")
    return labs.transfer_code(db(), found)


def join(code: str) -> None:
    """Join the lab ``code`` opens: this browser's models move there, and the cookie holds its new key.
    Raises labs.JoinRefused (the message says why) or StoreUnavailable."""
    if lab_id() is None:
        raise StoreUnavailable(problem() or "The lab store cannot be used now.")
    _switch(_state(), labs.join(db(), code, lab_id()))


def forget() -> None:
    """Delete this lab with everything it made; the browser gets a new, empty lab (raises StoreUnavailable)."""
    found = lab_id()
    if found is None:
        raise StoreUnavailable(problem() or "The lab store cannot be used now.")
    labs.forget(db(), found)
    _switch(_state(), labs.open_lab(db(), None))
