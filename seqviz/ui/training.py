"""Training in the browser: the form's state, the server's one run manager, and this session's runs.

A run trains in a Dask worker process (seqviz.jobs, seqviz.cluster), owned by the visitor's browser session; the
web server's process only queues it and shows it. Pages poll it
from fragments that rerun on a timer (``st.fragment(run_every=...)``): the /train page's panel, and a small
status line in the sidebar of every page, which also tells the manager that the session is still there (a
closed tab stops touching it, and its run is stopped within seqviz.limits.TRAIN_ORPHAN_TIMEOUT_S). When a
run ends, its checkpoint joins this session's models, so every page's picker offers it.
"""

from __future__ import annotations

import secrets

import streamlit as st

from seqviz import limits
from seqviz.ui import models

OWNER_KEY = "_owner"  # this session's id for the run manager (never shown, never in a link)
HAS_RUNS_KEY = "_has_runs"  # set once this session starts a run: until then no page loads the manager (or torch)
ADOPTED_KEY = "_adopted_runs"  # run ids whose checkpoints already joined this session's models
FORM = "tr_"  # prefix of the form's widget keys
SAVED_KEY = "_train_form"  # the form's values, kept while the visitor is on other pages (widgets' are not)
POLL_S = 2.0  # seconds between two looks at a run while it trains
IDLE_POLL_S = 10.0  # seconds between two looks at how busy the server is, for a visitor with no run going on

FIELDS = ("task", "family", "embedding", "hidden", "heads", "layers", "steps", "lr", "batch_size", "seed")


@st.cache_resource(show_spinner=False)
def manager():
    """The server's one run manager: the cap on runs at once, the queue, every session's runs."""
    from seqviz.jobs import RunManager

    return RunManager(still_there=_tab_connected)


def _tab_connected(owner_id: str) -> bool:
    """Whether Streamlit still has this owner's browser session connected (False when it cannot tell)."""
    from streamlit.runtime import Runtime

    session_id = owner_id.partition("/")[0]
    return Runtime.exists() and Runtime.instance().is_active_session(session_id)


def owner() -> str:
    """This browser session's owner id for the run manager: Streamlit's session id (so the manager can ask
    whether its tab is still open), then a random part of its own (unique even where session ids are not)."""
    if OWNER_KEY not in st.session_state:
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        ctx = get_script_run_ctx()
        st.session_state[OWNER_KEY] = f"{ctx.session_id if ctx else ''}/{secrets.token_hex(8)}"
    return st.session_state[OWNER_KEY]


def my_runs() -> list:
    """This session's runs, newest first (none, and no manager loaded, before its first run)."""
    if not st.session_state.get(HAS_RUNS_KEY):
        return []
    return list(reversed(manager().runs_of(owner())))


# --- The form -------------------------------------------------------------------------------------


def apply_preset() -> None:
    """The Preset picker's callback: fill the form with the chosen preset's settings."""
    from seqviz.runs import preset

    spec = preset(st.session_state["preset"]).spec
    for field in FIELDS:
        st.session_state[FORM + field] = getattr(spec, field)


def _restore(presets: list[str]) -> None:
    """Put the form's values back in its widgets: Streamlit forgets a widget's state on pages without it. A new
    session starts from the preset in the address (a shared link), else the first; settings in the address then
    take their widgets' places over the preset's (the widgets are bound to it)."""
    if SAVED_KEY not in st.session_state:
        linked = st.query_params.get("preset")
        st.session_state["preset"] = linked if linked in presets else presets[0]
        apply_preset()
        return
    for name, value in st.session_state[SAVED_KEY].items():
        key = name if name == "preset" else FORM + name
        if key not in st.session_state:
            st.session_state[key] = value


def fit_family() -> None:
    """The task picker's callback: keep the family one that can learn the new task."""
    from seqviz.runs import task_families

    task = st.session_state[FORM + "task"]
    if st.session_state.get(FORM + "family") not in task_families(task):
        st.session_state[FORM + "family"] = task_families(task)[0]


