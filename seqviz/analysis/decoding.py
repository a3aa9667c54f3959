"""/what-if: question a translator's decoding, one output step at a time.

A translator writes y_1 .. y_U one word at a time: at step t it gives every target word w a probability
p(y_t = w | y_<t, x) and greedy decoding writes the most likely one. Everything here is one decoding loop
(:func:`decode`) on the models' ``decode_step`` (seqviz.models), with something changed at one point:

- :func:`next_words`: at every step the k most likely words and their probabilities, greedy's pick, and (with a
  temperature τ > 0) a word sampled from softmax(log p / τ) instead, drawn by a ``torch.Generator`` of its own
  seeded with ``seed`` (never torch's process-wide generator: every visitor shares the process);
- :func:`force_word`: the greedy words before step t, then a word the visitor picks at t, then greedy again;
- :func:`edit_attention`: at step t the attention weights are the visitor's (all weight on one source word, or a
  row, renormalised to add to 1), so that step's context c_t = Σ_j α_j h_j and next word are recomputed, and the
  rest is decoded greedily again (Seq2Seq-Vis's attention correction). For the transformer an edit replaces the
  last layer's cross-attention of that step in every head (``TransformerSeq2Seq.decode_step`` says why);
- :func:`change_word`: one source word replaced, both greedy translations, and the output words that differ.

Beam search is :mod:`seqviz.analysis.beam`. Results are dataclasses of numpy arrays and lists, safe to cache.
Every setting out of range, an empty or too long sentence, and a word the model does not know raise ValueError
with a sentence a visitor can act on; a source word the model never saw is read as ``<unk>``, as on every page.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from seqviz import limits
from seqviz.models.common import BOS_ID, EOS_ID

NO_ATTENTION = ("The plain translator has no attention to edit: it reads the sentence only through the encoder's "
                "final memory z. Pick a translator with attention.")
NOT_WORDS = ("<pad>", "<unk>", "<bos>")  # never a word to force, nor a word to put in a sentence


@dataclass(frozen=True)
class Source:
    """One sentence as a translator reads it."""

    tokens: list[str]  # as the model saw them, "<unk>" kept visible
    ids: list[int]
    unknown: list[str]  # the words it read as <unk>, in order
    src: torch.Tensor  # (1, T)
    lengths: torch.Tensor  # (1,)

    @property
    def limit(self) -> int:
        """The most words decoded for it: ``seqviz.limits.output_limit`` of its length."""
        return limits.output_limit(len(self.ids))


@dataclass(frozen=True)
class NextWord:
    """One output step: what the model offered and what was written."""

    top_tokens: list[str]  # the k most likely words, most likely first
    top_probs: np.ndarray  # (k,) their probabilities p(y_t = w | y_<t, x)
    greedy: str  # the most likely word: greedy decoding's pick
    chosen: str  # the word written: greedy's pick, a forced or a sampled word ("<eos>" ends the translation)
    chosen_prob: float  # its probability under the model (temperature 1)


@dataclass(frozen=True)
class Decoded:
    """One decode of a sentence: its words, their probabilities, and what each step attended to."""

    src_tokens: list[str]
    ids: list[int]  # y_1 .. y_U, no <bos>/<eos>
    tokens: list[str]
    steps: list[NextWord]  # one per step taken: U, and the <eos> step last when the decoder ended it
    log_probs: np.ndarray  # (S,) log p of the word written at each step taken (S = len(steps))
    weights: np.ndarray | None  # (S, T) each step's attention weights; None for the plain translator
    hidden: np.ndarray  # (S, H) the decoder state of each step (s_t; the transformer's last layer)
    ended: bool  # True: the decoder wrote <eos>; False: it stopped at the length limit

    @property
    def alignment(self) -> np.ndarray | None:
        """(U, T): the weights of the steps that wrote a word (the <eos> step left out), as the pages draw them."""
        return None if self.weights is None else self.weights[: len(self.ids)]

    @property
    def log_prob(self) -> float:
        """log p(y | x): the sum over every step taken."""
        return float(self.log_probs.sum())


def read_source(model, vocabularies, tokens: Sequence[str]) -> Source:
    """The sentence as ``model`` reads it; ValueError for a model that does not translate or an unusable sentence."""
    if not hasattr(model, "decode_step") or "src" not in vocabularies:
        raise ValueError("This model does not translate: pick a translator.")
    tokens = list(tokens)
    if not tokens:
        raise ValueError("The sentence has no words to translate: type at least one word.")
    if not all(isinstance(token, str) and token for token in tokens):
        raise ValueError("The sentence must be a list of words.")
    if len(tokens) > limits.MAX_TOKENS:
        raise ValueError(f"The models read at most {limits.MAX_TOKENS} tokens; this sentence has {len(tokens)}.")
    vocab = vocabularies["src"]
    ids = vocab.encode(tokens)
    return Source(tokens=vocab.decode(ids), ids=ids, unknown=vocab.unknown_words(tokens),
                  src=torch.tensor([ids], dtype=torch.long), lengths=torch.tensor([len(ids)]))


def check_int(name: str, value, low: int, high: int) -> int:
    """``value`` as an int from low to high, else ValueError with a plain message."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or not low <= value <= high:
        raise ValueError(f"The {name} must be a whole number from {low} to {high}, not {value!r:.40}.")
    return int(value)


