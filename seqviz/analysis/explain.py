"""Is attention an explanation? Three importance measures of a translator's source words, and two ablations.

For a translator with attention, a source sentence x_1 .. x_T with word vectors e_j and the translator's own
greedy output y_1 .. y_U (kept fixed: every measure below is teacher-forced on it), for every output word t
and source word j:

- attention α_tj: the LSTM decoder's weights at step t; the transformer's last-layer cross-attention averaged
  over the heads (the alignment the pages draw);
- gradient saliency ‖∂ log p(y_t | y_<t, x) / ∂ e_j‖: how much a small change of word j's vector can move the
  probability of the word written (the norm of the gradient, not gradient × input: see :func:`explain_translation`);
- leave-one-out log p(y_t | y_<t, x) − log p(y_t | y_<t, x with x_j replaced by <unk>): what the word written
  loses when word j is taken away (positive: word j supported it).

Attention agrees with a measure, for one output word, as much as it ranks the source words in the same order:
Kendall's τ-b (:func:`kendall_tau`), from −1 (reversed) through 0 (unrelated) to 1 (the same order), and
undefined (None, never NaN) when either side ranks nothing (a constant, fewer than 2 words).

The ablations ask the other question, whether the output depends on the weights at all (Jain & Wallace 2019,
Wiegreffe & Pinter 2019): at inference, replace every attention weight row by ``"uniform"`` weights over the real
source words, or by the model's own weights ``"permuted"`` over them (one seeded permutation per sentence), and
change nothing else. Both go into the model as a per-call ``mix`` (seqviz.models.attention.Mix), never kept on
the model: models are cached and shared by every visitor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from seqviz.models.attention import Mix
from seqviz.models.common import BOS_ID, one_sentence
from seqviz.tasks import pad_batch, token_matches
from seqviz.text import UNK

ABLATIONS = ("none", "uniform", "permuted")  # what held_out_exact_match and translate_with may replace α by
ROWS_PER_BATCH = 512  # rows of one batched teacher-forced pass (copies of sentences), to bound its memory


# ---------------------------------------------------------------------------------------------------------
# Kendall's τ


def kendall_tau(a, b) -> float | None:
    """Kendall's τ-b between two vectors of scores (ties counted as τ-b does), by ``scipy.stats.kendalltau``.

    None where τ is undefined: fewer than 2 items, a constant vector, a NaN or infinite value.
    """
    a, b = _pair(a, b)
    if a.size < 2 or not (np.isfinite(a).all() and np.isfinite(b).all()) or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    from scipy.stats import kendalltau  # imported on first use: scipy.stats takes seconds to import

    tau = float(kendalltau(a, b).statistic)
    return tau if np.isfinite(tau) else None


def kendall_tau_rows(a, b) -> list[float | None]:
    """:func:`kendall_tau` of every row pair of a and b (U, T), computed at once (the same numbers, to 1e-12).

    τ-b = Σ_{i≠j} sgn(a_i − a_j) sgn(b_i − b_j) / √(Σ_{i≠j} |sgn(a_i − a_j)| · Σ_{i≠j} |sgn(b_i − b_j)|): the
    concordant minus the discordant pairs over the pairs untied in a and in b. scipy takes about a millisecond
    a call; a held-out distribution needs tens of thousands.
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.ndim != 2 or a.shape != b.shape:
        raise ValueError(f"two matrices of one shape, not {a.shape} and {b.shape}")
    finite = np.isfinite(a).all(axis=1) & np.isfinite(b).all(axis=1)  # (U,)
    a, b = np.where(finite[:, None], a, 0.0), np.where(finite[:, None], b, 0.0)
    sa = np.sign(a[:, :, None] - a[:, None, :])  # (U, T, T)
    sb = np.sign(b[:, :, None] - b[:, None, :])  # (U, T, T)
    concordance = (sa * sb).sum(axis=(1, 2))  # (U,): 2 (concordant − discordant)
    untied = np.abs(sa).sum(axis=(1, 2)) * np.abs(sb).sum(axis=(1, 2))  # (U,)
    return [float(c / np.sqrt(n)) if ok and n > 0 else None
            for c, n, ok in zip(concordance, untied, finite, strict=True)]


