"""Inside one head of a trained transformer: BertViz's neuron view, the chapter's three steps on real vectors.

For a layer, a head n and a query word i of the transformer classifier's self-attention, with the block's input
x (its LayerNorm first, as the block reads it) and d_k = d_model / N numbers per head:

    q_i = (W_Q LN(x_i) + b_Q)[head n]     the question word i asks            (d_k,)
    k_j = (W_K LN(x_j) + b_K)[head n]     what word j offers to be found by   (d_k,)
    (1) score_ij = q_i · k_j / √d_k       = Σ_d (q_i ⊙ k_j)_d / √d_k: the products, added up, then scaled
    (2) α_i = softmax(score_i)            over the words the model's mask lets i see (0 elsewhere)
    (3) output_i = Σ_j α_ij v_j           the mix, with v_j = (W_V LN(x_j) + b_V)[head n]

The q, k and v are the model's own: :func:`neuron_trace` runs the model's modules (its embedding, position
vectors, LayerNorms, W_Q, W_K, W_V and blocks) on the sentence, block by block as ``encode`` does, and keeps
the mask and the attention weights the model's own forward pass returned. tests/unit/test_neuron_view.py
recomputes every head's weights from the q and k shown and matches them against ``attention_trace``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from seqviz.models.common import one_sentence


@dataclass(frozen=True)
class NeuronTrace:
    """q, k and v of every layer, head and word of one sentence, with the model's mask and its own weights."""

    tokens: list[str]  # the words as the model saw them, "<unk>" kept visible
    queries: np.ndarray  # (L, N, T, d_k) q_i of every layer and head
    keys: np.ndarray  # (L, N, T, d_k) k_j
    values: np.ndarray  # (L, N, T, d_k) v_j
    mask: np.ndarray  # (L, T, T) True where the model let query i look at key j (its own mask, per layer)
    weights: np.ndarray  # (L, N, T, T) the attention weights the model's forward pass returned

    @property
    def shape(self) -> tuple[int, int, int, int]:
        """(L, N, T, d_k): layers, heads, words, numbers per head."""
        return self.queries.shape  # type: ignore[return-value]

    def step(self, layer: int, head: int, query: int) -> NeuronStep:
        """The three steps of head ``head`` of layer ``layer`` for the query word ``query`` (0-based; each
        clamped into range, so a stale setting from the address never fails)."""
        layers, heads, words, _ = self.shape
        layer, head, query = (min(max(int(v), 0), n - 1) for v, n in ((layer, layers), (head, heads),
                                                                      (query, words)))
        q = self.queries[layer, head, query].astype(np.float64)  # (d_k,)
        k = self.keys[layer, head].astype(np.float64)  # (T, d_k)
        v = self.values[layer, head].astype(np.float64)  # (T, d_k)
        allowed = self.mask[layer, query]  # (T,)
        products = q[None, :] * k  # (T, d_k): q_i ⊙ k_j
        dots = products.sum(axis=1)  # (T,): q_i · k_j
        scaled = dots / math.sqrt(q.shape[0])  # (T,): (1) score_ij
        weights = softmax(scaled, allowed)  # (T,): (2) α_ij
        return NeuronStep(tokens=list(self.tokens), layer=layer, head=head, query=query, q=q, keys=k,
                          products=products, dots=dots, scaled=scaled, weights=weights, allowed=allowed, values=v,
                          mixed=weights @ v, model_weights=self.weights[layer, head, query].astype(np.float64))


@dataclass(frozen=True)
class NeuronStep:
    """One query word of one head: its q, every k_j and v_j, their products and the three steps."""

    tokens: list[str]
    layer: int  # 0-based
    head: int  # 0-based
    query: int  # 0-based position of the word asking
    q: np.ndarray  # (d_k,)
    keys: np.ndarray  # (T, d_k)
    products: np.ndarray  # (T, d_k) q ⊙ k_j
    dots: np.ndarray  # (T,) q · k_j
    scaled: np.ndarray  # (T,) q · k_j / √d_k: step (1)
    weights: np.ndarray  # (T,) softmax of the scaled scores over the allowed words: step (2)
    allowed: np.ndarray  # (T,) bool, the model's mask for this query
    values: np.ndarray  # (T, d_k) v_j
    mixed: np.ndarray  # (d_k,) Σ_j α_j v_j: step (3), this head's output for the word
    model_weights: np.ndarray  # (T,) the weights the model's own forward pass returned, for comparison

    @property
    def d_k(self) -> int:
        return int(self.q.shape[0])


