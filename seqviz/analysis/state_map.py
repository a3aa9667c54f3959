"""/what-if: a map of encoder states, with the visitor's sentence drawn as a path through it.

The encoder states h_j of held-out sentences (up to ``limits.WHATIF_MAP_STATES``) are projected on their first
two principal components by scikit-learn's ``PCA`` (its covariance solver: N states >> D numbers each): the plane
in which the states spread the most,

    z_j = W (h_j − μ),   W (2, D) the top two eigenvectors of the states' covariance, μ their mean,

fitted once per model (:func:`fit_state_map`). The visitor's sentence is projected on the same plane
(:func:`project_sentence`), word after word: its path. Every point can be coloured by its word, its position, or
the part it plays in the grammar's tree (:func:`grammar_parts`: determiner, adjective, noun, verb...), which the
data generator knows for every sentence it can parse.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from seqviz import limits
from seqviz.analysis.decoding import check_int, read_source
from seqviz.analysis.neighbours import source_states
from seqviz.data import translation as grammar


@dataclass(frozen=True)
class StateMap:
    """Held-out encoder states on the plane of their first two principal components."""

    points: np.ndarray  # (N, 2) z_j of every state
    words: list[str]  # (N,) the source word of each state
    positions: np.ndarray  # (N,) its position in its sentence
    parts: list[str | None]  # (N,) its grammatical part; None where the grammar cannot parse the sentence
    sentence: np.ndarray  # (N,) which of ``sentences`` it comes from
    sentences: list[list[str]]  # the held-out sentences mapped
    explained_variance_ratio: np.ndarray  # (2,) the share of the states' variance along each axis
    pca: Any  # the fitted sklearn.decomposition.PCA


@dataclass(frozen=True)
class SentencePath:
    """The visitor's sentence on a state map: one point per word, in order."""

    tokens: list[str]  # as the model read them, "<unk>" kept visible
    points: np.ndarray  # (T, 2)
    parts: list[str | None]  # (T,) grammatical parts; all None outside the grammar


def held_out_sentences(seed: int | None = None, count: int = 200) -> list[list[str]]:
    """``count`` held-out English sentences (the translation task's test split), spread evenly over it (and so
    over its length buckets)."""
    from seqviz.tasks import DATA_SEED

    test = grammar.make_translation_splits(DATA_SEED if seed is None else seed).test
    count = check_int("number of sentences", count, 1, len(test))
    return [list(test[i].src) for i in np.linspace(0, len(test) - 1, count).round().astype(int)]


def fit_state_map(model, vocabularies, sentences: Sequence[Sequence[str]], max_states: int | None = None) -> StateMap:
    """PCA (2 components) of the encoder states of ``sentences``, the first ones whole until ``max_states``
    (None: ``limits.WHATIF_MAP_STATES``)."""
    from sklearn.decomposition import PCA  # imported on first use: sklearn takes a second to import

    max_states = check_int("number of states", limits.WHATIF_MAP_STATES if max_states is None else max_states, 3,
                           limits.WHATIF_MAP_STATES)
    chosen, total = [], 0
    for tokens in sentences:
        if total >= max_states:
            break
        chosen.append(read_source(model, vocabularies, tokens).tokens)
        total += len(chosen[-1])
    src_vocab = vocabularies["src"]
    states = source_states(model, [src_vocab.encode(tokens) for tokens in chosen])
    matrix = np.concatenate(states)[:max_states].astype(np.float64)  # (N, D)
    pca = PCA(n_components=2, svd_solver="covariance_eigh").fit(matrix)  # N >> D: eigh of the (D, D) covariance
    n = matrix.shape[0]
    parts = [part for tokens in chosen for part in _parts_or_none(tokens)][:n]
    return StateMap(points=pca.transform(matrix), words=[w for tokens in chosen for w in tokens][:n],
                    positions=np.concatenate([np.arange(len(t)) for t in chosen])[:n], parts=parts,
                    sentence=np.concatenate([np.full(len(t), i) for i, t in enumerate(chosen)])[:n],
                    sentences=chosen, explained_variance_ratio=pca.explained_variance_ratio_, pca=pca)


def project_sentence(state_map: StateMap, model, vocabularies, tokens: Sequence[str]) -> SentencePath:
    """The visitor's sentence on the map: each word's encoder state projected on the map's plane."""
    source = read_source(model, vocabularies, tokens)
    states = source_states(model, [source.ids])[0].astype(np.float64)  # (T, D)
    return SentencePath(tokens=source.tokens, points=state_map.pca.transform(states),
                        parts=_parts_or_none(list(tokens)))


def _parts_or_none(tokens: list[str]) -> list[str | None]:
    parts = grammar_parts(tokens)
    return list(parts) if parts is not None else [None] * len(tokens)


# ---------------------------------------------------------------------------------------------------------
# The grammar's parts, read from the tree the data generator parses


def grammar_parts(tokens: Sequence[str]) -> list[str] | None:
    """The part every token plays in the grammar's tree (seqviz.data.translation.parse), None outside the grammar.

    Parts: determiner, adjective, noun, pronoun, verb, negation, question ("where"), relative (the clause "that
    was supposed to ..."), connector (and, but) and punctuation. The tree is walked in the order
    ``render_english`` writes it, so each part lines up with its token (checked)."""
    sentence = grammar.parse(list(tokens))
    if sentence is None:
        return None
    parts = _clause_parts(sentence.clauses[0])
    for connector, clause in zip(sentence.connectors, sentence.clauses[1:], strict=True):
        parts += ["punctuation" if w == "," else "connector" for w in grammar.CONNECTORS[connector][0]]
        parts += _clause_parts(clause)
    parts.append("punctuation")  # the final . or ?
    return parts if len(parts) == len(tokens) else None


def _np_parts(np_: grammar.NP) -> list[str]:
    return ["determiner", *(["adjective"] if np_.pre else []), *(["adjective"] if np_.post else []), "noun"]


def _verb_parts(words: Sequence[str]) -> list[str]:
    return ["negation" if w in ("never", "not") else "verb" for w in words]


def _clause_parts(clause) -> list[str]:
    if isinstance(clause, grammar.Where):
        return ["question", "verb", *_np_parts(clause.np)]
    if isinstance(clause, grammar.ButNever):
        relative = ["relative"] * len(grammar.RELATIVES[clause.relative]) if clause.relative else []
        return [*_np_parts(clause.first), "verb", "punctuation", "connector", "negation", *_np_parts(clause.second),
                *relative]
    verb = grammar.VERBS[clause.verb]
    subject = ["pronoun"] if isinstance(clause.subject, str) else _np_parts(clause.subject)
    return [*subject, *_verb_parts(verb.en_negated if clause.negated else verb.en)]
