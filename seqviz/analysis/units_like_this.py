"""Units like this (LSTMVis, Strobelt et al. 2017): the LSTM units that stay on across a phrase, and where else.

Pick a phrase of the sentence, words s .. e, and a threshold ℓ. A unit u is *on* at word t when its cell state
c_t[u] > ℓ; the units like this phrase are those on at every word of it:

    U = { u : c_t[u] > ℓ for every t in s .. e }.

Then, over held-out sentences, a span matches where every unit of U is on at each of its words, for at least as
many words as the phrase (a maximal run: it starts and ends where some unit of U drops to ℓ or below).

Why the cell state c and not the hidden state h: c is the LSTM's memory, c_t = f_t ⊙ c_{t-1} + i_t ⊙ c̃_t, written
by addition and kept while the forget gate stays near 1, so a unit that holds "inside this phrase" holds it in c.
h_t = o_t ⊙ tanh(c_t) is what the output gate lets out at each word: it can drop for one word while the memory
holds (LSTMVis reads h, the state the rest of the network sees; here the page is about the memory).

The held-out states are computed by the same gate replay as the page's (``model.gate_trace``), on at most
``limits.UNITS_LIKE_THIS_SENTENCES`` sentences, once per model (the page caches them by fingerprint).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from seqviz import limits

STATE = "cell"  # the LSTMGateTrace field searched: the cell state c_t (see above for why)
CONTEXT_WORDS = 6  # words of a held-out sentence shown either side of a matching span


@dataclass(frozen=True)
class HeldOutStates:
    """The cell states of held-out sentences, as the model read them."""

    sentences: list[list[str]]  # the words as the model saw them ("<unk>" kept visible)
    states: list[np.ndarray]  # (T_i, H) c_t of every word of each sentence

    def __len__(self) -> int:
        return len(self.sentences)


@dataclass(frozen=True)
class Match:
    """A span of a held-out sentence where every chosen unit stays above the threshold."""

    tokens: list[str]
    start: int  # first word of the span, 0-based
    end: int  # last word of the span, inclusive
    strength: float  # the chosen units' mean state over the span

    def marked(self, context: int = CONTEXT_WORDS) -> str:
        """The span between ⟦ and ⟧ with up to ``context`` words of the sentence either side ("…" where it goes on):
        plain text, which the page escapes."""
        before = self.tokens[max(0, self.start - context):self.start]
        after = self.tokens[self.end + 1:self.end + 1 + context]
        span = "⟦" + " ".join(self.tokens[self.start:self.end + 1]) + "⟧"
        return " ".join(["…"] * (self.start > context) + before + [span] + after
                        + ["…"] * (len(self.tokens) - self.end - 1 > context))


def phrase(length: int, start: int, end: int) -> tuple[int, int]:
    """The phrase's first and last word (0-based, inclusive) in a sentence of ``length`` words, whichever order the
    two ends were picked in and clamped into the sentence."""
    low, high = sorted((int(start), int(end)))
    last = max(length - 1, 0)
    return min(max(low, 0), last), min(max(high, 0), last)


def weakest(trace, start: int, end: int) -> np.ndarray:
    """Each unit's lowest cell state over the words start .. end (either order, clamped): (H,)."""
    start, end = phrase(len(trace.tokens), start, end)
    return getattr(trace, STATE)[start:end + 1].min(axis=0)  # (T', H) -> (H,)


def closest_units(trace, start: int, end: int, count: int) -> list[int]:
    """The ``count`` units whose weakest state over the phrase is highest: those on across it, or, when none is,
    the nearest to being so."""
    return [int(u) for u in np.argsort(-weakest(trace, start, end), kind="stable")[:max(0, count)]]


def units_on(trace, start: int, end: int, threshold: float) -> list[int]:
    """The units whose cell state stays above ``threshold`` at every word start .. end (inclusive) of the trace,
    the strongest first (by their lowest state over the phrase)."""
    lowest = weakest(trace, start, end)  # (H,)
    return [u for u in closest_units(trace, start, end, lowest.shape[0]) if lowest[u] > threshold]