def target_id(vocabularies, word: str) -> int:
    """The target vocabulary's id of ``word`` (a word or "<eos>"); ValueError if the model cannot write it."""
    vocab = vocabularies["tgt"]
    if not isinstance(word, str) or word not in forceable_words(vocabularies):
        raise ValueError(f"{str(word)[:40]!r} is not a word this translator can write: pick one of its French words.")
    return vocab.stoi[word]


def forceable_words(vocabularies) -> list[str]:
    """The words :func:`force_word` takes: every French word of the model, and "<eos>" (end the translation there)."""
    return [w for w in vocabularies["tgt"].itos if w not in NOT_WORDS]


def replacement_words(vocabularies) -> list[str]:
    """The words :func:`change_word` can put in a sentence: every English word of the model."""
    return [w for w in vocabularies["src"].itos if w not in (*NOT_WORDS, "<eos>")]


Choose = Callable[[int, torch.Tensor], int]  # (step, log-probabilities (V,)) -> the word to write


def decode(
    model, vocabularies, source: Source, forced: Sequence[int] = (), edit: tuple[int, torch.Tensor] | None = None,
    choose: Choose | None = None, k: int = 5, max_len: int | None = None,
) -> Decoded:
    """Decode ``source`` one step at a time until <eos> or the length limit (None: ``source.limit``).

    Step t writes ``forced[t]`` while there is one, else ``choose(t, log p)`` (None: the most likely word, as
    greedy decoding does). ``edit`` = (t, weights (T,) or (N, T)) replaces the attention weights of step t only.
    Each step keeps the ``k`` most likely words with their probabilities."""
    limit = source.limit if max_len is None else check_int("length limit", max_len, 1, source.limit)
    tgt = vocabularies["tgt"]
    ids: list[int] = []
    steps, log_probs, weights, hidden = [], [], [], []
    ended = False
    with torch.inference_mode():
        state = model.start(source.src, source.lengths)
        y = torch.tensor([BOS_ID])  # (1,)
        while len(ids) < limit:
            t = len(ids)
            attention = edit[1][None] if edit is not None and edit[0] == t else None  # (1, T) or (1, N, T)
            step = model.decode_step(y, state, attention)
            state, lp = step.state, step.log_probs[0]  # lp (V,)
            greedy = int(lp.argmax())
            word = forced[t] if t < len(forced) else (greedy if choose is None else choose(t, lp))
            top = lp.topk(min(k, lp.numel()))
            steps.append(NextWord(top_tokens=tgt.decode(top.indices.tolist()), top_probs=top.values.exp().numpy(),
                                  greedy=tgt.decode([greedy])[0], chosen=tgt.decode([word])[0],
                                  chosen_prob=float(lp[word].exp())))
            log_probs.append(float(lp[word]))
            hidden.append(step.hidden[0].numpy())
            if step.weights is not None:
                weights.append(step.weights[0].numpy())
            if word == EOS_ID:
                ended = True
                break
            ids.append(word)
            y = torch.tensor([word])
    width = hidden[0].shape[0] if hidden else 0
    return Decoded(src_tokens=source.tokens, ids=ids, tokens=tgt.decode(ids), steps=steps,
                   log_probs=np.asarray(log_probs, dtype=np.float64),
                   weights=np.stack(weights) if weights else (None if not model.has_attention else
                                                              np.zeros((0, len(source.ids)), np.float32)),
                   hidden=np.stack(hidden) if hidden else np.zeros((0, width), np.float32), ended=ended)


