"""The visitor's own models, kept in their browser's lab (seqviz.ui.lab, seqviz.store.models), and the sidebar's
"Your models": upload, list, download, remove; take the lab to another device; forget it.

Every tab of the browser works in the same lab, so each full run reads the lab's list again (one small query,
without the files); an idle tab looks every WATCH_EVERY_S (:func:`_watch`) and reruns when the list changed, so a
model uploaded or trained in another tab shows up here. A file read back from the store is checked exactly as an
upload is (seqviz.store.models.checked) the first time this server reads it, then shared by its fingerprint; a
damaged one is named in Your models, left out of every picker, and the page goes on.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import streamlit as st

from seqviz import checkpoints, families
from seqviz.limits import LAB_KEEP_DAYS, LAB_TRANSFER_CHARS, LAB_TRANSFER_MINUTES, MAX_LAB_MODELS, MAX_UPLOAD_MB
from seqviz.registry import ModelRef
from seqviz.store import StoreUnavailable, labs
from seqviz.store import models as stored
from seqviz.ui import lab

WATCH_EVERY_S = 10.0  # an idle tab looks this often whether the lab's models changed (in another tab, say)
_LISTED = "your-models"  # lab.per_run name of the lab's models as this run read them
_SHOWN_KEY = "_your_models_shown"  # session state: what the last full run listed, for the watch to compare
UPLOAD_ROUND_KEY = "_upload_round"  # the uploader's key changes after each file, so it is empty again
UPLOAD_MESSAGE_KEY = "_upload_message"  # (kind, text) of the last upload or removal, shown until the next one
LAB_MESSAGE_KEY = "_lab_message"  # (kind, text) of the last move on the lab itself (join, forget)
CODE_KEY = "_lab_code"  # (code, expires at) of the transfer code this session showed
CONFIRM_KEY = "_lab_forget_confirm"  # the visitor asked to forget the lab and has not confirmed yet
JOIN_KEY = "lab-join-code"


# --- The lab's models ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class YourModel:
    ref: ModelRef
    origin: str  # "uploaded" or "trained here"
    problem: str | None  # why the file the store holds cannot be used (damaged), or None


def listed() -> list[YourModel]:
    """The lab's models in the order they came, read once per full run ([] without a lab)."""
    return lab.per_run(_LISTED, _listed)


def _listed() -> list[YourModel]:
    lab_id = lab.lab_id()
    if lab_id is None:
        return []
    try:
        rows = stored.listed(lab.db(), lab_id)
        found = [YourModel(ModelRef(row.name, row.fingerprint, row.family, row.task, shipped=False), row.origin,
                           _verdict(row.fingerprint, lab_id)) for row in rows]
    except StoreUnavailable as error:
        lab.failed(error)
        return []
    st.session_state[_SHOWN_KEY] = _signature(rows)
    return found


def _signature(rows) -> tuple:
    return tuple((row.fingerprint, row.name) for row in rows)


def usable() -> list[ModelRef]:
    """The visitor's models that load (a damaged file is left out, and named in Your models)."""
    return [model.ref for model in listed() if model.problem is None]


def load(ref: ModelRef):
    """The loaded checkpoint of one of this lab's models (LookupError when the lab holds no such model)."""
    lab_id = lab.lab_id()
    if lab_id is None or ref not in usable():
        raise LookupError(f"{ref.label} is no longer in your lab")
    return _load(ref.fingerprint, lab_id)


def add_model(data: bytes, filename: str, origin: str = "uploaded") -> tuple[ModelRef, bool]:
    """Check a checkpoint file whole and keep it in the lab (raises CheckpointError or StoreUnavailable)."""
    from seqviz.ui.models import _shipped

    lab_id = lab.lab_id()
    if lab_id is None:
        raise StoreUnavailable(lab.problem() or "The lab store cannot be used now.")
    shipped, broken = _shipped()
    model, new = stored.add(lab.db(), lab_id, data, filename, origin=origin, taken=set(shipped) | set(broken))
    lab.changed(_LISTED)
    return ModelRef(model.name, model.fingerprint, model.family, model.task, shipped=False), new


def file_bytes(fingerprint: str):
    """The model's file, read from the lab when the visitor asks for it (b"" when it is gone or unreachable)."""
    lab_id, db = lab.lab_id(), lab.db()

    def read() -> bytes:
        try:
            return (stored.data(db, lab_id, fingerprint) if lab_id is not None else None) or b""
        except StoreUnavailable:
            return b""

    return read


def file_name(ref: ModelRef) -> str:
    stem = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in ref.name).strip("-") or "model"
    return f"{stem}.safetensors"


@st.cache_data(max_entries=1024, show_spinner="Checking one of your models…")
def _verdict(fingerprint: str, lab_id: str) -> str | None:
    """None when the lab's file of this fingerprint loads as an upload would; else why not, in one sentence."""
    try:
        _load(fingerprint, lab_id)
    except checkpoints.CheckpointError as error:
        return str(error)
    except LookupError:
        return "Its file is no longer in the lab."
    return None


