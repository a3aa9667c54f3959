"""English -> French translation pairs from a small hand-written grammar (the seq2seq task).

One set of tables (the lexicon below) is the single source of truth: the generator draws a sentence *tree*,
and the same tree is rendered into English and into French; :func:`reference_translation` parses English
back into a tree and renders its French, so the generator and the reference can never disagree.

The grammar shows the phenomena an alignment heatmap should make visible:

- most adjectives after the noun (the red phone -> le téléphone rouge), but petit, grand, mauvais before it;
- gender agreement of article, adjective and past participle (la boîte noire est arrivée), elision before a
  vowel (l' article, l' étiquette, n' est) and mon before a vowel-initial feminine noun (mon étiquette);
- negation split around the verb (never arrived -> n' est jamais arrivé; nothing arrived -> rien n' est arrivé);
- "it" translated by the gender of the noun it refers to (... the parcel that was supposed to have it ->
  ... le colis qui devait le contenir, where le is the charger);
- sentences of 3 to 45 tokens, clauses chained with and / but / commas.

Sentence   = Clause (Connector Clause)* ("." | "?" after a final Where clause)
Clause     = NP Verb | ("nothing" | "everything") Verb | NP "arrived , but never" NP [Relative] | "where is" NP
NP         = Det [small | big | wrong] [red | blue | black | new | broken] Noun
"""

from __future__ import annotations

import bisect
import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from seqviz.text import tokenize

# --------------------------------------------------------------------------------------------- lexicon

# english noun -> (french noun, gender, kind); kind says which nouns fit "that was supposed to be in it"
# (an item in a container) and "that was supposed to have it" (a container holding an item).
NOUNS: dict[str, tuple[str, str, str]] = {
    "parcel": ("colis", "m", "container"),
    "charger": ("chargeur", "m", "item"),
    "cable": ("câble", "m", "item"),
    "phone": ("téléphone", "m", "item"),
    "refund": ("remboursement", "m", "other"),
    "item": ("article", "m", "item"),
    "driver": ("livreur", "m", "other"),
    "order": ("commande", "f", "container"),
    "box": ("boîte", "f", "container"),
    "invoice": ("facture", "f", "item"),
    "case": ("coque", "f", "item"),
    "label": ("étiquette", "f", "item"),
    "battery": ("batterie", "f", "item"),
    "lamp": ("lampe", "f", "item"),
    "watch": ("montre", "f", "item"),
}
# adjectives placed before the noun in French (and first in English): english -> (masculine, feminine)
PRE_ADJECTIVES: dict[str, tuple[str, str]] = {
    "small": ("petit", "petite"),
    "big": ("grand", "grande"),
    "wrong": ("mauvais", "mauvaise"),
}
# adjectives placed after the noun in French
POST_ADJECTIVES: dict[str, tuple[str, str]] = {
    "red": ("rouge", "rouge"),
    "blue": ("bleu", "bleue"),
    "black": ("noir", "noire"),
    "new": ("neuf", "neuve"),
    "broken": ("cassé", "cassée"),
}
DETERMINERS: tuple[str, ...] = ("the", "a", "my", "your")  # "a" is written "an" before a vowel


@dataclass(frozen=True)
class Verb:
    """A verb phrase: English positive and negative forms, French auxiliary, negation word and participle."""

    en: tuple[str, ...]  # "was delivered"
    en_negated: tuple[str, ...]  # "was never delivered"
    fr_aux: tuple[str, ...]  # "a été"
    fr_negation: str  # "jamais": n' a jamais été livré
    participle: str  # masculine; the feminine adds "e"


