"""Runs a class shares on /train: what the page says of a run trained once for many labs, and the replay of a run's
history at the pace it trained.

Identical runs are trained once (seqviz.run_identity): a lab asking for a run that is waiting or training follows
it, and one asking after it finished has its model at once. Such a lab did not watch it learn, so the page replays
the run's curves and snapshots as they came, at the run's own pace (its seconds of training per step; a run of a
few seconds over REPLAY_AT_LEAST_S), and the visitor may skip to the end. A replay is this tab's (session state):
it is a way of looking, nothing is trained.
"""

from __future__ import annotations

import time

import streamlit as st

REPLAY = "_replay_"  # session state: REPLAY + run id -> time.time() the replay began
REPLAY_AT_LEAST_S = 10.0  # a run that trained in a blink replays over this long, so that it can be watched


def sharing_text(state) -> str | None:
    """One line on a run that other labs follow too, or that this lab took finished; None for a lab's own run."""
    if state.stop_reason == "left":
        return ("You stopped following this run: it went on for the others who asked for the same settings, and "
                "its model is theirs, not yours.")
    others = state.followers - 1
    took_finished = state.ended_at is not None and state.joined_at is not None and state.joined_at >= state.ended_at
    if took_finished:
        return (f"These exact settings had been trained here already, so nothing was trained again: the model is in "
                f"Your models now. Trained once for {state.followers} visitors.")
    if others <= 0:
        return None
    who = "1 other visitor" if others == 1 else f"{others} other visitors"
    if state.ended:
        return f"Trained once for {state.followers} visitors: you and {who} asked for these exact settings."
    return (f"Trained once for {state.followers} visitors: you and {who} asked for these exact settings (the same "
            "seed gives the same weights), so it trains once and each gets their own copy of the model.")


def stop_label(state) -> str:
    """"Stop following" where others follow the run (it goes on for them), else "Stop training"."""
    return "Stop following" if state.followers > 1 else "Stop training"


def can_replay(state) -> bool:
    return state.ended and state.step > 0 and state.trained_s > 0 and bool(state.losses or state.metric_history)


def start_replay(run_id: str) -> None:
    st.session_state[REPLAY + run_id] = time.time()


def replaying(states) -> bool:
    """Whether this tab replays one of these runs now (the page then looks again every few seconds)."""
    return any(REPLAY + s.id in st.session_state for s in states)


def replay_step(state) -> int | None:
    """The step the replay of ``state`` has reached, at the run's own pace; None when it is not replaying (or has
    reached its end: the replay is over)."""
    began = st.session_state.get(REPLAY + state.id)
    if began is None:
        return None
    pace = max(state.trained_s, REPLAY_AT_LEAST_S) / max(1, state.step)  # seconds per step, as it trained
    reached = int((time.time() - began) / pace) if pace > 0 else state.step
    if reached >= state.step:
        del st.session_state[REPLAY + state.id]
        return None
    return max(1, reached)


def replay_controls(state, step: int | None) -> None:
    """A "Replay its training" button on an ended run, or the replay's progress with "Skip to the end"."""
    if step is None:
        if can_replay(state):  # (callbacks: the run that follows the click draws the replay, or its end)
            st.button("Replay its training", key=f"replay-{state.id}", icon=":material/replay:",
                      on_click=start_replay, args=(state.id,),
                      help="The curves and snapshots as they came, at the pace it trained.")
        return
    st.progress(step / max(1, state.step), text=f"Replaying its training: step {step} of {state.step}, at the "
                                                f"pace it trained.")
    st.button("Skip to the end", key=f"skip-{state.id}", icon=":material/skip_next:",
              on_click=lambda: st.session_state.pop(REPLAY + state.id, None))
