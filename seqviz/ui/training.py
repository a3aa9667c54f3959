"""Training in the browser: the form's state, the server's one run manager, and this lab's runs.

A run belongs to the browser's lab (seqviz.ui.lab), not to a tab: it is a record in the lab store that a Dask
worker trains and writes to (seqviz.jobs, seqviz.worker), so every tab of the browser, a reload, another web
server of a lecture hall and a restarted server all show it. Pages poll the store from fragments that rerun on
a timer (``st.fragment(run_every=...)``): the /train page's panel, and a small status line in the sidebar of
every page, which also notes that somebody of the lab is looking (a run nobody of its lab has looked at for
seqviz.limits.TRAIN_ORPHAN_TIMEOUT_S is stopped, keeping what it learned). When a run ends, its model is in the
lab's models already (the worker put it there), so every page's picker offers it.
"""

from __future__ import annotations

import streamlit as st

from seqviz.ui import lab

SEEN_ACTIVE_KEY = "_runs_active"  # whether this lab had a run queued or training at this session's last look
POLL_S = 2.0  # seconds between two looks at a run while it trains
IDLE_POLL_S = 10.0  # seconds between two looks at how busy the server is, for a visitor with no run going on


@st.cache_resource(show_spinner=False)
def manager():
    """The server's one run manager over the lab store and the training cluster."""
    from seqviz.jobs import RunManager

    return RunManager(lab.db())


@st.cache_resource(show_spinner=False)
def recover_on_start() -> bool:
    """Once per server process: when the store holds queued or running runs (the server restarted under them),
    start the run manager, which hands them to the cluster again. A cheap query; no torch unless there are."""
    from seqviz.store import StoreUnavailable, runs

    try:
        waiting = bool(runs.unfinished(lab.db()))
    except StoreUnavailable:
        return False
    if waiting:
        manager()
    return waiting


def lab_seen() -> None:
    """Note that somebody of this lab is looking (the /train panel's polling, like the sidebar's status line)."""
    lab.seen()


def active_count() -> int:
    """This lab's queued and training runs (0 when there is no lab): one cheap query, no manager, no torch."""
    from seqviz.store import StoreUnavailable, runs

    lab_id = lab.lab_id()
    if lab_id is None:
        return 0
    try:
        counts = runs.counts(lab.db(), lab_id)
    except StoreUnavailable:
        return 0
    return counts["queued"] + counts["running"]


def my_runs(snapshots: bool = True) -> list:
    """This lab's runs (seqviz.progress.RunState), newest first; none when the store cannot be reached."""
    from seqviz.store import StoreUnavailable, runs

    lab_id = lab.lab_id()
    if lab_id is None:
        return []
    try:
        found = runs.states(lab.db(), lab_id, snapshots=snapshots)
        if any(state.status == "queued" for state in found):  # their expected starts come from the manager
            found = manager().runs_of(lab_id, snapshots=snapshots)
        return found
    except StoreUnavailable as error:
        st.error(f"Your runs cannot be read now: {_escape(str(error))}", icon=":material/cloud_off:")
        return []


def lab_unavailable() -> bool:
    """Whether this browser's lab cannot be reached now (the lab store is down); if so, says so on the page. Runs
    are kept in the lab, so none can be started or shown until it is back (a full run tries it again)."""
    if lab.lab_id() is not None:
        return False
    problem = (lab.problem() or "the lab store is unavailable").rstrip(".")
    st.error(f"Training is not available now: your runs and models are kept in your lab, in the lab store, which "
             f"cannot be reached: {_escape(problem)}. Every other page works with the shipped models; this page "
             "tries again each time it runs (reload it in a minute).", icon=":material/cloud_off:")
    return True


def _escape(text: str) -> str:
    from seqviz.ui import escape_markdown

    return escape_markdown(text)


