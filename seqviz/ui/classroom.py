"""The class page (/class): a teacher starts a class and manages it, a student joins by opening its link, and the
class's board (seqviz.ui.board) shows what everyone posted. /train's form is filled with the student's part of the
class experiment (:func:`prefill_train_form`).

A class lives in the lab store (seqviz.store.classes), and membership is the browser's lab's: a reload, a second tab
and another server of a lecture hall find the class again. The teacher's key arrives once, in the teacher link's
``?t=`` (then taken out of the address bar, so a projected screen never shows it) or typed; the lab that proved it
manages the class from then on (seqviz.store.classes.claim). Whatever a visitor types is shown as text.
"""

from __future__ import annotations

import contextlib
import threading
import time

import streamlit as st

from seqviz import limits
from seqviz.store import StoreUnavailable, classes
from seqviz.store.experiments import LENGTH, SETTINGS, Experiment, ready_made
from seqviz.ui import escape_markdown, lab

CODE_PARAM, KEY_PARAM = "c", "t"
NEW_KEY = "_class_new"  # session state: (code, key) of the class this session just started: its key, shown once
MESSAGE_KEY = "_class_message"  # (kind, text) of the last act on the class, shown once
JOINED_KEY = "_class_joined"  # codes this session has joined (join writes: once per session and code)
PREFILLED_KEY = "_class_prefilled"  # (class, value) /train's form was last filled with
CUSTOM = "your own"


def say(kind: str, text: str) -> None:
    st.session_state[MESSAGE_KEY] = (kind, text)


def _said() -> None:
    found = st.session_state.pop(MESSAGE_KEY, None)
    if found is not None:
        kind, text = found
        icon = {"success": ":material/check_circle:", "info": ":material/info:"}.get(kind, ":material/error:")
        getattr(st, kind if kind in ("success", "info", "warning") else "error")(escape_markdown(text), icon=icon)


def base_url() -> str:
    """The address students can reach (seqviz.ui.reach)."""
    from seqviz.ui import reach

    return reach.base_url()


def class_link(code: str) -> str:
    return f"{base_url()}/class?{CODE_PARAM}={code}"


def unavailable(problem: str | None) -> None:
    said = escape_markdown((problem or "the lab store is unavailable").rstrip("."))
    st.error("The class board cannot be used now: classes and their boards are kept in the lab store, which cannot "
             f"be reached: {said}. Every other page works with the shipped models; this page tries again each time it "
             "runs (reload it in a minute).",
             icon=":material/cloud_off:")


_purged = {"at": None}
_purge_lock = threading.Lock()


def purge_now_and_then() -> None:
    """Delete the classes nobody has used for CLASS_KEEP_DAYS (their members and boards; the students' labs and
    models stay): the first time /class runs on this server, then every lab.PURGE_EVERY_S, as labs are purged."""
    with _purge_lock:
        now = time.monotonic()
        if _purged["at"] is not None and now - _purged["at"] < lab.PURGE_EVERY_S:
            return
        _purged["at"] = now
    with contextlib.suppress(StoreUnavailable):  # the page says what is wrong; purging waits its turn
        classes.purge(lab.db())


def opened():
    """The class the address opens, joined by this lab (ClassInfo, Membership); None when the address names none
    (a wrong, deleted or purged code is said plainly). Raises StoreUnavailable."""
    purge_now_and_then()
    typed = st.query_params.get(CODE_PARAM)
    if typed is None:
        return None
    lab_id = lab.lab_id()
    code = classes.normalise_code(typed)
    found = classes.find(lab.db(), code) if code else None
    if found is None:
        st.error(str(classes.ClassNotFound()), icon=":material/search_off:")
        st.query_params.pop(KEY_PARAM, None)
        return None
    key = st.query_params.get(KEY_PARAM)
    if key is not None:
        st.query_params.pop(KEY_PARAM, None)  # out of the address bar: a projected screen never shows it
        _claim(found.code, key)
    joined = st.session_state.setdefault(JOINED_KEY, set())
    mine = classes.membership(lab.db(), found.id, lab_id)
    if found.code not in joined or mine is None or (found.experiment and mine.value is None and not mine.teacher):
        found, mine = classes.join(lab.db(), found.code, lab_id)
        joined.add(found.code)
    return found, mine


