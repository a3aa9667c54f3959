"""/rnn-memory: the chapter's tiny RNN, live."""

import pandas as pd
import streamlit as st

from seqviz import charts, ui
from seqviz.analysis import tiny_rnn
from seqviz.limits import TINY_RNN_MAX_INPUT_CHARS, TINY_RNN_MAX_STEPS, TINY_RNN_W_RANGE

st.title("Why plain RNNs forget")
st.markdown(
    "The tiniest recurrent network has a memory of one number. At each step it mixes the old memory "
    "with the new input and squashes the result:"
)
st.latex(r"h_t = f\,(w \cdot h_{t-1} + x_t)")
st.markdown(
    "The chapter feeds it a 1 followed by nothing but zeros, with w = 0.5 and f = tanh, and watches "
    "the memory of that first input. Change anything below."
)

PART = "tiny-rnn"
changed = ui.rerun_part(PART)


@ui.part(PART)
def tiny_rnn_lab() -> None:
    """Everything the four settings change: moving one reruns this part only."""
    with st.container(border=True):
        c1, c2, c3 = st.columns(3)
        w = c1.slider("Recurrent weight w", *TINY_RNN_W_RANGE, value=0.5, step=0.05, key="w",
                      bind="query-params", on_change=changed)
        activation = c2.selectbox("Squashing function f", tiny_rnn.ACTIVATIONS, index=0, key="f",
                                  bind="query-params", on_change=changed)
        steps = c3.slider("Number of steps", 1, TINY_RNN_MAX_STEPS, value=6, key="n", bind="query-params",
                           on_change=changed)
        typed = st.text_input("Inputs x₁, x₂, … (commas or spaces; steps without an input get 0)", value="1",
                              max_chars=TINY_RNN_MAX_INPUT_CHARS, key="x", bind="query-params",
                              on_change=changed)

    parsed = tiny_rnn.parse_inputs(typed, steps)
    if parsed.problem:
        ui.notice(parsed.problem)
    run = tiny_rnn.run_tiny_rnn(parsed.values, w=w, activation=activation)

    st.header("1. The memory, step by step")
    # The corner cell names the steps the columns count (an empty header cell is nothing to a screen reader).
    table = pd.DataFrame([run.inputs, run.hidden], index=pd.Index(["input xₜ", "memory hₜ"], name="step t"),
                         columns=[str(t) for t in range(1, run.steps + 1)])
    ui.table(table, "{:.3f}", hide_index=False)
    ui.draw(charts.make("tiny-rnn-memory", run), "rnn-memory")

    st.header("2. The gradient, going back in time")
    st.markdown(
        "Learning needs the gradient to travel backwards. Each step back multiplies it by that step's "
        "local slope, ∂hₜ/∂hₜ₋₁ = w · f′(w·hₜ₋₁ + xₜ), which for tanh is w · (1 − hₜ²). Going k steps back "
        "multiplies k of these factors together."
    )
    ui.draw(charts.make("tiny-rnn-gradient", run), "rnn-gradient")
    if run.steps >= 20:
        product_20 = (f"In this run, 20 steps back the product is **{run.gradient[19]:.2e}**: "
                      + tiny_rnn.why_factors_differ(run, 20))
    else:
        product_20 = "Set 20 or more steps to compare this run with it."
    st.markdown(
        f"The chapter's figure: twenty steps back, with each factor about 0.5 × 0.75, the learning signal is "
        f"(0.5 × 0.75)²⁰ ≈ **{tiny_rnn.CHAPTER_PRODUCT:.1e}** (the diamond). {product_20}"
    )
    for line in tiny_rnn.describe_run(run):
        st.info(line, icon=":material/insights:")

    st.subheader("Self-test: why does the first input fade by about half each step?")
    with st.expander("Answer, from the numbers above"):
        st.markdown(tiny_rnn.self_test_answer(run))


tiny_rnn_lab()
ui.share_box("rnn-memory")