def start(spec, tokens: tuple[str, ...] | None) -> None:
    """Submit the run for this lab, with snapshots of the sidebar sentence as the model learns, through the
    first view the story's /train entry watches that fits it (seqviz.watch)."""
    from seqviz import story
    from seqviz.jobs import RunRefused
    from seqviz.worker import SnapshotView

    if any(run.spec == spec and run.status in ("queued", "running") for run in my_runs(snapshots=False)):
        # A second click on Start training (a busy server answers slowly, and people click again) would train
        # the same model twice: the same settings and seed learn the same weights.
        st.info("These settings are already training (below): Start training again starts nothing. Change a "
                "setting (the seed, say) to train another model beside it.", icon=":material/info:")
        return
    from seqviz.store import StoreUnavailable, runs
    from seqviz.ui import shared_runs

    lab_id = lab.lab_id()
    if lab_id is None:
        st.error(f"Training needs your lab, which cannot be reached now: {lab.problem()}",
                 icon=":material/cloud_off:")
        return
    try:
        run_id = manager().submit(lab_id, spec, watch=SnapshotView.for_run(spec, tokens, story.models("watch")))
        if any(state.ended for state in runs.states(lab.db(), lab_id, run_id, snapshots=False)):
            shared_runs.start_replay(run_id)  # trained before, for others: its model is here now; its history plays
            st.rerun()  # the sidebar (drawn before the click's handler) lists the model at once
        # This session has seen the lab train: when the run ends, the sidebar's status line runs the page whole
        # again, even if it ends between this session's next look at Your models and at its runs.
        st.session_state[SEEN_ACTIVE_KEY] = True
        # Its panel is below the form, often below the fold: say at once, where the visitor looks, that it began.
        others = len(runs.following(lab.db(), run_id)) - 1
        st.toast(f"These settings are training already for {others} other visitor{'s' * (others > 1)}: you follow "
                 "that run (*Your runs*, below)." if others > 0 else "Your run is queued: see *Your runs*, below.",
                 icon=":material/play_arrow:")
    except RunRefused as error:
        st.error(str(error), icon=":material/hourglass_top:")
    except StoreUnavailable as error:
        st.error(f"The run could not be recorded, so it was not started: {error}", icon=":material/cloud_off:")


def stop(run_id: str) -> None:
    """Stop this lab's run (a queued one is cancelled); says why when the store cannot be reached."""
    from seqviz.store import StoreUnavailable

    lab_id = lab.lab_id()
    try:
        if lab_id is not None:
            manager().stop(lab_id, run_id)
    except StoreUnavailable as error:
        st.error(f"The run could not be stopped now: {error}", icon=":material/cloud_off:")


def model_file(fingerprint: str) -> bytes | None:
    """The checkpoint file of one of this lab's models (None when it is gone or the store cannot be reached)."""
    from seqviz.store import StoreUnavailable
    from seqviz.store import models as stored

    lab_id = lab.lab_id()
    try:
        return stored.data(lab.db(), lab_id, fingerprint) if lab_id is not None else None
    except StoreUnavailable:
        return None


def minutes(seconds: float) -> str:
    """ "about 40 s", "about 3 min" """
    return f"about {max(1, round(seconds / 5) * 5):.0f} s" if seconds < 90 else f"about {seconds / 60:.0f} min"


def queue_text(state) -> str:
    """A waiting run's place and expected start: "Waiting for a training worker: place 3 in the queue, expected
    to start in about 2 min (13:05, server clock)." """
    import time

    if state.phase:  # the workers are starting: nothing waits in front of it
        return f"{state.phase.capitalize()}…"
    text = f"Waiting for a training worker: place {state.queue_position} in the queue"
    if state.expected_start_at is not None:
        wait = max(0.0, state.expected_start_at - time.time())
        clock = time.strftime("%H:%M", time.localtime(state.expected_start_at))
        text += (f", expected to start in {minutes(wait)} ({clock}, server clock)" if wait >= 5
                 else ", starting any moment")
    return text + "."


def progress_text(state) -> str:
    """A training run's progress line; before its first step, what it is doing (never a frozen "Step 0")."""
    doing = state.phase if state.phase not in (None, "training") else None
    if state.step == 0:
        return f"{(doing or 'starting').capitalize()}… · {state.elapsed_s:.0f} s"
    left = f", about {state.eta_s:.0f} s left" if state.eta_s is not None else ""
    return f"Step {state.step} of {state.steps} · {state.elapsed_s:.0f} s{left}" + (f" · {doing}…" if doing else "")


