"""/what-if: the training sentences whose states are nearest to a state of the visitor's sentence.

Two sides, one index each per model (:func:`build_index`, built once and cached by the page):

- ``"encoder"``: the encoder state h_j of every source word j of the training sentences (the LSTM's
  [→h_j; ←h_j], the transformer encoder's output);
- ``"decoder"``: the decoder state of every output step t, teacher-forced on the training sentence's French
  (s_t, the state that wrote y_t; the transformer's last layer at that position, the vector its output layer reads).

A visitor's state is compared with every state of the index by cosine similarity,

    cos(q, h) = q · h / (‖q‖ ‖h‖),

one matrix product against the index's rows, each divided by its norm once when the index is built
(tests/unit/test_whatif_neighbours.py checks it against scikit-learn's ``NearestNeighbors(metric="cosine")``).
An index holds at most ``limits.WHATIF_INDEX_STATES`` states and ``limits.WHATIF_INDEX_MB`` megabytes: those of the
first training sentences, whole, in the data's (random) order, so its memory is bounded whatever the model: N × D
float32 numbers, ``nbytes``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from seqviz import limits
from seqviz.analysis.decoding import check_int, decode, read_source
from seqviz.models.common import BOS_ID
from seqviz.tasks import pad_batch

SIDES = ("encoder", "decoder")
BATCH = 128  # training sentences per batched pass when an index is built


@dataclass(frozen=True)
class NeighbourIndex:
    side: str  # "encoder" (source words) or "decoder" (output steps)
    vectors: torch.Tensor  # (N, D) every state divided by its norm
    sentence: np.ndarray  # (N,) which pair each state comes from (an index into ``pairs``)
    position: np.ndarray  # (N,) the source word's position (encoder) or the output step (decoder)
    pairs: list[tuple[tuple[str, ...], tuple[str, ...]]]  # (English, French) of every sentence indexed

    @property
    def nbytes(self) -> int:
        """The memory the index holds: its vectors and the sentence and position of each."""
        return self.vectors.numel() * self.vectors.element_size() + self.sentence.nbytes + self.position.nbytes

    def __len__(self) -> int:
        return self.vectors.size(0)


@dataclass(frozen=True)
class Neighbour:
    english: list[str]
    french: list[str]
    side: str
    position: int  # the word marked: in ``english`` (encoder side) or ``french`` (decoder side)
    similarity: float  # cosine similarity with the visitor's state, -1 .. 1

    @property
    def word(self) -> str:
        return (self.english if self.side == "encoder" else self.french)[self.position]


def training_pairs(seed: int | None = None) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """(English, French) of the translation task's training sentences (``seed``: the data seed, None: the task's)."""
    from seqviz.data.translation import make_translation_splits
    from seqviz.tasks import DATA_SEED

    return [(p.src, p.tgt) for p in make_translation_splits(DATA_SEED if seed is None else seed).train]


def source_states(model, src_ids: Sequence[Sequence[int]], batch: int = BATCH) -> list[np.ndarray]:
    """The encoder states (T_i, D) of every sentence (lists of source ids), batch by batch."""
    out = []
    with torch.inference_mode():
        for start in range(0, len(src_ids), batch):
            chunk = src_ids[start : start + batch]
            src, lengths = pad_batch(chunk)  # (B, T), (B,)
            states = model.encoder_states(src, lengths)  # (B, T, D)
            out += [states[b, : len(ids)].numpy().copy() for b, ids in enumerate(chunk)]
    return out


def output_states(model, src_ids, tgt_ids, batch: int = BATCH) -> list[np.ndarray]:
    """The decoder states (U_i, H) teacher-forced on each sentence's target ids (no <bos>/<eos>): row t is the
    step that wrote y_t, having read y_<t (the model's ``decoder_states``)."""
    out = []
    with torch.inference_mode():
        for start in range(0, len(src_ids), batch):
            chunk, targets = src_ids[start : start + batch], tgt_ids[start : start + batch]
            src, lengths = pad_batch(chunk)  # (B, T), (B,)
            tgt_in, _ = pad_batch([[BOS_ID, *ids[:-1]] for ids in targets])  # (B, U): <bos> y_1 .. y_{U-1}
            states = model.decoder_states(src, lengths, tgt_in)  # (B, U, H)
            out += [states[b, : len(ids)].numpy().copy() for b, ids in enumerate(targets)]
    return out


def build_index(model, vocabularies, pairs, side: str = "encoder", max_states: int | None = None) -> NeighbourIndex:
    """The states of ``side`` of the first of ``pairs`` ((English, French) token sequences), as one matrix of unit
    rows: at most ``max_states`` (None: ``limits.WHATIF_INDEX_STATES``) and ``limits.WHATIF_INDEX_MB`` megabytes."""
    if side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}, not {side!r:.40}")
    max_states = check_int("number of states", limits.WHATIF_INDEX_STATES if max_states is None else max_states, 1,
                           limits.WHATIF_INDEX_STATES)
    pairs = [(tuple(english), tuple(french)) for english, french in pairs]
    if not pairs:
        raise ValueError("an index needs at least one sentence")
    src_vocab, tgt_vocab = vocabularies["src"], vocabularies["tgt"]

    def states_of(chosen) -> list[np.ndarray]:
        src_ids = [src_vocab.encode(list(e)) for e, _ in chosen]
        if side == "encoder":
            return source_states(model, src_ids)
        return output_states(model, src_ids, [tgt_vocab.encode(list(f)) for _, f in chosen])

    dim = states_of(pairs[:1])[0].shape[1]  # D: the size of one state
    max_states = max(1, min(max_states, int(limits.WHATIF_INDEX_MB * 2**20) // (4 * dim)))  # float32: 4 bytes
    chosen, total = [], 0
    for english, french in pairs:
        if total >= max_states:
            break
        chosen.append((english, french))
        total += len(english if side == "encoder" else french)
    states = states_of(chosen)
    sentence = np.concatenate([np.full(len(s), i, np.int32) for i, s in enumerate(states)])[:max_states]
    position = np.concatenate([np.arange(len(s), dtype=np.int32) for s in states])[:max_states]
    vectors = torch.from_numpy(np.concatenate(states)[:max_states])  # (N, D)
    vectors = vectors / vectors.norm(dim=1, keepdim=True).clamp_min(1e-12)
    return NeighbourIndex(side=side, vectors=vectors.contiguous(), sentence=sentence, position=position, pairs=chosen)


def nearest(index: NeighbourIndex, query, k: int = 5) -> list[Neighbour]:
    """The ``k`` states of the index most cosine-similar to ``query`` (D,), most similar first."""
    k = check_int("number of neighbours", k, 1, min(limits.WHATIF_MAX_NEIGHBOURS, len(index)))
    q = torch.as_tensor(np.asarray(query, dtype=np.float32)).flatten()
    if q.numel() != index.vectors.size(1) or not torch.isfinite(q).all():
        raise ValueError(f"the query must be {index.vectors.size(1)} finite numbers")
    similarity = index.vectors @ (q / q.norm().clamp_min(1e-12))  # (N,): cos(q, h_i)
    top = similarity.topk(k)
    return [Neighbour(english=list(index.pairs[index.sentence[i]][0]), french=list(index.pairs[index.sentence[i]][1]),
                      side=index.side, position=int(index.position[i]), similarity=float(s))
            for s, i in zip(top.values.tolist(), top.indices.tolist(), strict=True)]


def source_neighbours(index: NeighbourIndex, model, vocabularies, tokens, position: int, k: int = 5) -> list[Neighbour]:
    """Nearest training states to the encoder state of the visitor's source word at ``position``."""
    if index.side != "encoder":
        raise ValueError("a source word's neighbours are looked up in an encoder index")
    source = read_source(model, vocabularies, tokens)
    position = check_int("word's position", position, 0, len(source.ids) - 1)
    return nearest(index, source_states(model, [source.ids])[0][position], k)


def output_neighbours(index: NeighbourIndex, model, vocabularies, tokens, step: int, k: int = 5) -> list[Neighbour]:
    """Nearest training states to the decoder state of output ``step`` of the greedy translation (<eos> included)."""
    if index.side != "decoder":
        raise ValueError("an output step's neighbours are looked up in a decoder index")
    decoded = decode(model, vocabularies, read_source(model, vocabularies, tokens))
    step = check_int("output step", step, 0, len(decoded.steps) - 1)
    return nearest(index, decoded.hidden[step], k)

