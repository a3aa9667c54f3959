"""Does the output depend on the attention weights at all? (Jain & Wallace 2019, Wiegreffe & Pinter 2019)

At inference, replace every attention weight row by ``"uniform"`` weights over the real input words, or by the
model's own weights ``"permuted"`` over them, and change nothing else. Translators and classifiers take the
replacement the same way, as a per-call ``mix`` (seqviz.models.attention.Mix: the weights after the softmax and
the mask of real words in, the weights that mix the values out), never kept on the model: models are cached and
shared by every visitor.

- Translators: the greedy translation with the weights replaced (:func:`translate_with`), and held-out exact
  match (:func:`held_out_exact_match`): one seeded permutation per sentence.
- Classifiers: Jain & Wallace's permutation test (:func:`permutation_test`): K seeded permutations per held-out
  email, and uniform weights, through :meth:`target_log_probs` with every class as a target.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from seqviz.analysis.explain import batches
from seqviz.models.attention import Mix
from seqviz.models.common import one_sentence
from seqviz.tasks import pad_batch, token_matches

ABLATIONS = ("none", "uniform", "permuted")  # what held_out_exact_match and translate_with may replace α by


def uniform_weights(weights: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """A :data:`~seqviz.models.attention.Mix`: every row 1/T over the T real input words, 0 on padding."""
    real = mask.expand_as(weights).to(weights.dtype)  # (..., Tq, Tk)
    return real / real.sum(dim=-1, keepdim=True)


def index_mix(index: torch.Tensor) -> Mix:
    """A :data:`~seqviz.models.attention.Mix` that moves each row's weights: α'_j = α_index[b, j] for row b, at every
    step, head and layer; ``index`` (B, T) leaves padding where it is."""
    B, T = index.shape

    def moved(weights: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        shape = (B,) + (1,) * (weights.dim() - 2) + (T,)
        return weights.gather(-1, index.to(weights.device).view(shape).expand_as(weights))  # (..., Tq, T)

    return moved


def permutation_mix(src: torch.Tensor, src_lengths: torch.Tensor, seed: int = 0) -> Mix:
    """A :data:`~seqviz.models.attention.Mix` that permutes each sentence's weights over its real words.

    Sentence b's permutation π is drawn from ``seed`` and its own word ids, so it is the same whether the
    sentence is decoded alone or in any batch, and the same at every decoder step, head and layer: α'_tj =
    α_tπ(j). One per sentence, not one per step: the transformer reads its whole prefix again at every step,
    and a fresh draw each time would hand it a prefix it never wrote with. Padding stays where it is (and 0).
    """
    index = np.tile(np.arange(src.shape[1]), (src.shape[0], 1))  # (B, T)
    for b, n in enumerate(src_lengths.tolist()):
        index[b, :n] = np.random.default_rng([int(seed), *src[b, :n].tolist()]).permutation(n)
    return index_mix(torch.from_numpy(index))


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


# ---------------------------------------------------------------------------------------------------------
# Translators


def translate_with(model, vocabularies, tokens, ablation: str, seed: int = 0, max_len: int | None = None) -> list[str]:
    """``model``'s greedy translation of one sentence with its attention weights replaced (:data:`ABLATIONS`)."""
    ids, _ = one_sentence(tokens, vocabularies["src"])
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


@dataclass(frozen=True)
class HeldOutMatch:
    """Greedy translation of held-out sentences with the attention weights replaced (or not)."""

    ablation: str  # "none" | "uniform" | "permuted"
    n: int  # sentences translated
    exact_match: float | None  # share translated word for word as the reference
    token_accuracy: float | None  # positions that agree, over the longer of output and reference