def server_status() -> None:
    """How busy training is on this server, for every visitor of /train (with a run of their own or not), or why
    training is unavailable. It looks again every POLL_S seconds while this session trains, and every
    IDLE_POLL_S otherwise: drawn once, it said "1 waiting" all through the run that had left the queue."""
    st.fragment(run_every=POLL_S if active_count() else IDLE_POLL_S)(_server_status)()


def _server_status() -> None:
    from seqviz.cluster import CONNECT_TIMEOUT_S
    from seqviz.store import StoreUnavailable

    server = manager()
    problem = server.unavailable(wait_s=CONNECT_TIMEOUT_S + 1)
    if problem:
        st.error(f"Training is unavailable on this server: {problem}. Every other page works; the server's "
                 "operator can fix the training cluster (docs/training.md, *Where runs train*).",
                 icon=":material/cloud_off:")
        return
    try:
        load = server.load()
    except StoreUnavailable as error:  # runs are records in the lab store: without it, nothing trains or shows
        st.error(f"Training is unavailable now: the lab store, which keeps every run, cannot be used: "
                 f"{_escape(str(error))}", icon=":material/cloud_off:")
        return
    at_once = f"{load['max_running']} runs at a time" if load["max_running"] != 1 else "one run at a time"
    text = (f"This server trains {at_once} for everyone who uses it, each in a worker process of its own; other "
            f"runs wait in a queue. Now: {load['running']} training, {load['queued']} waiting")
    if load["running"] >= load["max_running"]:
        text += f"; a run started now would begin in {minutes(load['wait_s'])}"
    st.caption(text + ".")


def shipped_counterpart(spec) -> str | None:
    """The shipped model of the same family and task, to compare with (None if the zoo has none)."""
    from seqviz import zoo

    return next((e.name for e in zoo.ENTRIES if e.family == spec.family and e.task == spec.task), None)


def sidebar_status() -> None:
    """A line in the sidebar of every page while this lab trains; it notes that somebody of the lab is looking."""
    recover_on_start()
    active = active_count()
    if not active and not st.session_state.get(SEEN_ACTIVE_KEY):
        return
    with st.sidebar:  # a fragment may not reach into the sidebar from inside: it lives there
        st.fragment(run_every=POLL_S if active else None)(_status_line)()


def _status_line() -> None:
    lab.seen()
    training = [state for state in my_runs(snapshots=False) if state.status in ("queued", "running")]
    for state in training:
        if state.status == "queued":
            st.caption(f"Training {state.name}: {queue_text(state)[0].lower()}{queue_text(state)[1:]}")
        else:
            st.progress(state.step / max(1, state.steps), text=f"Training {state.name}: {progress_text(state)}")
    was_active = st.session_state.get(SEEN_ACTIVE_KEY)
    st.session_state[SEEN_ACTIVE_KEY] = bool(training)
    if was_active and not training:
        st.rerun()  # the whole page: the new model joins the pickers, and the polling stops


def timeline(state) -> str:
    """When an ended run waited and trained, by the server's clock (a shared server queues runs):
    "Waited 12 s in the queue, then trained from 13:02:05 to 13:02:41 (server clock)." """
    import time

    if state.started_at is None or state.ended_at is None:
        return ""
    waited = f"Waited {state.waited_s:.0f} s in the queue, then trained" if state.waited_s >= 1 else "Trained"
    clock = [time.strftime("%H:%M:%S", time.localtime(t)) for t in (state.started_at, state.ended_at)]
    return f"{waited} from {clock[0]} to {clock[1]} (server clock)."


def measure_name(key: str) -> str:
    """A task summary's key in words: "exact_match_le30" -> "exact match, sources of ≤ 30 tokens"."""
    words = {"le30": "sources of ≤ 30 tokens", "ge25": "sources of ≥ 25 tokens"}
    head, _, tail = key.rpartition("_")
    if tail in words:
        return f"{head.replace('_', ' ')}, {words[tail]}"
    if key == "chapter_pairs_exact":
        return "chapter pairs exactly right (of 6)"
    if key.startswith("accuracy_at_"):
        return f"accuracy at distance {key.removeprefix('accuracy_at_')}"
    if key == "twins_same_prediction":  # a bag of words must give both twins one team: 100%
        return "twin pairs given the same team (a bag of words: all)"
    if key == "twins_accuracy":
        return "accuracy on word-identical twins"
    return key.replace("_", " ")
