"""Is attention an explanation? Views that set a model's attention beside what its output depended on.

For one output (a translator's word y_t, a classifier's team ŷ) and each input word j: attention α_j, what the
model's weights show, beside four measures of what the output depended on (seqviz.analysis.explain, by
Captum): the gradient's size, gradient × input, integrated gradients and leave-one-out.

How far attention ranks the words as each measure does: Kendall's τ (every pair of words counts the same),
weighted τ (a swap among the top words counts most), and whether the two put the same word first and the same
three words in their top 3 (Jain and Wallace 2019). Held out, over many outputs, and with the weights replaced
(uniform, or the model's own shuffled over the words), the views also ask whether the output depends on the
weights at all (Wiegreffe and Pinter 2019). The verdicts in words, and their thresholds, are here: the page
shows them. One statistic (the mean) and one rounding (:func:`seqviz.charts.explain.percent`) throughout.
"""

from __future__ import annotations

from seqviz import charts, limits
from seqviz.charts.explain import ABLATION_NAMES, MEASURE_NAMES, percent
from seqviz.views.base import View
from seqviz.views.translation import Translator

# Attention "ranks the words much as" a measure when the mean weighted τ is at least AGREES and the two put the
# same word first for at least half the outputs; "somewhat as" from SOMEWHAT; a replacement "wrecks" a
# translator's held-out exact match when it drops by WRECKS, "changes some" from CHANGES; attention "carries"
# a classifier's decision when the team changes under most shuffles for at least CARRIES of the emails.
AGREES, SOMEWHAT, WRECKS, CHANGES, CARRIES = 0.5, 0.2, 0.5, 0.1, 0.2
SUMMED = ("gradient", "leave_one_out")  # the held-out measures (seqviz.analysis.explain.HELD_OUT_MEASURES)


def signed(value) -> str:
    """τ as the page writes it: two decimals and a sign, "undefined" where τ is."""
    return "undefined" if value is None else f"{value:+.2f}"


def agreement_text(mean, unit: str) -> str:
    """Attention against one measure in numbers (``mean(statistic)``: the means of seqviz.analysis.explain's
    Agreement over ``unit``): τ, weighted τ, and how often the same top word and the same top 3."""
    return (f"τ {signed(mean('tau'))}, weighted τ {signed(mean('weighted_tau'))}, the same top word for "
            f"{percent(mean('top1'))} of the {unit} and the same top 3 for {percent(mean('top3'))}")


def ranks(mean) -> str:
    """How attention ranks the words against one measure, in words, from all four statistics."""
    weighted, top1 = mean("weighted_tau"), mean("top1")
    if weighted is None:
        return "cannot be compared with"
    if weighted >= AGREES and (top1 or 0) >= 0.5:
        return "much as"
    if (top1 or 0) >= 0.5:
        return "with the same word first, but otherwise unlike"
    return "somewhat as" if weighted >= SOMEWHAT else "unlike"


def _taus_figure(held_out: dict[str, dict], colours: dict[str, str], unit: str):
    """The held-out τ and weighted τ histograms of several models (label -> the view's held_out())."""
    taus = {label: {m: {s: h["taus"].defined(m, s) for s in ("tau", "weighted_tau")} for m in SUMMED}
            for label, h in held_out.items()}
    return charts.make("taus", taus, colours, unit)


