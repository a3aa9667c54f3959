"""/order: two emails with the same words and different meanings."""

import streamlit as st

from seqviz import charts, ui
from seqviz.analysis.bag_of_words import compare_bags
from seqviz.data.emails import CHAPTER_EMAILS, TEAMS
from seqviz.text import tokenize
from seqviz.ui import models

st.title("Order matters")
st.markdown(
    "Two support emails reached Cartwise on the same morning. They use almost the same words, yet one is a "
    "missing item for the refunds team and the other a lost parcel for delivery. The meaning is in the "
    "**order** of the words, and in what “it” points back to."
)

(first, first_label), (second, second_label) = CHAPTER_EMAILS
left, right = st.columns(2)
for column, (text, label), name in ((left, CHAPTER_EMAILS[0], "Email A"), (right, CHAPTER_EMAILS[1], "Email B")):
    with column.container(border=True):
        st.markdown(f"**{name}**: should go to *{TEAMS[label]}* (`{label}`)")
        st.text(text)

st.header("1. What a bag-of-words model sees")
bags = compare_bags(tokenize(first), tokenize(second))
ui.draw(charts.make("bag-of-words", bags, "Email A", "Email B"), "order-bags")
st.markdown(
    f"Counted, the two emails differ only in {', '.join(f'“{w}”' for w in bags.only_in_a)} against "
    f"{', '.join(f'“{w}”' for w in bags.only_in_b)}. The cosine similarity of their count vectors is "
    f"**{bags.cosine:.3f}** (1 means the same bag). A model that only counts words has almost nothing to go on."
)

st.header("2. What the trained models say")
st.markdown(
    "Five classifiers trained here on generated Cartwise emails: a bag-of-words naive Bayes, and four that "
    "read in order (a plain RNN, a GRU, an LSTM and a small transformer). Each bar shows the probability "
    "of each team. Add your own email classifiers (from the sidebar's *Your models*) to compare them."
)
picked = models.pick("email-classifier", multi=True, label="Email classifiers")
models.download_buttons(picked, "order")
if not picked:
    ui.share_box("order")
    st.stop()
a_col, b_col = st.columns(2)
for column, (text, label), name in ((a_col, CHAPTER_EMAILS[0], "Email A"), (b_col, CHAPTER_EMAILS[1], "Email B")):
    with column:
        traces = models.traces(picked, "email-classifier", tokenize(text))
        ui.show("email-classifier", traces, f"order-{name[-1].lower()}", title=f"{name}: should be {label}")
        right_models = [m for m, t in traces.items() if t.predicted == label]
        st.caption(ui.escape_markdown(f"Right on {name}: {', '.join(right_models) or 'none'}."))

st.header("3. Your sentence")
tokens = ui.sentence_tokens("Type a sentence in the sidebar to see how each model routes it.")
if tokens:
    mine = models.traces(picked, "email-classifier", tokens)
    models.unknown_notes(picked, tokens)
    ui.show("email-classifier", mine, "order-sentence")
    votes = ", ".join(f"{m}: {t.predicted}" for m, t in mine.items())
    st.caption(ui.escape_markdown(f"Predicted team per model: {votes}."))

st.header("4. Measured on held-out emails")
measured = models.measured(picked)
colours = models.colours(picked)
ui.draw(charts.make("order-twins", measured, colours), "order-twins")
bow = models.quoted("bag of words")
if bow is not None:
    bow = bow["metrics"]
    st.markdown(
        f"The twins set holds {bow['n_twin_pairs']} pairs of generated emails with **exactly** the same words and "
        f"different teams. Naive Bayes multiplies one factor per word, so two emails with the same words get the "
        f"same scores and the same answer: the shipped bag of words gave both twins the same team in "
        f"**{bow['twins_same_prediction']:.0%}** of pairs, so it can be right on at most one of each pair, "
        f"50%. That is not bad luck, it is the model: counting words throws the order away."
    )
yours = [ref for ref in picked if not ref.shipped]
if yours:
    st.caption(ui.escape_markdown(
        "Measured here with the same evaluation code and the same held-out emails as the shipped models: "
        + "; ".join(f"{ref.label}: twins {measured[ref.label]['metrics']['twins_accuracy']:.1%}, same answer for "
                    f"both twins in {measured[ref.label]['metrics']['twins_same_prediction']:.0%} of pairs"
                    for ref in yours) + "."))

ui.share_box("order")
