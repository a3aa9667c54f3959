"""/explain: is attention an explanation? Attention beside what the output really depended on."""

import statistics

import streamlit as st

from seqviz import ui, views
from seqviz.analysis.explain import mean_tau
from seqviz.charts.explain import ABLATION_NAMES
from seqviz.data.emails import CHAPTER_EMAILS
from seqviz.text import tokenize
from seqviz.ui import models

st.title("Is attention an explanation?")
st.markdown(
    "The pages before drew attention weights as where a model “looks”, and it is tempting to read them as the "
    "reason for what it wrote. Two other measures ask the model directly what an output depended on: the "
    "**gradient** (how fast the output's log-probability moves when a word's vector moves) and **leave one out** "
    "(how much the output's log-probability drops when the word is replaced by an unknown word). If attention "
    "explains the output, it should rank the words as they do, and the output should change when the weights do."
)
st.markdown(
    "The research is split. Jain and Wallace (2019, *Attention is not Explanation*) found attention in text "
    "classifiers often unrelated to gradient and leave-one-out importance, and that very different weights gave "
    "the same prediction. Wiegreffe and Pinter (2019, *Attention is not not Explanation*) answered with tests, a "
    "uniform-attention baseline among them, showing where attention does carry the decision. Vashishth et al. "
    "(2019) found it matters far more in translation than in classifying one text. Measure it here, on your "
    "sentence and on models trained in this lab."
)
st.caption("Kendall's τ compares two rankings of the same words: 1 is the same order, 0 no relation, −1 the "
           "reverse. It is undefined when one measure gives every word the same value.")

st.header("1. A translator, one output word at a time")
picked = models.pick("explain-translation", multi=True, label="Translators with attention")
models.download_buttons(picked, "explain-translators")
tokens = ui.sentence_tokens("Type an English sentence in the sidebar, for example “where is my order ?”.") \
    if picked else None
STEP = "explain-step"


def tau_text(value) -> str:
    return "undefined" if value is None else f"**{value:+.2f}**"


def ranks(agree) -> str:
    """How a mean τ reads in words."""
    if agree is None:
        return "(τ undefined) against"
    return "much as" if agree >= 0.5 else "somewhat as" if agree >= 0.2 else "unlike"


@ui.part(STEP)
def one_word(explained: dict) -> None:
    """Picking another output word (or translator) reruns only this part."""
    label, step = ui.output_word(explained, STEP, "explainmodel", "explainword")
    trace = explained[label]
    st.markdown(f"**Writing “{ui.escape_markdown(trace.out_tokens[step])}”**: attention against the gradient "
                f"τ = {tau_text(trace.tau_gradient[step])}, against leave-one-out "
                f"τ = {tau_text(trace.tau_leave_one_out[step])}.")
    ui.show("explain-translation", {label: trace}, "explain-word", step=step)


if tokens:
    models.unknown_notes(picked, tokens)
    explained = models.traces(picked, "explain-translation", tokens)
    written = {label: trace for label, trace in explained.items() if trace.out_tokens}
    st.markdown("  \n".join(
        f"**{ui.escape_markdown(label)}** writes “{ui.escape_markdown(' '.join(trace.out_tokens) or '(nothing)')}”. "
        f"Mean τ over its words: against the gradient {tau_text(trace.mean_tau_gradient)}, against leave-one-out "
        f"{tau_text(trace.mean_tau_leave_one_out)}." for label, trace in explained.items()))
    if written:
        one_word(written)
    st.caption(ui.escape_markdown(
        "Gradient: the length of ∂ log p(yₜ) / ∂eⱼ, the gradient of the written word's log-probability with respect "
        "to source word j's vector eⱼ (its size, not its direction: a word can matter either way). Leave one out: "
        "log p(yₜ) minus log p(yₜ) with word j replaced by <unk>, the rest of the translation kept as it was "
        "written; below zero, the word was in the way."))

