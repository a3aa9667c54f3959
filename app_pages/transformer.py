"""/transformer: why recurrence lost. The chapter's code, attention per layer and head, measured speed."""

import streamlit as st

from seqviz import charts, story, ui, views
from seqviz.analysis.timing import ATTENTION_LABEL, LSTM_LABEL
from seqviz.charts.base import position_labels
from seqviz.ui import models

CHAPTER_CODE = '''import torch
import torch.nn as nn

emails = torch.randn(8, 40, 64)          # (1) 8 emails, 40 words each, 64 numbers per word

lstm = nn.LSTM(input_size=64, hidden_size=128, batch_first=True)
out, (h, c) = lstm(emails)               # (2) reads the 40 words in order
print(out.shape, h.shape)

attn = nn.MultiheadAttention(embed_dim=64, num_heads=4, batch_first=True)
mixed, weights = attn(emails, emails, emails)   # (3) every word looks at every word, all at once
print(mixed.shape, weights.shape)'''

st.title("Why recurrence lost")
st.markdown(
    "Each step of an RNN needs the step before it: a 500-word document is 500 calculations one after another, "
    "however many the hardware could do at once. The transformer (Vaswani et al. 2017) kept attention and "
    "dropped the recurrence: every word attends to every other word directly, all positions at the same "
    "moment, with position information added to each word to keep the order."
)

st.header("1. The chapter's code, run here")
st.code(CHAPTER_CODE, language="python")
shapes = ui.chapter_shapes()
st.code(f"torch.Size({list(shapes.out)}) torch.Size({list(shapes.h)})\n"
        f"torch.Size({list(shapes.mixed)}) torch.Size({list(shapes.weights)})", language=None)
st.markdown(
    f"`out` {shapes.out}: the memory after every one of the 40 words, which the LSTM computed in order. "
    f"`h` {shapes.h}: the final memory of each email. `mixed` {shapes.mixed}: every word's new vector, a mix "
    f"of all words. `weights` {shapes.weights}: for each email a 40 × 40 table of how much each word attended "
    "to each other word, computed with matrix multiplications rather than a 40-step loop."
)

st.header("2. Self-attention of a trained email classifier, every layer and head")
tokens = ui.sentence_tokens()
encoder = models.pick("self-attention", label="Transformer classifier")
models.download_buttons(encoder, "transformer-classifier")
if tokens and encoder:
    models.unknown_notes([encoder[0]], tokens)
    ui.show("self-attention", models.traces(encoder[:1], "self-attention", tokens), "transformer-self-attention")
    st.caption("Rows: the word attending; columns: the word it looks at; each row adds to 1. Different heads "
               "learn to look for different things, all in one step.")

NEURONS = "neurons"


@ui.part(NEURONS)
def inside_one_head(ref, tokens) -> None:
    st.header("3. Inside one head: where the weights come from")
    st.markdown(
        "Each row above is the chapter's three steps, run by one head for one word. The word asking turns its "
        "vector into a **query** q; every word turns its own into a **key** k (both learned projections, d_k "
        "numbers per head). (1) **Score**: multiply q and each k number by number and add the products up, "
        "q · k; divide by √d_k so the scores do not grow with the number of dimensions. (2) **Softmax**: turn "
        "the scores into weights that add to 1. (3) **Mix**: the head's output for the word is the weighted "
        "average of every word's value vector. Pick a layer, a head and the word asking (BertViz's neuron view):")
    trace = models.trace(ref, NEURONS, tokens)
    layers, heads, _, _ = trace.shape
    words = position_labels(trace.tokens)
    row = st.columns(2)
    layer = row[0].radio("Layer", list(range(layers)), format_func=lambda n: f"layer {n + 1}", horizontal=True,
                         key="nlayer", bind="query-params", on_change=ui.rerun_part(NEURONS))
    head = row[1].radio("Head", list(range(heads)), format_func=lambda n: f"head {n + 1}", horizontal=True,
                        key="nhead", bind="query-params", on_change=ui.rerun_part(NEURONS))
    # (a word kept from a longer sentence is named as the last word, then the widget moves there)
    query = st.select_slider("Word asking (the query)", options=list(range(len(words))),
                             format_func=lambda i: words[min(i, len(words) - 1)],
                             key="nword",
                             bind="query-params", on_change=ui.rerun_part(NEURONS))
    chosen = {"layer": layer, "head": head, "query": min(query, len(words) - 1)}
    ui.show(NEURONS, {ref.label: trace}, "transformer-neuron-vectors", figure="neuron-vectors", **chosen)
    st.caption("Red: positive numbers, blue: negative. Where q and k_j have the same sign the product is positive "
               "and raises q · k_j; opposite signs lower it.")
    ui.show(NEURONS, {ref.label: trace}, "transformer-neuron-scores", figure="neuron-scores", **chosen)
    ui.show(NEURONS, {ref.label: trace}, "transformer-neuron-mix", figure="neuron-mix", **chosen)
    st.markdown(ui.escape_markdown(views.get(NEURONS).summary(trace, **chosen)))


