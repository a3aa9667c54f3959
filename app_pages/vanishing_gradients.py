"""/vanishing-gradients: gradients through time, measured on the trained models."""

import streamlit as st

from seqviz import charts, ui

CLASSIFIERS = ["rnn", "gru", "lstm", "transformer"]
RECURRENT = ["rnn", "gru", "lstm"]
MEMORY = ["memory-rnn", "memory-gru", "memory-lstm"]

st.title("Vanishing (and exploding) gradients")
st.markdown(
    "Training an RNN is backpropagation through time: an email of 100 words is, for the chain rule, a network "
    "100 layers deep. Each step back multiplies the gradient by that step's Jacobian ∂hₜ/∂hₜ₋₁, so the "
    "learning signal from a word k steps back is a product of k factors. Here it is measured by autograd on "
    "models trained in this lab."
)

if not ui.models_ready(CLASSIFIERS + MEMORY):
    st.stop()

st.subheader("1. Which words can still move the decision?")
tokens = ui.sentence_tokens()
if tokens:
    ui.unknown_note(ui.checkpoint("rnn").vocabularies["tokens"], tokens, "The email models")
    found = {name: ui.saliency(name, tokens) for name in CLASSIFIERS}
    ui.chart(charts.saliency_chart(found), charts.saliency_data(found), "gradients-saliency")
    spans = "; ".join(f"{name}: {s.norms[0] / s.norms[-1]:.2g}×" for name, s in found.items() if s.norms[-1] > 0)
    st.markdown(
        "For each model: the size of the gradient of its chosen team's score with respect to each word's "
        "vector, ‖∂score/∂xₜ‖, against how far the word is from the end. A word with a tiny gradient barely "
        "changes the decision, and training cannot learn much from it. The first word's gradient relative to "
        f"the last word's, on this sentence: {spans}. The measurement below follows the gradient over 100 steps "
        "and more."
    )

st.subheader("2. ‖∂h_T/∂h_k‖ on long sequences")
c1, c2 = st.columns(2)
length = c1.select_slider("Sequence length T", options=[25, 50, 100, 150, 200], value=100, key="T",
                          bind="query-params")
scale = c2.select_slider("Scale the RNN's recurrent weights W_h by", options=[0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0],
                         value=1.0, key="scale", bind="query-params")
curves = {}
for name in RECURRENT:
    curves[(name, "untrained")] = ui.jacobian_curve(name, False, length)
    curves[(name, "trained")] = ui.jacobian_curve(name, True, length)
scaled_state = f"W_h × {scale:g}"
if scale != 1.0:
    curves[("rnn", scaled_state)] = ui.jacobian_curve("rnn", True, length, scale)
ui.chart(charts.jacobian_chart(curves), charts.jacobian_data(curves), "gradients-jacobian")
rnn = curves[("rnn", "trained")]
far = min(20, length - 1)
st.markdown(
    f"Averaged over 3 random word sequences of {length} words (geometric mean of the spectral norm). "
    f"The grey dotted line is Pascanu et al.'s (2013) bound for the plain RNN, ‖∂h_T/∂h_k‖ ≤ η^(T−k) with "
    f"η = σ_max(W_h) (γ = 1 for tanh): for the shipped RNN η = **{rnn.eta:.2f}**, and {far} steps back the "
    f"measured norm is **{rnn.norm[far - 1]:.1e}**"
    + (" — with η above 1 the bound allows growth, yet the measurement vanishes: tanh's slopes 1 − h² pull every "
       "factor down. (The bound is cut off where it leaves the chart.)" if rnn.eta > 1 else ".")
    + f" The trained LSTM keeps **{curves[('lstm', 'trained')].norm[far - 1]:.1e}** over the same distance: "
    "its cell state is the clean path."
)
if scale != 1.0:
    scaled = curves[("rnn", scaled_state)]
    at_far = scaled.norm[far - 1]
    if at_far > 1:
        verdict = (f"{far} steps back the gradient is {at_far:.1e}, larger than where it started: it explodes. In "
                   "training, one such step can throw the weights far away, which is why recurrent models are "
                   "trained with gradient clipping: when the gradient's length exceeds a threshold (1.0 for every "
                   "model here), it is scaled down to that length.")
    elif scaled.eta > 1:
        verdict = (f"Yet {far} steps back the measured gradient is {at_far:.1e}: it still vanishes. η > 1 is "
                   "necessary for an explosion, not sufficient: with larger weights tanh saturates, its slope "
                   "1 − h² falls towards 0 and damps every factor.")
    else:
        verdict = (f"With η < 1 the bound itself forces the gradient to vanish, exponentially fast: {far} steps "
                   f"back it is {at_far:.1e}.")
    st.info(f"With W_h × {scale:g}, η = {scaled.eta:.2f}. {verdict}", icon=":material/insights:")
st.caption("Untrained: the same model, same sizes and seed, before training. The slider scales only the "
           "trained RNN's W_h (a copy; the shipped model is not changed).")

st.subheader("3. Can it learn twenty steps back?")
metadata = ui.zoo_metadata()
steps = [point["step"] for point in metadata[MEMORY[0]]["metrics"]["learning_curve"]]
st.markdown(
    "The plainest long-range task: the label is the first word, followed by 1 to 60 distractor words. Three "
    "models trained with the same data, steps and learning rate; held-out accuracy was measured every "
    f"{steps[1] - steps[0]} steps. Move through training:"
)
step = st.select_slider("Training steps so far", options=steps, value=300 if 300 in steps else steps[0],
                        key="steps", bind="query-params")
ui.chart(charts.memory_accuracy_chart(metadata, MEMORY, step), charts.memory_data(metadata, MEMORY, step),
         "gradients-memory")


def at_20(name: str, when: int | None) -> float:
    return charts.memory_curve(metadata[name], when)["20"]


chance = metadata[MEMORY[0]]["metrics"]["chance"]
st.markdown(
    f"Accuracy at distance 20 after {step} steps: "
    + ", ".join(f"{n.removeprefix('memory-')} **{at_20(n, step):.0%}**" for n in MEMORY)
    + f" (chance is {chance:.1%}). After all {steps[-1]} steps: "
    + ", ".join(f"{n.removeprefix('memory-')} **{at_20(n, None):.0%}**" for n in MEMORY) + "."
)
first_full = {n: next((p["step"] for p in metadata[n]["metrics"]["learning_curve"]
                       if min(p["accuracy_by_distance"].values()) >= 0.95), None) for n in MEMORY}
st.info(
    "Measured here: "
    + "; ".join(f"{n.removeprefix('memory-')} is right 95% of the time at every distance from step {s}"
                if s else f"{n.removeprefix('memory-')} never is within {steps[-1]} steps"
                for n, s in first_full.items())
    + ". On this clean task, with Adam and gradient clipping, the plain RNN does learn to look 60 steps back, "
    "but it learns far distances last and slowest: its gradient from far words is tiny, as in section 2. The "
    "gated models get there almost at once. On real text, where the far signal is faint and mixed with "
    "everything else, that difference decides what can be learned at all.",
    icon=":material/insights:")

ui.share_box("vanishing-gradients")