def softmax(scores: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """softmax over the allowed entries (float64), exactly 0 elsewhere: step (2)."""
    shifted = np.where(allowed, scores - scores[allowed].max(initial=-np.inf), -np.inf)
    exp = np.exp(shifted)
    return exp / exp.sum()


def neuron_trace(model, tokens, vocab) -> NeuronTrace:
    """q, k, v of every layer and head of a transformer classifier (seqviz.models.classifiers.transformer) on one
    sentence, from its own modules, with the mask and weights its own forward pass used."""
    ids, seen = one_sentence(tokens, vocab)
    seen_masks: list[torch.Tensor] = []

    def keep(weights: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:  # a Mix that changes nothing
        seen_masks.append(mask)
        return weights

    with torch.inference_mode():
        ids_t = torch.tensor([ids])  # (1, T)
        lengths = torch.tensor([len(ids)])
        emb = model.embed(ids_t)  # (1, T, D)
        _, weights = model.encode(emb, lengths, mix=keep)  # (1, L, N, T, T): the model's own pass
        steps = torch.arange(len(ids))
        x = model.dropout(emb + model.positions(steps)[None])  # (1, T, D): as encode adds the positions
        queries, keys, values = [], [], []
        for block, mask in zip(model.blocks, seen_masks, strict=True):
            read = block.norm1(x)  # (1, T, D): what the block's attention reads
            attn = block.attn
            for projection, kept in ((attn.q, queries), (attn.k, keys), (attn.v, values)):
                kept.append(_heads(projection(read), attn.n_heads))  # (N, T, d_k)
            x, _ = block(x, mask)  # (1, T, D): the block's output, the next block's input
    T = len(ids)
    masks = [m.expand(1, 1, T, T)[0, 0] for m in seen_masks]  # each (T, T)
    return NeuronTrace(tokens=seen, queries=_stack(queries), keys=_stack(keys), values=_stack(values),
                       mask=_stack(masks).astype(bool), weights=weights[0].numpy().copy())


def _heads(projected: torch.Tensor, heads: int) -> torch.Tensor:
    """(1, T, D) -> (N, T, d_k): the heads' slices, as MultiHeadAttention splits them."""
    _, T, D = projected.shape
    return projected.view(T, heads, D // heads).transpose(0, 1)


def _stack(tensors: list[torch.Tensor]) -> np.ndarray:
    return torch.stack(tensors).numpy().copy()


def summary(step: NeuronStep) -> str:
    """What this head does for this word, in words, from the step's own numbers."""
    words = step.tokens
    top = int(np.argmax(np.where(step.allowed, step.weights, -1.0)))
    highest = int(np.argmax(np.where(step.allowed, step.dots, -np.inf)))
    root = math.sqrt(step.d_k)
    agree = np.abs(step.weights - step.model_weights).max()
    said = (f"In layer {step.layer + 1}, head {step.head + 1}, “{words[step.query]}” (word {step.query + 1}) asks "
            f"with q of {step.d_k} numbers. (1) Its largest product q · k is with “{words[highest]}” "
            f"({step.dots[highest]:+.2f}); divided by √d_k = {root:.2f} that is a score of "
            f"{step.scaled[highest]:+.2f}. (2) The softmax turns the scores into weights that add to 1: the most, "
            f"{step.weights[top]:.1%}, goes to “{words[top]}” (word {top + 1}). (3) The head's output for the word "
            f"is the mix of the words' value vectors v_j by those weights. These weights, recomputed from the q and "
            f"k shown, differ from the model's own by at most {agree:.0e}.")
    return said