def _claim(code: str, key: str) -> None:
    try:
        classes.claim(lab.db(), code, key, lab.lab_id())
        say("success", "You are this class's teacher in this browser now: it keeps that after a reload too.")
    except classes.NotTeacher:
        say("error", "That teacher key is not this class's: you see the class as a student does.")


# --- Starting and joining ---------------------------------------------------------------------------------------


def start_or_join() -> None:
    """No class in the address: start one (a teacher), type a class's code (a student), or open one of yours."""
    _said()
    mine = classes.classes_of(lab.db(), lab.lab_id())
    if mine:
        st.subheader("Your classes")
        for found in mine[:10]:
            st.button(found.name, key=f"open-{found.code}", icon=":material/groups:", on_click=_open,
                      args=(found.code,))
    left, right = st.columns(2)
    with left.container(border=True):
        st.markdown("**Join a class**")
        st.text_input("Class code", key="class-code", max_chars=4 * limits.CLASS_CODE_CHARS,
                      placeholder="the code your teacher shows", autocomplete="off")
        if st.button("Join", icon=":material/login:"):
            code = classes.normalise_code(st.session_state.get("class-code") or "")
            if code is None or classes.find(lab.db(), code) is None:
                st.error(str(classes.ClassNotFound()), icon=":material/search_off:")
            else:
                _open(code)
                st.rerun()
    with right.container(border=True):
        st.markdown("**Start a class** (for a teacher)")
        st.text_input("Name of the class", key="class-name", max_chars=limits.CLASS_NAME_CHARS,
                      placeholder="Year 12, Tuesday")
        experiment = experiment_picker("new")
        auto = st.checkbox("Post students' finished runs automatically", key="class-auto")
        if st.button("Start a class", type="primary", icon=":material/add:", disabled=experiment is False):
            made = classes.start(lab.db(), st.session_state.get("class-name") or "", lab.lab_id(),
                                 experiment=experiment or None, auto_post=auto)
            st.session_state[NEW_KEY] = (made.code, made.key)
            _open(made.code)
            st.rerun()


def _open(code: str) -> None:
    st.query_params[CODE_PARAM] = code


def experiment_picker(prefix: str):
    """The teacher's experiment: none, one of the chapter's, or their own (task, family, one setting and its
    values). Returns the Experiment, None for none, or False when their own cannot be trained (said why)."""
    from seqviz import families
    from seqviz.runs import TASKS, task_families

    made = ready_made()
    names = {"none": "none", **{k: e.title for k, e in made.items()}, CUSTOM: "your own: a task, a family, one "
                                                                              "setting and its values"}
    chosen = st.selectbox("Class experiment", list(names), format_func=names.get, key=f"{prefix}-experiment",
                          help="Each student who joins gets one value of the setting on /train, one not yet "
                               "covered, and the board draws the class's curve as their runs land.")
    if chosen == "none":
        return None
    if chosen != CUSTOM:
        return made[chosen]
    columns = st.columns(3)
    task = columns[0].selectbox("Task", list(TASKS), key=f"{prefix}-task")
    family = columns[1].selectbox("Family", task_families(task), key=f"{prefix}-family",
                                  format_func=lambda f: families.get(f).label)
    setting = columns[2].selectbox("Setting to vary", SETTINGS, key=f"{prefix}-setting")
    typed = st.text_input("Its values, separated by commas", key=f"{prefix}-values", max_chars=200,
                          placeholder="plain, additive, dot" if setting == "family" else "8, 16, 32, 64")
    try:
        values = _values(setting, typed or "")
        return Experiment(f"{families.get(family).label}: {setting} against the held-out measures", task, family,
                          setting, values, {}, None, x=LENGTH if setting == "family" and task == "translation"
                          else setting).check()
    except ValueError as error:
        st.caption(f"Not yet an experiment: {escape_markdown(str(error))}.")
        return False