class ExplainTranslation(Translator):
    """A translator with attention: attention and the four measures for each output word of the sentence."""

    name = "explain-translation"
    fits_text = "any translator with attention"
    trace_kind = "explain-translation"
    ships_study = True

    def requires(self, family):
        return family.translates and family.attends

    def trace(self, model, vocabularies, tokens, max_len: int | None = None):
        from seqviz.analysis.explain import explain_translation

        return explain_translation(model, vocabularies, list(tokens), max_len)  # TranslationExplanation

    def summary(self, trace, step: int | None = None) -> str:
        """The sentence's means over its output words, attention against each measure, and how far integrated
        gradients are from adding up to the change from the baseline; or (``step``) the same for one output word."""
        if not trace.out_tokens:
            return "It writes nothing: there is no output word to explain."
        if step is not None:
            u = min(step, len(trace.out_tokens) - 1)
            return f"Writing “{trace.out_tokens[u]}”, attention against " + "; against ".join(
                f"{MEASURE_NAMES[m]}: τ {signed(a.tau[u])}, weighted τ {signed(a.weighted_tau[u])}, "
                + {True: "the same top word", False: "another top word", None: "no top word"}[a.top1[u]]
                for m, a in trace.agreement.items()) + "."
        lines = [f"Mean over its {len(trace.out_tokens)} words, attention against {MEASURE_NAMES[m]}: "
                 f"{agreement_text(lambda s, m=m: trace.mean(m, s), 'words')}." for m in trace.measures]
        gap = abs(trace.completeness_gap).max()
        return "\n".join([*lines, f"Integrated gradients add up to the change from the all-zero baseline to within "
                                  f"{gap:.1g} nats on every word."])

    figure_names = ("importance", "taus", "attention-replaced")

    def draw(self, figure, traces, colours=None, step: int = 0, **options):
        """"importance": the measures for output word ``step`` (the last one, past the end) of each translator;
        "taus" and "attention-replaced": the held-out studies (label -> held_out())."""
        if figure == "taus":
            return [_taus_figure(traces, colours, "output words")]
        if figure == "attention-replaced":
            return [charts.make("attention-replaced", {label: h["exact_match"] for label, h in traces.items()})]
        figures = []
        for label, t in traces.items():
            if t.out_tokens:
                u = min(step, len(t.out_tokens) - 1)
                measures = {m: getattr(t, m)[u] for m in t.measures}
                figures.append(charts.make("importance", t.src_tokens, t.attention[u], measures).of(label))
        return figures

    def held_out(self, model, task) -> dict:
        """Attention against the gradient and leave-one-out per output word over held-out sentences, and exact match
        with the weights replaced (bounded by seqviz.limits.EXPLAIN_HELD_OUT_SENTENCES); "summary" and "verdict"
        say them in words."""
        from seqviz.analysis.explain import ABLATIONS, held_out_exact_match, held_out_taus

        n = limits.EXPLAIN_HELD_OUT_SENTENCES
        taus = held_out_taus(model, task, limit=n)
        matches = {ablation: held_out_exact_match(model, task, ablation, limit=n).exact_match for ablation in ABLATIONS}
        loo = taus.agreement["leave_one_out"].mean
        drop = (matches["none"] or 0) - max(matches["uniform"] or 0, matches["permuted"] or 0)
        replaced = ("wrecks its translations" if drop >= WRECKS else "changes some of its translations"
                    if drop >= CHANGES else "barely changes its translations")
        summary = "; ".join(f"against {MEASURE_NAMES[m]} {agreement_text(taus.agreement[m].mean, 'words')}"
                            for m in SUMMED)
        verdict = (f"its attention ranks the source words {ranks(loo)} what removing them costs "
                   f"({agreement_text(loo, 'output words')}), and replacing its weights {replaced} (exact match "
                   f"{percent(matches['none'])} with its own, {percent(matches['uniform'])} uniform, "
                   f"{percent(matches['permuted'])} shuffled).")
        return {"taus": taus, "exact_match": matches, "sentences": taus.inputs, "verdict": verdict,
                "summary": f"{summary} (means over {taus.outputs} output words of {taus.inputs} held-out sentences)."}


class AttentionReplaced(Translator):
    """The sentence translated with the model's own attention, with uniform weights, and with its own weights
    shuffled over the source words: {"none": words, "uniform": words, "permuted": words}."""

    name = "attention-replaced"
    fits_text = "any translator with attention"
    trace_kind = "attention-replaced"

    def requires(self, family):
        return family.translates and family.attends

    def trace(self, model, vocabularies, tokens, max_len: int | None = None):
        from seqviz.analysis.explain import ABLATIONS, translate_with

        return {ablation: translate_with(model, vocabularies, list(tokens), ablation, max_len=max_len)
                for ablation in ABLATIONS}

    def summary(self, trace) -> str:
        """The three translations in one line: 'With its own attention: “…”; with uniform weights: “…”; …'."""
        said = "; ".join(f"with {ABLATION_NAMES[a]}: “{' '.join(words) or '(nothing)'}”" for a, words in trace.items())
        return said[:1].upper() + said[1:] + "."


