"""/attention: the chapter's worked example of attention, editable."""

import streamlit as st

from seqviz import charts, ui
from seqviz.analysis import attention_example as ex
from seqviz.charts.base import position_labels
from seqviz.charts.worked import attention_steps_data
from seqviz.limits import MAX_WORD_CHARS, VECTOR_RANGE
from seqviz.ui import models

st.title("Attention: let the decoder look back")
st.markdown(
    "Instead of squeezing a sentence into one final memory, keep the encoder's memory at every word and "
    "let the decoder choose where to look. It compares what it needs now, the query **q**, with each "
    "word's vector **k**ⱼ, turns the scores into weights with softmax, and takes the weighted average."
)
# Three columns, so a phone stacks the formulas instead of clipping one long line.
for column, formula in zip(st.columns(3), (r"\text{score}_j = \mathbf{q}\cdot\mathbf{k}_j",
                                           r"\alpha_j = \frac{e^{\text{score}_j}}{\sum_i e^{\text{score}_i}}",
                                           r"\text{context} = \sum_j \alpha_j\,\mathbf{k}_j"), strict=True):
    column.latex(formula)

st.header("1. The worked example, by hand")
low, high = VECTOR_RANGE
number = dict(min_value=low, max_value=high, step=0.1, format="%.2f", bind="query-params")

WORKED, STEP = "worked-example", "one-step"
changed = ui.rerun_part(WORKED)


@ui.part(WORKED)
def worked_example() -> None:
    """The example's twelve inputs change only this part."""
    inputs, results = st.columns([2, 3], gap="large")
    with inputs:
        st.markdown("**The decoder's query q**: what am I looking for?")
        q1, q2 = st.columns(2)
        query = (q1.number_input("q, dimension 1", value=ex.CHAPTER_QUERY[0], key="q1", **number, on_change=changed),
                 q2.number_input("q, dimension 2", value=ex.CHAPTER_QUERY[1], key="q2", **number, on_change=changed))
        st.caption(f"Each number from {low:g} to {high:g}.")
        st.markdown("**Encoder states**: one vector per input word")
        words, keys = [], []
        for j, (word, key) in enumerate(zip(ex.CHAPTER_WORDS, ex.CHAPTER_KEYS, strict=True), start=1):
            c0, c1, c2 = st.columns([2, 1, 1])
            typed = c0.text_input(f"Word {j}", value=word, max_chars=MAX_WORD_CHARS, key=f"w{j}", bind="query-params",
                                    on_change=changed)
            words.append(typed.strip() or f"word {j}")
            keys.append((c1.number_input(f"k{j}, dim 1", value=key[0], key=f"k{j}a", **number, on_change=changed),
                         c2.number_input(f"k{j}, dim 2", value=key[1], key=f"k{j}b", **number, on_change=changed)))
        if len(set(words)) < len(words):
            st.caption("Two words have the same text; the chart numbers them to keep them apart.")

    worked = ex.worked_attention(query, keys, words)
    table = attention_steps_data(worked)

    with results:
        st.markdown("**① Score** each word with a dot product, **② softmax** the scores into weights, "
                    "**③ mix** the word vectors by those weights.")
        ui.table(table, ex.number, text_columns=("word",))
        total = worked.exp_scores.sum()
        st.markdown(
            f"② The e^score column adds to **{ex.number(total)}**; dividing each by it gives the weights "
            + ", ".join(f"**{w:.3f}**" for w in worked.weights)
            + f", which add to **{worked.weights.sum():.3f}**."
        )
        st.markdown(f"③ Context vector = Σ αⱼ kⱼ = **({worked.context[0]:.3f}, {worked.context[1]:.3f})**, "
                    f"mostly “{ui.escape_markdown(worked.focus)}”.")

    left, right = st.columns(2, gap="large")
    with left:
        ui.draw(charts.make("attention-weights", worked), "attention-weights")
    with right:
        ui.draw(charts.make("context-mix", worked), "attention-context")

    st.subheader("Self-test: what if the query were (0, 1)?")
    turned = ex.worked_attention(ex.SELF_TEST_QUERY, keys, words)
    with st.expander("Answer, computed with the word vectors above"):
        ui.table(attention_steps_data(turned), ex.number, text_columns=("word",))
        st.markdown(ui.escape_markdown(ex.describe_change(worked, turned)))


worked_example()

st.header("2. The same steps inside a trained translator")
st.markdown(
    "The additive-attention translator (Bahdanau et al. 2014) does exactly this at every French word it "
    "writes, with learned vectors of 64 and 128 numbers instead of two. Its query is the decoder's "
    "previous state sₜ₋₁, its word vectors are the encoder's states hⱼ, and its score is a small learned "
    "network, vᵀ tanh(W sₜ₋₁ + U hⱼ), instead of a plain dot product. The dot-product translator (Luong et al. "
    "2015) scores with sₜ · W hⱼ after its decoder step."
)


@ui.part(STEP)
def one_step(stepwise: dict) -> None:
    """Picking another output word (or translator) reruns only this part."""
    st.subheader("One step, read like the worked example")
    label, picked_step = ui.output_word(stepwise, STEP, "stepmodel", "step")
    trace = stepwise[label]
    step = trace.steps[min(picked_step, len(trace.steps) - 1)]
    st.markdown(f"**Writing “{ui.escape_markdown(step.output_token)}”**")
    ui.show("attention-step", {label: trace}, "attention-step", step=picked_step)
    top = sorted(zip(step.weights, position_labels(trace.src_tokens), strict=True), reverse=True)[:3]
    mix = " + ".join(f"{w:.2f} × h({ui.escape_markdown(word)})" for w, word in top)
    st.markdown(f"③ The context for “{ui.escape_markdown(step.output_token)}” is the weighted average of the "
                f"encoder states, {step.context.shape[0]} numbers: context ≈ {mix} + … "
                f"(the weights add to {step.weights.sum():.3f}).")


picked = models.pick("alignment", multi=True, label="Translators with attention")
models.download_buttons(picked, "attention")
tokens = ui.sentence_tokens("Type an English sentence in the sidebar, for example “where is my order ?”.") \
    if picked else None
if tokens:
    models.unknown_notes(picked, tokens)
    traces = models.traces(picked, "alignment", tokens)
    st.markdown("  \n".join(f"**{ui.escape_markdown(label)}** writes: "
                             + ui.escape_markdown(" ".join(trace.out_tokens) or "(nothing)")
                             for label, trace in traces.items()))
    for ref in picked:
        models.runaway_note(ref, traces[ref.label], tokens)
    st.subheader("Alignments: where each French word looked")
    ui.show("alignment", traces, "attention-alignment")
    st.caption("Each row adds to 1 (for a transformer: its last layer's cross-attention, averaged over heads). "
               "Look for the diagonal, and where it bends: try “my red phone never arrived .” for an adjective "
               "after its noun (“téléphone rouge”) and a negation around the verb (“n' est jamais arrivé”), or "
               "the chapter's second email, where “le” in “le contenir” looks back at the word it stands for.")
    stepwise = {ref.label: traces[ref.label] for ref in models.fitting(picked, "attention-step")
                if traces[ref.label].steps}  # a translator that wrote nothing has no step to show
    if stepwise:
        one_step(stepwise)

st.info("Nothing in these three steps waits for a previous step: every word is scored, weighted and "
        "mixed at the same moment. That is what lets the transformer drop recurrence.",
        icon=":material/bolt:")

ui.share_box("attention")
