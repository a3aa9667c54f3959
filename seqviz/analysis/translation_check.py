"""A translator's output against the grammar's reference translation, word by word."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Checked:
    output: list[str]
    reference: list[str] | None  # None when the sentence is outside the grammar's language
    matches: list[bool]  # per output position: the same word as the reference at that position

    @property
    def exact(self) -> bool | None:
        return None if self.reference is None else self.output == self.reference

    @property
    def token_accuracy(self) -> float | None:
        """Positions that agree over the longer of the two (a length mismatch costs), as in the zoo's metrics."""
        if self.reference is None:
            return None
        longest = max(len(self.output), len(self.reference), 1)
        return sum(self.matches) / longest


def check(output: Sequence[str], reference: Sequence[str] | None) -> Checked:
    output = list(output)
    if reference is None:
        return Checked(output, None, [True] * len(output))
    reference = list(reference)
    matches = [i < len(reference) and word == reference[i] for i, word in enumerate(output)]
    return Checked(output, reference, matches)


def translate_all(checkpoint, sentences: Sequence[Sequence[str]]) -> list[list[str]]:
    """Greedy translations of many tokenized sentences by one translator checkpoint, all in one batch.

    Each sentence is read with the checkpoint's own vocabularies and decoded to at most
    ``seqviz.limits.output_limit`` of its length: the same words as
    ``seqviz.tracing.trace(checkpoint, "translator", tokens)`` gives one sentence at a time
    (tests/unit/test_batch_decode.py), with one encoder pass and one decoder step per output word for all of
    them together."""
    src, tgt = checkpoint.vocabularies["src"], checkpoint.vocabularies["tgt"]
    outputs = checkpoint.model.translate_many([src.encode(list(tokens)) for tokens in sentences])
    return [list(tgt.decode(ids)) for ids in outputs]


def chapter_table(
    translators: Sequence[tuple[str, object]], pairs: Sequence[tuple[str, str]] | None = None
) -> list[dict]:
    """The chapter-pairs table of /encoder-decoder: one row per (English, French) pair, one column per
    ``(label, checkpoint)`` translator ("✓" when its output is exactly the French, else "✗ " and its output),
    then the reference. Each translator decodes all the sentences in one batch (:func:`translate_all`)."""
    if pairs is None:
        from seqviz.data.translation import CHAPTER_PAIRS

        pairs = CHAPTER_PAIRS
    sources = [english.split() for english, _ in pairs]
    outputs = {label: translate_all(checkpoint, sources) for label, checkpoint in translators}
    rows = []
    for i, (english, french) in enumerate(pairs):
        row = {"English": english}
        for label, _ in translators:
            out = outputs[label][i]
            row[label] = "✓" if out == french.split() else "✗ " + " ".join(out)
        row["reference French"] = french
        rows.append(row)
    return rows
