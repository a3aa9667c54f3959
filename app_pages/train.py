"""/train: train your own model beside the page, watch it learn, then use it on every page."""

import streamlit as st

from seqviz import charts, ui, views
from seqviz.charts.colours import model_colour
from seqviz.ui import models, shared_runs, training, training_form
from seqviz.ui.classroom import prefill_train_form

st.title("Train your own")
st.markdown(
    "Every model in this lab was trained on this computer by one training loop; here you run that loop "
    "yourself. Pick a preset or set the task, the model and its size, and press **Start training**. It trains "
    "beside the page: open other pages while it runs and come back. Every few seconds it keeps a snapshot of "
    "how the model reads the sidebar sentence, so you can replay how it learned. When it ends, your model "
    "joins *Your models* in the sidebar and every page that fits it can show it."
)

prefill_train_form()
spec = training_form.form()
tokens = ui.sentence_tokens("Type a sentence in the sidebar: snapshots show how the model reads it.")
no_lab = training.lab_unavailable()
if st.button("Start training", type="primary", icon=":material/play_arrow:", disabled=spec is None or no_lab):
    training.start(spec, tokens)
if not no_lab:
    training.server_status()


def draw_snapshot(snapshot, label: str, family: str, run_id: str) -> None:
    """One snapshot of the model's view of the sentence, drawn by the view that drew it on its page."""
    ui.show(snapshot.view, {label: snapshot.trace}, f"train-{snapshot.view}-{run_id}",
            {label: model_colour(family)})


def draw_run(state) -> None:
    spec = state.spec
    st.subheader(ui.escape_markdown(state.name), anchor=False)  # h3 under "Your runs" (h2)
    sharing = shared_runs.sharing_text(state)
    if sharing:
        st.caption(sharing)
    if state.status == "queued":
        st.info(training.queue_text(state), icon=":material/hourglass_top:")
        if st.button("Cancel" if state.followers < 2 else "Stop following", key=f"cancel-{state.id}"):
            training.stop(state.id)
            st.rerun()
        return
    if state.note:
        st.caption(state.note)
    if state.status == "running":
        st.progress(state.step / max(1, state.steps), text=training.progress_text(state))
        if st.button(shared_runs.stop_label(state), key=f"stop-{state.id}", icon=":material/stop:"):
            training.stop(state.id)
    elif state.status == "failed":
        st.error(f"Training failed: {state.error}", icon=":material/error:")
        return
    elif state.status == "cancelled":
        st.caption("Cancelled before it started.")
        return
    else:
        why = {"asked": "stopped when you asked", "time limit": "stopped at the time limit",
               "left": "you stopped following it", "nobody looking": "stopped because nobody following it was "
                                                                     "looking"}.get(state.stop_reason or "", "finished")
        st.success(f"{why.capitalize()} after {state.step} steps and {state.train_seconds or 0:.0f} s of training: "
                   f"{state.metric_name} {state.metric:.1%}." if state.metric is not None else why.capitalize(),
                   icon=":material/check_circle:")
        st.caption(training.timeline(state))
    upto = shared_runs.replay_step(state) if state.ended else None
    if state.ended and state.stop_reason != "left":
        shared_runs.replay_controls(state, upto)
    losses, history = state.losses, state.metric_history
    if upto is not None:  # replaying: what the run had at that step
        losses, history = [p for p in losses if p[0] <= upto], [p for p in history if p[0] <= upto]
    if losses or history:
        ui.draw(charts.make("training-curves", losses, history, state.metric_name, state.steps),
                f"train-curves-{state.id}")
    snapshots = [s for s in state.snapshots if upto is None or s[0] <= upto]  # (replaying: those it had then)
    if snapshots and not state.asked_first and views.get(snapshots[-1][1].view).needs_sentence:
        # A sentence somebody typed is theirs: a run shared with them shows its curves, never their sentence.
        st.caption("Its snapshots show how it reads the sentence of the visitor who asked for it first: that "
                   "sentence is theirs, so they are not shown here.")
        snapshots = []
    if snapshots:
        st.markdown("**Watch it learn**: " + ("the model's view of the sidebar sentence (it was typed when the run "
                                              "started)." if views.get(snapshots[-1][1].view).needs_sentence else
                                              "the model on held-out sequences."))
        index = len(snapshots) - 1
        if state.ended and upto is None and len(snapshots) > 1:
            steps = [step for step, _ in snapshots]
            chosen = st.select_slider("Snapshot after step", options=steps, value=steps[-1], key=f"snap-{state.id}")
            index = steps.index(chosen)
        step, snapshot = snapshots[index]
        st.caption(f"After step {step}.")
        st.markdown(ui.escape_markdown(snapshot.summary))
        draw_snapshot(snapshot, state.name, spec.family, state.id)
    if state.ended and state.metrics:
        compare_with_shipped(state)
        data = training.model_file(state.fingerprint) if state.fingerprint else None
        if data is not None:
            st.download_button("Download checkpoint", data=data, file_name=f"{ui.slug(state.name)}.safetensors",
                               mime="application/octet-stream", key=f"dl-run-{state.id}",
                               icon=":material/download:", on_click="ignore")
            st.caption("It is in *Your models* in the sidebar: pick it on any page that fits it.")
        else:
            st.caption("Its model is no longer in *Your models* (it was removed).")


def compare_with_shipped(state) -> None:
    """Held-out metrics beside the shipped model of the same kind, from the same evaluation code."""
    from seqviz.tasks import TASKS

    summary = TASKS[state.spec.task].summary
    rows = {"yours": summary(state.metrics)}
    counterpart = training.shipped_counterpart(state.spec)
    meta = models.shipped_meta(counterpart) if counterpart else None
    if meta is not None:
        rows[f"shipped {counterpart} ({meta.get('steps')} steps)"] = summary(meta["metrics"])
    table = {"held-out measure": [training.measure_name(k) for k in rows["yours"]]}
    for who, values in rows.items():
        table[who] = [("–" if v is None else f"{v:.1%}" if isinstance(v, float) else str(v)) for v in values.values()]
    st.table(table, hide_index=True, border="horizontal")


runs = training.my_runs(snapshots=False)
active = any(run.status in ("queued", "running") for run in runs)
replaying = shared_runs.replaying(runs)


@st.fragment(run_every=training.POLL_S if active or replaying else None)
def panel() -> None:
    training.lab_seen()  # a tab watching its run here is somebody of the lab looking
    runs_now = training.my_runs()
    if replaying and not active and not shared_runs.replaying(runs_now):
        st.rerun()  # the replay is over (or skipped): the page stops looking again
    # A run ended since the page last ran whole (or since the sidebar listed Your models in this run): its model is
    # in Your models (the sidebar, every picker) and the page runs whole again, which also stops this polling.
    ended = {r.id for r in runs_now if r.ended}
    known = st.session_state.get("_train_ended_seen")
    st.session_state["_train_ended_seen"] = ended
    if (active and not any(r.status in ("queued", "running") for r in runs_now)) or (
            known is not None and ended - known):
        st.rerun()
    for state in runs_now:
        with st.container(border=True):
            draw_run(state)


if runs:
    st.header("Your runs", anchor=False)
    panel()

ui.share_box("train")
