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
ROWS_PER_BATCH = 128  # rows of one batched teacher-forced pass (copies of sentences): bounds its memory


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
    # each pair needs the larger of its two passes: U copies for the gradient, T + 1 for leave-one-out
    for chunk in _chunks({i: max(len(o), len(sources[i]) + 1) for i, o in enumerate(outputs) if o}):
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


def _chunks(rows_needed: dict[int, int]) -> list[list[int]]:
    """Items (index -> the rows of copies they need), in order, grouped so that each group fits ROWS_PER_BATCH."""
    chunks: list[list[int]] = []
    rows = 0
    for i, need in rows_needed.items():
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



# ---------------------------------------------------------------------------------------------------------
# Email classifiers: attention beside gradient and leave-one-out, for one decision
#
# For a torch email classifier (rnn, gru, lstm, transformer, attention-lstm; the bag of words has no word
# vectors to differentiate), an email x_1 .. x_T with word vectors e_j = E[x_j] and the predicted team
# ŷ = argmax_c p(c | x), per word j:
#
# - attention a_j: the attention-lstm's pooling weights α_j (c = Σ_j α_j h_j); for the transformer classifier,
#   what its pooled output pays to word j through the last layer's attention, a_j = (1/N) Σ_heads (1/T) Σ_i A_ij
#   (:func:`pooled_attention`); None for models that do not attend (rnn, gru, lstm);
# - gradient saliency ‖∂ log p(ŷ | x) / ∂ e_j‖ (the norm, as the translators': see :func:`explain_translation`);
# - leave-one-out log p(ŷ | x) − log p(ŷ | x with x_j replaced by <unk>) (positive: word j supported ŷ).


@dataclass(frozen=True)
class ClassificationExplanation:
    """One email classifier's decision on one email, and three measures of each word's part in it."""

    tokens: list[str]  # the email as the model read it, "<unk>" kept visible
    labels: tuple[str, ...]  # class names, in the order of ``probs``
    probs: np.ndarray  # (C,) p(c | x)
    predicted: str  # ŷ, the most probable class
    p_predicted: float  # p(ŷ | x)
    attention: np.ndarray | None  # (T,) a_j, adding to 1; None for a model that does not attend
    gradient: np.ndarray  # (T,) ‖∂ log p(ŷ | x) / ∂ e_j‖
    leave_one_out: np.ndarray  # (T,) log p(ŷ | x) − log p(ŷ | x with x_j = <unk>); exactly 0 for a word already <unk>
    tau_gradient: float | None  # τ(attention, gradient); None when undefined or no attention
    tau_leave_one_out: float | None  # τ(attention, leave_one_out)


def attends(model) -> bool:
    """True for the classifiers :func:`pooled_attention` reads weights from (attention-lstm, transformer)."""
    from seqviz.models.classifiers import AttentionLSTMClassifier, TransformerClassifier

    return isinstance(model, AttentionLSTMClassifier | TransformerClassifier)


def pooled_attention(model, ids: torch.Tensor, lengths: torch.Tensor) -> np.ndarray | None:
    """The weight a_j (B, T) the classifier's pooled vector gives each word; rows add to 1, 0 on padding.

    - attention-lstm: its own pooling weights α = softmax(u): the email's vector is exactly c = Σ_j α_j h_j.
    - transformer: it classifies from the mean of its last layer's outputs, (1/T) Σ_i z_i, and the last layer's
      attention mixes word j into output i with weight A_ij (one per head), so the mean pays word j
      a_j = (1/N) Σ_heads (1/T) Σ_i A_ij: the last layer's attention averaged over the heads and over the
      attending (real) words. It leaves out the residual path (z_i also carries x_i itself) and what earlier
      layers mixed in, as every attention picture does; it is the one weight per word the picture shows.
    - any other classifier: None (it does not attend).
    """
    from seqviz.models.classifiers import AttentionLSTMClassifier, TransformerClassifier

    if isinstance(model, AttentionLSTMClassifier):
        return model.attention_weights(ids, lengths)  # (B, T)
    if not isinstance(model, TransformerClassifier):
        return None
    with torch.inference_mode():
        _, weights = model.encode(model.embed(ids), lengths)  # (B, L, N, T, T)
        last = weights[:, -1].mean(dim=1)  # (B, T, T): row i attends, averaged over heads
        real = (torch.arange(ids.shape[1])[None, :] < lengths[:, None]).to(last.dtype)  # (B, T)
        pooled = (last * real[:, :, None]).sum(dim=1) / real.sum(dim=1, keepdim=True)  # (B, T)
    return pooled.float().numpy().copy()


