"""/encoder-decoder: translations by four trained models, and the one-vector bottleneck."""

import streamlit as st

from seqviz import charts, ui
from seqviz.analysis.translation_check import check
from seqviz.data.translation import reference_translation
from seqviz.ui import models

st.title("Encoder and decoder: the bottleneck")
st.markdown(
    "Translation turns one sequence into another of a different length. An **encoder** LSTM reads the English "
    "sentence; a **decoder** LSTM writes French one word at a time, each word fed back in, until it writes an "
    "end-of-sentence marker. Without attention, everything the decoder knows about the English must squeeze "
    "through one fixed-size vector, the encoder's final memory. Four translators trained here on a small "
    "English→French grammar about parcels, with the same data and the same training budget for the LSTMs."
)

picked = models.pick("translator", multi=True, label="Translators")
models.download_buttons(picked, "encoder-decoder")
if not picked:
    ui.share_box("encoder-decoder")
    st.stop()

st.header("1. Your sentence, translated")
tokens = ui.sentence_tokens("Type an English sentence in the sidebar, for example “where is my order ?”.")
if tokens:
    models.unknown_notes(picked, tokens)
    reference = reference_translation(tokens)
    if reference is None:
        st.caption("This sentence is not in the grammar the translators learned, so there is no reference "
                   "translation to compare with: judge the French yourself. Try one of the chapter's pairs below.")
    else:
        st.markdown("**Reference** (from the grammar): " + ui.escape_markdown(" ".join(reference)))
    for ref in picked:
        trace = models.trace(ref, "translator", tokens)
        checked = check(trace.out_tokens, reference)
        verdict = "" if checked.exact is None else (" ✓ exact" if checked.exact else
                                                    f" ✗ {checked.token_accuracy:.0%} of words right")
        st.markdown(f"**{ui.escape_markdown(ref.label)}**: {ui.escape_markdown(models.family_label(ref))}{verdict}"
                    f"  \n{ui.marked_tokens(checked)}")
        models.runaway_note(ref, trace, tokens)
    if reference is not None:
        st.caption("Words in red differ from the reference at that position.")

st.header("2. The chapter's sentences")
st.table(models.chapter_table(picked), border="horizontal", hide_index=True)
st.caption("✓: the model's greedy output is exactly the reference; otherwise its output is shown.")

st.header("3. Measured: quality against sentence length")
measured = models.measured(picked)


@ui.part("by-length")
def by_length(measured: dict, colours: dict) -> None:
    """Switching the measure redraws only this chart."""
    metric = st.radio("Measure", ["exact match", "token accuracy"], horizontal=True, key="metric",
                      bind="query-params", on_change=ui.rerun_part("by-length"))
    ui.draw(charts.make("translation-by-length", measured, colours, metric), "encoder-decoder-length")


by_length(measured, models.colours(picked))
plain, additive = models.quoted("bottleneck"), models.quoted("attention")
if plain is not None and additive is not None:
    st.markdown(
        f"On held-out sentences of 25 tokens or more, the shipped plain encoder-decoder gets "
        f"**{plain['metrics']['exact_match_ge25']:.0%}** exactly right, against "
        f"**{additive['metrics']['exact_match_ge25']:.0%}** with attention. The same fall-off as "
        "Bahdanau et al. (2014, Fig. 2): the longer the sentence, the more one vector has to hold. Beyond the "
        "dashed line the sentences are longer than any seen in training."
    )
if any(not ref.shipped for ref in picked):
    st.caption("Your own translators are measured here with the same evaluation code on the same held-out "
               "sentences as the shipped ones.")

ui.share_box("encoder-decoder")