VERBS: dict[str, Verb] = {
    "arrived": Verb(("arrived",), ("never", "arrived"), ("est",), "jamais", "arrivé"),
    "delivered": Verb(("was", "delivered"), ("was", "never", "delivered"), ("a", "été"), "jamais", "livré"),
    "shipped": Verb(("was", "shipped"), ("was", "never", "shipped"), ("a", "été"), "jamais", "expédié"),
    "lost": Verb(("was", "lost"), ("was", "never", "lost"), ("a", "été"), "jamais", "perdu"),
    "returned": Verb(("was", "returned"), ("was", "never", "returned"), ("a", "été"), "jamais", "renvoyé"),
    "refunded": Verb(("was", "refunded"), ("was", "never", "refunded"), ("a", "été"), "jamais", "remboursé"),
    "broken": Verb(("is", "broken"), ("is", "not", "broken"), ("est",), "pas", "cassé"),
}
PRONOUNS: dict[str, str] = {"nothing": "rien", "everything": "tout"}  # subjects; masculine singular
CONNECTORS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "and": (("and",), ("et",)),
    ", and": ((",", "and"), (",", "et")),
    "but": (("but",), ("mais",)),
    ", but": ((",", "but"), (",", "mais")),
    ",": ((",",), (",",)),
}
# relative clauses after "but never NP": english tokens; "it" is the first noun of the clause
RELATIVES: dict[str, tuple[str, ...]] = {
    "be_in": ("that", "was", "supposed", "to", "be", "in", "it"),  # -> qui devait être dedans
    "have": ("that", "was", "supposed", "to", "have", "it"),  # -> qui devait le/la contenir
}
_FR_VOWELS = frozenset("aeiouyéèêëàâîïôûœh")
_EN_VOWELS = frozenset("aeiou")

# ------------------------------------------------------------------------------------- the six pairs

CHAPTER_PAIRS: tuple[tuple[str, str], ...] = (
    (
        "the parcel arrived , but never the charger that was supposed to be in it .",
        "le colis est arrivé , mais jamais le chargeur qui devait être dedans .",
    ),
    (
        "the charger arrived , but never the parcel that was supposed to have it .",
        "le chargeur est arrivé , mais jamais le colis qui devait le contenir .",
    ),
    ("my red phone never arrived .", "mon téléphone rouge n' est jamais arrivé ."),
    (
        "the small box was delivered and the black watch arrived .",
        "la petite boîte a été livrée et la montre noire est arrivée .",
    ),
    ("where is my order ?", "où est ma commande ?"),
    ("the wrong cable was shipped .", "le mauvais câble a été expédié ."),
)

MIN_SRC_LEN = 3  # shortest sentence: "nothing arrived ."
MAX_SRC_LEN = 45  # longest test sentence
MAX_TRAIN_SRC_LEN = 30  # longest source in training; the test goes beyond it, up to MAX_SRC_LEN
LENGTH_BUCKETS: tuple[tuple[int, int], ...] = (
    (3, 9), (10, 14), (15, 19), (20, 24), (25, 30), (31, 35), (36, 40), (41, 45),
)  # inclusive source-length ranges; the first five are the lengths seen in training
N_TRAIN = 20_000  # training pairs, source lengths drawn uniformly in 3..MAX_TRAIN_SRC_LEN
N_TEST_PER_BUCKET = 150  # held-out pairs per length bucket
MIN_TEST_SRC_LEN = 5  # the grammar has only a few dozen sentences of 3 or 4 tokens: training keeps them all


def length_bucket(n_src_tokens: int) -> str:
    """The label ("25-30") of the bucket holding a source of ``n_src_tokens`` tokens (clamped to the ends)."""
    n = min(max(n_src_tokens, LENGTH_BUCKETS[0][0]), LENGTH_BUCKETS[-1][1])
    for low, high in LENGTH_BUCKETS:
        if low <= n <= high:
            return f"{low}-{high}"
    raise AssertionError("LENGTH_BUCKETS must cover every length")  # pragma: no cover


# ------------------------------------------------------------------------------------------ the trees


@dataclass(frozen=True)
class NP:
    det: str  # one of DETERMINERS
    noun: str  # a key of NOUNS
    pre: str | None = None  # a key of PRE_ADJECTIVES
    post: str | None = None  # a key of POST_ADJECTIVES

    @property
    def gender(self) -> str:
        return NOUNS[self.noun][1]


@dataclass(frozen=True)
class Simple:
    subject: NP | str  # an NP, or "nothing" / "everything"
    verb: str  # a key of VERBS
    negated: bool = False


@dataclass(frozen=True)
class ButNever:
    first: NP  # the one that arrived, and what "it" refers to
    second: NP  # the one that never arrived
    relative: str | None = None  # a key of RELATIVES


@dataclass(frozen=True)
class Where:
    np: NP