def _check_classifier(model) -> None:
    if not (hasattr(model, "embed") and hasattr(model, "forward_from_embeddings")):
        raise ValueError(f"explain a torch classifier with word vectors, not a {type(model).__name__}: the bag of "
                         "words has no vectors to take a gradient by")
    if model.training:
        raise ValueError("explain a model in eval mode: dropout would make every measure a random draw")


def explain_classification(model, vocab, tokens) -> ClassificationExplanation:
    """Attention, gradient saliency and leave-one-out of every word of one email, for ``model``'s decision ŷ.

    ``vocab`` is the checkpoint's "tokens" vocabulary; the model must be in eval mode. Two batched passes
    (:func:`explain_emails`): T + 1 copies of the email (word j replaced by <unk> in copy j, the email as it is in
    the last) for ŷ, p and leave-one-out, then one backward pass for the gradient; the attention is read from
    the email as it is (:func:`pooled_attention`).
    """
    from seqviz.models.common import one_sentence

    ids, seen = one_sentence(tokens, vocab)
    return explain_emails(model, [ids], unk_id=vocab.stoi[UNK], tokens=[seen])[0]


def explain_emails(
    model, emails: Sequence[Sequence[int]], unk_id: int, tokens: Sequence[list[str]] | None = None
) -> list[ClassificationExplanation]:
    """:func:`explain_classification` of many emails (word ids), in batches of at most ROWS_PER_BATCH copies."""
    _check_classifier(model)
    emails = [[int(i) for i in e] for e in emails]
    if any(not e for e in emails):
        raise ValueError("The email has no words to read: type at least one word.")
    labels = tuple(model.labels)
    explanations: list[ClassificationExplanation] = []
    for chunk in _chunks({i: len(ids) + 1 for i, ids in enumerate(emails)}):  # T + 1 copies each
        measured = _measure_emails(model, [emails[i] for i in chunk], unk_id)
        for i, (probs, attention, gradient, loo) in zip(chunk, measured, strict=True):
            top = int(np.argmax(probs))
            explanations.append(ClassificationExplanation(
                tokens=list(tokens[i]) if tokens else [str(w) for w in emails[i]], labels=labels, probs=probs,
                predicted=labels[top], p_predicted=float(probs[top]), attention=attention, gradient=gradient,
                leave_one_out=loo,
                tau_gradient=kendall_tau(attention, gradient) if attention is not None else None,
                tau_leave_one_out=kendall_tau(attention, loo) if attention is not None else None))
    return explanations


def _measure_emails(model, emails: list[list[int]], unk_id: int) -> list[tuple]:
    """(probs (C,), attention (T,) | None, gradient (T,), leave-one-out (T,)) per email, from three passes."""
    # Leave-one-out: copy (b, j) has x_j = <unk> (j < T_b); copy (b, T_b) is the email as it is.
    copies = [(b, j) for b, ids in enumerate(emails) for j in range(len(ids) + 1)]
    with torch.inference_mode():
        ids, lengths = pad_batch([emails[b] for b, _ in copies])  # (R, T), (R,)
        for row, (b, j) in enumerate(copies):
            if j < len(emails[b]):
                ids[row, j] = unk_id
        log_p = model(ids, lengths).double().log_softmax(dim=-1).numpy()  # (R, C)
    whole_rows = np.cumsum([len(e) + 1 for e in emails]) - 1  # (B,): each email as it is
    whole = log_p[whole_rows]  # (B, C)
    predicted = whole.argmax(axis=1)  # (B,) ŷ
    # The gradient: one row per email, each row's log p(ŷ_b) differentiated by its own word vectors.
    with torch.inference_mode(False), torch.enable_grad():
        ids, lengths = pad_batch(emails)  # (B, T), (B,)
        embedded = model.embed(ids).detach().requires_grad_(True)  # (B, T, E)
        logits = model.forward_from_embeddings(embedded, lengths)  # (B, C)
        picked = logits.log_softmax(dim=-1)[torch.arange(len(emails)), torch.from_numpy(predicted)]  # (B,)
        (grad,) = torch.autograd.grad(picked.sum(), embedded)  # (B, T, E)
    norms = grad.norm(dim=-1).double().numpy()  # (B, T)
    attention = pooled_attention(model, ids, lengths)  # (B, T) or None
    results = []
    first = 0
    for b, email in enumerate(emails):
        T = len(email)
        loo = whole[b, predicted[b]] - log_p[first : first + T, predicted[b]]  # (T,)
        loo[np.asarray(email) == unk_id] = 0.0  # replacing <unk> by <unk> changes nothing: no batch rounding
        results.append((np.exp(whole[b]), None if attention is None else attention[b, :T].copy(),
                        norms[b, :T].copy(), loo))
        first += T + 1
    return results