def mean_tau(taus: Sequence[float | None]) -> float | None:
    """The mean of the defined τ (None when none is)."""
    defined = [t for t in taus if t is not None]
    return float(np.mean(defined)) if defined else None


def _pair(a, b) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(a, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"two vectors of one length, not {a.size} and {b.size}")
    return a, b


# ---------------------------------------------------------------------------------------------------------
# Three importance measures for every output word


@dataclass(frozen=True)
class TranslationExplanation:
    """Per output word t (row) and source word j (column), the three measures, for one translator and sentence."""

    src_tokens: list[str]  # the source as the model read it, "<unk>" kept visible
    out_tokens: list[str]  # its greedy output y_1 .. y_U, without <bos>/<eos>
    attention: np.ndarray  # (U, T) α_tj, rows add to 1
    gradient: np.ndarray  # (U, T) ‖∂ log p(y_t | y_<t, x) / ∂ e_j‖
    leave_one_out: np.ndarray  # (U, T) log p(y_t | y_<t, x) − log p(y_t | y_<t, x with x_j = <unk>)
    log_prob: np.ndarray  # (U,) log p(y_t | y_<t, x)
    tau_gradient: list[float | None]  # (U,) τ(α_t, gradient_t); None where undefined
    tau_leave_one_out: list[float | None]  # (U,) τ(α_t, leave_one_out_t)

    @property
    def mean_tau_gradient(self) -> float | None:
        """τ(attention, gradient) averaged over the output words where it is defined."""
        return mean_tau(self.tau_gradient)

    @property
    def mean_tau_leave_one_out(self) -> float | None:
        return mean_tau(self.tau_leave_one_out)


def explain_translation(model, vocabularies, tokens, max_len: int | None = None) -> TranslationExplanation:
    """Attention, gradient saliency and leave-one-out for every output word of ``model``'s greedy translation.

    ``vocabularies`` is the checkpoint's {"src", "tgt"}; at most ``max_len`` output words (None:
    ``seqviz.limits.output_limit`` of the sentence's length). The model must be in eval mode (as every loaded
    model is): dropout would make each measure a draw.

    Gradient saliency is the norm of the gradient, ‖∂ log p(y_t) / ∂ e_j‖, as /rnn-memory's saliency is (one
    measure of "how much can this word move the output" across the story). Gradient × input, ∂ log p(y_t) /
    ∂ e_j · e_j, is a first-order guess at what removing the word would do; leave-one-out, beside it, measures
    that removal itself, so the norm is the measure that adds something. For the transformer e_j is the word's
    vector E[w_j], before √d and the position are added (the gradient with respect to the sum is √d times
    smaller, so the ranking, and τ, are the same).

    All of it is two batched teacher-forced passes (:func:`explain_many`): U copies of the sentence with one
    backward pass for the gradients, T + 1 copies (each word replaced by <unk> in turn, and the sentence as it
    is) for leave-one-out and the attention.
    """
    src_vocab, tgt_vocab = vocabularies["src"], vocabularies["tgt"]
    ids, seen = one_sentence(tokens, src_vocab)
    src, lengths = pad_batch([ids])  # (1, T), (1,)
    with torch.inference_mode():
        output = model.greedy(src, lengths, max_len)[0][0]
    return explain_many(model, [ids], [output], unk_id=src_vocab.stoi[UNK],
                        src_tokens=[seen], out_tokens=[tgt_vocab.decode(output)])[0]