class ExplainClassifier(View):
    """An email classifier that attends: attention and the four measures for each word of an email, for its team."""

    name = "explain-classifier"
    fits_text = "any email classifier that attends (the attention-pooled LSTM, the transformer)"
    task = "emails"
    trace_kind = "explain-classifier"
    ships_study = True

    def requires(self, family):
        return family.attends and not family.translates

    def trace(self, model, vocabularies, tokens):
        from seqviz.analysis.explain import explain_classification

        return explain_classification(model, vocabularies["tokens"], list(tokens))  # ClassificationExplanation

    def summary(self, trace) -> str:
        said = [f"It says {trace.predicted} (p = {trace.p_predicted:.5f})."]
        for m in (m for m in MEASURE_NAMES if getattr(trace, m) is not None and trace.agreement):
            top = "the same top word" if trace.agrees(m, "top1") else "another top word"
            said.append(f"Against {MEASURE_NAMES[m]}: τ {signed(trace.agrees(m))}, weighted τ "
                        f"{signed(trace.agrees(m, 'weighted_tau'))}, {top}.")
        return " ".join(said)

    figure_names = ("importance", "taus")

    def draw(self, figure, traces, colours=None, title: str = "", **options):
        """"importance": the measures for each email (label -> trace); "taus": the held-out studies."""
        if figure == "taus":
            return [_taus_figure(traces, colours, "emails")]
        return [charts.make("importance", t.tokens, t.attention, {m: getattr(t, m) for m in MEASURE_NAMES},
                            title).of(label) for label, t in traces.items()]

    def held_out(self, model, task) -> dict:
        """Attention against the gradient and leave-one-out per held-out email; for attention that pools the words
        into one vector (no heads), Jain and Wallace's permutation test too (bounded by
        seqviz.limits.EXPLAIN_HELD_OUT_EMAILS and EXPLAIN_PERMUTATIONS); "summary", "permutation_summary" and
        "verdict" say them in words."""
        from seqviz import families
        from seqviz.analysis.explain import held_out_classifier_taus, permutation_test
        from seqviz.models import family_of

        n = limits.EXPLAIN_HELD_OUT_EMAILS
        taus = held_out_classifier_taus(model, task, limit=n)
        test = (permutation_test(model, task, limit=n, permutations=limits.EXPLAIN_PERMUTATIONS)
                if not families.get(family_of(model)).heads else None)
        loo = taus.agreement["leave_one_out"].mean
        verdict = (f"its attention ranks an email's words {ranks(loo)} what removing them costs "
                   f"({agreement_text(loo, 'emails')})")
        said = None
        if test is not None:
            carries = test.changed_most >= CARRIES
            verdict += (", and its decision " + ("depends on where the weights fall" if carries else
                                                 "mostly survives shuffled weights")
                        + f" (the team changes under most shuffles for {percent(test.changed_most)} of held-out "
                          "emails)" + (": unlike the classifiers Jain and Wallace studied, here attention carries "
                                       "the decision" if carries else ", as Jain and Wallace found"))
            said = (f"Its team changes under at least one shuffle for {percent(test.changed_any)} of the emails, "
                    f"under most shuffles for {percent(test.changed_most)}. Its probability for the team it chose "
                    f"moves by a mean {test.mean_difference:.2f} (90th percentile {test.p90_difference:.2f}); Jain "
                    f"and Wallace saw changes under 0.01 for most of their classifiers. With uniform weights the team "
                    f"changes for {percent(test.uniform_changed)} of the emails.")
        return {"taus": taus, "emails": taus.inputs, "permutation": test, "permutation_summary": said,
                "summary": f"Over {taus.inputs} held-out emails, attention against "
                           + "; against ".join(f"{MEASURE_NAMES[m]} {agreement_text(taus.agreement[m].mean, 'emails')}"
                                               for m in SUMMED) + " (means).",
                "verdict": verdict + "."}


class Pronoun(View):
    """Where "it" looks in every layer and head of a transformer classifier, beside what the decision rests on."""

    name = "pronoun"
    fits_text = "any transformer email classifier"
    task = "emails"
    trace_kind = "pronoun"

    def requires(self, family):
        return family.heads and not family.translates

    def trace(self, model, vocabularies, tokens, word: str = "it"):
        from seqviz.analysis.explain import pronoun_attention

        return pronoun_attention(model, vocabularies["tokens"], list(tokens), word)  # PronounAttention or None

    def summary(self, trace) -> str:
        """Where the word's heads look in the last layer, and the word whose removal costs the decision most."""
        if trace is None:
            return "This model reads no “it” in this email."
        heads = trace.last_layer_words
        return (f"In the last layer the heads of “{trace.word}” look most at: {', '.join(heads)}. Leaving out "
                f"“{trace.costliest}” costs the decision ({trace.decision.predicted}) the most: "
                f"{sum(word == trace.costliest for word in heads)} of the {len(heads)} last-layer heads point "
                f"“{trace.word}” at it.")

    figure_names = ("pronoun",)

    def draw(self, figure, traces, colours=None, **options):
        """For each model: where the word looks in every head, then what the decision rests on."""
        figures = []
        for label, t in traces.items():
            if t is not None:
                d = t.decision
                figures += [charts.make("pronoun", t.tokens, t.weights, t.word).of(f"{label}-heads"),
                            charts.make("importance", d.tokens, None, {m: getattr(d, m) for m in MEASURE_NAMES},
                                        f"What the decision ({d.predicted}) rests on").of(f"{label}-decision")]
        return figures
