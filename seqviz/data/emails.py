"""Cartwise support emails, labelled with the team that should handle them (the classification task).

The chapter opens with two emails that hold almost the same words and need different teams:

    "The parcel arrived, but never the charger that was supposed to be in it."   -> missing_item (refunds)
    "The charger arrived, but never the parcel that was supposed to have it."    -> lost_parcel (delivery)

The generator makes *word-identical twins* of that kind: two emails with exactly the same bag of words (the
same words, the same number of times) and different labels, because two nouns or two states swap places:

    hi , the box arrived , but never the cable . thanks .         -> missing_item
    hi , the cable arrived , but never the box . thanks .         -> lost_parcel
    my watch is broken , not missing .                            -> damaged_item
    my watch is missing , not broken .                            -> missing_item

A bag-of-words model sees the two members of a twin pair as the same input, so it gives them the same label
and is right on at most half of the twins; only a model that reads word order can do better. Twins are
TWIN_SHARE of the training emails; the held-out ``twins`` split holds pairs none of whose emails is in train.

What decides the label: the thing that never arrived or is missing (a parcel or box: lost_parcel; an item:
missing_item; a refund or invoice: billing), or the thing that is broken (damaged_item), or a charge
(billing). Greetings, order references ("order 4412"), thanks before or after and sign-offs are the same for
every label and move the complaint around in the email; emails have 5 to 40 tokens.

The two CHAPTER_EMAILS are sentences of this generator's language (bare, with no greeting) but are kept out
of every split, so a model's answer on them is never memorised.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from seqviz.text import tokenize

LABELS: tuple[str, ...] = ("lost_parcel", "missing_item", "damaged_item", "billing")
TEAMS: dict[str, str] = {
    "lost_parcel": "delivery",
    "missing_item": "refunds",
    "damaged_item": "returns",
    "billing": "billing",
}
CHAPTER_EMAILS: tuple[tuple[str, str], ...] = (
    ("The parcel arrived, but never the charger that was supposed to be in it.", "missing_item"),
    ("The charger arrived, but never the parcel that was supposed to have it.", "lost_parcel"),
)

MIN_TOKENS, MAX_TOKENS = 5, 40  # length of an email in tokens
N_TRAIN = 6000  # training emails
N_TEST = 1000  # held-out emails, drawn like the training ones
N_TWIN_PAIRS = 400  # held-out twin pairs
TWIN_SHARE = 0.6  # share of train and test emails that come in word-identical twin pairs

# ---------------------------------------------------------------------------------------------- words

CONTAINERS = ("parcel", "package", "box", "delivery")  # never arrived -> lost_parcel
ITEMS = ("charger", "cable", "phone", "case", "battery", "lamp", "watch", "headphones", "adapter", "speaker",
         "keyboard", "mouse")  # never arrived -> missing_item
MONEY = ("refund", "invoice", "receipt")  # never arrived -> billing
CATEGORY_LABEL = {"container": "lost_parcel", "item": "missing_item", "money": "billing"}
ORDER_NUMBERS = ("4412", "1037", "2290", "3158", "5521", "6604", "7719", "8843", "9026", "1175")
NAMES = ("anna", "tom", "ravi", "mei", "lucas", "sara", "omar", "julia")


def _category(noun: str) -> str:
    return "container" if noun in CONTAINERS else "item" if noun in ITEMS else "money"


# ------------------------------------------------------------------------------------------ templates
# Twin templates with two noun slots: {P} is the thing with the problem (it decides the label), {F} the thing
# that is fine. Swapping the two nouns swaps the label and keeps every word.
NOUN_TWIN_TEMPLATES: tuple[str, ...] = (
    "{dp} {F} arrived , but never {dq} {P}",
    "{dp} {F} arrived but not {dq} {P}",
    "{dp} {P} never arrived , but {dq} {F} did",
    "i got {dp} {F} but never {dq} {P}",
    "i received {dp} {F} , but {dq} {P} never came",
    "{dp} {F} came , {dq} {P} did not",
    "{dp} {P} is missing , {dq} {F} is here",
    "{dp} {F} is here but {dq} {P} is missing",
    "only {dp} {F} arrived , not {dq} {P}",
    "{dp} {P} did not arrive , only {dq} {F}",
)
# Relative clauses that follow the noun they describe, wherever it goes (as in the chapter's emails).
ITEM_TAIL = ("that", "was", "supposed", "to", "be", "in", "it")  # after an item: "it" is the container
CONTAINER_TAIL = ("that", "was", "supposed", "to", "have", "it")  # after a container: "it" is the item
# Twin templates with one noun and two states: {P} is the state that is true and decides the label.
STATE_TWIN_TEMPLATES: tuple[str, ...] = (
    "my {X} is {P} , not {F}",
    "{dp} {X} is not {F} , it is {P}",
    "{dp} {X} was {P} , not {F}",
    "i think my {X} is {P} and not {F}",
)
# (nouns, state -> label) for the state twins
STATE_PAIRS: tuple[tuple[tuple[str, ...], dict[str, str]], ...] = (
    (ITEMS, {"broken": "damaged_item", "missing": "missing_item"}),
    (CONTAINERS, {"broken": "damaged_item", "lost": "lost_parcel"}),
)
# Single emails (no twin): label -> templates; {C} a container, {I} an item.
SINGLE_TEMPLATES: dict[str, tuple[str, ...]] = {
    "lost_parcel": (
        "where is my {C} ?",
        "my {C} never arrived",
        "my {C} has not arrived yet",
        "the {C} was lost",
        "the tracking says delivered but there is no {C}",
        "the driver never came",
        "i am still waiting for my {C}",
    ),
    "missing_item": (
        "the {I} was not in the {C}",
        "the {C} was empty",
        "my {C} came without the {I}",
        "one {I} is missing from my {C}",
        "the {I} never arrived",
    ),
    "damaged_item": (
        "my {I} arrived broken",
        "the {I} is broken",
        "the {I} does not work",
        "the {I} is cracked",
        "the {I} was damaged in the {C}",
        "my {I} stopped working after one day",
        "my {C} arrived broken",
    ),
    "billing": (
        "i was charged twice",
        "i was charged twice for my {C}",
        "the invoice is wrong",
        "i paid twice for the {I}",
        "my refund never arrived",
        "please send me the invoice",
        "the price on the invoice is wrong",
        "i was charged for one {I} too many",
    ),
}
# share of each label among single emails (they balance the labels of the twins)
SINGLE_LABEL_WEIGHTS = {"lost_parcel": 0.12, "missing_item": 0.12, "damaged_item": 0.3, "billing": 0.46}
# kinds of twin pairs and their shares: noun categories of the two slots, or a state pair
TWIN_KINDS: tuple[tuple[str, float], ...] = (
    ("container/item", 0.35),
    ("container/money", 0.13),
    ("item/money", 0.12),
    ("state:item", 0.22),
    ("state:container", 0.18),
)

GREETINGS = ("hello", "hi", "hello ,", "hi there ,", "dear cartwise ,", "hello cartwise team ,",
             "good morning ,")
THANKS_BEFORE = ("thanks for your help .", "thank you for reading .", "sorry to bother you .")
ORDER_REFS = ("about order {N} .", "order {N} :", "this is about order {N} .", "my order number is {N} .",
              "re : order {N} .")
LEADS = ("sadly ,", "unfortunately ,", "so ,", "i am writing because", "just to let you know ,", "hi again ,")
FILLERS = ("i ordered on monday .", "i ordered last week .", "this is urgent .", "it was a gift .",
           "i have been a customer for years .", "this is the second time i write .")
CLOSINGS = ("thanks .", "thank you .", "thanks in advance .", "please help .", "can you help ?",
            "please fix this .", "what can i do ?", "please call me back .")
SIGN_OFFS = ("best , {name}", "regards , {name}", "{name}", "cheers , {name}", "thanks , {name}")


@dataclass(frozen=True)
class Email:
    tokens: tuple[str, ...]  # tokenize() output
    label: int  # index into LABELS


@dataclass(frozen=True)
class EmailSplits:
    train: list[Email]  # N_TRAIN emails, TWIN_SHARE of them in twin pairs (shuffled)
    test: list[Email]  # N_TEST emails drawn the same way, none of them in train
    twins: list[tuple[Email, Email]]  # held out: word-identical pairs with different labels, none in train


# ------------------------------------------------------------------------------------------ generation


def _pick(rng: np.random.Generator, options: Sequence):
    return options[int(rng.integers(len(options)))]


def _pick_weighted(rng: np.random.Generator, weighted: Sequence[tuple[str, float]]) -> str:
    p = np.array([w for _, w in weighted], dtype=float)
    return weighted[int(rng.choice(len(weighted), p=p / p.sum()))][0]


def _noun_phrase(noun: str, tail: bool) -> str:
    if not tail:
        return noun
    return " ".join((noun, *(ITEM_TAIL if noun in ITEMS else CONTAINER_TAIL)))


def _twin_cores(rng: np.random.Generator) -> tuple[tuple[str, str], tuple[str, str]]:
    """Two complaints with the same words and different labels: ((text, label), (text, label))."""
    kind = _pick_weighted(rng, TWIN_KINDS)
    if kind.startswith("state:"):
        nouns, states = STATE_PAIRS[0] if kind == "state:item" else STATE_PAIRS[1]
        template = _pick(rng, STATE_TWIN_TEMPLATES)
        noun, det = _pick(rng, nouns), _pick(rng, ("the", "my"))
        a, b = states
        return (
            (template.format(X=noun, P=a, F=b, dp=det), states[a]),
            (template.format(X=noun, P=b, F=a, dp=det), states[b]),
        )
    first_pool, second_pool = {"container/item": (CONTAINERS, ITEMS), "container/money": (CONTAINERS, MONEY),
                               "item/money": (ITEMS, MONEY)}[kind]
    x, y = _pick(rng, first_pool), _pick(rng, second_pool)
    template = _pick(rng, NOUN_TWIN_TEMPLATES)
    dets = {"dp": _pick(rng, ("the", "my")), "dq": _pick(rng, ("the", "my", "the"))}
    # the chapter's relative clause, on the item or on the container, in both members of the pair
    tail_on = _pick(rng, (None, None, x, y)) if kind == "container/item" else None
    px, py = _noun_phrase(x, tail_on == x), _noun_phrase(y, tail_on == y)
    return (
        (template.format(P=px, F=py, **dets), CATEGORY_LABEL[_category(x)]),
        (template.format(P=py, F=px, **dets), CATEGORY_LABEL[_category(y)]),
    )


def _single_core(rng: np.random.Generator) -> tuple[str, str]:
    label = _pick_weighted(rng, list(SINGLE_LABEL_WEIGHTS.items()))
    template = _pick(rng, SINGLE_TEMPLATES[label])
    return template.format(C=_pick(rng, CONTAINERS), I=_pick(rng, ITEMS)), label


def _wrapper(rng: np.random.Generator) -> tuple[list[str], list[str], str]:
    """Text before the complaint, text after it, and the mark that ends the complaint."""
    before: list[str] = []
    after: list[str] = []
    number = _pick(rng, ORDER_NUMBERS)
    if rng.random() < 0.6:
        before.append(_pick(rng, GREETINGS))
    if rng.random() < 0.15:
        before.append(_pick(rng, THANKS_BEFORE))
    order_ref = _pick(rng, ORDER_REFS).format(N=number) if rng.random() < 0.5 else None
    if order_ref and rng.random() < 0.5:
        before.append(order_ref)
    if rng.random() < 0.2:
        before.append(_pick(rng, FILLERS))
    if rng.random() < 0.3:
        before.append(_pick(rng, LEADS))
    if order_ref and order_ref not in before:
        after.append(order_ref)
    if rng.random() < 0.2:
        after.append(_pick(rng, FILLERS))
    for _ in range(int(rng.integers(0, 3))):
        after.append(_pick(rng, CLOSINGS))
    if rng.random() < 0.35:
        after.append(_pick(rng, SIGN_OFFS).format(name=_pick(rng, NAMES)))
    mark = _pick(rng, (".", ".", ".", ".", "!", ""))
    return before, after, mark


def _wrap(core: str, before: list[str], after: list[str], mark: str) -> tuple[str, ...]:
    end = "" if core.endswith("?") else mark
    return tuple(tokenize(" ".join([*before, core + " " + end, *after])))


def _email(tokens: tuple[str, ...], label: str) -> Email:
    return Email(tokens=tokens, label=LABELS.index(label))


def _sample_twin_pair(rng: np.random.Generator) -> tuple[Email, Email]:
    (core_a, label_a), (core_b, label_b) = _twin_cores(rng)
    while True:
        before, after, mark = _wrapper(rng)
        a, b = _wrap(core_a, before, after, mark), _wrap(core_b, before, after, mark)
        if MIN_TOKENS <= len(a) <= MAX_TOKENS:
            return _email(a, label_a), _email(b, label_b)


def _sample_single(rng: np.random.Generator) -> Email:
    core, label = _single_core(rng)
    while True:
        tokens = _wrap(core, *_wrapper(rng))
        if MIN_TOKENS <= len(tokens) <= MAX_TOKENS:
            return _email(tokens, label)


class _Unique:
    """Keeps every email of every split distinct, and the chapter's emails out of all of them."""

    def __init__(self) -> None:
        self.seen = {tuple(tokenize(text)) for text, _ in CHAPTER_EMAILS}

    def pair(self, rng: np.random.Generator) -> tuple[Email, Email]:
        while True:
            a, b = _sample_twin_pair(rng)
            if a.tokens not in self.seen and b.tokens not in self.seen:
                self.seen.update((a.tokens, b.tokens))
                return a, b

    def single(self, rng: np.random.Generator) -> Email:
        while True:
            email = _sample_single(rng)
            if email.tokens not in self.seen:
                self.seen.add(email.tokens)
                return email


def _mixed(rng: np.random.Generator, unique: _Unique, n: int) -> list[Email]:
    n_pairs = round(n * TWIN_SHARE / 2)
    emails = [e for _ in range(n_pairs) for e in unique.pair(rng)]
    emails += [unique.single(rng) for _ in range(n - 2 * n_pairs)]
    order = rng.permutation(len(emails))
    return [emails[i] for i in order]


@functools.lru_cache(maxsize=4)
def _splits(seed: int) -> tuple[tuple[Email, ...], tuple[Email, ...], tuple[tuple[Email, Email], ...]]:
    rng = np.random.default_rng(seed)
    unique = _Unique()
    twins = tuple(unique.pair(rng) for _ in range(N_TWIN_PAIRS))
    test = tuple(_mixed(rng, unique, N_TEST))
    train = tuple(_mixed(rng, unique, N_TRAIN))
    return train, test, twins


def make_email_splits(seed: int = 0) -> EmailSplits:
    """The seeded train, test and twins splits (same seed, same emails). No email occurs in two splits."""
    train, test, twins = _splits(seed)
    return EmailSplits(train=list(train), test=list(test), twins=list(twins))