def explain_many(
    model,
    sources: Sequence[Sequence[int]],
    outputs: Sequence[Sequence[int]],
    unk_id: int,
    src_tokens: Sequence[list[str]] | None = None,
    out_tokens: Sequence[list[str]] | None = None,
) -> list[TranslationExplanation]:
    """:func:`explain_translation`'s measures for many (source ids, output ids) pairs, in shared batches.

    ``outputs`` are what the model wrote (no <bos>/<eos>); the tokens default to the ids as strings. A pair with
    no output word gets (0, T) arrays.
    """
    if model.training:
        raise ValueError("explain a model in eval mode: dropout would make every measure a random draw")
    sources, outputs = [[int(i) for i in s] for s in sources], [[int(i) for i in o] for o in outputs]
    if any(not s for s in sources):
        raise ValueError("The sentence has no words to translate: type at least one word.")
    measured: list[tuple[np.ndarray, ...] | None] = [None] * len(sources)
    for chunk in _chunks([i for i, o in enumerate(outputs) if o], sources, outputs):
        for i, arrays in zip(chunk, _measure(model, [sources[i] for i in chunk], [outputs[i] for i in chunk],
                                             unk_id), strict=True):
            measured[i] = arrays
    explanations = []
    for i, (ids, out) in enumerate(zip(sources, outputs, strict=True)):
        T = len(ids)
        attention, gradient, loo, log_prob = measured[i] or (np.zeros((0, T), np.float32),) * 3 + (np.zeros(0),)
        explanations.append(TranslationExplanation(
            src_tokens=list(src_tokens[i]) if src_tokens else [str(w) for w in ids],
            out_tokens=list(out_tokens[i]) if out_tokens else [str(w) for w in out],
            attention=attention, gradient=gradient, leave_one_out=loo, log_prob=log_prob,
            tau_gradient=kendall_tau_rows(attention, gradient), tau_leave_one_out=kendall_tau_rows(attention, loo)))
    return explanations


def _chunks(picked: list[int], sources, outputs) -> list[list[int]]:
    """Pairs (indices into sources) grouped, in order, so that each group's copies fit ROWS_PER_BATCH."""
    chunks: list[list[int]] = []
    rows = 0
    for i in picked:
        need = max(len(outputs[i]), len(sources[i]) + 1)  # the larger of its two passes
        if chunks and rows + need <= ROWS_PER_BATCH:
            chunks[-1].append(i)
            rows += need
        else:
            chunks.append([i])
            rows = need
    return chunks


def _measure(model, sources: list[list[int]], outputs: list[list[int]], unk_id: int) -> list[tuple[np.ndarray, ...]]:
    """(attention (U, T), gradient (U, T), leave-one-out (U, T), log p (U,)) per pair; every output non-empty."""
    # The gradient pass: copy (i, t) of sentence i differentiates log p(y_t) with respect to its own e_j.
    rows = [(i, t) for i, out in enumerate(outputs) for t in range(len(out))]
    with torch.inference_mode(False), torch.enable_grad():
        src, lengths, tgt_in, targets = _teacher_batch(sources, outputs, [i for i, _ in rows])
        embedded = model.embed_source(src).detach().requires_grad_(True)  # (R, T, E)
        logits, _ = model.teacher_forced(src, lengths, tgt_in, embedded=embedded)  # (R, U, V)
        steps = torch.tensor([t for _, t in rows])  # (R,)
        picked = _log_probs(logits, targets)[torch.arange(len(rows)), steps]  # (R,): copy (i, t)'s log p(y_t)
        (grad,) = torch.autograd.grad(picked.sum(), embedded)  # (R, T, E)
    norms = grad.norm(dim=-1).float().numpy()  # (R, T)
    # The leave-one-out pass: copy (i, j) has x_j = <unk> (j < T_i); copy (i, T_i) is the sentence as it is.
    copies = [(i, j) for i, ids in enumerate(sources) for j in range(len(ids) + 1)]
    with torch.inference_mode():
        src, lengths, tgt_in, targets = _teacher_batch(sources, outputs, [i for i, _ in copies])
        for row, (i, j) in enumerate(copies):
            if j < len(sources[i]):
                src[row, j] = unk_id
        logits, weights = model.teacher_forced(src, lengths, tgt_in)  # (R', U, V), (R', U, T)
        log_p = _log_probs(logits, targets).float().numpy()  # (R', U)
        weights = weights.float().numpy()
    results = []
    first_grad, first_copy = 0, 0
    for ids, out in zip(sources, outputs, strict=True):
        T, U = len(ids), len(out)
        whole = first_copy + T  # the unchanged sentence's row
        log_prob = log_p[whole, :U].copy()  # (U,)
        loo = (log_prob[None, :] - log_p[first_copy:whole, :U]).T.copy()  # (U, T)
        gradient = norms[first_grad : first_grad + U, :T].copy()  # (U, T)
        results.append((weights[whole, :U, :T].copy(), gradient, loo, log_prob))
        first_grad, first_copy = first_grad + U, whole + 1
    return results