def held_out_sentences(task, limit: int) -> list[list[str]]:
    """``limit`` held-out inputs of the model's task, spread evenly over its test set: an email classifier's
    emails, a memory model's sequences, a translator's English sources."""
    from seqviz.analysis.explain.batches import held_out_emails, held_out_pairs, spread

    if task.name == "translation":
        return [list(p.src) for p in held_out_pairs(task, limit)]
    if task.name == "emails":
        return [list(e.tokens) for e in held_out_emails(task, limit)]
    if task.name == "memory":
        return spread([list(tokens) for examples in task.splits.test.values() for tokens, _ in examples], limit)
    raise ValueError(f"no held-out sentences for the {str(task.name)[:40]!r} task")


def held_out_states(model, task, limit: int = limits.UNITS_LIKE_THIS_SENTENCES) -> HeldOutStates:
    """The cell states of ``limit`` held-out sentences (``task`` with the model's vocabularies), replayed word by
    word from the model's own LSTM weights as the page's gates are."""
    vocab = task.vocabularies["src"] if "src" in task.vocabularies else task.vocabularies["tokens"]
    traces = [model.gate_trace(tokens, vocab) for tokens in held_out_sentences(task, limit) if tokens]
    return HeldOutStates([t.tokens for t in traces], [getattr(t, STATE) for t in traces])


def runs(on: np.ndarray, shortest: int) -> list[tuple[int, int]]:
    """(start, end) inclusive of every maximal run of True in ``on`` (T,) that is at least ``shortest`` long."""
    edges = np.diff(np.concatenate([[0], on.astype(np.int8), [0]]))  # +1 where a run starts, -1 after it ends
    starts, stops = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return [(int(a), int(b) - 1) for a, b in zip(starts, stops, strict=True) if b - a >= shortest]


def matches(held_out: HeldOutStates, units: list[int], threshold: float, length: int) -> list[Match]:
    """Every span of the held-out sentences where all ``units`` stay above ``threshold`` for at least ``length``
    words (none when no unit is chosen): those as long as the phrase first, where the units switch on and off around
    a piece of its size, then the longer ones; among spans of one length, the strongest (mean state) first."""
    if not units:
        return []
    found = []
    for tokens, states in zip(held_out.sentences, held_out.states, strict=True):
        chosen = states[:, units]  # (T, |U|)
        for start, end in runs((chosen > threshold).all(axis=1), max(1, length)):
            found.append(Match(tokens, start, end, float(chosen[start:end + 1].mean())))
    return sorted(found, key=lambda m: (m.end - m.start + 1 - length, -m.strength))


@dataclass(frozen=True)
class Search:
    """What the page shows of a search: the matches listed, and what they say in words."""

    table: pd.DataFrame  # one row per listed match: the sentence with its span marked, its words, strength
    summary: str


def search(held_out: HeldOutStates, units: list[int], threshold: float, length: int,
           shown: int = limits.UNITS_LIKE_THIS_SHOWN) -> Search:
    """The held-out spans where the units do what they do across the phrase: the first ``shown`` in
    :func:`matches`' order, and a sentence on how many there are."""
    found = matches(held_out, units, threshold, length)
    sentences = len({id(m.tokens) for m in found})
    table = pd.DataFrame({
        "held-out sentence, the span in ⟦ ⟧": [m.marked() for m in found[:shown]],
        "span": [" ".join(m.tokens[m.start:m.end + 1]) for m in found[:shown]],
        "mean c over the span": [m.strength for m in found[:shown]],
    })
    if not units:
        said = "No unit stays above the threshold across the whole phrase: lower the threshold or shorten the phrase."
    elif not found:
        said = (f"None of the {len(held_out)} held-out sentences searched has {length} words in a row where all "
                f"{len(units)} of these units stay above {threshold:g}.")
    else:
        said = (f"{sentences} of the {len(held_out)} held-out sentences searched have a span of {length} or more "
                f"words where all {len(units)} of these units stay above {threshold:g} ({len(found)} spans in all"
                f"{f'; the {shown} closest to the phrase in length are listed' if len(found) > shown else ''}).")
    return Search(table, said)
