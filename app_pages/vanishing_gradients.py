"""/vanishing-gradients: gradients through time, measured on the trained models."""

import streamlit as st

from seqviz import charts, families, ui
from seqviz.charts.metrics import memory_curve
from seqviz.ui import models

st.title("Vanishing (and exploding) gradients")
st.markdown(
    "Training an RNN is backpropagation through time: an email of 100 words is, for the chain rule, a network "
    "100 layers deep. Each step back multiplies the gradient by that step's Jacobian ∂hₜ/∂hₜ₋₁, so the "
    "learning signal from a word k steps back is a product of k factors. Here it is measured by autograd on "
    "models trained in this lab."
)

st.header("1. Which words can still move the decision?")
saliency_models = models.pick("saliency", multi=True, label="Email classifiers")
models.download_buttons(saliency_models, "saliency")
tokens = ui.sentence_tokens()
if tokens and saliency_models:
    models.unknown_notes(saliency_models, tokens)
    found = models.traces(saliency_models, "saliency", tokens)
    ui.show("saliency", found, "gradients-saliency", models.colours(saliency_models))
    spans = "; ".join(f"{name}: {s.norms[0] / s.norms[-1]:.2g}×" for name, s in found.items() if s.norms[-1] > 0)
    st.markdown(
        "For each model: the size of the gradient of its chosen team's score with respect to each word's "
        "vector, ‖∂score/∂xₜ‖, against how far the word is from the end. A word with a tiny gradient barely "
        "changes the decision, and training cannot learn much from it. The first word's gradient relative to "
        f"the last word's, on this sentence: {ui.escape_markdown(spans)}. The measurement below follows the "
        "gradient over 100 steps and more."
    )

st.header("2. ‖∂h_T/∂h_k‖ on long sequences")
recurrent = models.pick("recurrent", multi=True, label="Recurrent models")
models.download_buttons(recurrent, "recurrent")
JACOBIAN, TRAINING = "jacobian", "memory-steps"


@ui.part(JACOBIAN)
def jacobians(recurrent) -> None:
    """The sliders change only this part: moving one reruns it alone."""
    c1, c2 = st.columns(2)
    length = c1.select_slider("Sequence length T", options=[25, 50, 100, 150, 200], value=100, key="T",
                              bind="query-params", on_change=ui.rerun_part(JACOBIAN))
    scale = c2.select_slider("Scale the plain RNNs' recurrent weights W_h by",
                             options=[0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0], value=1.0, key="scale", bind="query-params",
                             on_change=ui.rerun_part(JACOBIAN))
    curves = {}
    for ref in recurrent:
        curves[(ref.label, "untrained")] = models.jacobian(ref, False, length)
        curves[(ref.label, "trained")] = models.jacobian(ref, True, length)
    scaled_state = f"with W_h × {scale:g}"  # after "trained" and "untrained" in the legend: dotted
    plain = [ref for ref in recurrent if families.get(ref.family).pascanu_bound]
    if scale != 1.0:
        for ref in plain:
            curves[(ref.label, scaled_state)] = models.jacobian(ref, True, length, scale)
    far = min(20, length - 1)
    if curves:
        ui.draw(charts.make("jacobian", curves, models.colours(recurrent)), "gradients-jacobian")
        text = (f"Averaged over 3 random word sequences of {length} words (geometric mean of the spectral norm). "
                "The grey dotted line is Pascanu et al.'s (2013) bound for a plain RNN, ‖∂h_T/∂h_k‖ ≤ η^(T−k) with "
                "η = σ_max(W_h) (γ = 1 for tanh)")
        if plain:
            rnn = curves[(plain[0].label, "trained")]
            text += (f": for {ui.escape_markdown(plain[0].label)} η = **{rnn.eta:.2f}**, and {far} steps back the "
                     f"measured norm is **{rnn.norm[far - 1]:.1e}**")
            if rnn.eta > 1:
                text += (" — with η above 1 the bound allows growth, yet the measurement vanishes: tanh's slopes "
                         "1 − h² pull every factor down (the bound is cut off where it leaves the chart)")
        text += "."
        lstm = next((ref for ref in recurrent if families.get(ref.family).lstm_gates), None)
        if lstm is not None:
            kept = curves[(lstm.label, "trained")].norm[far - 1]
            text += (f" The trained {ui.escape_markdown(lstm.label)} keeps **{kept:.1e}** over {far} steps: its cell "
                     "state is the clean path.")
        st.markdown(text)
    if scale != 1.0 and not plain:
        st.caption("The slider scales the recurrent weights of plain RNNs: pick one above to see it.")
    for ref in plain if scale != 1.0 else []:
        scaled = curves[(ref.label, scaled_state)]
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
        st.info(ui.escape_markdown(f"{ref.label} with W_h × {scale:g}: η = {scaled.eta:.2f}. {verdict}"),
                icon=":material/insights:")
    st.caption("Untrained: the same model, same sizes and seed, before training. The slider scales only the "
               "trained plain RNNs' W_h (a copy; the model itself is not changed).")


