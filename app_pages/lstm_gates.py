"""/lstm-gates: the forget, input and output gates of a trained LSTM, word by word."""

import streamlit as st

from seqviz import ui, views
from seqviz.analysis import gates
from seqviz.charts.base import position_labels
from seqviz.limits import UNITS_LIKE_THIS_MAX_PHRASE, UNITS_LIKE_THIS_SENTENCES, UNITS_LIKE_THIS_THRESHOLD
from seqviz.ui import models

st.title("LSTM: a memory with gates")
st.markdown(
    "An LSTM keeps a second memory, the cell state c, that changes by addition rather than being squashed "
    "through tanh at every step. Three gates, each a sigmoid between 0 and 1, act as valves:"
)
st.latex(r"c_t = f_t \odot c_{t-1} + i_t \odot \tilde{c}_t \qquad h_t = o_t \odot \tanh(c_t)")
st.markdown(
    "The **forget gate** fₜ keeps a fraction of the old cell (1 keeps everything, 0 erases it); the **input "
    "gate** iₜ decides how much of this word's candidate c̃ₜ to write in; the **output gate** oₜ decides how "
    "much of the cell to show as the memory hₜ. Where fₜ stays near 1, information and gradient travel along "
    "the cell almost unchanged: a clean path across time, like a residual connection across depth. "
    "The values below are replayed from the trained model's own weights (and checked against PyTorch's "
    "nn.LSTM to 1e-5 in the tests)."
)

picked = models.pick("gates", label="Model with an LSTM")
models.download_buttons(picked, "lstm-gates")
if not picked:
    ui.share_box("lstm-gates")
    st.stop()
ref = picked[0]
where = ("its encoder's LSTM, forward direction, reading the English" if models.checkpoint(ref).translates
         else "its LSTM layer")
st.caption(ui.escape_markdown(f"{ref.label} ({models.family_label(ref)}): {where}, replayed word by word."))
tokens = ui.sentence_tokens("Type a sentence in the sidebar to see the gates.")
if not tokens:
    ui.share_box("lstm-gates")
    st.stop()

models.unknown_notes([ref], tokens)
trace = models.trace(ref, "gates", tokens)
hidden = trace.forget_gate.shape[1]

GRID, UNIT = "gates-grid", "gates-unit"


def shown_units() -> int:
    """How many units section 1 shows (the slider's value; every unit when there are 4 or fewer)."""
    return min(st.session_state.get("units", min(16, hidden)), hidden) if hidden > 4 else hidden


@ui.part(GRID)
def every_gate(trace) -> None:
    st.header("1. Every gate, unit by unit")
    if hidden > 4:
        st.slider("Units to show (those whose cell state moves most)", 4, hidden, value=min(16, hidden),
                  step=4 if hidden % 4 == 0 else 1, key="units", bind="query-params",
                  on_change=ui.rerun_part(GRID, UNIT))  # the unit picker offers the units shown
    ui.show("gates", {ref.label: trace}, "lstm-gates", units=shown_units())


@ui.part(UNIT)
def one_unit(trace) -> None:
    st.header("2. One unit across the sentence")
    unit = st.selectbox("Unit", gates.most_active_units(trace, shown_units()), key="unit",
                        bind="query-params", on_change=ui.rerun_part(UNIT))
    ui.show("gates", {"unit": trace}, "lstm-unit", figure="unit-lines", unit=unit)


every_gate(trace)
one_unit(trace)

st.header("3. How much each word keeps")
ui.show("gates", {"keeping": trace}, "lstm-forget", figure="mean-forget")
st.markdown(ui.escape_markdown(gates.forget_summary(trace)))

LIKE = "units-like-this"


@ui.part(LIKE)
def units_like_this(trace) -> None:
    st.header("4. Units like this")
    st.markdown(
        "Pick a phrase of the sentence and a threshold: the units whose **cell state** c stays above the threshold "
        "at every word of the phrase are drawn below, then looked for in sentences the model never trained on "
        "(LSTMVis's pattern search). The cell state, not the memory h: c is where an LSTM keeps something across "
        "words (it changes by addition, and holds while the forget gate stays near 1), while h = o ⊙ tanh(c) is "
        "what the output gate lets out at each word, and can drop for a word while the cell still holds.")
    words = position_labels(trace.tokens)

    def word(i: int) -> str:  # (a word kept from a longer sentence is named as the last one)
        return words[min(i, len(words) - 1)]

    row = st.columns(2)
    start = row[0].select_slider("Phrase starts at word", options=list(range(len(words))), format_func=word,
                                 key="from", bind="query-params", on_change=ui.rerun_part(LIKE))
    length = row[1].slider("Words in the phrase", 1, UNITS_LIKE_THIS_MAX_PHRASE, value=2, key="words",
                           bind="query-params", on_change=ui.rerun_part(LIKE))
    threshold = st.slider("Threshold ℓ on the cell state c", *UNITS_LIKE_THIS_THRESHOLD, value=0.3, step=0.1,
                          key="above", bind="query-params", on_change=ui.rerun_part(LIKE))
    end = start + length - 1  # (past the sentence's end, the phrase stops at its last word)
    chosen = {"start": start, "end": end, "threshold": threshold}
    view = views.get(LIKE)
    st.markdown(ui.escape_markdown(view.summary(trace, **chosen)))
    ui.show(LIKE, {ref.label: trace}, "lstm-units-like-this", **chosen)
    if view.units(trace, start, end, threshold) and st.toggle(
            f"Search {UNITS_LIKE_THIS_SENTENCES} held-out sentences for these units", key="search",
            bind="query-params", on_change=ui.rerun_part(LIKE)):
        found = view.search(models.held_out_study(ref, LIKE), trace, **chosen)
        st.markdown(ui.escape_markdown(found.summary))
        if len(found.table):
            ui.table(found.table, "{:.2f}", text_columns=("held-out sentence, the span in ⟦ ⟧", "span"))


units_like_this(trace)

ui.share_box("lstm-gates")