@st.cache_resource(max_entries=32, show_spinner="Loading one of your models…")
def _load(fingerprint: str, _lab_id: str):
    """A visitor's model read back from the store and checked as an upload is, in eval mode with gradients off;
    shared by every lab that holds the same file (the bytes read must be that file)."""
    from seqviz.runtime import configure_torch

    data = stored.data(lab.db(), _lab_id, fingerprint)
    if data is None:
        raise LookupError(fingerprint)
    if checkpoints.fingerprint(data) != fingerprint:
        raise checkpoints.CheckpointError("The file the lab holds is not the one it kept: it is damaged.")
    configure_torch()
    return stored.checked(data)


# --- The sidebar's "Your models" ----------------------------------------------------------------------------


def sidebar() -> None:
    """Upload a checkpoint; see, download and remove the lab's models; take the lab along or forget it."""
    mine = listed()
    lab_id, problem = lab.lab_id(), lab.problem()
    message = st.session_state.get(UPLOAD_MESSAGE_KEY)
    lab_message = st.session_state.get(LAB_MESSAGE_KEY)
    label = f"Your models ({len(mine)})" if lab_id is not None else "Your models (not available now)"
    expanded = (bool(mine) or any(said is not None for said in (message, lab_message, problem))
                or bool(st.session_state.get(CONFIRM_KEY)))
    with st.sidebar.expander(label, icon=":material/upload_file:", expanded=expanded):
        if lab_id is None:
            st.error(f"Your models cannot be kept or read now: {_escape(problem or 'the lab store is unavailable.')} "
                     "The shipped models work on every page.", icon=":material/cloud_off:")
        key = f"_upload{st.session_state.get(UPLOAD_ROUND_KEY, 0)}"
        st.file_uploader(
            "Upload a checkpoint (.safetensors)", type=["safetensors"], key=key, disabled=lab_id is None,
            max_upload_size=MAX_UPLOAD_MB, on_change=_take_upload, args=(key,),
            help="A single .safetensors file written by seqviz: by `python -m seqviz train`, or downloaded "
                 "from any page's Download checkpoint button. It is checked whole before anything is built.")
        _say(message)
        for model in mine:
            _row(model)
        if lab_id is not None:
            days = f"{LAB_KEEP_DAYS:g}"
            st.caption(f"Kept in this browser's lab, on this server's database, for {days} days after its last use "
                       f"(at most {MAX_LAB_MODELS} models): every tab of this browser sees them, after a reload too; "
                       "other browsers never do.")
            _lab_panel(lab_message)
        else:
            _say(lab_message)
        _watch()


def _say(message) -> None:
    if message is not None:
        kind, text = message
        (st.success if kind == "success" else st.error)(
            _escape(text), icon=":material/check_circle:" if kind == "success" else ":material/error:")


def _next_upload_round() -> None:
    """A fresh, empty uploader: the same file can then be given again (after Remove, say)."""
    st.session_state[UPLOAD_ROUND_KEY] = st.session_state.get(UPLOAD_ROUND_KEY, 0) + 1


def _take_upload(key: str) -> None:
    """The uploader's callback: check and keep the new file before the page runs, so all of it sees the result."""
    upload = st.session_state.get(key)
    if upload is None:
        return
    _next_upload_round()
    try:
        ref, new = add_model(upload.getvalue(), upload.name)
        st.session_state[UPLOAD_MESSAGE_KEY] = (
            "success", f"Added {ref.label}: pick it in the model list of any page it fits." if new
            else f"{ref.label} is already here (the same file).")
    except checkpoints.CheckpointError as error:
        st.session_state[UPLOAD_MESSAGE_KEY] = ("error", f"{upload.name[:60]} was not loaded. {error}")
    except StoreUnavailable as error:
        lab.failed(error)
        st.session_state[UPLOAD_MESSAGE_KEY] = ("error", f"{upload.name[:60]} was not kept: {error}")


def _row(model: YourModel) -> None:
    ref = model.ref
    st.markdown(f"**{_escape(ref.name)}**  \n{_escape(families.get(ref.family).label)}, {_escape(str(ref.task))} "
                f"task, {_escape(model.origin)}")
    if model.problem is not None:
        st.error(_escape(f"{ref.name} cannot be used: {model.problem} Remove it, or upload its file again."),
                 icon=":material/error:")
    row = st.container(horizontal=True)
    row.download_button("Download checkpoint", data=file_bytes(ref.fingerprint), file_name=file_name(ref),
                        key=f"dl-yours-{ref.fingerprint[:12]}", mime="application/octet-stream",
                        icon=":material/download:", on_click="ignore")
    row.button("Remove", key=f"rm-{ref.fingerprint[:12]}", icon=":material/delete:", on_click=_remove,
               args=(ref.fingerprint,))