def form():
    """The preset picker and the settings; returns the run they describe, or None (with the reason shown)."""
    from seqviz import families, tasks
    from seqviz.runs import PRESETS, TASKS, RunSpec, preset, task_families

    names = [p.name for p in PRESETS]
    _restore(names)
    st.selectbox("Preset", names, key="preset", on_change=apply_preset, bind="query-params",
                 help="Settings to start from: quick runs of each kind, and the chapter's experiments in pairs.")
    chosen = preset(st.session_state["preset"])
    st.caption(f"**What to look for.** {chosen.look_for}")
    left, right = st.columns(2)
    task = left.selectbox("Task", TASKS, key=FORM + "task", format_func=lambda t: tasks.TASKS[t].label,
                          bind="query-params", on_change=fit_family)
    name = right.selectbox("Model family", task_families(task), key=FORM + "family", bind="query-params",
                           format_func=lambda f: families.get(f).label)
    family = families.get(name)
    applies = family.sizes
    low, high = limits.TRAIN_WIDTH_RANGE
    sizes = st.columns(4)
    size_help = {"embedding": "numbers per word vector (a transformer's d_model)",
                 "hidden": "numbers in the recurrent memory, per direction where it reads both ways (a "
                           "translator's encoder, the attention-pooled classifier); a transformer's feed-forward width",
                 "heads": "attention heads per layer", "layers": "layers (a transformer's blocks, encoder and "
                                                                 "decoder each)"}
    bounds = {"embedding": (low, high), "hidden": (low, high), "heads": (1, limits.TRAIN_MAX_HEADS),
              "layers": (1, limits.TRAIN_MAX_LAYERS)}
    for column, field in zip(sizes, ("embedding", "hidden", "heads", "layers"), strict=True):
        column.number_input(field.capitalize(), min_value=bounds[field][0], max_value=bounds[field][1], step=1,
                            key=FORM + field, bind="query-params", disabled=field not in applies, help=size_help[field])
    budget = st.columns(4)
    budget[0].number_input("Steps", min_value=1, max_value=limits.TRAIN_MAX_STEPS, step=50, key=FORM + "steps",
                           bind="query-params", disabled=family.counts, help="one batch of examples per step")
    budget[1].number_input("Learning rate", min_value=limits.TRAIN_LR_RANGE[0], max_value=limits.TRAIN_LR_RANGE[1],
                           step=1e-3, format="%.4f", key=FORM + "lr", bind="query-params", disabled=family.counts)
    budget[2].number_input("Batch size", min_value=limits.TRAIN_BATCH_RANGE[0],
                           max_value=limits.TRAIN_BATCH_RANGE[1], step=16, key=FORM + "batch_size", bind="query-params",
                           disabled=family.counts)
    budget[3].number_input("Seed", min_value=0, max_value=limits.TRAIN_MAX_SEED, step=1, key=FORM + "seed",
                           bind="query-params", help="initial weights and the order of the batches")
    values = {field: st.session_state[FORM + field] for field in FIELDS}
    st.session_state[SAVED_KEY] = {"preset": st.session_state["preset"], **values}
    default_name = chosen.spec.name if all(getattr(chosen.spec, f) == values[f] for f in FIELDS) else ""
    try:
        spec = RunSpec(**values, name=default_name)
    except ValueError as error:
        st.error(f"These settings cannot be trained here: {error}.", icon=":material/error:")
        return None
    budget_text = "" if family.counts else (f", {spec.steps} steps of {spec.batch_size} examples, learning rate "
                                            f"{spec.lr:g}")
    st.caption(f"**Start training trains:** {family.label}"
               + "".join(f", {field} {getattr(spec, field)}" for field in applies) + budget_text
               + f", seed {spec.seed}. A box still red has not been taken: press Enter in it, or it keeps its last "
               f"value. {spec.num_parameters():,} numbers to learn (at most {limits.TRAIN_MAX_PARAMETERS:,}); a run "
               f"stops after {limits.TRAIN_MAX_SECONDS:.0f} s of training at the latest and keeps what it learned.")
    return spec