def _check_k(vocabularies, k: int) -> int:
    return check_int("number of next words", k, 1, min(limits.WHATIF_MAX_TOP_K, len(vocabularies["tgt"])))


def _check_step(step: int, original: Decoded) -> int:
    """A step ``original`` took: one that wrote a word, or the one that wrote <eos>."""
    return check_int("output step", step, 0, len(original.steps) - 1)


# ---------------------------------------------------------------------------------------------------------
# 1. The next word, step by step


def next_words(
    model, vocabularies, tokens: Sequence[str], k: int = 5, temperature: float = 0.0, seed: int = 0,
    max_len: int | None = None,
) -> Decoded:
    """The translation with, at every step, the ``k`` most likely next words and greedy's pick.

    ``temperature`` 0: greedy decoding writes the most likely word. τ > 0 (``limits.WHATIF_TEMPERATURE_RANGE``):
    the word written is drawn from softmax(log p / τ) (τ < 1 sharpens p, τ > 1 flattens it) by a generator of
    this call seeded with ``seed``: the same seed gives the same words, whoever else is sampling."""
    source = read_source(model, vocabularies, tokens)
    k = _check_k(vocabularies, k)
    low, high = limits.WHATIF_TEMPERATURE_RANGE
    if isinstance(temperature, bool) or not isinstance(temperature, int | float) or not (
            temperature == 0 or low <= temperature <= high):
        raise ValueError(f"The temperature must be 0 (greedy) or from {low} to {high}, not {temperature!r:.40}.")
    if temperature == 0:
        return decode(model, vocabularies, source, k=k, max_len=max_len)
    generator = torch.Generator().manual_seed(check_int("seed", seed, 0, limits.WHATIF_MAX_SEED))

    def sample(t: int, log_p: torch.Tensor) -> int:
        probs = torch.softmax(log_p.double() / temperature, dim=-1)  # (V,)
        return int(torch.multinomial(probs, 1, generator=generator))

    return decode(model, vocabularies, source, choose=sample, k=k, max_len=max_len)


# ---------------------------------------------------------------------------------------------------------
# 3. Force a word


@dataclass(frozen=True)
class Forced:
    """Greedy's translation, and the one decoded with ``word`` forced at ``step``."""

    original: Decoded
    forced: Decoded
    step: int
    word: str  # the forced word
    word_prob: float  # p(word | greedy's words before it, x)
    replaced: str  # the word greedy wrote there ("<eos>" where it ended)
    replaced_prob: float


def force_word(
    model, vocabularies, tokens: Sequence[str], step: int, word: str, k: int = 5, max_len: int | None = None
) -> Forced:
    """Greedy's words before ``step``, ``word`` at it (a French word of the model, or "<eos>" to end there), then
    greedy decoding from there on. ``step`` is 0-based: 0 .. the step where greedy wrote <eos>."""
    source = read_source(model, vocabularies, tokens)
    k = _check_k(vocabularies, k)
    original = decode(model, vocabularies, source, k=k, max_len=max_len)
    step = _check_step(step, original)
    forced_id = target_id(vocabularies, word)
    forced = decode(model, vocabularies, source, forced=[*original.ids[:step], forced_id], k=k, max_len=max_len)
    at = original.steps[step]
    return Forced(original=original, forced=forced, step=step, word=word, word_prob=forced.steps[step].chosen_prob,
                  replaced=at.chosen, replaced_prob=at.chosen_prob)


# ---------------------------------------------------------------------------------------------------------
# 4. Edit the attention


@dataclass(frozen=True)
class Edited:
    """Greedy's translation, and the one decoded with the attention of ``step`` replaced."""

    original: Decoded
    edited: Decoded
    step: int
    weights_before: np.ndarray  # (T,) the model's own weights at that step (the transformer's: averaged over heads)
    weights_after: np.ndarray  # (T,) the weights the step was decoded with
    word_before: str  # the word the step wrote with its own weights
    word_after: str  # ... and with the edited ones


