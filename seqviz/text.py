"""Text in, tokens out: one tokenizer for English and French, one Vocab, one place where input is bounded.

Everything a visitor types goes through :func:`prepare` (cut to ``MAX_CHARS`` characters, tokenized, cut to
``MAX_TOKENS`` tokens, with a message when something was cut). Every generated data set goes through
:func:`tokenize`, so the models see exactly the tokens a visitor's sentence becomes.

A word the model never saw is encoded as ``<unk>``; :meth:`Vocab.unknown_words` names those words so a page
can count and show them instead of dropping them silently.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from seqviz.limits import MAX_CHARS, MAX_TOKENS  # every input bound lives in seqviz.limits

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<bos>", "<eos>"
SPECIALS: tuple[str, ...] = (PAD, UNK, BOS, EOS)  # ids 0, 1, 2, 3 in every Vocab

# French elided words that stand alone as a token: "n'est" -> "n'" "est", "qu'il" -> "qu'" "il".
ELISIONS: tuple[str, ...] = (
    "jusqu'", "lorsqu'", "puisqu'", "qu'", "n'", "l'", "d'", "j'", "s'", "c'", "m'", "t'",
)

# Apostrophes people type, all read as the plain one.
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u00b4": "'", "`": "'"})
# Double quotes only delimit a quotation; they carry no word and are removed.
_QUOTES = str.maketrans({c: " " for c in '"\u201c\u201d\u201e\u00ab\u00bb'})
# An elided French word at the start of a word is a token of its own ("n'est" and "n' est" -> "n'" "est");
# a word is letters and digits with apostrophes or hyphens inside ("don't", "e-mail"); anything else that is
# not a space is a token of its own character (, . ? ! ; : and any other symbol).
_ELISION = "|".join(re.escape(e) for e in ELISIONS)
_TOKEN = re.compile(rf"(?<![^\W_])(?:{_ELISION})|[^\W_]+(?:['\-][^\W_]+)*|[^\w\s]|_")


def tokenize(text: str) -> list[str]:
    """Lowercase ``text`` and split it into words and punctuation marks.

    - ``"Where is my parcel?"`` -> ``["where", "is", "my", "parcel", "?"]``
    - French elisions split after the apostrophe: ``"n'est"`` -> ``["n'", "est"]``,
      ``"l'étiquette"`` -> ``["l'", "étiquette"]``; accented letters are kept; ``’`` reads as ``'``.
    - English contractions stay whole (``"don't"``); double quotes are dropped; every other symbol is a token.
    """
    text = unicodedata.normalize("NFC", text).translate(_APOSTROPHES).translate(_QUOTES).lower()
    return _TOKEN.findall(text)


@dataclass(frozen=True)
class Prepared:
    """What a visitor's sentence becomes: the tokens the models read, and what was cut to get there."""

    tokens: list[str]  # at most MAX_TOKENS tokens
    dropped: int  # tokens cut by MAX_TOKENS
    dropped_chars: int = 0  # characters cut by MAX_CHARS before tokenizing

    @property
    def message(self) -> str | None:
        """A sentence a person understands when something was cut, else None."""
        parts = []
        if self.dropped_chars:
            parts.append(
                f"Only the first {MAX_CHARS} characters were read ({self.dropped_chars} more were left out)."
            )
        if self.dropped:
            parts.append(
                f"The models read at most {MAX_TOKENS} tokens (words and punctuation marks): "
                f"the last {self.dropped} were left out."
            )
        return " ".join(parts) or None


def prepare(text: str) -> Prepared:
    """The single entry point for visitor text: cut to MAX_CHARS, tokenize, cut to MAX_TOKENS."""
    text = text or ""
    dropped_chars = max(0, len(text) - MAX_CHARS)
    tokens = tokenize(text[:MAX_CHARS])
    dropped = max(0, len(tokens) - MAX_TOKENS)
    return Prepared(tokens=tokens[:MAX_TOKENS], dropped=dropped, dropped_chars=dropped_chars)


class Vocab:
    """Token <-> id. Ids 0..3 are ``<pad> <unk> <bos> <eos>``; the rest are ordered by (-count, token)."""

    def __init__(self, itos: Sequence[str]):
        self.itos: list[str] = list(itos)
        self.stoi: dict[str, int] = {token: i for i, token in enumerate(self.itos)}
        self._validate()

    def _validate(self) -> None:
        if tuple(self.itos[: len(SPECIALS)]) != SPECIALS:
            raise ValueError(f"a vocabulary must start with {list(SPECIALS)}, got {self.itos[:4]}")
        if not all(isinstance(token, str) and token for token in self.itos):
            raise ValueError("every vocabulary entry must be a non-empty string")
        if len(self.stoi) != len(self.itos):
            duplicates = sorted(t for t, n in Counter(self.itos).items() if n > 1)
            raise ValueError(f"the vocabulary repeats {duplicates[:5]}")

    @classmethod
    def build(cls, sentences: Iterable[Sequence[str]]) -> Vocab:
        """Every token of ``sentences``, after the specials, most frequent first, ties alphabetical."""
        counts = Counter(token for sentence in sentences for token in sentence)
        for special in SPECIALS:
            counts.pop(special, None)
        ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        return cls([*SPECIALS, *(token for token, _ in ordered)])

    @property
    def pad_id(self) -> int:
        return 0

    @property
    def unk_id(self) -> int:
        return 1

    @property
    def bos_id(self) -> int:
        return 2

    @property
    def eos_id(self) -> int:
        return 3

    def encode(self, tokens: Iterable[str]) -> list[int]:
        """Ids of ``tokens``; a token the vocabulary lacks becomes the id of ``<unk>``."""
        return [self.stoi.get(token, 1) for token in tokens]

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Tokens of ``ids``; raises ValueError for an id outside the vocabulary."""
        out = []
        for i in ids:
            i = int(i)
            if not 0 <= i < len(self.itos):
                raise ValueError(f"id {i} is outside a vocabulary of {len(self.itos)} tokens")
            out.append(self.itos[i])
        return out

    def unknown_words(self, tokens: Iterable[str]) -> list[str]:
        """The tokens that will be read as ``<unk>``, in order, each time they occur."""
        return [token for token in tokens if token not in self.stoi]

    def to_json(self) -> list[str]:
        return list(self.itos)

    @classmethod
    def from_json(cls, items: object) -> Vocab:
        """A Vocab from :meth:`to_json`'s list; ValueError if ``items`` is not a valid vocabulary."""
        if not isinstance(items, list) or not all(isinstance(token, str) for token in items):
            raise ValueError("a vocabulary must be a JSON list of strings")
        return cls(items)

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: object) -> bool:
        return token in self.stoi

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocab) and self.itos == other.itos

    def __hash__(self) -> int:
        return hash(tuple(self.itos))

    def __repr__(self) -> str:
        return f"Vocab({len(self.itos)} tokens)"
