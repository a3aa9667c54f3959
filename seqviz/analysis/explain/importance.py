"""Is attention an explanation? Attention beside four measures of what each output depended on, by Captum.

For a model with the explanation interface (:mod:`.batches`: a translator or an email classifier), an input
x_1 .. x_T with word vectors e_j and outputs y_1 .. y_U (a translator's own greedy words, teacher-forced; a
classifier's chosen team ŷ, U = 1), for every output t and input word j, with f_t(e) = log p(y_t | y_<t, x):

- attention α_tj, what the model's weights show (the model's own alignment: an LSTM decoder's weights at step
  t, the transformer's last-layer cross-attention averaged over the heads, the attention-lstm's pooling weights,
  the transformer classifier's last layer as its mean pooling reads it);
- gradient ‖∂f_t / ∂e_j‖ (Captum's ``Saliency``, its norm over the E numbers of the word's vector): how far a
  small change of word j's vector can move the output, whichever way (the norm, as /rnn-memory's saliency);
- gradient × input Σ_e e_je ∂f_t / ∂e_je (Captum's ``InputXGradient``): the first-order guess at what setting
  the vector to zero would cost;
- integrated gradients Σ_e (e_je − e'_je) ∫₀¹ ∂f_t(e' + s (e − e')) / ∂e_je ds (Captum's
  ``IntegratedGradients``, baseline e' = 0, the <pad> vector, for every word): the path integral, whose words
  add up to f_t(e) − f_t(e') (completeness: :data:`IG_STEPS` are raised for an output until its gap is under
  :data:`COMPLETENESS_TOLERANCE`; ``completeness_gap`` keeps what is left, for the pages to say);
- leave-one-out f_t(e) − f_t(e with e_j replaced by <unk>'s vector) (Captum's ``FeatureAblation``, each word's
  vector one feature): what the output loses when word j is taken away; exactly 0 for a word already <unk>.

The signed measures are positive where the word supported the output. Leave-one-out (with log p and the
attention) is taken on a float64 copy of the model (:func:`~.batches.in_float64`): it is a difference of two
nearly equal log-probabilities, 40% of a translator's values are under 1e-5, and in float32 their order would be
rounding. The gradients are no such difference and take the model as it is. Attention against each measure:
:mod:`.agreement`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from seqviz.analysis.explain import batches
from seqviz.analysis.explain.agreement import NO_ROWS, STATISTICS, Agreement, agreement
from seqviz.models.common import one_sentence
from seqviz.tasks import pad_batch
from seqviz.text import UNK

MEASURES = ("gradient", "gradient_x_input", "integrated_gradients", "leave_one_out")  # in the order pages show
HELD_OUT_MEASURES = ("gradient", "leave_one_out")  # Jain & Wallace's two, one pass each (see HeldOutAgreement)
IG_STEPS = (50, 200, 800)  # integrated gradients: points of Captum's Gauss-Legendre rule along the path, first
# Captum's default 50, then more for the outputs still over the tolerance (the dot translator's paths need them)
COMPLETENESS_TOLERANCE = 0.02  # nats: |Σ_j IG_tj − (f_t(e) − f_t(0))| that the steps are raised until they meet


def _remember_gauss_legendre() -> None:
    """Captum builds its Gauss-Legendre rule (numpy's ``leggauss``: the eigenvalues of an n × n matrix) anew for
    every ``attribute`` call, twice (the points and the weights): for 800 points, a third of a typed sentence's
    /explain run. The rule depends on n alone, so numpy's function is kept with the last few rules it made, their
    arrays read-only (a caller that wrote into one would fail loudly, never change another's); the numbers are
    numpy's own, bit for bit."""
    legendre = np.polynomial.legendre
    if hasattr(legendre.leggauss, "cache_info"):
        return
    compute = legendre.leggauss

    @functools.lru_cache(maxsize=2 * len(IG_STEPS))
    def leggauss(deg: int) -> tuple[np.ndarray, np.ndarray]:
        points, weights = compute(deg)
        points.setflags(write=False)
        weights.setflags(write=False)
        return points, weights

    leggauss.__doc__ = compute.__doc__
    legendre.leggauss = leggauss


_remember_gauss_legendre()


@dataclass(frozen=True)
class Measures:
    """Per output t (row) and input word j (column), for one input."""

    attention: np.ndarray | None  # (U, T) α_tj, rows add to 1; None for a model that does not attend
    gradient: np.ndarray | None  # (U, T) ‖∂f_t / ∂e_j‖ (each measure None where not asked for)
    gradient_x_input: np.ndarray | None  # (U, T) Σ_e e_je ∂f_t / ∂e_je
    integrated_gradients: np.ndarray | None  # (U, T) integrated gradients from the all-zero baseline
    leave_one_out: np.ndarray | None  # (U, T) f_t(e) − f_t(e with e_j = <unk>'s vector)
    log_prob: np.ndarray  # (U,) f_t(e) = log p(y_t | y_<t, x)
    completeness_gap: np.ndarray | None  # (U,) Σ_j IG_tj − (f_t(e) − f_t(0)), Captum's convergence delta
    agreement: dict[str, Agreement] = field(default_factory=dict)  # measure -> attention against it (if attends)

    @property
    def measures(self) -> tuple[str, ...]:
        """The measures taken, in MEASURES' order."""
        return tuple(m for m in MEASURES if getattr(self, m) is not None)


def measure(
    model, sources: Sequence[Sequence[int]], targets: Sequence[Sequence[int]], unk_id: int,
    measures: Sequence[str] = MEASURES,
) -> list[Measures]:
    """:class:`Measures` of every (input ids, output ids) pair, in batches of at most ROWS_PER_BATCH rows.

    ``targets`` are the outputs explained (a translator's words without <bos>/<eos>, a classifier's [ŷ]); a pair
    with no output gets (0, T) arrays. ``measures`` (of :data:`MEASURES`) are taken, the others left None: each
    costs a pass, integrated gradients IG_STEPS[0] or more. The model must be in eval mode.
    """
    unknown = set(measures) - set(MEASURES)
    if unknown:
        raise ValueError(f"measures are {MEASURES}, not {sorted(unknown)}")
    measures = tuple(m for m in MEASURES if m in measures)
    batches.check_explainable(model)
    sources, targets = [[int(i) for i in s] for s in sources], [[int(i) for i in o] for o in targets]
    if any(not s for s in sources):
        raise ValueError("The sentence has no words to read: type at least one word.")
    double = batches.in_float64(model)
    measured: list[Measures | None] = [None] * len(sources)
    # each pair needs the larger of its passes: U rows for the gradients, T + 1 for leave-one-out
    for chunk in batches.chunks({i: max(len(o), len(sources[i]) + 1) for i, o in enumerate(targets) if o}):
        done = _measure(model, double, [sources[i] for i in chunk], [targets[i] for i in chunk], unk_id, measures)
        for i, m in zip(chunk, done, strict=True):
            measured[i] = m
    return [m or _no_outputs(len(s), model.has_attention, measures) for m, s in zip(measured, sources, strict=True)]


def _no_outputs(T: int, attends: bool, measures: tuple[str, ...]) -> Measures:
    rows = np.zeros((0, T))
    return Measures(attention=rows if attends else None, log_prob=np.zeros(0),
                    completeness_gap=np.zeros(0) if "integrated_gradients" in measures else None,
                    agreement={m: NO_ROWS for m in measures} if attends else {},
                    **{m: rows if m in measures else None for m in MEASURES})


def _measure(
    model, double, sources: list[list[int]], targets: list[list[int]], unk_id: int, measures: tuple[str, ...]
) -> list[Measures]:
    """Every pair's measures, from one padded batch, every target non-empty: leave-one-out (a difference of nearly
    equal log-probabilities), log p and attention on the float64 copy ``double``; the gradients, which are no
    such difference, on ``model`` as it is (in float32, integrated gradients take half the time)."""
    from captum.attr import FeatureAblation, InputXGradient, IntegratedGradients, Saliency

    src, lengths = pad_batch(sources)  # (B, T), (B,)
    tgt, _ = pad_batch(targets)  # (B, U): y_1 .. y_U, padded with <pad>
    B, T = src.shape
    U = tgt.shape[1]

    def log_p(model):
        def f(embedded, src, lengths, tgt):  # (R, T, E) word vectors -> (R, U) log p(y_t | y_<t, x)
            return model.target_log_probs(src, lengths, tgt, embedded=embedded)[0]

        return f

    per_word: dict[str, torch.Tensor] = {}  # measure -> (R, T), row r the output of rows[r]
    with torch.no_grad():
        log_prob, attention = double.target_log_probs(src, lengths, tgt)  # (B, U), (B, U, T) or None
        if "leave_one_out" in measures:
            vectors = double.embed_source(src)  # (B, T, E)
            unk = double.embed_source(torch.tensor([[unk_id]]))  # (1, 1, E)
            words = torch.arange(T)[None, :, None].expand_as(vectors[:1])  # (1, T, E): a word's vector, one feature
            # (B U, T, E): every number of word j's vector carries the drop of f_t when the word is taken away
            dropped = FeatureAblation(log_p(double)).attribute(
                vectors, baselines=unk, additional_forward_args=(src, lengths, tgt), feature_mask=words,
                perturbations_per_eval=T)
            loo = dropped[..., 0].reshape(B, U, T)  # (B, U, T)
            loo = loo.masked_fill(src[:, None, :] == unk_id, 0.0)  # <unk> replaced by <unk> changes nothing, exactly
    # The gradient passes: copy (b, t) of input b explains output t alone (Captum's target, one per row).
    rows = [(b, t) for b, out in enumerate(targets) for t in range(len(out))]
    which, steps = torch.tensor([b for b, _ in rows]), [t for _, t in rows]
    f, gap = log_p(model), None
    with torch.enable_grad():
        inputs = model.embed_source(src[which]).detach().requires_grad_(True)  # (R, T, E)
        extra = (src[which], lengths[which], tgt[which])
        if "gradient" in measures:
            gradient = Saliency(f).attribute(inputs, target=steps, abs=False, additional_forward_args=extra)
            per_word["gradient"] = gradient.norm(dim=-1)  # (R, T, E) -> (R, T)
        if "gradient_x_input" in measures:
            times_input = InputXGradient(f).attribute(inputs, target=steps, additional_forward_args=extra)
            per_word["gradient_x_input"] = times_input.sum(dim=-1)  # (R, T, E) -> (R, T)
        if "integrated_gradients" in measures:
            per_word["integrated_gradients"], gap = _integrated_gradients(IntegratedGradients(f), inputs, steps, extra)
    results, first = [], 0
    for b, (ids, out) in enumerate(zip(sources, targets, strict=True)):
        n, u = len(ids), len(out)
        arrays = {m: None for m in MEASURES} | {name: values[first : first + u, :n].detach().double().numpy().copy()
                                                for name, values in per_word.items()}  # each (U, T)
        if "leave_one_out" in measures:
            arrays["leave_one_out"] = loo[b, :u, :n].numpy().copy()
        alpha = None if attention is None else attention[b, :u, :n].numpy().copy()  # (U, T)
        results.append(Measures(
            attention=alpha, log_prob=log_prob[b, :u].numpy().copy(),
            completeness_gap=None if gap is None else gap[first : first + u].double().numpy().copy(),
            agreement={} if alpha is None else {m: agreement(alpha, arrays[m]) for m in measures}, **arrays))
        first += u
    return results


def _integrated_gradients(method, inputs: torch.Tensor, steps: list[int], extra: tuple) -> tuple[torch.Tensor, ...]:
    """Integrated gradients of each row's output (R, T) and their completeness gaps (R,): IG_STEPS[0] points for
    every row (fewer, down to IG_MIN_POINTS, where rows × points × words would pass seqviz.limits.IG_PATH_POINTS),
    then more for the rows whose gap is still over COMPLETENESS_TOLERANCE while they stay within it (a long
    sentence keeps the gap it has)."""
    from seqviz.limits import IG_MIN_POINTS, IG_PATH_POINTS

    per_word = torch.zeros(inputs.shape[:2], dtype=inputs.dtype)  # (R, T)
    gap = torch.full((len(steps),), torch.inf, dtype=inputs.dtype)  # (R,)
    todo = torch.arange(len(steps))  # (K,) rows still over the tolerance
    words = inputs.shape[1]
    for number, n in enumerate(IG_STEPS):
        if number and len(todo) * n * words > IG_PATH_POINTS:
            break
        if not number:  # a long runaway translation: fewer points for every row at once, its gaps said
            n = min(n, max(IG_MIN_POINTS, IG_PATH_POINTS // max(1, len(todo) * words)))
        path, delta = method.attribute(
            inputs[todo], baselines=0.0, target=[steps[i] for i in todo], n_steps=n,
            additional_forward_args=tuple(x[todo] for x in extra), internal_batch_size=batches.ROWS_PER_BATCH,
            return_convergence_delta=True)  # (K, T, E), (K,)
        per_word[todo], gap[todo] = path.sum(dim=-1).detach(), delta.detach()
        todo = todo[delta.abs() > COMPLETENESS_TOLERANCE]
        if not len(todo):
            break
    return per_word, gap


# ---------------------------------------------------------------------------------------------------------
# Translators: every output word of the greedy translation


@dataclass(frozen=True)
class TranslationExplanation(Measures):
    """The measures for one translator and sentence; row t is the greedy output's word t."""

    src_tokens: list[str] = field(default_factory=list)  # the source as the model read it, "<unk>" kept visible
    out_tokens: list[str] = field(default_factory=list)  # its greedy output y_1 .. y_U, without <bos>/<eos>

    def mean(self, measure: str, statistic: str = "tau") -> float | None:
        """Attention against ``measure`` (:data:`MEASURES`), ``statistic`` averaged over the words (see
        :class:`~.agreement.Agreement`)."""
        return self.agreement[measure].mean(statistic)


def explain_translation(model, vocabularies, tokens, max_len: int | None = None) -> TranslationExplanation:
    """The measures for every output word of ``model``'s greedy translation of one sentence.

    ``vocabularies`` is the checkpoint's {"src", "tgt"}; at most ``max_len`` output words (None:
    ``seqviz.limits.output_limit`` of the sentence's length). The model must be in eval mode.
    """
    src_vocab, tgt_vocab = vocabularies["src"], vocabularies["tgt"]
    ids, seen = one_sentence(tokens, src_vocab)
    src, lengths = pad_batch([ids])  # (1, T), (1,)
    output = model.translate(src, lengths, max_len)[0]
    return explain_many(model, [ids], [output], unk_id=src_vocab.stoi[UNK], src_tokens=[seen],
                        out_tokens=[tgt_vocab.decode(output)])[0]


def explain_many(
    model, sources, outputs, unk_id: int, src_tokens=None, out_tokens=None, measures: Sequence[str] = MEASURES
) -> list[TranslationExplanation]:
    """:func:`explain_translation`'s measures for many (source ids, output ids) pairs, in shared batches; the
    tokens default to the ids as strings; ``measures`` as :func:`measure` takes them."""
    measured = measure(model, sources, outputs, unk_id, measures)
    return [TranslationExplanation(**vars(m), src_tokens=list(src_tokens[i]) if src_tokens else [str(w) for w in s],
                                   out_tokens=list(out_tokens[i]) if out_tokens else [str(w) for w in o])
            for i, (m, s, o) in enumerate(zip(measured, sources, outputs, strict=True))]


# ---------------------------------------------------------------------------------------------------------
# Email classifiers: every word, for the chosen team


@dataclass(frozen=True)
class ClassificationExplanation:
    """One email classifier's decision on one email, and every word's part in it (one value per word, for ŷ)."""

    tokens: list[str]  # the email as the model read it, "<unk>" kept visible
    labels: tuple[str, ...]  # class names, in the order of ``probs``
    probs: np.ndarray  # (C,) p(c | x)
    attention: np.ndarray | None  # (T,) a_j, adding to 1; None for a model that does not attend
    gradient: np.ndarray | None  # (T,) ‖∂ log p(ŷ | x) / ∂e_j‖ (each measure None where not asked for)
    gradient_x_input: np.ndarray | None  # (T,)
    integrated_gradients: np.ndarray | None  # (T,)
    leave_one_out: np.ndarray | None  # (T,) log p(ŷ | x) − log p(ŷ | x with x_j = <unk>); 0 for a word already <unk>
    completeness_gap: float | None  # Σ_j IG_j − (log p(ŷ | x) − log p(ŷ | baseline))
    agreement: dict[str, dict[str, float | bool | None]]  # measure -> statistic -> value; {} when no attention

    @property
    def predicted(self) -> str:
        """ŷ, the most probable class."""
        return self.labels[int(np.argmax(self.probs))]

    @property
    def p_predicted(self) -> float:
        """p(ŷ | x)."""
        return float(np.max(self.probs))

    def agrees(self, measure: str, statistic: str = "tau") -> float | bool | None:
        """Attention against ``measure`` for this decision (None where undefined or the model does not attend)."""
        return self.agreement[measure][statistic] if self.agreement else None

    @classmethod
    def of(cls, m: Measures, tokens: list[str], labels: tuple[str, ...], probs: np.ndarray):
        """Row 0 (the one decision) of ``m``."""
        first = {name: None if getattr(m, name) is None else getattr(m, name)[0] for name in ("attention", *MEASURES)}
        return cls(tokens=tokens, labels=labels, probs=probs, **first,
                   completeness_gap=None if m.completeness_gap is None else float(m.completeness_gap[0]),
                   agreement={name: {s: getattr(a, s)[0] for s in STATISTICS} for name, a in m.agreement.items()})


def explain_classification(model, vocab, tokens) -> ClassificationExplanation:
    """The measures of every word of one email for ``model``'s decision ŷ; ``vocab`` is the checkpoint's "tokens"
    vocabulary, and the model must be in eval mode."""
    ids, seen = one_sentence(tokens, vocab)
    return explain_emails(model, [ids], unk_id=vocab.stoi[UNK], tokens=[seen])[0]


def explain_emails(
    model, emails: Sequence[Sequence[int]], unk_id: int, tokens=None, measures: Sequence[str] = MEASURES
) -> list[ClassificationExplanation]:
    """:func:`explain_classification` of many emails (word ids), in shared batches; ``measures`` as
    :func:`measure` takes them."""
    batches.check_explainable(model)
    emails = [[int(i) for i in e] for e in emails]
    if any(not e for e in emails):
        raise ValueError("The email has no words to read: type at least one word.")
    probs = []
    for start in range(0, len(emails), batches.ROWS_PER_BATCH):
        probs.extend(model.predict_proba(*pad_batch(emails[start : start + batches.ROWS_PER_BATCH])))  # (B, C)
    measured = measure(model, emails, [[int(np.argmax(p))] for p in probs], unk_id, measures)
    return [ClassificationExplanation.of(m, list(tokens[i]) if tokens else [str(w) for w in e], tuple(model.labels),
                                         np.asarray(p, dtype=np.float64))
            for i, (m, e, p) in enumerate(zip(measured, emails, probs, strict=True))]


# ---------------------------------------------------------------------------------------------------------
# Held out: the agreement over many outputs


@dataclass(frozen=True)
class HeldOutAgreement:
    """Attention against each measure over held-out inputs, one entry per output (defined or None).

    The measures are :data:`HELD_OUT_MEASURES`, Jain & Wallace's two, one pass each: the held-out study runs once
    per model and server, and integrated gradients (IG_STEPS[0] or more passes of every output word) would make it
    minutes on a CPU; the typed sentence gets all four."""

    agreement: dict[str, Agreement]  # measure -> every output's agreement, pooled over the inputs
    inputs: int  # held-out sentences (or emails) explained
    outputs: int  # their output words (or emails: one decision each)

    def mean(self, measure: str, statistic: str = "tau") -> float | None:
        return self.agreement[measure].mean(statistic)

    def defined(self, measure: str, statistic: str = "tau") -> list[float]:
        """The defined values of ``statistic`` (for a histogram)."""
        return [float(v) for v in getattr(self.agreement[measure], statistic) if v is not None]


def held_out_taus(model, task, limit: int | None = 300) -> HeldOutAgreement:
    """Agreement per output word over :func:`~.batches.held_out_pairs` (``limit`` of them), each sentence's own
    greedy output fixed; ``task`` a TranslationTask with the model's vocabularies."""
    pairs = batches.held_out_pairs(task, limit)
    sources = [task.src_vocab.encode(list(p.src)) for p in pairs]
    outputs = model.translate_many(sources) if sources else []
    explained = explain_many(model, sources, outputs, unk_id=task.src_vocab.stoi[UNK], measures=HELD_OUT_MEASURES)
    pooled = {m: sum((e.agreement[m] for e in explained), NO_ROWS) for m in HELD_OUT_MEASURES}
    return HeldOutAgreement(pooled, inputs=len(pairs), outputs=sum(len(o) for o in outputs))


def held_out_classifier_taus(model, task, limit: int | None = 200) -> HeldOutAgreement:
    """Agreement per email over :func:`~.batches.held_out_emails` (``limit`` of them), for a classifier that
    attends; ``task`` an EmailTask with the model's vocabulary (``task.vocab``)."""
    if not getattr(model, "has_attention", False):
        raise ValueError(f"a {type(model).__name__} does not attend: there is no attention to compare")
    emails = [task.vocab.encode(list(e.tokens)) for e in batches.held_out_emails(task, limit)]
    explained = explain_emails(model, emails, task.vocab.stoi[UNK], measures=HELD_OUT_MEASURES) if emails else []
    pooled = {m: Agreement(**{s: [e.agrees(m, s) for e in explained] for s in STATISTICS}) for m in HELD_OUT_MEASURES}
    return HeldOutAgreement(pooled, inputs=len(emails), outputs=len(emails))
