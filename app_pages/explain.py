"""/explain: is attention an explanation? Attention beside what the output really depended on."""

import streamlit as st

from seqviz import ui, views
from seqviz.charts.explain import ABLATION_NAMES
from seqviz.data.emails import CHAPTER_EMAILS
from seqviz.text import tokenize
from seqviz.ui import models

st.title("Is attention an explanation?")
st.markdown(
    "The pages before drew attention weights as where a model “looks”, and it is tempting to read them as the "
    "reason for what it wrote. Other measures ask the model directly what an output depended on: the **gradient** "
    "(how fast the output's log-probability moves when a word's vector moves), **gradient × input** and "
    "**integrated gradients** (how much of the log-probability each word's vector accounts for, to first order "
    "and along a path from no words at all), and **leave one out** (how much the output's log-probability drops "
    "when the word is replaced by an unknown word). If attention explains the output, it should rank the words as "
    "they do, and the output should change when the weights do."
)
st.markdown(
    "The research is split. Jain and Wallace (2019, *Attention is not Explanation*) found attention in text "
    "classifiers often unrelated to gradient and leave-one-out importance, and that very different weights gave "
    "the same prediction. Wiegreffe and Pinter (2019, *Attention is not not Explanation*) answered with tests, a "
    "uniform-attention baseline among them, showing where attention does carry the decision. Vashishth et al. "
    "(2019) found it matters far more in translation than in classifying one text. Measure it here, on your "
    "sentence and on models trained in this lab."
)
st.caption(
    "Kendall's τ compares two rankings of the same words: 1 is the same order, 0 no relation, −1 the reverse; it is "
    "undefined when one measure gives every word the same value. Every pair of words counts the same in τ, so when "
    "attention is peaked (one or two words take nearly all of it) the order of the dozen near-zero words below "
    "them decides τ: it can be near zero, or negative, while attention and the measure put the same word first "
    "(Email B below). So each comparison also gives weighted τ, where a swap among the top words counts most, and "
    "whether the two put the same word first and the same three words in their top 3; the verdicts rest on all "
    "of them. Every figure on this page is a mean, every share rounded to one decimal.")

st.header("1. A translator, one output word at a time")
picked = models.pick("explain-translation", multi=True, label="Translators with attention")
models.download_buttons(picked, "explain-translators")
tokens = ui.sentence_tokens("Type an English sentence in the sidebar, for example “where is my order ?”.") \
    if picked else None
STEP = "explain-step"


@ui.part(STEP)
def one_word(explained: dict) -> None:
    """Picking another output word (or translator) reruns only this part."""
    label, step = ui.output_word(explained, STEP, "explainmodel", "explainword")
    st.markdown(ui.escape_markdown(views.get("explain-translation").summary(explained[label], step=step)))
    ui.show("explain-translation", {label: trace}, "explain-word", step=step)


if tokens:
    models.unknown_notes(picked, tokens)
    explained = models.traces(picked, "explain-translation", tokens)
    written = {label: trace for label, trace in explained.items() if trace.out_tokens}
    for label, trace in explained.items():
        st.markdown(f"**{ui.escape_markdown(label)}** writes “{ui.escape_markdown(' '.join(trace.out_tokens))}”.  \n"
                    + ui.escape_markdown(views.get("explain-translation").summary(trace)).replace("\n", "  \n"))
    if written:
        one_word(written)
    st.caption(ui.escape_markdown(
        "Gradient: the length of ∂ log p(yₜ) / ∂eⱼ, the gradient of the written word's log-probability with respect "
        "to source word j's vector eⱼ (its size, not its direction: a word can matter either way). Gradient × input: "
        "that gradient times eⱼ, a first guess at what taking the vector away would cost. Integrated gradients: the "
        "same product, with the gradient averaged along the straight path from all-zero word vectors to the real "
        "ones; a word's parts add up to the change of log p(yₜ) along that path. Leave one out: log p(yₜ) minus "
        "log p(yₜ) with word j replaced by <unk>, the rest of the translation kept as it was written. For the last "
        "three, below zero means the word was in the way. All four are computed by Captum."))

st.header("2. The same over held-out sentences")
held = {}
if picked:
    held = {ref.label: models.held_out_study(ref, "explain-translation") for ref in picked}
    colours = models.colours(picked)
    ui.show("explain-translation", held, "explain-taus", colours, figure="taus")
    st.markdown("  \n".join(f"**{ui.escape_markdown(label)}**: {ui.escape_markdown(study['summary'])}"
                            for label, study in held.items()))
    st.caption("Held out, the two measures Jain and Wallace compared attention with: integrated gradients take 50 "
               "or more passes of the model for every output word, and are computed for your sentence only.")

