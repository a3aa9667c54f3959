"""What "it" points back to: where one word attends in every layer and head of a transformer classifier, beside
what the decision rests on (:mod:`.importance`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from seqviz.analysis.explain.importance import ClassificationExplanation, explain_classification
from seqviz.text import tokenize


@dataclass(frozen=True)
class PronounAttention:
    """Where one word (its last occurrence) attends in every layer and head, beside the decision's measures."""

    tokens: list[str]  # the email as the model read it
    word: str  # the word asked about, as read
    position: int  # its last occurrence, an index into tokens
    weights: np.ndarray  # (L, N, T) what that word pays to every word, per layer and head; each row adds to 1
    decision: ClassificationExplanation  # ŷ, p(ŷ) and every word's measures for it

    @property
    def strongest(self) -> np.ndarray:
        """(L, N) the index of the word each layer's head pays most to."""
        return self.weights.argmax(axis=-1)

    @property
    def last_layer_words(self) -> list[str]:
        """The word each head of the last layer pays most to."""
        return [self.tokens[j] for j in self.strongest[-1]]

    @property
    def costliest(self) -> str:
        """The word whose removal costs the decision most (the largest leave-one-out)."""
        return self.decision.tokens[int(np.argmax(self.decision.leave_one_out))]


def pronoun_attention(model, vocab, tokens, word: str = "it") -> PronounAttention | None:
    """The classifier's attention from ``word``'s last occurrence to every word, every layer and head
    (``attention_trace``'s row for it), and :func:`~.importance.explain_classification` of the email.

    None when the word is not among the tokens as the model read them (an unknown word reads as <unk>);
    ValueError for a model without self-attention in layers and heads (no ``attention_trace``).
    """
    if not hasattr(model, "attention_trace"):
        raise ValueError(f"the attention of one word to every word, per layer and head, is a transformer's, not a "
                         f"{type(model).__name__}'s")
    asked = tokenize(str(word))
    if len(asked) != 1:
        raise ValueError(f"ask about one word, not {str(word)!r:.40}")
    decision = explain_classification(model, vocab, tokens)
    where = [j for j, t in enumerate(decision.tokens) if t == asked[0]]
    if not where:
        return None
    trace = model.attention_trace(tokens, vocab)  # (L, N, T, T)
    return PronounAttention(tokens=trace.tokens, word=asked[0], position=where[-1],
                            weights=trace.weights[:, :, where[-1], :].copy(), decision=decision)