Clause = Simple | ButNever | Where


@dataclass(frozen=True)
class Sentence:
    clauses: tuple[Clause, ...]
    connectors: tuple[str, ...]  # len(clauses) - 1 keys of CONNECTORS


# ------------------------------------------------------------------------------------------ rendering


def _feminine(masculine: str, gender: str) -> str:
    return masculine + "e" if gender == "f" else masculine


def _np_en(np_: NP) -> list[str]:
    words = [w for w in (np_.pre, np_.post, np_.noun) if w]
    det = np_.det
    if det == "a" and words[0][0] in _EN_VOWELS:
        det = "an"
    return [det, *words]


def _np_fr(np_: NP) -> list[str]:
    noun, gender, _ = NOUNS[np_.noun]
    index = 0 if gender == "m" else 1
    pre = [PRE_ADJECTIVES[np_.pre][index]] if np_.pre else []
    post = [POST_ADJECTIVES[np_.post][index]] if np_.post else []
    following = (pre or [noun])[0]
    vowel = following[0] in _FR_VOWELS
    if np_.det == "the":
        det = "l'" if vowel else ("le" if gender == "m" else "la")
    elif np_.det == "a":
        det = "un" if gender == "m" else "une"
    elif np_.det == "my":
        det = "mon" if gender == "m" or vowel else "ma"
    else:
        det = "votre"
    return [det, *pre, noun, *post]


def _clause_en(clause: Clause) -> list[str]:
    if isinstance(clause, Where):
        return ["where", "is", *_np_en(clause.np)]
    if isinstance(clause, ButNever):
        relative = list(RELATIVES[clause.relative]) if clause.relative else []
        return [*_np_en(clause.first), "arrived", ",", "but", "never", *_np_en(clause.second), *relative]
    subject = [clause.subject] if isinstance(clause.subject, str) else _np_en(clause.subject)
    verb = VERBS[clause.verb]
    return [*subject, *(verb.en_negated if clause.negated else verb.en)]


def _clause_fr(clause: Clause) -> list[str]:
    if isinstance(clause, Where):
        return ["où", "est", *_np_fr(clause.np)]
    if isinstance(clause, ButNever):
        gender = clause.first.gender
        if clause.relative == "be_in":
            relative = ["qui", "devait", "être", "dedans"]
        elif clause.relative == "have":
            relative = ["qui", "devait", "le" if gender == "m" else "la", "contenir"]
        else:
            relative = []
        arrived = _feminine(VERBS["arrived"].participle, gender)
        return [*_np_fr(clause.first), "est", arrived, ",", "mais", "jamais", *_np_fr(clause.second), *relative]
    verb = VERBS[clause.verb]
    if isinstance(clause.subject, str):
        subject, gender = [PRONOUNS[clause.subject]], "m"
    else:
        subject, gender = _np_fr(clause.subject), clause.subject.gender
    participle = _feminine(verb.participle, gender)
    if clause.negated:  # n' a jamais été livré
        return [*subject, "n'", verb.fr_aux[0], verb.fr_negation, *verb.fr_aux[1:], participle]
    if clause.subject == "nothing":  # rien n' a été livré
        return [*subject, "n'", *verb.fr_aux, participle]
    return [*subject, *verb.fr_aux, participle]


def _final_mark(sentence: Sentence) -> str:
    return "?" if isinstance(sentence.clauses[-1], Where) else "."


def render_english(sentence: Sentence) -> list[str]:
    out = _clause_en(sentence.clauses[0])
    for connector, clause in zip(sentence.connectors, sentence.clauses[1:], strict=True):
        out += [*CONNECTORS[connector][0], *_clause_en(clause)]
    return [*out, _final_mark(sentence)]


def render_french(sentence: Sentence) -> list[str]:
    out = _clause_fr(sentence.clauses[0])
    for connector, clause in zip(sentence.connectors, sentence.clauses[1:], strict=True):
        out += [*CONNECTORS[connector][1], *_clause_fr(clause)]
    return [*out, _final_mark(sentence)]