def start(spec, tokens: tuple[str, ...] | None) -> None:
    """Submit the run for this session, with snapshots of the sidebar sentence as the model learns, through the
    first view the story's /train entry watches that fits it (seqviz.watch)."""
    from seqviz import story
    from seqviz.jobs import RunRefused
    from seqviz.worker import SnapshotView

    if any(run.spec == spec and run.status in ("queued", "running") for run in my_runs()):
        # A second click on Start training (a busy server answers slowly, and people click again) would train
        # the same model twice: the same settings and seed learn the same weights.
        st.info("These settings are already training (below): Start training again starts nothing. Change a "
                "setting (the seed, say) to train another model beside it.", icon=":material/info:")
        return
    st.session_state[HAS_RUNS_KEY] = True
    try:
        manager().submit(owner(), spec, snapshot_fn=SnapshotView.for_run(spec, tokens, story.models("watch")))
    except RunRefused as error:
        st.error(str(error), icon=":material/hourglass_top:")


def _minutes(seconds: float) -> str:
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
        text += (f", expected to start in {_minutes(wait)} ({clock}, server clock)" if wait >= 5
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
    active = bool(st.session_state.get(HAS_RUNS_KEY)) and any(
        run.status in ("queued", "running") for run in manager().runs_of(owner()))
    st.fragment(run_every=POLL_S if active else IDLE_POLL_S)(_server_status)()


def _server_status() -> None:
    from seqviz.cluster import CONNECT_TIMEOUT_S

    server = manager()
    problem = server.unavailable(wait_s=CONNECT_TIMEOUT_S + 1)
    if problem:
        st.error(f"Training is unavailable on this server: {problem}. Every other page works; the server's "
                 "operator can fix the training cluster (README, Train your own).", icon=":material/cloud_off:")
        return
    load = server.load()
    at_once = f"{load['max_running']} runs at a time" if load["max_running"] != 1 else "one run at a time"
    text = (f"This server trains {at_once} for everyone who uses it, each in a worker process of its own; other "
            f"runs wait in a queue. Now: {load['running']} training, {load['queued']} waiting")
    if load["running"] >= load["max_running"]:
        text += f"; a run started now would begin in {_minutes(load['wait_s'])}"
    st.caption(text + ".")


def shipped_counterpart(spec) -> str | None:
    """The shipped model of the same family and task, to compare with (None if the zoo has none)."""
    from seqviz import zoo

    return next((e.name for e in zoo.ENTRIES if e.family == spec.family and e.task == spec.task), None)


def adopt_ended_runs(runs) -> bool:
    """Add every ended run's checkpoint to this session's models (once each); True if one was added."""
    from seqviz.checkpoints import CheckpointError

    adopted = st.session_state.setdefault(ADOPTED_KEY, set())
    added = False
    for run in runs:
        state = run.state()
        if state.ended and state.checkpoint and state.id not in adopted:
            adopted.add(state.id)
            try:
                models.add_model(state.checkpoint, f"{state.name}.safetensors", origin="trained here")
                added = True
            except CheckpointError as error:  # the session holds the most models it may
                st.session_state[models.UPLOAD_MESSAGE_KEY] = ("error", f"{state.name} was not kept. {error}")
    return added


def sidebar_status() -> None:
    """A line in the sidebar of every page while this session trains; it keeps the run's session alive."""
    if not st.session_state.get(HAS_RUNS_KEY):
        return
    active = any(run.status in ("queued", "running") for run in manager().runs_of(owner()))
    with st.sidebar:  # a fragment may not reach into the sidebar from inside: it lives there
        st.fragment(run_every=POLL_S if active else None)(_status_line)()


def _status_line() -> None:
    runs = manager().runs_of(owner())
    training = [run.state() for run in runs if run.status in ("queued", "running")]
    for state in training:
        if state.status == "queued":
            st.caption(f"Training {state.name}: {queue_text(state)[0].lower()}{queue_text(state)[1:]}")
        else:
            st.progress(state.step / max(1, state.steps), text=f"Training {state.name}: {progress_text(state)}")
    if adopt_ended_runs(runs) or (not training and st.session_state.get("_was_training")):
        st.session_state["_was_training"] = False
        st.rerun()  # the whole page: the new model joins the pickers, and the polling stops
    st.session_state["_was_training"] = bool(training)


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