def _remove(fingerprint: str) -> None:
    lab_id = lab.lab_id()
    st.session_state.pop(UPLOAD_MESSAGE_KEY, None)
    _next_upload_round()
    try:
        if lab_id is not None:
            stored.remove(lab.db(), lab_id, fingerprint)
    except StoreUnavailable as error:
        lab.failed(error)
        st.session_state[UPLOAD_MESSAGE_KEY] = ("error", f"The model was not removed: {error}")
    lab.changed(_LISTED)


# --- The lab itself: another device, forgetting -------------------------------------------------------------


def _lab_panel(message) -> None:
    st.markdown("**Take my lab to another device**")
    shown = st.session_state.get(CODE_KEY)
    if shown is not None and shown[1] <= time.time():  # expired: the store refuses it now
        st.session_state.pop(CODE_KEY, None)
        shown = None
    st.button("Show a one-time code", key="lab-code", icon=":material/devices:", on_click=_make_code,
              help="Type the code on the other device, in its Your models: it then works in this lab too.")
    if shown is not None:
        st.code(shown[0], language=None)
        minutes = max(1, round((shown[1] - time.time()) / 60))
        st.caption(f"On the other device, type it under Join a lab with a code within {minutes} "
                   f"minute{'s' if minutes > 1 else ''}. It works once.")
    with st.form("lab-join", border=False, clear_on_submit=True):
        st.text_input("Join a lab with a code", key=JOIN_KEY, max_chars=4 * LAB_TRANSFER_CHARS,
                      placeholder="the code another device shows", autocomplete="off",
                      help="This browser then works in that lab; the models it has here move there.")
        st.form_submit_button("Join", icon=":material/login:", on_click=_join)
    _say(message)
    if not st.session_state.get(CONFIRM_KEY):
        st.button("Forget this lab", key="lab-forget", icon=":material/delete_forever:",
                  on_click=lambda: st.session_state.update({CONFIRM_KEY: True, LAB_MESSAGE_KEY: None}))
        return
    st.warning("Forget this lab? Its models and runs are deleted from this server's database, for this browser "
               "and any device that joined it. This cannot be undone.", icon=":material/warning:")
    row = st.container(horizontal=True)
    row.button("Yes, forget it", key="lab-forget-yes", type="primary", on_click=_forget)
    row.button("Keep it", key="lab-forget-no", on_click=lambda: st.session_state.pop(CONFIRM_KEY, None))


def _make_code() -> None:
    try:
        st.session_state[CODE_KEY] = (lab.transfer_code(), time.time() + LAB_TRANSFER_MINUTES * 60)
        st.session_state[LAB_MESSAGE_KEY] = None
    except StoreUnavailable as error:
        lab.failed(error)
        st.session_state[LAB_MESSAGE_KEY] = ("error", f"No code was made: {error}")


def _join() -> None:
    typed = st.session_state.get(JOIN_KEY) or ""
    try:
        lab.join(typed)
    except labs.JoinRefused as refused:
        st.session_state[LAB_MESSAGE_KEY] = ("error", str(refused))
        return
    except StoreUnavailable as error:
        lab.failed(error)
        st.session_state[LAB_MESSAGE_KEY] = ("error", f"The lab was not joined: {error}")
        return
    _in_another_lab("Joined: this browser now works in that lab, and any models it had here moved there.")


def _forget() -> None:
    st.session_state.pop(CONFIRM_KEY, None)
    try:
        lab.forget()
    except StoreUnavailable as error:
        lab.failed(error)
        st.session_state[LAB_MESSAGE_KEY] = ("error", f"The lab was not forgotten: {error}")
        return
    _in_another_lab("Forgotten: that lab's models and runs are deleted. This browser has a new, empty lab.")


def _in_another_lab(message: str) -> None:
    """This session works in another lab now: its code and upload message go, its models are read again."""
    for key in (CODE_KEY, UPLOAD_MESSAGE_KEY):
        st.session_state.pop(key, None)
    lab.changed(_LISTED)
    st.session_state[LAB_MESSAGE_KEY] = ("success", message)


@st.fragment(run_every=WATCH_EVERY_S)
def _watch() -> None:
    """Every WATCH_EVERY_S: note the lab as seen, and rerun the page when its models changed in another tab (or
    the lab went, or the store came back). A full run has just looked: only the fragment's own runs do."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    context = get_script_run_ctx()
    if context is None or not context.fragment_ids_this_run:
        return
    lab.seen()
    lab_id = lab.lab_id()
    if lab_id is None:
        if lab.recovered():
            st.rerun()
        return
    try:
        gone = not labs.exists(lab.db(), lab_id)
        now = None if gone else _signature(stored.listed(lab.db(), lab_id))
    except StoreUnavailable:
        return
    if gone or now != st.session_state.get(_SHOWN_KEY):
        st.rerun()


def _escape(text: str) -> str:
    from seqviz.ui import escape_markdown

    return escape_markdown(text)