def held_out_emails(task, limit: int | None = None) -> list:
    """The held-out emails (``task.splits.test``), or ``limit`` of them spread evenly over the set."""
    emails = list(task.splits.test)
    if limit is None or limit >= len(emails):
        return emails
    return [emails[i] for i in np.linspace(0, len(emails) - 1, max(0, int(limit))).round().astype(int)]


@dataclass(frozen=True)
class HeldOutClassifierTaus:
    """Per held-out email, τ between the classifier's attention and each measure (the defined ones)."""

    gradient: list[float]  # τ(a, gradient saliency), one per email where defined
    leave_one_out: list[float]  # τ(a, leave-one-out)
    emails: int  # held-out emails explained (emails − len(gradient) had τ undefined)


def held_out_classifier_taus(model, task, limit: int | None = 200) -> HeldOutClassifierTaus:
    """τ per email over :func:`held_out_emails` (``limit`` of them), for a classifier that attends; ``task`` an
    EmailTask with the model's vocabulary (``task.vocab``). Batched as :func:`explain_emails`."""
    if not attends(model):
        raise ValueError(f"a {type(model).__name__} does not attend: there is no attention to compare")
    emails = held_out_emails(task, limit)
    explained = explain_emails(model, [task.vocab.encode(list(e.tokens)) for e in emails],
                               unk_id=task.vocab.stoi[UNK]) if emails else []
    return HeldOutClassifierTaus(gradient=[e.tau_gradient for e in explained if e.tau_gradient is not None],
                                 leave_one_out=[e.tau_leave_one_out for e in explained
                                                if e.tau_leave_one_out is not None],
                                 emails=len(emails))


# ---------------------------------------------------------------------------------------------------------
# Jain & Wallace's permutation test, on the attention-lstm


@dataclass(frozen=True)
class PermutationTest:
    """Does the attention-lstm's decision depend on where its pooling weights fall? (Jain & Wallace 2019, §4.2)

    For every held-out email: ŷ and p(ŷ) with its own α; then with α permuted over its real words (``permutations``
    seeded draws) and with uniform weights 1/T. The per-email figure is the median over the permutations of
    |p_perm(ŷ) − p(ŷ)| (the paper's "median output difference").
    """

    emails: int  # held-out emails tested
    permutations: int  # permutations per email
    seed: int
    changed_any: float | None  # share of emails whose predicted team changes under at least one permutation
    changed_most: float | None  # share whose team changes under more than half of the permutations
    median_difference: float | None  # median over emails of the per-email median |p_perm(ŷ) − p(ŷ)|
    p90_difference: float | None  # its 90th percentile over emails
    uniform_changed: float | None  # share of emails whose team changes with uniform weights
    uniform_median_difference: float | None  # median over emails of |p_uniform(ŷ) − p(ŷ)|
    uniform_p90_difference: float | None
    per_email_difference: np.ndarray  # (E,) each email's median |p_perm(ŷ) − p(ŷ)| (for a histogram)
    per_email_changed: np.ndarray  # (E,) the share of its permutations that changed its team
    uniform_difference: np.ndarray  # (E,) |p_uniform(ŷ) − p(ŷ)|
    max_attention: np.ndarray  # (E,) max_j α_j of each email (the paper bins the differences by it)


