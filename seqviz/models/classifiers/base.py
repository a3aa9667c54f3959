"""What every torch email classifier shares (:class:`ClassifierBase`), and the surface the rest of seqviz reads:

- ``embed(ids)`` -> ``(B, T, E)`` word vectors x_t, and ``forward_from_embeddings(emb, lengths)`` -> logits,
  so autograd can give d(score)/d(x_t) for every position (the vanishing-gradients page);
- ``forward(ids, lengths)`` -> ``(B, C)`` logits; ``loss(batch)`` -> mean cross-entropy;
- ``predict_proba(ids, lengths)`` -> numpy ``(B, C)``;
- ``trace(tokens, vocab)`` -> :class:`seqviz.traces.ClassifierTrace`;
- the explanation interface (seqviz.analysis.explain), the translators' too: ``embed_source(ids)`` and
  ``target_log_probs(src, lengths, targets, embedded=None, mix=None)``, from ``decide``, which every classifier
  that attends overrides to return its weights and take a mix.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from seqviz.models.attention import Mix
from seqviz.models.common import one_sentence
from seqviz.traces import ClassifierTrace


def as_long_tensor(values) -> torch.Tensor:
    return values.long() if isinstance(values, torch.Tensor) else torch.as_tensor(np.asarray(values), dtype=torch.long)


def real_words(lengths: torch.Tensor, length: int) -> torch.Tensor:
    """(B, T) True on each sentence's real words, False on the padding after them."""
    return torch.arange(length, device=lengths.device)[None, :] < lengths[:, None]


class ClassifierBase(nn.Module):
    """What every torch classifier shares: loss, probabilities and the sentence-level trace."""

    labels: tuple[str, ...]
    family: ClassVar[str] = ""  # the name in seqviz.models.FAMILIES
    has_attention: ClassVar[bool] = False  # whether decide() returns attention weights (and a mix may replace them)

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def forward_from_embeddings(self, emb: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def decide(
        self, emb: torch.Tensor, lengths: torch.Tensor, mix: Mix | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Logits (B, C) from word vectors (B, T, E), and the weight a_j (B, T) the decision's one vector gives
        each word (rows add to 1, 0 on padding; None for a classifier that does not attend). ``mix`` replaces the
        attention weights for this call (seqviz.models.attention.Mix)."""
        if mix is not None:
            raise ValueError(f"a {type(self).__name__} does not attend: it has no weights to replace")
        return self.forward_from_embeddings(emb, lengths), None

    def embed_source(self, ids: torch.Tensor) -> torch.Tensor:
        """The input word vectors e_j (B, T, E), as the explanation interface names them (the translators' name):
        :meth:`embed`."""
        return self.embed(ids)

    def target_log_probs(
        self, src: torch.Tensor, src_lengths: torch.Tensor, targets: torch.Tensor,
        embedded: torch.Tensor | None = None, mix: Mix | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """log p(c | x) (B, K) of the classes ``targets`` (B, K), and the attention a (B, K, T) (one row, the same
        for each class; None for a classifier that does not attend): the explanation interface, as the translators'
        :meth:`seqviz.models.translator.Translator.target_log_probs`.

        ``embedded`` (B, T, E) replaces the word vectors of ``src`` (B, T), ``mix`` the attention weights; both for
        this call only."""
        logits, attention = self.decide(self.embed(src) if embedded is None else embedded, src_lengths, mix)
        log_p = logits.log_softmax(dim=-1).gather(-1, targets.to(logits.device))  # (B, K)
        if attention is None:
            return log_p, None
        return log_p, attention[:, None, :].expand(-1, targets.shape[1], -1)  # (B, K, T)

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Class scores (logits) ``(B, C)`` for word ids ``(B, T)`` and true lengths ``(B,)``."""
        return self.forward_from_embeddings(self.embed(ids), lengths)

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Mean cross-entropy of the batch's labels."""
        logits = self(batch["ids"], batch["lengths"])  # (B, C)
        return F.cross_entropy(logits, batch["labels"])

    def predict_proba(self, ids, lengths) -> np.ndarray:
        """Softmax probabilities ``(B, C)`` as numpy, computed without autograd."""
        with torch.inference_mode():
            logits = self(as_long_tensor(ids), as_long_tensor(lengths))
            return torch.softmax(logits.float(), dim=-1).numpy()

    def trace(self, tokens, vocab) -> ClassifierTrace:
        """The model's reading of one tokenized sentence: probabilities and, for recurrent models, h_t."""
        ids, seen = one_sentence(tokens, vocab)
        with torch.inference_mode():
            ids_t = torch.tensor([ids])  # (1, T)
            lengths = torch.tensor([len(ids)])
            emb = self.embed(ids_t)  # (1, T, E)
            probs = torch.softmax(self.forward_from_embeddings(emb, lengths), dim=-1)[0]  # (C,)
            hidden = self._hidden_for_trace(emb, lengths)
        return ClassifierTrace(tokens=seen, labels=tuple(self.labels), probs=probs.numpy().copy(), hidden=hidden)

    def _hidden_for_trace(self, emb: torch.Tensor, lengths: torch.Tensor) -> np.ndarray | None:
        return None