def _teacher_batch(
    sources: list[list[int]], outputs: list[list[int]], which: list[int]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Row r copies pair which[r]: src (R, T), lengths (R,), tgt_in (R, U) = <bos> y_1 .. y_{U-1}, targets (R, U)
    = y_1 .. y_U (both padded with <pad>)."""
    src, lengths = pad_batch([sources[i] for i in which])
    tgt_in, _ = pad_batch([[BOS_ID, *outputs[i][:-1]] for i in which])
    targets, _ = pad_batch([outputs[i] for i in which])
    return src, lengths, tgt_in, targets


def _log_probs(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """log p(y_t) (R, U) of the targets (R, U) under logits (R, U, V); padding reads <pad>'s, never used."""
    return logits.log_softmax(dim=-1).gather(-1, targets[..., None])[..., 0]  # (R, U)


# ---------------------------------------------------------------------------------------------------------
# Ablations: does the output depend on the weights?


def uniform_weights(weights: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """A :data:`~seqviz.models.attention.Mix`: every row 1/T over the T real source words, 0 on padding."""
    real = mask.expand_as(weights).to(weights.dtype)  # (..., Tq, Tk)
    return real / real.sum(dim=-1, keepdim=True)


def permutation_mix(src: torch.Tensor, src_lengths: torch.Tensor, seed: int = 0) -> Mix:
    """A :data:`~seqviz.models.attention.Mix` that permutes each sentence's weights over its real source words.

    Sentence b's permutation π is drawn from ``seed`` and its own word ids, so it is the same whether the
    sentence is decoded alone or in any batch, and the same at every decoder step, head and layer: α'_tj =
    α_tπ(j). One per sentence, not one per step: the transformer reads its whole prefix again at every step,
    and a fresh draw each time would hand it a prefix it never wrote with. Padding stays where it is (and 0).
    """
    B, T = src.shape
    index = np.tile(np.arange(T), (B, 1))  # (B, T)
    for b, n in enumerate(src_lengths.tolist()):
        words = src[b, :n].tolist()
        index[b, :n] = np.random.default_rng([int(seed), *words]).permutation(n)
    index_t = torch.from_numpy(index).to(src.device)  # (B, T)

    def permuted(weights: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        shape = (B,) + (1,) * (weights.dim() - 2) + (T,)
        return weights.gather(-1, index_t.view(shape).expand_as(weights))  # (..., Tq, T)

    return permuted


def check_ablation(ablation: str) -> str:
    if ablation not in ABLATIONS:
        raise ValueError(f"ablation must be one of {ABLATIONS}, not {ablation!r:.40}")
    return ablation


def ablation_mix(ablation: str, src: torch.Tensor, src_lengths: torch.Tensor, seed: int = 0) -> Mix | None:
    """The mix that replaces the weights for this batch (None for ``"none"``: the model's own weights)."""
    check_ablation(ablation)
    if ablation == "uniform":
        return uniform_weights
    if ablation == "permuted":
        return permutation_mix(src, src_lengths, seed)
    return None


def translate_with(model, vocabularies, tokens, ablation: str, seed: int = 0, max_len: int | None = None) -> list[str]:
    """``model``'s greedy translation of one sentence with its attention weights replaced (:data:`ABLATIONS`)."""
    src_vocab = vocabularies["src"]
    ids, _ = one_sentence(tokens, src_vocab)
    src, lengths = pad_batch([ids])  # (1, T), (1,)
    output = model.translate(src, lengths, max_len, mix=ablation_mix(ablation, src, lengths, seed))[0]
    return vocabularies["tgt"].decode(output)


class _Ablated:
    """What TranslationTask.translate reads of a model (``translate``), with every batch's weights replaced."""

    def __init__(self, model, ablation: str, seed: int) -> None:
        self.model, self.ablation, self.seed = model, check_ablation(ablation), seed

    def translate(self, src, src_lengths, max_len=None):
        return self.model.translate(src, src_lengths, max_len,
                                    mix=ablation_mix(self.ablation, src, src_lengths, self.seed))


def held_out_pairs(task, limit: int | None = None) -> list:
    """The held-out pairs whose sources are as long as training's (at most ``task.max_train_src_len`` tokens, as
    the headline exact match), or ``limit`` of them spread evenly over the lengths (the test set is in length order)."""
    pairs = [p for p in task.splits.test if len(p.src) <= task.max_train_src_len]
    if limit is None or limit >= len(pairs):
        return pairs
    return [pairs[i] for i in np.linspace(0, len(pairs) - 1, max(0, int(limit))).round().astype(int)]


@dataclass(frozen=True)
class HeldOutMatch:
    """Greedy translation of held-out sentences with the attention weights replaced (or not)."""

    ablation: str  # "none" | "uniform" | "permuted"
    n: int  # sentences translated
    exact_match: float | None  # share translated word for word as the reference
    token_accuracy: float | None  # positions that agree, over the longer of output and reference


def held_out_exact_match(model, task, ablation: str = "none", limit: int | None = None, seed: int = 0) -> HeldOutMatch:
    """Exact match over :func:`held_out_pairs` (a seqviz.tasks.TranslationTask with the model's vocabularies),
    decoded in TranslationTask's batches with every attention weight row replaced by ``ablation``.

    With ``"none"`` and no limit it is the checkpoint's ``exact_match_le30``."""
    pairs = held_out_pairs(task, limit)
    outputs = task.translate(_Ablated(model, ablation, seed), [p.src for p in pairs])
    exact = matched = positions = 0
    for output, pair in zip(outputs, pairs, strict=True):
        exact += list(output) == list(pair.tgt)
        agree, longer = token_matches(output, pair.tgt)
        matched, positions = matched + agree, positions + longer
    return HeldOutMatch(ablation=ablation, n=len(pairs), exact_match=exact / len(pairs) if pairs else None,
                        token_accuracy=matched / positions if positions else None)


@dataclass(frozen=True)
class HeldOutTaus:
    """Per output word of the held-out translations, τ between attention and each measure (the defined ones)."""

    gradient: list[float]  # τ(α_t, gradient saliency_t), one per output word where defined
    leave_one_out: list[float]  # τ(α_t, leave-one-out_t)
    sentences: int  # held-out sentences explained
    words: int  # output words among them (words − len(gradient) had τ undefined)


def held_out_taus(model, task, limit: int | None = 300) -> HeldOutTaus:
    """τ per output word over :func:`held_out_pairs` (``limit`` of them), each sentence's own greedy output fixed."""
    pairs = held_out_pairs(task, limit)
    sources = [task.src_vocab.encode(list(p.src)) for p in pairs]
    outputs = model.translate_many(sources) if sources else []
    explained = explain_many(model, sources, outputs, unk_id=task.src_vocab.stoi[UNK])
    gradient = [t for e in explained for t in e.tau_gradient if t is not None]
    loo = [t for e in explained for t in e.tau_leave_one_out if t is not None]
    return HeldOutTaus(gradient=gradient, leave_one_out=loo, sentences=len(pairs),
                       words=sum(len(o) for o in outputs))


__all__ = [
    "ABLATIONS",
    "HeldOutMatch",
    "HeldOutTaus",
    "TranslationExplanation",
    "ablation_mix",
    "check_ablation",
    "explain_many",
    "explain_translation",
    "held_out_exact_match",
    "held_out_pairs",
    "held_out_taus",
    "kendall_tau",
    "kendall_tau_rows",
    "mean_tau",
    "permutation_mix",
    "translate_with",
    "uniform_weights",
]
