"""The tokenizer, the input limits and the Vocab."""

import re

import pytest

from seqviz.text import BOS, EOS, MAX_CHARS, MAX_TOKENS, PAD, SPECIALS, UNK, Prepared, Vocab, prepare, tokenize


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("Where is my parcel?", ["where", "is", "my", "parcel", "?"]),
        (
            "The parcel arrived, but never the charger.",
            ["the", "parcel", "arrived", ",", "but", "never", "the", "charger", "."],
        ),
        ("n'est", ["n'", "est"]),
        ("N'EST jamais", ["n'", "est", "jamais"]),
        ("l'article l'étiquette", ["l'", "article", "l'", "étiquette"]),
        ("qu'il d'un j'ai s'il c'est", ["qu'", "il", "d'", "un", "j'", "ai", "s'", "il", "c'", "est"]),
        ("l’étiquette n’est", ["l'", "étiquette", "n'", "est"]),  # typographic apostrophe
        (
            "mon téléphone rouge n' est jamais arrivé .",
            ["mon", "téléphone", "rouge", "n'", "est", "jamais", "arrivé", "."],
        ),
        ("la boîte noire est arrivée", ["la", "boîte", "noire", "est", "arrivée"]),
        ("où est ma commande ?", ["où", "est", "ma", "commande", "?"]),
        ("I don't know", ["i", "don't", "know"]),  # English contractions stay whole
        ("aujourd'hui", ["aujourd'hui"]),
        ("a;b:c!d", ["a", ";", "b", ":", "c", "!", "d"]),
        ('"Hello" (order 4412)', ["hello", "(", "order", "4412", ")"]),
        ("  ", []),
        ("", []),
    ],
)
def test_tokenize(text, tokens):
    assert tokenize(text) == tokens


def test_tokenize_round_trips_space_joined_tokens():
    tokens = ["le", "colis", "n'", "est", "jamais", "arrivé", ",", "mais", "l'", "étiquette", "?"]
    assert tokenize(" ".join(tokens)) == tokens


def test_tokenize_keeps_composed_and_decomposed_accents_equal():
    assert tokenize("arrive\u0301e") == tokenize("arrivée") == ["arrivée"]


def test_prepare_short_sentence_is_untouched():
    prepared = prepare("Where is my order?")
    assert prepared == Prepared(tokens=["where", "is", "my", "order", "?"], dropped=0)
    assert prepared.message is None


def test_prepare_cuts_at_max_tokens_with_a_message():
    prepared = prepare(" ".join(["word"] * (MAX_TOKENS + 7)))
    assert len(prepared.tokens) == MAX_TOKENS
    assert prepared.dropped == 7
    assert str(MAX_TOKENS) in prepared.message and "7" in prepared.message


def test_prepare_cuts_at_max_chars_with_a_message():
    prepared = prepare("a" * (MAX_CHARS + 50))
    assert prepared.tokens == ["a" * MAX_CHARS]
    assert prepared.dropped_chars == 50
    assert str(MAX_CHARS) in prepared.message


def test_prepare_counts_punctuation_as_tokens():
    prepared = prepare("! " * 100)
    assert len(prepared.tokens) == MAX_TOKENS and prepared.dropped == 100 - MAX_TOKENS


def test_vocab_build_is_deterministic_and_ordered():
    sentences = [["b", "a", "c"], ["a", "c"], ["a"]]
    vocab = Vocab.build(sentences)
    assert vocab.itos == [PAD, UNK, BOS, EOS, "a", "c", "b"]  # specials, then (-count, token)
    assert Vocab.build(list(reversed(sentences))) == vocab
    assert [vocab.stoi[s] for s in (PAD, UNK, BOS, EOS)] == [0, 1, 2, 3]


def test_vocab_encode_decode_and_unknown_words():
    vocab = Vocab.build([["the", "parcel", "arrived"]])
    ids = vocab.encode(["the", "parcel", "vanished", "arrived"])
    assert ids[2] == vocab.stoi[UNK] == 1
    assert vocab.decode(ids) == ["the", "parcel", UNK, "arrived"]
    assert vocab.unknown_words(["the", "zebra", "parcel", "zebra"]) == ["zebra", "zebra"]
    assert "parcel" in vocab and "zebra" not in vocab
    assert len(vocab) == 7
    with pytest.raises(ValueError):
        vocab.decode([len(vocab)])


