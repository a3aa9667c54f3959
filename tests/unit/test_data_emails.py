"""The Cartwise email generator: determinism, word-identical twins, no leakage, lengths."""

from collections import Counter

import pytest

from seqviz.data import emails
from seqviz.data.emails import CHAPTER_EMAILS, LABELS, TEAMS, Email, make_email_splits
from seqviz.text import Vocab, tokenize


@pytest.fixture(scope="module")
def splits():
    return make_email_splits(0)


def test_sizes(splits):
    assert len(splits.train) == emails.N_TRAIN
    assert len(splits.test) == emails.N_TEST
    assert len(splits.twins) == emails.N_TWIN_PAIRS


def test_same_seed_same_data_and_other_seed_other_data(splits):
    emails._splits.cache_clear()  # else the second call is the cache's copy of the first
    again = make_email_splits(0)
    assert again.train == splits.train and again.test == splits.test and again.twins == splits.twins
    other = make_email_splits(1)
    assert other.train != splits.train and other.twins != splits.twins


def test_twins_are_word_identical_with_different_labels(splits):
    for a, b in splits.twins:
        assert Counter(a.tokens) == Counter(b.tokens)
        assert a.tokens != b.tokens
        assert a.label != b.label


def test_twins_are_a_large_share_of_training(splits):
    by_bag: dict[frozenset, set[int]] = {}
    for email in splits.train:
        by_bag.setdefault(frozenset(Counter(email.tokens).items()), set()).add(email.label)
    in_twins = sum(1 for e in splits.train if len(by_bag[frozenset(Counter(e.tokens).items())]) > 1)
    assert in_twins >= 0.5 * len(splits.train)


def test_no_leakage_between_splits(splits):
    train = {e.tokens for e in splits.train}
    test = {e.tokens for e in splits.test}
    twins = {e.tokens for pair in splits.twins for e in pair}
    assert not train & test
    assert not train & twins
    assert not test & twins
    assert len(train) == len(splits.train)  # no duplicates either


def test_chapter_emails_are_sentences_of_the_generator_kept_out_of_every_split(splits):
    everything = {e.tokens for e in splits.train + splits.test} | {e.tokens for p in splits.twins for e in p}
    (first, first_label), (second, second_label) = CHAPTER_EMAILS
    assert (first_label, second_label) == ("missing_item", "lost_parcel")
    for text, _ in CHAPTER_EMAILS:
        assert tuple(tokenize(text)) not in everything
    # the generator's language holds them: the bare twin template with the chapter's relative clauses
    template = emails.NOUN_TWIN_TEMPLATES[0]
    assert tokenize(template.format(dp="the", dq="the", F="parcel", P="charger " + " ".join(emails.ITEM_TAIL))
                    + " .") == tokenize(first)
    assert tokenize(template.format(dp="the", dq="the", F="charger", P="parcel " + " ".join(emails.CONTAINER_TAIL))
                    + " .") == tokenize(second)


def test_chapter_words_are_all_in_the_training_vocabulary(splits):
    vocab = Vocab.build(e.tokens for e in splits.train)
    for text, _ in CHAPTER_EMAILS:
        assert vocab.unknown_words(tokenize(text)) == []
    assert len(vocab) < 300


def test_lengths_labels_and_tokens(splits):
    for email in splits.train + splits.test + [e for p in splits.twins for e in p]:
        assert isinstance(email, Email)
        assert emails.MIN_TOKENS <= len(email.tokens) <= emails.MAX_TOKENS
        assert 0 <= email.label < len(LABELS)
        assert list(email.tokens) == tokenize(" ".join(email.tokens))
    lengths = [len(e.tokens) for e in splits.train]
    assert min(lengths) <= 8 and max(lengths) >= 35  # the length really varies


def test_every_label_is_well_represented(splits):
    counts = Counter(e.label for e in splits.train)
    assert set(counts) == set(range(len(LABELS)))
    assert min(counts.values()) >= 0.18 * len(splits.train)
    assert set(TEAMS) == set(LABELS)


def test_twins_cover_several_kinds_of_confusion(splits):
    label_pairs = Counter(frozenset((a.label, b.label)) for a, b in splits.twins)
    assert len(label_pairs) >= 4
    lost, missing = LABELS.index("lost_parcel"), LABELS.index("missing_item")
    assert label_pairs[frozenset((lost, missing))] >= 0.2 * len(splits.twins)  # the chapter's confusion
    with_tail = [a for a, _ in splits.twins if "supposed" in a.tokens]
    assert len(with_tail) >= 20  # the chapter's relative clauses occur among the held-out twins
