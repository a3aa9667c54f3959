"""/what-if: question a translator. What it offered at each step, beam search's tree, a word forced, one step's
attention moved, one source word changed, the training states nearest to one of the sentence's, and a map of states.

The answers come from seqviz.analysis (decoding, beam, neighbours, state_map); :meth:`WhatIf.ask` is the one way
in, by question, so a page caches every answer alike. A setting the analysis refuses (a step past the end, a word
the model cannot write, an attention edit for the plain translator) raises ValueError with a sentence the page shows
as it is. The sentences here are plain text, visitor words included: the page escapes them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from seqviz import charts
from seqviz.charts.base import position_labels
from seqviz.views.translation import Translator

QUESTIONS = ("next", "ranked", "beam", "force", "edit", "change", "neighbours", "map")
DIFFERS = " ≠"  # marks an output word that differs from the other translation (alignment rows, tables)


def _p(value: float) -> str:
    return f"{value:.3f}" if value >= 0.001 else f"{value:.1e}"


def _words(tokens: Sequence[str]) -> str:
    return " ".join(tokens) or "(nothing)"


def step_labels(decoded) -> list[str]:
    """One label per step a decode took: "01 le", ..., and "15 <eos>" for the step that ended it."""
    return position_labels([*decoded.tokens, *(["<eos>"] if decoded.ended else [])])


class WhatIf(Translator):
    """Any translator, questioned on the visitor's sentence (the figures' traces are the answers of :meth:`ask`)."""

    name = "what-if"
    fits_text = "any translator"
    trace_kind = "what-if"
    figure_names = ("next-words", "beam-tree", "alignment", "state-map")

    def ask(self, model, vocabularies, question: str, tokens: Sequence[str], **settings):
        """The answer to ``question`` (one of QUESTIONS) about the sentence; ``settings`` are the analysis's."""
        from seqviz.analysis import beam, decoding, neighbours, state_map

        tokens = list(tokens)
        if question == "next":  # k, temperature, seed
            return decoding.next_words(model, vocabularies, tokens, **settings)
        if question == "ranked":  # greedy, with every word the model can write ranked at each step
            source = decoding.read_source(model, vocabularies, tokens)
            return decoding.decode(model, vocabularies, source, k=len(vocabularies["tgt"]))
        if question == "beam":  # width, length_norm
            return beam.beam_search(model, vocabularies, tokens, **settings)
        if question == "force":  # step, word
            return decoding.force_word(model, vocabularies, tokens, **settings)
        if question == "edit":  # step, source_position
            return decoding.edit_attention(model, vocabularies, tokens, **settings)
        if question == "change":  # position, word
            return decoding.change_word(model, vocabularies, tokens, **settings)
        if question == "neighbours":  # index (a NeighbourIndex), position or step, k
            index = settings.pop("index")
            if index.side == "encoder":
                return neighbours.source_neighbours(index, model, vocabularies, tokens, **settings)
            return neighbours.output_neighbours(index, model, vocabularies, tokens, **settings)
        if question == "map":  # state_map (a fitted StateMap): the sentence's path on it
            return state_map.project_sentence(settings["state_map"], model, vocabularies, tokens)
        raise ValueError(f"unknown question {question!r:.40}; ask one of {', '.join(QUESTIONS)}")

    # --- What is built once per model: the neighbour indexes and the map's plane --------------------------

    def neighbour_index(self, model, vocabularies, pairs, side: str):
        from seqviz.analysis.neighbours import build_index

        return build_index(model, vocabularies, pairs, side)

    def state_map(self, model, vocabularies):
        from seqviz.analysis.state_map import fit_state_map, held_out_sentences

        return fit_state_map(model, vocabularies, held_out_sentences())

    @staticmethod
    def training_pairs():
        from seqviz.analysis.neighbours import training_pairs

        return training_pairs()

    # --- Figures ---------------------------------------------------------------------------------------

    def draw(self, figure, traces, colours=None, step: int = 0, marked: Sequence[bool] | None = None,
             colour_by: str = "part", title: str = "{label}", **options):
        """Titles name the model, never a setting (a template is built once and only its table changes).
        "next-words": the words offered at output ``step`` of each decode; "beam-tree": each search's tree;
        "alignment": where each step of each decode looked (<eos> step included), output words ``marked`` get
        DIFFERS; "state-map": each (StateMap, SentencePath), coloured by ``colour_by``."""
        figures = []
        for label, trace in traces.items():
            name = title.replace("{label}", label)  # (not str.format: a word of a visitor's model may hold braces)
            if figure == "next-words":
                at = min(step, len(trace.steps) - 1)
                figures.append(charts.make("next-words", trace.steps[at], f"{name}: the words it offered").of(label))
            elif figure == "beam-tree":
                figures.append(charts.make("beam-tree", trace, f"{name}: beam search's tree").of(label))
            elif figure == "alignment" and trace.weights is not None and len(trace.steps):
                rows = [*trace.tokens, *(["<eos>"] if trace.ended else [])]
                if marked is not None:
                    rows = [w + DIFFERS if i < len(marked) and marked[i] else w for i, w in enumerate(rows)]
                figures.append(charts.make("alignment", trace.src_tokens, rows, trace.weights, name).of(label))
            elif figure == "state-map":
                fitted, path = trace
                figures.append(charts.make("state-map", fitted, path, colour_by, name).of(label))
        return figures

    # --- What the answers say, in words (plain text) ---------------------------------------------------

    def next_summary(self, decoded, step: int, sampling: bool) -> str:
        at = decoded.steps[min(step, len(decoded.steps) - 1)]
        others = [f"“{w}” ({_p(float(p))})" for w, p in zip(at.top_tokens, at.top_probs, strict=True)
                  if w != at.greedy][:4]
        line = (f"Step {min(step, len(decoded.steps) - 1) + 1}: greedy decoding takes “{at.greedy}” "
                f"(p = {_p(float(at.top_probs[0]))})"
                + (f", passing over {', '.join(others)}." if others else "."))
        if sampling:
            line += (f" Sampling wrote “{at.chosen}” (p = {_p(at.chosen_prob)})"
                     + (", greedy's pick too." if at.chosen == at.greedy else ", not greedy's pick."))
        return line

    def beam_summary(self, search) -> str:
        greedy, best = search.greedy, search.best
        same = greedy.ids == best.ids
        return (f"Greedy writes “{_words(greedy.tokens)}” (log p = {greedy.log_prob:.3f}). Beam search of width "
                f"{search.width} ranks first “{_words(best.tokens)}” (log p = {best.log_prob:.3f}"
                + (f", {best.score:.3g} per word" if search.length_norm else "") + "): "
                + ("the same translation." if same else "a different translation: greedy's first choices were not "
                   "the best whole sentence."))

    def final_beam(self, search) -> pd.DataFrame:
        """The final beam, best first: its translations and their scores."""
        return pd.DataFrame({
            "rank": range(1, len(search.final) + 1),
            "translation": [_words(h.tokens) + ("" if h.ended else " …(cut at the length limit)")
                            for h in search.final],
            "log p": [h.log_prob for h in search.final],
            "score": [h.score for h in search.final],
            "greedy's": ["yes" if h.ids == search.greedy.ids and h.ended == search.greedy.ended else ""
                         for h in search.final],
        })

    def force_summary(self, forced) -> str:
        return (f"At step {forced.step + 1} greedy wrote “{forced.replaced}” (p = {_p(forced.replaced_prob)}). "
                f"Forced there, “{forced.word}” had p = {_p(forced.word_prob)} under the model. Going on from it, the "
                f"decoder writes “{_words(forced.forced.tokens)}” (log p = {forced.forced.log_prob:.3f}, against "
                f"{forced.original.log_prob:.3f} for greedy's).")

    def edit_summary(self, edited) -> str:
        top = int(edited.weights_before.argmax())
        src = edited.original.src_tokens
        after = edited.weights_after
        moved = int(after.argmax())
        changed = edited.edited.ids != edited.original.ids
        how = (f"With all the weight on “{src[moved]}”" if after[moved] > 1 - 1e-6 else
               f"With your row of weights (most on “{src[moved]}”, {after[moved]:.2f})")
        return (f"At step {edited.step + 1} the model looked most at “{src[top]}” ({edited.weights_before[top]:.2f}) "
                f"and wrote “{edited.word_before}”. {how} it writes “{edited.word_after}”, and the rest of the "
                f"sentence is decoded again: “{_words(edited.edited.tokens)}”"
                + (" (changed)." if changed else " (the same translation)."))

    @staticmethod
    def row_text(weights) -> str:
        """A row of attention weights as a visitor would type it: "0.012, 0.903, ..." (3 decimals)."""
        return ", ".join(f"{float(w):.3f}" for w in weights)

    @staticmethod
    def typed_row(text: str, words: int) -> np.ndarray:
        """The row of weights a visitor typed for a sentence of ``words`` source words: numbers of 0 or more,
        separated by commas, semicolons or spaces, not all 0 (the analysis divides them by their sum). ValueError
        with a plain sentence for anything else; the text is quoted cut to 20 characters."""
        parts = [p for p in re.split(r"[\s,;]+", text.strip()) if p]
        values = []
        for part in parts:
            try:
                value = float(part)
            except ValueError:
                raise ValueError(f"“{part[:20]}” is not a number: type one weight per source word, such as "
                                 "0.1, 0.7, 0.2.") from None
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"“{part[:20]}” is not a weight: weights are numbers of 0 or more.")
            values.append(value)
        if len(values) != words:
            raise ValueError(f"The sentence has {words} source words and the row has {len(values)} numbers: type "
                             "one weight per source word, in the sentence's order.")
        if sum(values) <= 0:
            raise ValueError("The weights are all 0: give at least one word a weight above 0.")
        return np.asarray(values, dtype=np.float64)

    def change_summary(self, change) -> str:
        before, after = change.before, change.after
        differ = sum(change.differs_after) + sum(change.differs_before)
        return (f"“{change.before.src_tokens[change.position]}” → “{change.word}”: "
                + (f"output words not matched in the other translation (marked ≠): {sum(change.differs_before)} of "
                   f"the original's, {sum(change.differs_after)} of the new one's."
                   if differ else "the translation does not change.")
                + f" log p: {before.log_prob:.3f} before, {after.log_prob:.3f} after.")

    def neighbour_table(self, found) -> pd.DataFrame:
        """The nearest training states, most similar first, the word of each marked ⟦so⟧."""

        def mark(words, position):
            return " ".join(f"⟦{w}⟧" if i == position else w for i, w in enumerate(words))

        encoder = bool(found) and found[0].side == "encoder"
        return pd.DataFrame({
            "cosine": [n.similarity for n in found],
            "word": [n.word for n in found],
            "English": [mark(n.english, n.position) if encoder else " ".join(n.english) for n in found],
            "French": [" ".join(n.french) if encoder else mark(n.french, n.position) for n in found],
        })

    def map_summary(self, fitted, path) -> str:
        ratio = fitted.explained_variance_ratio
        return (f"{len(fitted.words)} encoder states of {len(fitted.sentences)} held-out sentences; the two axes "
                f"keep {ratio.sum():.0%} of their variance ({ratio[0]:.0%} and {ratio[1]:.0%}). Your sentence's "
                f"{len(path.tokens)} words are the numbered path.")

    # --- Defaults a student would try first ------------------------------------------------------------

    @staticmethod
    def least_sure(decoded) -> int:
        """The step where greedy's pick had the lowest probability: where the model hesitated most."""
        return min(range(len(decoded.steps)), key=lambda t: float(decoded.steps[t].top_probs[0]))

    @staticmethod
    def least_looked(decoded, step: int) -> int:
        """The source word step ``step`` looked at least: where moving all the weight changes the most (0 for a
        translator without attention)."""
        if decoded.weights is None or not len(decoded.weights):
            return 0
        return int(decoded.weights[min(step, len(decoded.weights) - 1)].argmin())

    @staticmethod
    def default_change(tokens: Sequence[str], words: Sequence[str]) -> tuple[int, str]:
        """Which word to change, and to what, before the visitor picks: the sentence's first noun of the grammar,
        turned into the grammar's next noun; else its first word, turned into another word the model knows."""
        from seqviz.data.translation import NOUNS

        nouns = [n for n in NOUNS if n in words]
        for position, token in enumerate(tokens):
            if token in nouns and len(nouns) > 1:
                return position, nouns[(nouns.index(token) + 1) % len(nouns)]
        return 0, next((w for w in words if w != (tokens[0] if tokens else None)), words[0])