def held_out_exact_match(model, task, ablation: str = "none", limit: int | None = None, seed: int = 0) -> HeldOutMatch:
    """Exact match over :func:`~.batches.held_out_pairs` (a seqviz.tasks.TranslationTask with the model's
    vocabularies), decoded in TranslationTask's batches with every attention weight row replaced by ``ablation``.

    With ``"none"`` and no limit it is the checkpoint's ``exact_match_le30``."""
    pairs = batches.held_out_pairs(task, limit)
    outputs = task.translate(_Ablated(model, ablation, seed), [p.src for p in pairs])
    exact = matched = positions = 0
    for output, pair in zip(outputs, pairs, strict=True):
        exact += list(output) == list(pair.tgt)
        agree, longer = token_matches(output, pair.tgt)
        matched, positions = matched + agree, positions + longer
    return HeldOutMatch(ablation=ablation, n=len(pairs), exact_match=exact / len(pairs) if pairs else None,
                        token_accuracy=matched / positions if positions else None)


# ---------------------------------------------------------------------------------------------------------
# Classifiers: Jain & Wallace's permutation test


@dataclass(frozen=True)
class PermutationTest:
    """Does a classifier's decision depend on where its attention weights fall? (Jain & Wallace 2019, §4.2)

    For every held-out email: ŷ and p(ŷ) with its own α; then with α permuted over its real words (``permutations``
    seeded draws) and with uniform weights 1/T. The per-email figure is the mean over the permutations of
    |p_perm(ŷ) − p(ŷ)| (the paper takes the median; the pages use means throughout).
    """

    emails: int  # held-out emails tested
    permutations: int  # permutations per email
    seed: int
    changed_any: float | None  # share of emails whose predicted team changes under at least one permutation
    changed_most: float | None  # share whose team changes under more than half of the permutations
    mean_difference: float | None  # mean over emails of the per-email mean |p_perm(ŷ) − p(ŷ)|
    p90_difference: float | None  # its 90th percentile over emails
    uniform_changed: float | None  # share of emails whose team changes with uniform weights
    uniform_mean_difference: float | None  # mean over emails of |p_uniform(ŷ) − p(ŷ)|
    uniform_p90_difference: float | None
    per_email_difference: np.ndarray  # (E,) each email's mean |p_perm(ŷ) − p(ŷ)| (for a histogram)
    per_email_changed: np.ndarray  # (E,) the share of its permutations that changed its team
    uniform_difference: np.ndarray  # (E,) |p_uniform(ŷ) − p(ŷ)|
    max_attention: np.ndarray  # (E,) max_j α_j of each email (the paper bins the differences by it)


def email_permutations(ids: Sequence[int], permutations: int, seed: int = 0) -> np.ndarray:
    """(K, T) permutations of an email's T word positions, drawn from ``seed`` and the email's own word ids:
    an email gets the same K permutations alone, in any batch or at any place in the held-out set; word-identical
    twins get the same ones. A draw may be the identity (1 in T!)."""
    rng = np.random.default_rng([int(seed), *(int(i) for i in ids)])
    return np.stack([rng.permutation(len(ids)) for _ in range(int(permutations))]).reshape(-1, len(ids))  # (K, T)