def _values(setting: str, typed: str) -> tuple:
    parts = [part.strip() for part in typed.split(",") if part.strip()]
    if not parts:
        raise ValueError("type the values")
    if setting == "family":
        return tuple(parts)
    number = float if setting == "lr" else int
    try:
        return tuple(number(part) for part in parts)
    except ValueError:
        raise ValueError(f"{setting} takes {'numbers' if number is float else 'whole numbers'}") from None


# --- One class ----------------------------------------------------------------------------------------------


def header(found, mine) -> None:
    """The class's name, its link for students (and a QR code), what the teacher just got, and the student's part."""
    from seqviz.ui import reach

    _said()
    st.header(escape_markdown(found.name))
    if found.closed:
        st.warning("This class is closed to new posts.", icon=":material/lock:")
    new = st.session_state.get(NEW_KEY)
    if new is not None and new[0] == found.code:
        st.success("Your class is ready. Below is its teacher key: **keep it now**, it is shown only this once. "
                   "This browser manages the class already; the key (or the teacher link) lets you manage it from "
                   "another browser. Never show it on the projector.", icon=":material/key:")
        st.code(new[1], language=None)
        st.caption("Teacher link (keep it private):")
        st.code(f"{class_link(found.code)}&{KEY_PARAM}={new[1]}", language=None, wrap_lines=True)
        st.button("I have kept it", key="class-kept", on_click=lambda: st.session_state.pop(NEW_KEY, None))
    # The link beside a QR code of a third of the width (its full-screen button fills a projector): at full width
    # the code took a whole screen and pushed the board below it (on a phone the two stack).
    link, code = st.columns([2, 1], vertical_alignment="center")
    link.markdown(f"**Class link for students** (code **{found.code}**): opening it joins the class.")
    link.code(class_link(found.code), language=None, wrap_lines=True)
    with code:
        reach.qr(class_link(found.code), f"Scan to join {found.name}"[:80])
    if found.auto_post:
        st.info("Automatic posting is on: a run a student finishes is posted to the board under their nickname "
                "when their class page or /train next sees it.", icon=":material/sync:")
    if found.experiment is not None:
        _experiment(found, mine)


def _experiment(found, mine) -> None:
    from seqviz import families

    experiment = found.experiment
    shown = ", ".join(families.get(v).label if experiment.setting == "family" else str(v) for v in experiment.values)
    st.markdown(f"**Class experiment.** {escape_markdown(experiment.title)}. Setting varied: "
                f"**{experiment.setting}** over {escape_markdown(shown)}.")
    if mine is not None and mine.value is not None:
        value = families.get(mine.value).label if experiment.setting == "family" else mine.value
        st.info(f"Your part: train with {experiment.setting} **{escape_markdown(str(value))}**. /train's form is "
                "filled in with it; press Start training there, then post your run here when it ends.",
                icon=":material/science:")
        st.page_link("app_pages/train.py", label="Train your part on /train", icon=":material/model_training:")