jacobians(recurrent)

st.header("3. Can it learn twenty steps back?")
memory = models.pick("memory", multi=True, label="Memory models")
models.download_buttons(memory, "memory")
shipped_memory = [ref for ref in memory if ref.shipped]
curve_source = models.shipped_meta(shipped_memory[0].name) if shipped_memory else None
steps = [point["step"] for point in (curve_source or {}).get("metrics", {}).get("learning_curve", [])]
st.markdown(
    "The plainest long-range task: the label is the first word, followed by 1 to 60 distractor words. The "
    "shipped models were trained with the same data, steps and learning rate; held-out accuracy was measured "
    "as they trained. Move through training:"
)


@ui.part(TRAINING)
def learning_to_remember(memory, shipped_memory, steps) -> None:
    """The training-steps slider changes only this part."""
    step = None
    if len(steps) > 1:
        step = st.select_slider("Training steps so far", options=steps, value=300 if 300 in steps else steps[0],
                                key="steps", bind="query-params",
                                on_change=ui.rerun_part(TRAINING))
    metadata = models.measured(memory)
    if memory:
        ui.show("memory", {label: meta["metrics"] for label, meta in metadata.items()}, "gradients-memory",
                models.colours(memory), step=step)
    if any(not ref.shipped for ref in memory):
        st.caption("Your own models are drawn as they are now (measured here on the same held-out sequences), "
                   "not as they were during training.")

    def at_20(label: str, when: int | None) -> float:
        return memory_curve(metadata[label], when)["20"]

    if shipped_memory and step is not None:
        chance = metadata[shipped_memory[0].label]["metrics"]["chance"]
        st.markdown(
            f"Accuracy at distance 20 after {step} steps: "
            + ", ".join(f"{ui.escape_markdown(r.label)} **{at_20(r.label, step):.0%}**" for r in shipped_memory)
            + f" (chance is {chance:.1%}). After all {steps[-1]} steps: "
            + ", ".join(f"{ui.escape_markdown(r.label)} **{at_20(r.label, None):.0%}**" for r in shipped_memory) + "."
        )
        first_full = {r.label: next((p["step"] for p in metadata[r.label]["metrics"]["learning_curve"]
                                     if min(p["accuracy_by_distance"].values()) >= 0.95), None) for r in shipped_memory}
        st.info(
            "Measured here: "
            + "; ".join(f"{ui.escape_markdown(n)} is right 95% of the time at every distance from step {s}"
                        if s else f"{ui.escape_markdown(n)} never is within {steps[-1]} steps"
                        for n, s in first_full.items())
            + ". On this clean task, with Adam and gradient clipping, the plain RNN does learn to look 60 steps back, "
            "but it learns far distances last and slowest: its gradient from far words is tiny, as in section 2. The "
            "gated models get there almost at once. On real text, where the far signal is faint and mixed with "
            "everything else, that difference decides what can be learned at all.",
            icon=":material/insights:")


learning_to_remember(memory, shipped_memory, steps)

ui.share_box("vanishing-gradients")