def email_permutations(ids: Sequence[int], permutations: int, seed: int = 0) -> np.ndarray:
    """(K, T) permutations of an email's T word positions, drawn from ``seed`` and the email's own word ids.

    Seeded by the email (not by its row, as ``permuted_pooling(seed)`` is, which gives row b of a batch the
    seed's b-th draw): an email gets the same K permutations alone, in any batch or at any place in the
    held-out set; word-identical twins get the same ones. A draw may be the identity (1 in T!).
    """
    rng = np.random.default_rng([int(seed), *(int(i) for i in ids)])
    orders = np.zeros((int(permutations), len(ids)), dtype=np.int64)  # (K, T)
    for k in range(len(orders)):
        orders[k] = rng.permutation(len(ids))
    return orders


def permutation_test(model, task, limit: int | None = 200, permutations: int = 100, seed: int = 0) -> PermutationTest:
    """Jain & Wallace's permutation test over :func:`held_out_emails` (``limit`` of them) for an attention-lstm.

    Each permuted copy goes through the model's own ``weights=`` override: the override receives the α the
    model computed for that copy and returns it permuted over the real words (α'_j = α_π(j), padding left 0),
    so the states, the head and everything else are the model's. Copies of many emails share batches of at
    most ROWS_PER_BATCH rows. Uniform weights are ``uniform_pooling``, one run.
    """
    from seqviz.models.classifiers import AttentionLSTMClassifier, uniform_pooling

    if not isinstance(model, AttentionLSTMClassifier):
        raise ValueError(f"the permutation test replaces an attention-lstm's pooling weights, not a "
                         f"{type(model).__name__}'s")
    if model.training:
        raise ValueError("test a model in eval mode: dropout would make every probability a random draw")
    permutations = int(permutations)
    if permutations < 1:
        raise ValueError("at least one permutation")
    emails = [task.vocab.encode(list(e.tokens)) for e in held_out_emails(task, limit)]
    E = len(emails)
    real = _pooled_log_probs(model, emails, [None] * E)  # (E, C)
    predicted = real.argmax(axis=1) if E else np.zeros(0, dtype=int)  # (E,)
    p_real = np.exp(real[np.arange(E), predicted])  # (E,)
    uniform = _pooled_log_probs(model, emails, [uniform_pooling] * E)  # (E, C)
    # Every (email, permutation) copy, in flat order: email b's K copies at rows b K .. b K + K − 1.
    orders = [email_permutations(ids, permutations, seed) for ids in emails]  # E x (K, T_b)
    rows = [(b, k) for b in range(E) for k in range(permutations)]
    permuted = _pooled_log_probs(model, [emails[b] for b, _ in rows], [orders[b][k] for b, k in rows])  # (EK, C)
    permuted = permuted.reshape(E, permutations, -1)  # (E, K, C)
    moved = np.abs(np.exp(permuted[np.arange(E), :, predicted]) - p_real[:, None])  # (E, K)
    changed = (permuted.argmax(axis=2) != predicted[:, None]).mean(axis=1) if E else np.zeros(0)  # (E,)
    per_email = np.median(moved, axis=1) if E else np.zeros(0)  # (E,)
    uniform_moved = np.abs(np.exp(uniform[np.arange(E), predicted]) - p_real)  # (E,)
    max_attention = _max_attention(model, emails)  # (E,)

    def share(x: np.ndarray) -> float | None:
        return float(np.mean(x)) if E else None

    def quantile(x: np.ndarray, q: float) -> float | None:
        return float(np.quantile(x, q)) if E else None

    return PermutationTest(
        emails=E, permutations=permutations, seed=int(seed),
        changed_any=share(changed > 0), changed_most=share(changed > 0.5),
        median_difference=quantile(per_email, 0.5), p90_difference=quantile(per_email, 0.9),
        uniform_changed=share(uniform.argmax(axis=1) != predicted) if E else None,
        uniform_median_difference=quantile(uniform_moved, 0.5), uniform_p90_difference=quantile(uniform_moved, 0.9),
        per_email_difference=per_email, per_email_changed=changed, uniform_difference=uniform_moved,
        max_attention=max_attention)


