"""The English -> French grammar: the chapter's six pairs, French agreement, parsing, splits."""

from collections import Counter

import numpy as np
import pytest

from seqviz.data import translation
from seqviz.data.translation import (
    CHAPTER_PAIRS,
    LENGTH_BUCKETS,
    MAX_TRAIN_SRC_LEN,
    Pair,
    length_bucket,
    make_translation_splits,
    reference_translation,
)
from seqviz.text import tokenize


@pytest.fixture(scope="module")
def splits():
    return make_translation_splits(0)


def fr(english: str) -> str | None:
    out = reference_translation(tokenize(english))
    return None if out is None else " ".join(out)


@pytest.mark.parametrize(("english", "french"), CHAPTER_PAIRS)
def test_the_six_chapter_pairs(english, french):
    assert tokenize(english) == english.split() and tokenize(french) == french.split()
    assert reference_translation(tokenize(english)) == tokenize(french)


def test_the_six_pairs_are_the_issues_pairs():
    assert dict(CHAPTER_PAIRS)["my red phone never arrived ."] == "mon téléphone rouge n' est jamais arrivé ."
    assert dict(CHAPTER_PAIRS)["where is my order ?"] == "où est ma commande ?"
    assert len(CHAPTER_PAIRS) == 6


@pytest.mark.parametrize(
    ("english", "french"),
    [
        # adjectives after the noun, but petit / grand / mauvais before it; agreement in gender
        ("the red phone arrived .", "le téléphone rouge est arrivé ."),
        ("the black box arrived .", "la boîte noire est arrivée ."),
        ("a big blue lamp was lost .", "une grande lampe bleue a été perdue ."),
        ("your new watch was returned .", "votre montre neuve a été renvoyée ."),
        ("the new cable was returned .", "le câble neuf a été renvoyé ."),
        ("the broken battery was refunded .", "la batterie cassée a été remboursée ."),
        ("my wrong invoice was shipped .", "ma mauvaise facture a été expédiée ."),
        # elision and mon before a vowel
        ("the item arrived .", "l' article est arrivé ."),
        ("the label never arrived .", "l' étiquette n' est jamais arrivée ."),
        ("my label is broken .", "mon étiquette est cassée ."),
        ("my small label is broken .", "ma petite étiquette est cassée ."),
        ("the small item arrived .", "le petit article est arrivé ."),
        ("an item arrived .", "un article est arrivé ."),
        ("an order was shipped .", "une commande a été expédiée ."),
        # negation around the verb
        ("the case was never delivered .", "la coque n' a jamais été livrée ."),
        ("my phone is not broken .", "mon téléphone n' est pas cassé ."),
        ("nothing arrived .", "rien n' est arrivé ."),
        ("everything was delivered .", "tout a été livré ."),
        # the pronoun takes the gender of what it refers to
        (
            "the battery arrived , but never the box that was supposed to have it .",
            "la batterie est arrivée , mais jamais la boîte qui devait la contenir .",
        ),
        (
            "my phone arrived , but never the order that was supposed to have it .",
            "mon téléphone est arrivé , mais jamais la commande qui devait le contenir .",
        ),
        # chaining clauses
        (
            "the driver arrived , and where is your refund ?",
            "le livreur est arrivé , et où est votre remboursement ?",
        ),
        ("the box arrived , my cable was lost but nothing is broken .",
         "la boîte est arrivée , mon câble a été perdu mais rien n' est cassé ."),
    ],
)
def test_french_agreement_elision_and_negation(english, french):
    assert fr(english) == french


@pytest.mark.parametrize(
    "english",
    [
        "the parcel arrived",  # no final mark
        "a item arrived .",  # a before a vowel
        "an phone arrived .",
        "the red small box arrived .",  # adjectives in the wrong order
        "the zebra arrived .",  # not in the lexicon
        "where is my order ? and the box arrived .",  # a question only ends a sentence
        "where is my order .",
        "the box arrived ?",
        "nothing never arrived .",
        "the parcel arrived , but never the parcel .",
        "the charger arrived , but never the parcel that was supposed to be in it .",  # "it" would be the charger
        "the parcel arrived but never the charger .",
        "",
    ],
)
def test_sentences_outside_the_grammar_have_no_reference(english):
    assert reference_translation(tokenize(english)) is None


def test_every_generated_pair_is_its_own_reference(splits):
    for pair in splits.train[:3000] + splits.test:
        assert reference_translation(pair.src) == list(pair.tgt)
        assert list(pair.src) == tokenize(" ".join(pair.src))
        assert list(pair.tgt) == tokenize(" ".join(pair.tgt))


def test_same_seed_same_data_and_other_seed_other_data(splits):
    translation._splits.cache_clear()  # else the second call is the cache's copy of the first
    again = make_translation_splits(0)
    assert again.train == splits.train and again.test == splits.test
    assert make_translation_splits(1).train[:50] != splits.train[:50]


def test_sizes_and_lengths(splits):
    assert len(splits.train) == translation.N_TRAIN
    train_lengths = Counter(len(p.src) for p in splits.train)
    assert min(train_lengths) >= 3 and max(train_lengths) == MAX_TRAIN_SRC_LEN
    # long sentences are as common as medium ones in training
    assert train_lengths[MAX_TRAIN_SRC_LEN] >= 0.7 * train_lengths[15]
    buckets = Counter(length_bucket(len(p.src)) for p in splits.test)
    assert set(buckets) == {f"{lo}-{hi}" for lo, hi in LENGTH_BUCKETS}
    assert min(buckets.values()) >= 100
    assert max(len(p.src) for p in splits.test) == 45
    assert all(isinstance(p, Pair) for p in splits.test)


def test_no_test_or_chapter_sentence_in_train(splits):
    train = {p.src for p in splits.train}
    assert len(train) == len(splits.train)
    assert not train & {p.src for p in splits.test}
    chapter = {tuple(tokenize(en)) for en, _ in CHAPTER_PAIRS}
    assert not train & chapter
    assert not {p.src for p in splits.test} & chapter


def test_training_shows_the_pronoun_in_both_genders(splits):
    tgt = [" ".join(p.tgt) for p in splits.train]
    assert sum("qui devait le contenir" in t for t in tgt) >= 100
    assert sum("qui devait la contenir" in t for t in tgt) >= 100
    assert sum("qui devait être dedans" in t for t in tgt) >= 100


def test_length_bucket_labels():
    assert length_bucket(3) == "3-9"
    assert length_bucket(30) == f"25-{MAX_TRAIN_SRC_LEN}"
    assert length_bucket(31) == "31-35"
    assert length_bucket(45) == "41-45"
    covered = [n for lo, hi in LENGTH_BUCKETS for n in range(lo, hi + 1)]
    assert covered == list(range(3, 46))


def test_sample_sentence_hits_the_asked_length():
    rng = np.random.default_rng(0)
    for n in range(3, 46):
        sentence = translation.sample_sentence(rng, n)
        assert len(translation.render_english(sentence)) == n
    with pytest.raises(ValueError):
        translation.sample_sentence(rng, 2)
