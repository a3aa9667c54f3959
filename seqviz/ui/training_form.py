"""/train's form: the preset picker and the settings, kept while the visitor is on other pages and bound to the
address, and how long a run like the one they describe trains on this server now."""

from __future__ import annotations

import streamlit as st

from seqviz import limits
from seqviz.ui import lab
from seqviz.ui.training import minutes

FORM = "tr_"  # prefix of the form's widget keys
SAVED_KEY = "_train_form"  # the form's values, kept while the visitor is on other pages (widgets' are not)
FIELDS = ("task", "family", "embedding", "hidden", "heads", "layers", "steps", "lr", "batch_size", "seed")


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
    task = left.selectbox("Task", list(TASKS), key=FORM + "task", format_func=lambda t: tasks.TASKS[t].label,
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
    how_long(spec)
    return spec


def how_long(spec) -> None:
    """How long a run like ``spec`` trains on this server now: from the last runs of its shape that ended here (a
    class's load shows in them), never from a quiet machine's figure. One cheap query; nothing when unknown."""
    from seqviz.queue_estimate import Paces
    from seqviz.store import StoreUnavailable, runs

    try:
        lately = Paces(runs.paces(lab.db())).lately(spec.to_dict())
    except StoreUnavailable:
        return
    if lately is None:
        st.caption("**How long:** no run of this shape has ended on this server yet; the first one's pace sets the "
                   "figure shown here for the next.")
        return
    seconds, count = lately
    last = "the last run" if count == 1 else f"the last {count} runs"
    capped = (f"; at that pace it would reach the {limits.TRAIN_MAX_SECONDS:.0f} s limit and stop there"
              if seconds > limits.TRAIN_MAX_SECONDS else "")
    st.caption(f"**How long:** about {minutes(seconds).removeprefix('about ')} of training on this server now, at "
               f"the pace of {last} of this shape that ended here{capped}. A queue comes first when others train.")