def permutation_test(model, task, limit: int | None = 200, permutations: int = 100, seed: int = 0) -> PermutationTest:
    """Jain & Wallace's permutation test over :func:`~.batches.held_out_emails` (``limit`` of them) for a classifier
    that attends; ``task`` an EmailTask with the model's vocabulary.

    Each permuted copy goes through the model's own mix path (:func:`index_mix`): the mix receives the α the model
    computed for that copy and returns it permuted over the real words (α'_j = α_π(j), padding left 0), so the
    states, the head and everything else are the model's. Copies of many emails share batches of at most
    ROWS_PER_BATCH rows. Uniform weights are :func:`uniform_weights`, one run.
    """
    if not getattr(model, "has_attention", False):
        raise ValueError(f"the permutation test replaces attention weights, and a {type(model).__name__} has none")
    batches.check_explainable(model)
    permutations = int(permutations)
    if permutations < 1:
        raise ValueError("at least one permutation")
    emails = [task.vocab.encode(list(e.tokens)) for e in batches.held_out_emails(task, limit)]
    E = len(emails)
    real, attention = _class_log_probs(model, emails, [None] * E)  # (E, C), (E, T_max)
    predicted = real.argmax(axis=1) if E else np.zeros(0, dtype=int)  # (E,)
    p_real = np.exp(real[np.arange(E), predicted])  # (E,)
    uniform, _ = _class_log_probs(model, emails, ["uniform"] * E)  # (E, C)
    # Every (email, permutation) copy, in flat order: email b's K copies at rows b K .. b K + K − 1.
    orders = [email_permutations(ids, permutations, seed) for ids in emails]  # E x (K, T_b)
    rows = [(b, k) for b in range(E) for k in range(permutations)]
    permuted, _ = _class_log_probs(model, [emails[b] for b, _ in rows], [orders[b][k] for b, k in rows])  # (EK, C)
    permuted = permuted.reshape(E, permutations, real.shape[1] if E else 0)  # (E, K, C) (no email: (0, K, 0))
    moved = np.abs(np.exp(permuted[np.arange(E), :, predicted]) - p_real[:, None])  # (E, K)
    changed = (permuted.argmax(axis=2) != predicted[:, None]).mean(axis=1) if E else np.zeros(0)  # (E,)
    per_email = moved.mean(axis=1) if E else np.zeros(0)  # (E,)
    uniform_moved = np.abs(np.exp(uniform[np.arange(E), predicted]) - p_real)  # (E,)

    def mean(x: np.ndarray) -> float | None:
        return float(np.mean(x)) if E else None

    def p90(x: np.ndarray) -> float | None:
        return float(np.quantile(x, 0.9)) if E else None

    return PermutationTest(
        emails=E, permutations=permutations, seed=int(seed),
        changed_any=mean(changed > 0), changed_most=mean(changed > 0.5),
        mean_difference=mean(per_email), p90_difference=p90(per_email),
        uniform_changed=mean(uniform.argmax(axis=1) != predicted) if E else None,
        uniform_mean_difference=mean(uniform_moved), uniform_p90_difference=p90(uniform_moved),
        per_email_difference=per_email, per_email_changed=changed, uniform_difference=uniform_moved,
        max_attention=attention.max(axis=1) if E else np.zeros(0))


def _class_log_probs(model, emails: list[list[int]], how: list) -> tuple[np.ndarray, np.ndarray]:
    """log p of every class (R, C) and the weights pooled with (R, T_max), for each email with its own α (None),
    uniform weights ("uniform", for the whole list) or a permutation (T_b,) of its real words; ROWS_PER_BATCH rows
    at a time."""
    C = len(model.labels)
    longest = max((len(e) for e in emails), default=0)
    log_p, weights = [], []
    with torch.inference_mode():
        for start in range(0, len(emails), batches.ROWS_PER_BATCH):
            batch, ways = emails[start : start + batches.ROWS_PER_BATCH], how[start : start + batches.ROWS_PER_BATCH]
            ids, lengths = pad_batch(batch)  # (R, T), (R,)
            mix = None if ways[0] is None else uniform_weights if isinstance(ways[0], str) else _orders_mix(ids, ways)
            classes = torch.arange(C).expand(len(batch), C)  # (R, C): every class a target
            lp, alpha = model.target_log_probs(ids, lengths, classes, mix=mix)  # (R, C), (R, C, T)
            log_p.append(lp.double().numpy())
            weights.append(np.pad(alpha[:, 0].double().numpy(), ((0, 0), (0, longest - ids.shape[1]))))
    return (np.concatenate(log_p) if log_p else np.zeros((0, C)),
            np.concatenate(weights) if weights else np.zeros((0, longest)))


def _orders_mix(ids: torch.Tensor, orders: list[np.ndarray]) -> Mix:
    index = np.tile(np.arange(ids.shape[1]), (len(orders), 1))  # (R, T): padding stays in place
    for row, order in enumerate(orders):
        index[row, : len(order)] = order
    return index_mix(torch.from_numpy(index))