def test_vocab_json_round_trip():
    vocab = Vocab.build([["où", "est", "ma", "commande", "?"]])
    assert Vocab.from_json(vocab.to_json()) == vocab
    assert Vocab.from_json(vocab.to_json()).stoi == vocab.stoi


@pytest.mark.parametrize(
    "items",
    [
        "not a list",
        [PAD, UNK, BOS],  # specials incomplete
        ["a", PAD, UNK, BOS, EOS],  # specials not first
        [PAD, UNK, BOS, EOS, "a", "a"],  # duplicate
        [PAD, UNK, BOS, EOS, ""],  # empty token
        [PAD, UNK, BOS, EOS, 3],  # not a string
        None,
    ],
)
def test_vocab_from_json_rejects_bad_items(items):
    with pytest.raises(ValueError):
        Vocab.from_json(items)


def test_vocab_build_drops_specials_in_the_text_and_breaks_ties_alphabetically():
    """(Two mutants scripts/mutation found surviving: a special kept from the text, ties in first-seen order.)"""
    built = Vocab.build([["b", "a", "<unk>", "c", "<pad>"], ["c"]])
    assert built.itos == [PAD, UNK, BOS, EOS, "c", "a", "b"]  # c twice first; a and b once each, alphabetically


# ---- mutants scripts/mutation found surviving (issue 28): messages word for word, hashing, equality ----------------


def _exactly(message: str) -> str:
    return f"^{re.escape(message)}$"


def test_prepare_of_empty_or_missing_text_reads_nothing():
    """(prepare: ``text or "XXXX"``.)"""
    for empty in ("", None):
        prepared = prepare(empty)
        assert (prepared.tokens, prepared.dropped, prepared.dropped_chars, prepared.message) == ([], 0, 0, None)


def test_vocab_messages_say_what_is_wrong_word_for_word():
    """(Vocab._validate and Vocab.from_json: messages changed, the first five words shown, the duplicates.)"""
    with pytest.raises(ValueError, match=_exactly(
            "a vocabulary must start with ['<pad>', '<unk>', '<bos>', '<eos>'], got ['a', 'b', 'c', 'd']")):
        Vocab(["a", "b", "c", "d", "e", "f"])
    for bad in ([*SPECIALS, ""], [*SPECIALS, 3]):  # 3 is truthy: "isinstance(token, str) or token" lets it in
        with pytest.raises(ValueError, match=_exactly("every vocabulary entry must be a non-empty string")):
            Vocab(bad)
    with pytest.raises(ValueError, match=_exactly("the vocabulary repeats ['a']")):
        Vocab([*SPECIALS, "a", "b", "a"])  # a twice, b once
    repeated = [f"w{i}" for i in range(7)]
    with pytest.raises(ValueError, match=_exactly("the vocabulary repeats ['w0', 'w1', 'w2', 'w3', 'w4']")):
        Vocab([*SPECIALS, *repeated, *repeated])
    for bad in ("not a list", [*SPECIALS, 3], {"<pad>": 0}):
        with pytest.raises(ValueError, match=_exactly("a vocabulary must be a JSON list of strings")):
            Vocab.from_json(bad)


def test_equal_vocabularies_hash_alike_and_different_ones_apart():
    """(Vocab.__hash__: ``hash(None)`` for every vocabulary; no test hashed one.)"""
    words = [*SPECIALS, "a", "b"]
    assert hash(Vocab(words)) == hash(Vocab(list(words)))
    assert hash(Vocab(words)) != hash(Vocab([*SPECIALS, "b", "a"]))
    assert len({Vocab(words), Vocab(list(words)), Vocab([*SPECIALS, "c"])}) == 2


def test_a_vocab_equals_no_other_kind_of_value():
    """(Vocab.__eq__: ``or`` for ``and`` compares another value's itos, which a list has not.)"""
    words = [*SPECIALS, "a"]
    assert Vocab(words) != words and Vocab(words) != None  # noqa: E711 (the == operator itself is under test)
    assert Vocab(words) == Vocab(list(words))