def is_valid(sentence: Sentence) -> bool:
    """The constraints the generator keeps: a question only last, no "a" in "where is", sensible relatives."""
    if len(sentence.connectors) != len(sentence.clauses) - 1:
        return False
    for i, clause in enumerate(sentence.clauses):
        if isinstance(clause, Where) and (i != len(sentence.clauses) - 1 or clause.np.det == "a"):
            return False
        if isinstance(clause, Simple) and isinstance(clause.subject, str) and clause.negated:
            return False
        if isinstance(clause, ButNever):
            if clause.first.noun == clause.second.noun:
                return False
            kinds = (NOUNS[clause.first.noun][2], NOUNS[clause.second.noun][2])
            if clause.relative == "be_in" and kinds != ("container", "item"):
                return False
            if clause.relative == "have" and kinds != ("item", "container"):
                return False
    return True


# -------------------------------------------------------------------------------------------- parsing


class _Reject(Exception):
    """The tokens are not a sentence of the grammar."""


class _Parser:
    def __init__(self, tokens: Sequence[str]):
        self.tokens = list(tokens)
        self.i = 0

    def peek(self, k: int = 0) -> str | None:
        j = self.i + k
        return self.tokens[j] if j < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise _Reject
        self.i += 1
        return token

    def expect(self, words: Sequence[str]) -> None:
        for word in words:
            if self.take() != word:
                raise _Reject

    def at(self, words: Sequence[str]) -> bool:
        return all(self.peek(k) == w for k, w in enumerate(words))

    def np(self) -> NP:
        det = self.take()
        det = "a" if det == "an" else det  # an/a is checked when the sentence is rendered back
        if det not in DETERMINERS:
            raise _Reject
        pre = self.take() if self.peek() in PRE_ADJECTIVES else None
        post = self.take() if self.peek() in POST_ADJECTIVES else None
        noun = self.take()
        if noun not in NOUNS:
            raise _Reject
        return NP(det, noun, pre, post)

    def verb(self) -> tuple[str, bool]:
        for key, verb in VERBS.items():
            for negated, words in ((False, verb.en), (True, verb.en_negated)):
                if self.at(words):
                    self.i += len(words)
                    return key, negated
        raise _Reject

    def clause(self) -> Clause:
        if self.peek() == "where":
            self.expect(["where", "is"])
            return Where(self.np())
        if self.peek() in PRONOUNS:
            subject = self.take()
            verb, negated = self.verb()
            return Simple(subject, verb, negated)
        first = self.np()
        verb, negated = self.verb()
        if verb == "arrived" and not negated and self.at([",", "but", "never"]):
            self.i += 3
            second = self.np()
            relative = None
            for key, words in RELATIVES.items():
                if self.at(words):
                    self.i += len(words)
                    relative = key
            return ButNever(first, second, relative)
        return Simple(first, verb, negated)

    def connector(self) -> str:
        for key in sorted(CONNECTORS, key=len, reverse=True):  # ", and" before ","
            words = CONNECTORS[key][0]
            if self.at(words):
                self.i += len(words)
                return key
        raise _Reject

    def sentence(self) -> Sentence:
        clauses, connectors = [self.clause()], []
        while self.i < len(self.tokens) - 1:
            connectors.append(self.connector())
            clauses.append(self.clause())
        self.take()  # the final mark, checked when the sentence is rendered back
        return Sentence(tuple(clauses), tuple(connectors))


def parse(src_tokens: Sequence[str]) -> Sentence | None:
    """The tree of an English sentence of the grammar, or None if it is not one."""
    try:
        sentence = _Parser(src_tokens).sentence()
    except _Reject:
        return None
    if not is_valid(sentence) or render_english(sentence) != list(src_tokens):
        return None
    return sentence


def reference_translation(src_tokens: Sequence[str]) -> list[str] | None:
    """The grammar's French for a tokenized English sentence; None if the sentence is outside the grammar."""
    sentence = parse(src_tokens)
    return None if sentence is None else render_french(sentence)


# ------------------------------------------------------------------------------------------ generation

_NP_LENGTHS = (2, 3, 4)  # det noun; det adj noun; det pre post noun
# (kind, weight) of clause kinds; "where" only ends a sentence
_KIND_WEIGHTS = {"simple": 0.55, "but_never": 0.3, "pronoun": 0.06, "where": 0.15}
_CONNECTOR_WEIGHTS = {"and": 0.3, ", and": 0.15, "but": 0.15, ", but": 0.2, ",": 0.2}
_CONNECTOR_KEYS, _CONNECTOR_WEIGHT_VALUES = tuple(_CONNECTOR_WEIGHTS), tuple(_CONNECTOR_WEIGHTS.values())