if tokens and encoder:
    inside_one_head(encoder[0], tokens)

st.header("4. Cross-attention of a trained transformer translator")
translator = models.pick("cross-attention", label="Transformer translator")
models.download_buttons(translator, "transformer-translator")
if tokens and translator:
    models.unknown_notes([translator[0]], tokens)
    translated = models.traces(translator[:1], "cross-attention", tokens)
    trace = next(iter(translated.values()))
    st.markdown("It writes: " + ui.escape_markdown(" ".join(trace.out_tokens) or "(nothing)"))
    models.runaway_note(translator[0], trace, tokens)
    ui.show("cross-attention", translated, "transformer-cross-attention")

st.header("5. Measured on this machine")
if st.button("Measure again", icon=":material/timer:"):
    ui.forward_times.clear()
rows = ui.forward_times()
ui.draw(charts.make("layer-timing", rows), "transformer-timing")
by = {(r.length, r.layer): r.milliseconds for r in rows}
longest = max(r.length for r in rows)
st.markdown(
    f"A batch of 8 sequences, 64 numbers per word, one CPU thread. At T = {longest} the LSTM layer takes "
    f"**{by[(longest, LSTM_LABEL)]:.1f} ms** in {longest} steps that must run one after another; the "
    f"self-attention layer takes **{by[(longest, ATTENTION_LABEL)]:.1f} ms** in one step of matrix "
    "multiplications, work a GPU can spread over thousands of cores at once. (On a CPU, attention's T × T "
    "table grows with the square of the length, so its advantage here is smaller than on a GPU.)"
)
metadata = {name: meta for name in story.models("throughput") if (meta := models.shipped_meta(name)) is not None}
transformer_name, lstm_name = story.models("transformer translator")[0], story.models("recurrent translator")[0]
if metadata:
    throughput = charts.make("throughput", metadata, list(metadata))
    ui.draw(throughput, "transformer-throughput")
    speed = throughput.table.set_index("model")["sentence pairs per second"]
    if {transformer_name, lstm_name} <= set(speed.index):
        transformer, lstm = speed[transformer_name], speed[lstm_name]
        if transformer < lstm:
            st.markdown(
                f"**Here the transformer trained slower than the attention LSTM**: {transformer:.0f} against "
                f"{lstm:.0f} sentence pairs per second. The chapter says the transformer trained faster: on "
                "hardware that works on every position of a sentence at once. On one CPU thread nothing runs at "
                "once, and at these small sizes the transformer's two layers of four heads do more arithmetic per "
                "sentence than the LSTM's one layer, so its advantage cannot show on this machine.")
        else:
            st.markdown(f"**Here the transformer trained faster than the attention LSTM**: {transformer:.0f} "
                        f"against {lstm:.0f} sentence pairs per second, as the chapter says, even on one CPU thread.")
st.caption("From the training command's own clock (steps × batch size ÷ training seconds), one thread per model, "
           "with other work sharing the machine: rough figures. `python -m benchmarks` measures them again.")

st.subheader("Self-test: the single reason the transformer could be trained on far more text")
with st.expander("Answer, from the measurements above"):
    lstm_ms, attention_ms = by[(longest, LSTM_LABEL)], by[(longest, ATTENTION_LABEL)]
    st.markdown(
        "It processes all the positions of a sequence at the same moment instead of one step after another, so "
        "it can use parallel hardware fully. Measured on this page a moment ago: at T = "
        f"{longest}, the LSTM layer needed {longest} steps in a row and {lstm_ms:.1f} ms; the self-attention layer "
        f"needed one step and {attention_ms:.1f} ms. No amount of extra hardware shortens the LSTM's chain of "
        f"{longest} steps; the attention step is matrix multiplications that a GPU spreads over thousands of "
        "cores. The training throughputs above were clocked on one CPU thread, with little parallel hardware "
        "to use and other work sharing the machine, so they cannot show that advantage: the transformer's "
        "gain is the parallel hardware it can use, not fewer operations."
    )

ui.share_box("transformer")