st.header("3. Does the output depend on the weights?")
st.markdown(
    "Keep everything else and replace the attention weights as the model translates: by **uniform** weights "
    "(every source word the same), or by the model's **own weights shuffled** over the source words (the same "
    "numbers, on the wrong words). If the translation survives, the weights did not matter."
)
if picked and tokens:
    rows = {"weights": [ABLATION_NAMES[a] for a in ABLATION_NAMES]}
    for ref in picked:
        replaced = models.trace(ref, "attention-replaced", tokens)
        rows[ref.label] = [" ".join(replaced[a]) or "(nothing)" for a in ABLATION_NAMES]
    st.table(rows, border="horizontal", hide_index=True)
if held:
    ui.show("explain-translation", held, "explain-replaced", figure="attention-replaced")
    st.caption(f"Exact match on {next(iter(held.values()))['sentences']} held-out sentences of up to 30 tokens, "
               "spread over their lengths; the shuffle is seeded, the same for every visitor.")

st.header("4. An email classifier that attends")
st.markdown(
    "Jain and Wallace studied classifiers that read a text with a (two-way) LSTM and pool its states into one "
    "vector with attention before deciding. This lab's *attention-lstm* is one: trained on the Cartwise emails, "
    "it weighs every word's state with α and routes the email from their weighted average. Here are the "
    "measures on the chapter's two emails and on your sentence, for the team it chose."
)
classifiers = models.pick("explain-classifier", label="Email classifier that attends")
models.download_buttons(classifiers, "explain-classifier")
emails, email_study = {}, None
if classifiers:
    ref = classifiers[0]
    texts = {"Email A": CHAPTER_EMAILS[0][0], "Email B": CHAPTER_EMAILS[1][0]}
    if tokens:
        texts["Your sentence"] = " ".join(tokens)
    for name, text in texts.items():
        emails[name] = models.trace(ref, "explain-classifier", tokenize(text))
    for name, explained in emails.items():
        st.markdown(f"**{name}**: {ui.escape_markdown(views.get('explain-classifier').summary(explained))}")
        ui.show("explain-classifier", {name: explained}, f"explain-email-{ui.slug(name)}")
    email_study = models.held_out_study(ref, "explain-classifier")
    ui.show("explain-classifier", {ref.label: email_study}, "explain-email-taus", models.colours([ref]),
            figure="taus")
    st.markdown(ui.escape_markdown(email_study["summary"]))
    test = email_study["permutation"]
    if test is not None:
        st.subheader("The permutation test")
        st.markdown(
            f"Shuffle the attention weights of each of the {test.emails} held-out emails over its own words "
            f"({test.permutations} shuffles each, seeded) and let the model decide again. "
            + ui.escape_markdown(email_study["permutation_summary"]))

st.header("5. What “it” points back to")
st.markdown(
    "The chapter's two emails mean different things because of what “it” refers back to: the charger in one, "
    "the parcel in the other. Where does “it” attend in each layer and head of the trained transformer "
    "classifier, and does the decision rest on that word?"
)
readers = models.pick("pronoun", label="Transformer classifier")
models.download_buttons(readers, "explain-pronoun")
pronouns = {}
if readers:
    ref = readers[0]
    for name, (text, _) in zip(("Email A", "Email B"), CHAPTER_EMAILS, strict=True):
        pronouns[name] = models.trace(ref, "pronoun", tokenize(text))
        found = pronouns[name]
        st.markdown(f"**{name}**: “{ui.escape_markdown(text)}”")
        if found is not None:
            ui.show("pronoun", {name: found}, f"explain-it-{name[-1].lower()}")
        st.caption(ui.escape_markdown(views.get("pronoun").summary(found)))

st.header("What these models say")
said = [f"**{ui.escape_markdown(label)}**: {ui.escape_markdown(study['verdict'])}" for label, study in held.items()]
if email_study is not None:
    said.append(f"**{ui.escape_markdown(classifiers[0].label)}**: {ui.escape_markdown(email_study['verdict'])}")
said += [f"{name}: {ui.escape_markdown(views.get('pronoun').summary(found))}" for name, found in pronouns.items()
         if found is not None]
if said:
    st.markdown("  \n".join(said))
    st.caption("Read from the numbers above as this page computed them; a model of your own gets its own sentences.")
else:
    st.info("Pick a model above to see what it says.", icon=":material/touch_app:")

ui.share_box("explain")