def _shapes() -> dict[str, list[tuple[int, tuple]]]:
    """Every clause shape per kind, with its English length: (length, parameters)."""
    shapes: dict[str, list[tuple[int, tuple]]] = {kind: [] for kind in _KIND_WEIGHTS}
    for key, verb in VERBS.items():
        for negated, words in ((False, verb.en), (True, verb.en_negated)):
            for n in _NP_LENGTHS:
                shapes["simple"].append((n + len(words), (n, key, negated)))
            if not negated:
                shapes["pronoun"].append((1 + len(words), (key,)))
    for n1 in _NP_LENGTHS:
        for n2 in _NP_LENGTHS:
            for relative in (None, *RELATIVES):
                extra = len(RELATIVES[relative]) if relative else 0
                shapes["but_never"].append((n1 + 4 + n2 + extra, (n1, n2, relative)))
    for n in _NP_LENGTHS:
        shapes["where"].append((2 + n, (n,)))
    return shapes


_SHAPES = _shapes()


def _pick(rng: np.random.Generator, options: Sequence, weights: Sequence[float] | None = None):
    """One of ``options``, uniformly or in proportion to ``weights`` (one draw of ``rng.random()``)."""
    u = rng.random()
    if weights is None:
        return options[min(int(u * len(options)), len(options) - 1)]
    cumulative = list(itertools.accumulate(weights))
    return options[min(bisect.bisect_right(cumulative, u * cumulative[-1]), len(options) - 1)]


def _sample_np(rng: np.random.Generator, length: int, nouns: Sequence[str], where: bool = False) -> NP:
    det = _pick(rng, DETERMINERS, [0.45, 0.0 if where else 0.2, 0.25, 0.1])
    noun = _pick(rng, nouns)
    pre = post = None
    if length == 4:
        pre, post = _pick(rng, _PRE), _pick(rng, _POST)
    elif length == 3:
        if rng.random() < 0.4:
            pre = _pick(rng, _PRE)
        else:
            post = _pick(rng, _POST)
    return NP(det, noun, pre, post)


_ALL_NOUNS = tuple(NOUNS)
_CONTAINERS = tuple(w for w, (_, _, kind) in NOUNS.items() if kind == "container")
_ITEMS = tuple(w for w, (_, _, kind) in NOUNS.items() if kind == "item")
_PRE, _POST, _PRONOUNS = tuple(PRE_ADJECTIVES), tuple(POST_ADJECTIVES), tuple(PRONOUNS)


def _realize(rng: np.random.Generator, kind: str, params: tuple) -> Clause:
    all_nouns = _ALL_NOUNS
    if kind == "simple":
        n, verb, negated = params
        return Simple(_sample_np(rng, n, all_nouns), verb, negated)
    if kind == "pronoun":
        return Simple(_pick(rng, _PRONOUNS), params[0])
    if kind == "where":
        return Where(_sample_np(rng, params[0], all_nouns, where=True))
    n1, n2, relative = params
    if relative == "be_in":
        first_nouns, second_nouns = _CONTAINERS, _ITEMS
    elif relative == "have":
        first_nouns, second_nouns = _ITEMS, _CONTAINERS
    else:
        first_nouns = second_nouns = all_nouns
    first = _sample_np(rng, n1, first_nouns)
    second = _sample_np(rng, n2, [w for w in second_nouns if w != first.noun])
    return ButNever(first, second, relative)


@functools.cache
def _fitting(kinds: tuple[str, ...], exact: int | None, at_most: int | None) -> tuple:
    """For each of ``kinds`` that has one, its shapes of length ``exact`` (or of at most ``at_most``)."""
    out = []
    for kind in kinds:
        shapes = [s for s in _SHAPES[kind] if (s[0] == exact if exact is not None else s[0] <= at_most)]
        if shapes:
            out.append((kind, _KIND_WEIGHTS[kind], tuple(shapes)))
    return tuple(out)