def _pooled_log_probs(model, emails: list[list[int]], poolings: list) -> np.ndarray:
    """log p (R, C) of each email pooled with its own α (None), a pooling function (one for the whole list), or
    a permutation (T_b,) of its real words' weights; ROWS_PER_BATCH rows at a time."""
    out = []
    with torch.inference_mode():
        for start in range(0, len(emails), ROWS_PER_BATCH):
            batch, how = emails[start : start + ROWS_PER_BATCH], poolings[start : start + ROWS_PER_BATCH]
            ids, lengths = pad_batch(batch)  # (R, T), (R,)
            if how[0] is None or callable(how[0]):
                weights = how[0]
            else:
                index = np.tile(np.arange(ids.shape[1]), (len(batch), 1))  # (R, T): padding stays in place
                for row, order in enumerate(how):
                    index[row, : len(order)] = order
                index_t = torch.from_numpy(index)

                def weights(alpha: torch.Tensor, mask: torch.Tensor, index_t=index_t) -> torch.Tensor:
                    return alpha.gather(1, index_t)  # (R, T): α'_j = α_π(j)

            out.append(model(ids, lengths, weights).double().log_softmax(dim=-1).numpy())
    return np.concatenate(out) if out else np.zeros((0, len(model.labels)))


def _max_attention(model, emails: list[list[int]]) -> np.ndarray:
    peaks = []
    for start in range(0, len(emails), ROWS_PER_BATCH):
        ids, lengths = pad_batch(emails[start : start + ROWS_PER_BATCH])
        peaks.append(model.attention_weights(ids, lengths).max(axis=1))
    return np.concatenate(peaks).astype(np.float64) if peaks else np.zeros(0)


# ---------------------------------------------------------------------------------------------------------
# What "it" points back to, in the transformer classifier


@dataclass(frozen=True)
class PronounAttention:
    """Where one word (its last occurrence) attends in every layer and head, beside the decision's measures."""

    tokens: list[str]  # the email as the model read it
    word: str  # the word asked about, as read
    position: int  # its last occurrence, an index into tokens
    weights: np.ndarray  # (L, N, T) what that word pays to every word, per layer and head; each row adds to 1
    decision: ClassificationExplanation  # ŷ, p(ŷ) and every word's leave-one-out (and gradient) for it

    @property
    def strongest(self) -> np.ndarray:
        """(L, N) the index of the word each layer's head pays most to."""
        return self.weights.argmax(axis=-1)


def pronoun_attention(model, vocab, tokens, word: str = "it") -> PronounAttention | None:
    """The transformer classifier's attention from ``word``'s last occurrence to every word, every layer and
    head (``attention_trace``'s row for it), and :func:`explain_classification` of the email.

    None when the word is not among the tokens as the model read them (an unknown word reads as <unk>);
    ValueError for a model that is not a transformer classifier.
    """
    from seqviz.models.classifiers import TransformerClassifier
    from seqviz.text import tokenize

    if not isinstance(model, TransformerClassifier):
        raise ValueError(f"the attention of one word to every word is a transformer's, not a "
                         f"{type(model).__name__}'s")
    decision = explain_classification(model, vocab, tokens)
    asked = tokenize(str(word))
    if len(asked) != 1:
        raise ValueError(f"ask about one word, not {str(word)!r:.40}")
    where = [j for j, t in enumerate(decision.tokens) if t == asked[0]]
    if not where:
        return None
    trace = model.attention_trace(tokens, vocab)  # (L, N, T, T)
    return PronounAttention(tokens=trace.tokens, word=asked[0], position=where[-1],
                            weights=trace.weights[:, :, where[-1], :].copy(), decision=decision)


__all__ = [
    "ABLATIONS",
    "ClassificationExplanation",
    "HeldOutClassifierTaus",
    "HeldOutMatch",
    "HeldOutTaus",
    "PermutationTest",
    "PronounAttention",
    "TranslationExplanation",
    "ablation_mix",
    "attends",
    "check_ablation",
    "email_permutations",
    "explain_classification",
    "explain_emails",
    "explain_many",
    "explain_translation",
    "held_out_classifier_taus",
    "held_out_emails",
    "held_out_exact_match",
    "held_out_pairs",
    "held_out_taus",
    "kendall_tau",
    "kendall_tau_rows",
    "mean_tau",
    "permutation_mix",
    "permutation_test",
    "pooled_attention",
    "pronoun_attention",
    "translate_with",
    "uniform_weights",
]