st.header("2. The same over held-out sentences")
held = {}
if picked:
    held = {ref.label: models.held_out_study(ref, "explain-translation") for ref in picked}
    colours = models.colours(picked)
    ui.show("explain-translation", held, "explain-taus", colours, figure="taus")
    lines = []
    for label, study in held.items():
        taus = study["taus"]
        gradient = statistics.median(taus.gradient) if taus.gradient else None
        loo = statistics.median(taus.leave_one_out) if taus.leave_one_out else None
        lines.append(f"**{ui.escape_markdown(label)}**: median τ against the gradient {tau_text(gradient)}, against "
                     f"leave-one-out {tau_text(loo)}, over {taus.words} output words of {taus.sentences} held-out "
                     "sentences.")
    st.markdown("  \n".join(lines))

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
    "it weighs every word's state with α and routes the email from their weighted average. Here are its three "
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
    taus = email_study["taus"]
    st.markdown(
        f"Over {taus.emails} held-out emails: median τ against the gradient "
        f"{tau_text(statistics.median(taus.gradient) if taus.gradient else None)}, against leave-one-out "
        f"{tau_text(statistics.median(taus.leave_one_out) if taus.leave_one_out else None)}.")
    test = email_study["permutation"]
    if test is not None:
        st.subheader("The permutation test")
        st.markdown(
            f"Shuffle the attention weights of each of the {test.emails} held-out emails over its own words "
            f"({test.permutations} shuffles each, seeded) and let the model decide again. Its team changes under "
            f"at least one shuffle for **{test.changed_any:.0%}** of the emails, under most shuffles for "
            f"**{test.changed_most:.0%}**. Its probability for the team it chose moves by a median "
            f"**{test.median_difference:.2f}** (90th percentile **{test.p90_difference:.2f}**); Jain and Wallace "
            f"saw changes under 0.01 for most of their classifiers. With uniform weights the team changes for "
            f"**{test.uniform_changed:.0%}** of the emails.")

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
        if found is None:
            st.caption("This model reads no “it” in this email.")
            continue
        ui.show("pronoun", {name: found}, f"explain-it-{name[-1].lower()}")
        top = found.decision.tokens[int(found.decision.leave_one_out.argmax())]
        heads = [found.tokens[j] for j in found.weights[-1].argmax(axis=-1)]
        st.caption(ui.escape_markdown(
            f"In the last layer the heads of “it” look most at: {', '.join(heads)}. Leaving out “{top}” costs the "
            f"decision ({found.decision.predicted}) the most."))

st.header("What these models say")
said = []
for label, study in held.items():
    taus, matches = study["taus"], study["exact_match"]
    agree = mean_tau(taus.leave_one_out)
    drop = (matches["none"] or 0) - max(matches["uniform"] or 0, matches["permuted"] or 0)
    said.append(
        f"**{ui.escape_markdown(label)}**: its attention ranks the source words " + ranks(agree)
        + f" what removing them costs (mean τ {tau_text(agree)}), and replacing its weights "
        + ("wrecks its translations" if drop >= 0.5 else "changes some of its translations" if drop >= 0.1
           else "barely changes its translations")
        + f" (exact match {matches['none']:.0%} with its own, {matches['uniform']:.0%} uniform, "
          f"{matches['permuted']:.0%} shuffled).")
if email_study is not None:
    agree, test = mean_tau(email_study["taus"].leave_one_out), email_study["permutation"]
    line = (f"**{ui.escape_markdown(classifiers[0].label)}**: its attention ranks an email's words {ranks(agree)} "
            f"what removing them costs (mean τ {tau_text(agree)})")
    if test is not None:
        carries = test.changed_most >= 0.2
        line += (", and its decision " + ("depends on where the weights fall" if carries else
                                          "mostly survives shuffled weights")
                 + f" (the team changes under most shuffles for {test.changed_most:.0%} of held-out emails)"
                 + (": unlike the classifiers Jain and Wallace studied, here attention carries the decision" if carries
                    else ", as Jain and Wallace found"))
    said.append(line + ".")
for name, found in pronouns.items():
    if found is not None:
        top = found.decision.tokens[int(found.decision.leave_one_out.argmax())]
        heads = [found.tokens[j] for j in found.weights[-1].argmax(axis=-1)]
        said.append(f"{name}: {sum(word == top for word in heads)} of the transformer's {len(heads)} last-layer heads "
                    f"point “it” at “{ui.escape_markdown(top)}”, the word whose removal costs its decision most.")
if said:
    st.markdown("  \n".join(said))
    st.caption("Read from the numbers above as this page computed them; a model of your own gets its own sentences.")
else:
    st.info("Pick a model above to see what it says.", icon=":material/touch_app:")

ui.share_box("explain")