def _sample_clause(
    rng: np.random.Generator, kinds: tuple[str, ...], exact: int | None = None, at_most: int | None = None
) -> tuple[int, Clause] | None:
    """A clause of one of ``kinds`` of length ``exact`` (or at most ``at_most``), or None if there is none."""
    fitting = _fitting(kinds, exact, at_most)
    if not fitting:
        return None
    kind, _, shapes = _pick(rng, fitting, [weight for _, weight, _ in fitting])
    length, params = _pick(rng, shapes)
    return length, _realize(rng, kind, params)


def sample_sentence(rng: np.random.Generator, n_tokens: int) -> Sentence:
    """A random sentence of the grammar whose English has exactly ``n_tokens`` tokens (3..45)."""
    if not MIN_SRC_LEN <= n_tokens <= MAX_SRC_LEN:
        raise ValueError(f"sentence length must be in {MIN_SRC_LEN}..{MAX_SRC_LEN}, got {n_tokens}")
    all_kinds = tuple(_KIND_WEIGHTS)
    middle_kinds = tuple(k for k in all_kinds if k != "where")
    clauses: list[Clause] = []
    connectors: list[str] = []
    remaining = n_tokens - 1  # the final "." or "?"
    while True:
        stop_p = 0.7 if remaining <= 7 else 0.4
        if rng.random() < stop_p or remaining < 5:
            last = _sample_clause(rng, all_kinds, exact=remaining)
            if last is not None:
                clauses.append(last[1])
                break
        connector = _pick(rng, _CONNECTOR_KEYS, _CONNECTOR_WEIGHT_VALUES)
        budget = remaining - len(CONNECTORS[connector][0]) - 2  # leave room for a 2-token clause after
        step = _sample_clause(rng, middle_kinds, at_most=budget)
        if step is None:
            continue
        clauses.append(step[1])
        connectors.append(connector)
        remaining -= step[0] + len(CONNECTORS[connector][0])
    sentence = Sentence(tuple(clauses), tuple(connectors))
    assert is_valid(sentence) and len(render_english(sentence)) == n_tokens
    return sentence


# --------------------------------------------------------------------------------------------- splits


@dataclass(frozen=True)
class Pair:
    src: tuple[str, ...]  # tokenized English (tokenize() output)
    tgt: tuple[str, ...]  # tokenized French (tokenize() output)


@dataclass(frozen=True)
class TranslationSplits:
    train: list[Pair]  # N_TRAIN pairs, sources of 3..MAX_TRAIN_SRC_LEN tokens, no test or chapter sentence
    test: list[Pair]  # N_TEST_PER_BUCKET pairs per LENGTH_BUCKETS bucket, none of them in train


def _pair(sentence: Sentence) -> Pair:
    return Pair(tuple(render_english(sentence)), tuple(render_french(sentence)))


@functools.lru_cache(maxsize=4)
def _splits(seed: int) -> tuple[tuple[Pair, ...], tuple[Pair, ...]]:
    rng = np.random.default_rng(seed)
    chapter = {tuple(tokenize(en)) for en, _ in CHAPTER_PAIRS}
    test: list[Pair] = []
    seen = set(chapter)
    for low, high in LENGTH_BUCKETS:
        low = max(low, MIN_TEST_SRC_LEN)
        count = 0
        while count < N_TEST_PER_BUCKET:
            pair = _pair(sample_sentence(rng, int(rng.integers(low, high + 1))))
            if pair.src not in seen:
                seen.add(pair.src)
                test.append(pair)
                count += 1
    train: list[Pair] = []
    while len(train) < N_TRAIN:
        pair = _pair(sample_sentence(rng, int(rng.integers(MIN_SRC_LEN, MAX_TRAIN_SRC_LEN + 1))))
        if pair.src not in seen:
            seen.add(pair.src)
            train.append(pair)
    return tuple(train), tuple(test)


def make_translation_splits(seed: int = 0) -> TranslationSplits:
    """The seeded train and test pairs (same seed, same pairs). The six CHAPTER_PAIRS are in neither."""
    train, test = _splits(seed)
    return TranslationSplits(train=list(train), test=list(test))


# What seqviz.tasks.PairTask reads of a data module, under the names every such module gives them.
make_splits = make_translation_splits
reference = reference_translation
