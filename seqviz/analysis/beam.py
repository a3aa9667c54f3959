"""/what-if: beam search, with the whole tree of hypotheses it considered.

Greedy decoding keeps one hypothesis and writes its most likely word. Beam search keeps the ``width`` best
partial translations y_1 .. y_t by their log-probability

    log p(y_1 .. y_t | x) = Σ_{s ≤ t} log p(y_s | y_<s, x)

and at each step extends each of them by its ``width`` most likely next words, then keeps the ``width`` best of
those continuations. A continuation ending in <eos> is a finished translation and leaves the beam, which then
keeps one hypothesis fewer; the search ends when ``width`` translations have finished, or at the length limit
(``seqviz.limits.output_limit`` of the source), where the hypotheses still open end unfinished. Width 1 is greedy
decoding, word for word.

The final translations are ranked by their log-probability, or with ``length_norm`` by its mean over the words
written (<eos> counted): a plain sum favours short translations, since every word costs a negative log-probability.

The tree holds every continuation considered: the kept ones, and the pruned ones the page greys out. The open
hypotheses are decoded together, one batch row each (the models' ``reorder_state`` gives each its parent's state).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from seqviz import limits
from seqviz.analysis.decoding import Decoded, check_int, decode, read_source
from seqviz.models.common import BOS_ID, EOS_ID


@dataclass(frozen=True)
class BeamNode:
    """One hypothesis of the tree: its last word, and its parent's id (the root, <bos>, has none)."""

    id: int  # its index in BeamSearch.nodes
    token: str
    parent: int | None
    step: int  # 0: the root; t: the t-th word (or <eos>) of the hypothesis
    log_prob: float  # log p(y_1 .. y_t | x): the sum from the root to this node
    pruned: bool  # True: not among the best the beam kept at its step
    finished: bool  # True: ends in <eos>, a finished translation


@dataclass(frozen=True)
class Hypothesis:
    """One translation of the final beam."""

    tokens: list[str]  # y_1 .. y_U without <bos>/<eos>
    ids: list[int]
    log_prob: float  # log p(y | x), the <eos> step included when it ended
    score: float  # what the beam is ranked by: log_prob, or log_prob / steps with length normalisation
    ended: bool  # True: ended with <eos>; False: cut at the length limit
    node: int  # its last node in the tree


@dataclass(frozen=True)
class BeamSearch:
    src_tokens: list[str]
    width: int
    length_norm: bool
    nodes: list[BeamNode]  # the tree, nodes[0] the root; a node's parent comes before it
    final: list[Hypothesis]  # the final beam, best first
    greedy: Decoded  # greedy decoding's answer, to set beside the beam's

    @property
    def best(self) -> Hypothesis:
        return self.final[0]


@dataclass
class _Open:
    node: int
    ids: list[int]
    log_prob: float


def beam_search(
    model, vocabularies, tokens: Sequence[str], width: int = 4, length_norm: bool = True, max_len: int | None = None
) -> BeamSearch:
    """Beam search of ``width`` (1 .. ``limits.WHATIF_MAX_BEAM``) on the sentence; see the module doc."""
    source = read_source(model, vocabularies, tokens)
    width = check_int("beam width", width, 1, min(limits.WHATIF_MAX_BEAM, len(vocabularies["tgt"])))
    if not isinstance(length_norm, bool):
        raise ValueError("Length normalisation is on (True) or off (False).")
    greedy = decode(model, vocabularies, source, max_len=max_len)
    limit = source.limit if max_len is None else max_len  # checked by decode
    tgt = vocabularies["tgt"]
    nodes = [dict(token="<bos>", parent=None, step=0, log_prob=0.0, pruned=False, finished=False)]
    finals: list[tuple[list[int], float, bool, int]] = []  # ids, log-prob, ended, node
    with torch.inference_mode():
        beam = [_Open(node=0, ids=[], log_prob=0.0)]
        state = model.start(source.src, source.lengths)  # the open hypotheses' states, one row each
        for t in range(1, limit + 1):
            y = torch.tensor([h.ids[-1] if h.ids else BOS_ID for h in beam])  # (K,)
            step = model.decode_step(y, state)  # log_probs (K, V)
            top = step.log_probs.topk(width, dim=-1)  # (K, width): only these can be among the beam's best
            candidates = [  # (log-prob, the parent's row, word)
                (beam[row].log_prob + value, row, word)
                for row, (values, words) in enumerate(zip(top.values.tolist(), top.indices.tolist(), strict=True))
                for value, word in zip(values, words, strict=True)
            ]
            candidates.sort(key=lambda c: -c[0])  # stable: ties keep the order of the beam and of topk
            kept = width - len(finals)
            opened, rows = [], []
            for rank, (log_prob, row, word) in enumerate(candidates):
                parent, node = beam[row], len(nodes)
                nodes.append(dict(token=tgt.decode([word])[0], parent=parent.node, step=t, log_prob=log_prob,
                                  pruned=rank >= kept, finished=rank < kept and word == EOS_ID))
                if rank >= kept:
                    continue
                if word == EOS_ID:
                    finals.append((parent.ids, log_prob, True, node))
                else:
                    opened.append(_Open(node=node, ids=[*parent.ids, word], log_prob=log_prob))
                    rows.append(row)
            beam = opened
            if not beam:
                break
            state = model.reorder_state(step.state, torch.tensor(rows))
        finals += [(h.ids, h.log_prob, False, h.node) for h in beam]  # cut at the length limit
    ranked = []
    for ids, log_prob, ended, node in finals:
        steps = len(ids) + int(ended)
        score = log_prob / max(steps, 1) if length_norm else log_prob
        ranked.append(Hypothesis(tokens=tgt.decode(ids), ids=list(ids), log_prob=log_prob, score=score, ended=ended,
                                 node=node))
    ranked.sort(key=lambda h: -h.score)
    return BeamSearch(src_tokens=source.tokens, width=width, length_norm=length_norm,
                      nodes=[BeamNode(id=i, **fields) for i, fields in enumerate(nodes)], final=ranked, greedy=greedy)