def teacher_panel(found, mine) -> None:
    """What only the teacher sees: automatic posting, closing, the experiment, deleting the class; or a box to type
    the teacher key."""
    if mine is None or not mine.teacher:
        with st.expander("I am this class's teacher", icon=":material/key:"), st.form("class-key", border=False,
                                                                                     clear_on_submit=True):
            st.text_input("Teacher key", key="class-teacher-key", type="password", max_chars=100)
            st.form_submit_button("Manage this class", on_click=lambda: _claim(
                found.code, st.session_state.get("class-teacher-key") or ""))
        return
    with st.expander("Manage this class (teacher)", icon=":material/admin_panel_settings:", expanded=False):
        act = lambda call, done, *args: _act(found.code, call, done, *args)  # noqa: E731
        row = st.container(horizontal=True)
        row.button("Turn automatic posting off" if found.auto_post else "Turn automatic posting on",
                   key="class-auto-toggle", on_click=act, args=(classes.set_auto_post, "Automatic posting changed.",
                                                               not found.auto_post))
        row.button("Open to new posts" if found.closed else "Close to new posts", key="class-close", on_click=act,
                   args=(classes.set_closed, "Done.", not found.closed))
        experiment = experiment_picker("teacher")
        st.button("Set this experiment", key="class-set-experiment", disabled=experiment is False, on_click=act,
                  args=(classes.set_experiment, "The experiment is set: each student gets a value of it as they next "
                                                "open the class.", experiment or None))
        if not st.session_state.get("class-delete-confirm"):
            st.button("Delete this class", key="class-delete", icon=":material/delete_forever:",
                      on_click=lambda: st.session_state.update({"class-delete-confirm": True}))
        else:
            st.warning("Delete this class and its board for everyone? Students keep their own models and runs.",
                       icon=":material/warning:")
            row = st.container(horizontal=True)
            row.button("Yes, delete it", key="class-delete-yes", type="primary", on_click=_delete, args=(found.code,))
            row.button("Keep it", key="class-delete-no",
                       on_click=lambda: st.session_state.pop("class-delete-confirm", None))


def _act(code: str, call, done: str, *args) -> None:
    try:
        call(lab.db(), code, *args, lab_id=lab.lab_id())
        say("success", done)
    except (classes.NotTeacher, classes.ClassNotFound, ValueError) as error:
        say("error", str(error))
    except StoreUnavailable as error:
        lab.failed(error)
        say("error", f"Nothing was changed: {error}")


def _delete(code: str) -> None:
    st.session_state.pop("class-delete-confirm", None)
    _act(code, classes.delete_class, "The class is deleted.")
    st.query_params.pop(CODE_PARAM, None)


# --- /train -------------------------------------------------------------------------------------------------------


def prefill_train_form() -> None:
    """On /train, before its form: a student of a class with an experiment finds the form filled with their value
    (once per value: they may change it after); where the class posts automatically, their finished runs are posted.
    Does nothing without a lab, a class or an experiment, or when the store cannot be reached."""
    from seqviz.store import board, runs
    from seqviz.ui import training_form

    lab_id = lab.lab_id()
    if lab_id is None:
        return
    try:
        mine = classes.classes_of(lab.db(), lab_id)
        found = mine[0] if mine else None
        member = classes.membership(lab.db(), found.id, lab_id) if found is not None else None
        if found is not None and found.auto_post and member is not None and not member.teacher:
            board.auto_post(lab.db(), found.code, lab_id, runs.states(lab.db(), lab_id, snapshots=False))
    except StoreUnavailable:
        return
    if found is None or found.experiment is None or member is None or member.value is None:
        return
    marker = (found.id, repr(member.value), found.experiment.setting)
    if st.session_state.get(PREFILLED_KEY) == marker:
        return
    try:
        spec = found.experiment.spec(member.value)
    except ValueError:
        return
    values = {field: getattr(spec, field) for field in training_form.FIELDS}
    from seqviz.runs import PRESETS

    chosen = found.experiment.preset if found.experiment.preset in [p.name for p in PRESETS] else PRESETS[0].name
    st.session_state["preset"] = chosen
    st.session_state[training_form.SAVED_KEY] = {"preset": chosen, **values}
    for field, value in values.items():
        st.session_state[training_form.FORM + field] = value
    st.session_state[PREFILLED_KEY] = marker
    st.info(f"Your class ({escape_markdown(found.name)}) runs an experiment: the form below is filled with your part, "
            f"{found.experiment.setting} {escape_markdown(str(member.value))}. Start training, then post the run on "
            "the class page.", icon=":material/science:")
