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