def edit_attention(
    model, vocabularies, tokens: Sequence[str], step: int, source_position: int | None = None,
    weights: Sequence[float] | np.ndarray | None = None, k: int = 5, max_len: int | None = None,
) -> Edited:
    """Decode again with the attention weights of output ``step`` replaced, greedy everywhere else.

    Give one of ``source_position`` (all the weight on that source word) or ``weights``: a row (T,) of
    non-negative numbers, renormalised to add to 1; for the transformer also (N, T), one row per head. The plain
    translator has no attention (ValueError, :data:`NO_ATTENTION`)."""
    source = read_source(model, vocabularies, tokens)
    if not model.has_attention:
        raise ValueError(NO_ATTENTION)
    T = len(source.ids)
    if (source_position is None) == (weights is None):
        raise ValueError("Give either a source word to put all the weight on, or a row of weights, not both.")
    if source_position is not None:
        row = torch.zeros(T, dtype=torch.float32)
        row[check_int("source word's position", source_position, 0, T - 1)] = 1.0
    else:
        row = _normalised(weights, T, getattr(model, "attention_heads", None))
    k = _check_k(vocabularies, k)
    original = decode(model, vocabularies, source, k=k, max_len=max_len)
    step = _check_step(step, original)
    edited = decode(model, vocabularies, source, forced=original.ids[:step], edit=(step, row), k=k, max_len=max_len)
    return Edited(original=original, edited=edited, step=step, weights_before=original.weights[step],
                  weights_after=edited.weights[step], word_before=original.steps[step].chosen,
                  word_after=edited.steps[step].chosen)


def _normalised(weights, T: int, heads: int | None) -> torch.Tensor:
    """``weights`` (T,) or, for a model of ``heads`` heads, (heads, T), each row divided by its sum."""
    try:
        row = torch.as_tensor(np.asarray(weights, dtype=np.float64))
    except (TypeError, ValueError):
        raise ValueError("The attention weights must be numbers.") from None
    shapes = [(T,)] + ([(heads, T)] if heads else [])
    if tuple(row.shape) not in shapes:
        expected = " or ".join(str(shape) for shape in shapes)
        raise ValueError(f"The attention weights must be {expected} numbers, not {tuple(row.shape)}.")
    if not torch.isfinite(row).all() or (row < 0).any() or (row.sum(dim=-1) <= 0).any():
        raise ValueError("The attention weights must be non-negative numbers, not all 0, in each row.")
    return (row / row.sum(dim=-1, keepdim=True)).float()


# ---------------------------------------------------------------------------------------------------------
# 7. One word changed


@dataclass(frozen=True)
class WordChange:
    """The greedy translations of a sentence and of the sentence with one word replaced."""

    before: Decoded
    after: Decoded
    position: int
    word: str  # the word put at ``position``
    differs_before: list[bool]  # per output word of ``before``: not matched in ``after``
    differs_after: list[bool]  # per output word of ``after``: not matched in ``before``


def change_word(
    model, vocabularies, tokens: Sequence[str], position: int, word: str, k: int = 5, max_len: int | None = None
) -> WordChange:
    """Translate the sentence and the sentence with ``word`` (a word of the model's English) at ``position``.

    The differences are marked by matching the two outputs as a diff does (difflib's longest matching blocks), so
    one adjective more does not mark every word after it."""
    source = read_source(model, vocabularies, tokens)
    position = check_int("word's position", position, 0, len(source.ids) - 1)
    if not isinstance(word, str) or word not in replacement_words(vocabularies):
        raise ValueError(f"{str(word)[:40]!r} is not a word this translator knows: pick one of its English words.")
    k = _check_k(vocabularies, k)
    changed = [*source.tokens]
    changed[position] = word
    before = decode(model, vocabularies, source, k=k, max_len=max_len)
    after = decode(model, vocabularies, read_source(model, vocabularies, changed), k=k, max_len=max_len)
    differs_before, differs_after = [True] * len(before.ids), [True] * len(after.ids)
    for block in difflib.SequenceMatcher(a=before.ids, b=after.ids, autojunk=False).get_matching_blocks():
        differs_before[block.a : block.a + block.size] = [False] * block.size
        differs_after[block.b : block.b + block.size] = [False] * block.size
    return WordChange(before=before, after=after, position=position, word=word, differs_before=differs_before,
                      differs_after=differs_after)
