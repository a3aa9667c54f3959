"""What every translator shares: the teacher-forced loss and greedy decoding, written once.

A translator (the LSTM encoder-decoders of :mod:`seqviz.models.seq2seq` and the transformer of
:mod:`seqviz.models.transformer_seq2seq`) says only how to read a source and how to take one decoder step:

- ``forward(src, src_lengths, tgt_in)`` -> logits (B, U+1, V), every step at once (teacher forcing);
- ``start(src, src_lengths)`` -> the decoder's state after reading the source;
- ``step(y_prev, state)`` -> (logits (B, V), new state, this step's attention details or None);

and, for seqviz.analysis.explain, ``embed_source`` (the source word vectors e_j) and ``teacher_forced`` (the
logits and the attention weights, from given word vectors and with the weights replaced if asked), from which
this class gives ``target_log_probs``: the explanation interface the email classifiers share.
A ``mix`` (seqviz.models.attention.Mix) replaces the attention weights for one call (``start(..., mix=mix)``
and ``teacher_forced``); it is an argument, never kept on the model, and None leaves every number as it was.

From these, this class gives ``loss(batch)``, ``greedy``, ``translate``, ``translate_many`` (many sentences
in one batch) and the one decode-length rule:
a sentence of T source tokens is decoded to at most :func:`seqviz.limits.output_limit` (T) words.

Batches (the contract with seqviz.train): {"src": (B, T) long padded with <pad>=0, "src_lengths": (B,),
"tgt": (B, U+2) long = <bos> y_1 .. y_U <eos> then <pad>}.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from seqviz.limits import output_limit
from seqviz.models.attention import Mix
from seqviz.models.common import BOS_ID, EOS_ID, PAD_ID


def teacher_forced_loss(logits: torch.Tensor, tgt: torch.Tensor, label_smoothing: float = 0.0) -> torch.Tensor:
    """Mean cross-entropy of y_t given y_<t and the source, <pad> ignored.

    ``tgt`` (B, U+2) is <bos> y_1 .. y_U <eos> <pad>..., ``logits`` (B, U+1, V) predict tgt[:, 1:]."""
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt[:, 1:].reshape(-1), ignore_index=PAD_ID,
                           label_smoothing=label_smoothing)


@dataclass
class DecoderStep:
    """One decoder step of a translator (``decode_step``, seqviz.analysis.decoding): tensors of this call only."""

    log_probs: torch.Tensor  # (B, V) log p(y_t = w | y_<t, x) for every target word w
    state: Any  # the decoder's state after the step: what the next decode_step continues from
    weights: torch.Tensor | None  # (B, T) the attention weights that built this step's context (None: no attention)
    hidden: torch.Tensor  # (B, H) the decoder state the output layer read: s_t, or the transformer's last layer


class Translator(nn.Module):
    """Loss, greedy decoding and translate() for any model with ``forward``, ``start`` and ``step``."""

    has_attention: ClassVar[bool] = True  # False only for the bottleneck: it has no alignment to show

    def start(self, src: torch.Tensor, src_lengths: torch.Tensor) -> Any:
        raise NotImplementedError

    def step(self, y_prev: torch.Tensor, state: Any) -> tuple[torch.Tensor, Any, Any]:
        raise NotImplementedError

    def embed_source(self, src: torch.Tensor) -> torch.Tensor:
        """The word vectors e_j (B, T, E) the encoder looks up for ``src`` (B, T): what ``embedded`` replaces."""
        raise NotImplementedError

    def teacher_forced(
        self,
        src: torch.Tensor,
        src_lengths: torch.Tensor,
        tgt_in: torch.Tensor,
        mix: Mix | None = None,
        embedded: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Teacher forcing on tgt_in (B, U) = <bos> y_1 ... -> logits (B, U, V) and the attention weights α
        (B, U, T) the alignment shows (None for the bottleneck), as at inference (no position shift).

        ``mix`` replaces the weights (every step's, every cross-attention's); ``embedded`` (B, T, E) the source
        word vectors (None: ``embed_source(src)``). Both for this call only."""
        raise NotImplementedError

    def target_log_probs(
        self,
        src: torch.Tensor,
        src_lengths: torch.Tensor,
        targets: torch.Tensor,
        embedded: torch.Tensor | None = None,
        mix: Mix | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """log p(y_t | y_<t, x) (B, U) of given outputs ``targets`` (B, U) = y_1 .. y_U (padded with <pad>; the
        rows past a sentence's end read whatever follows it), teacher-forced on them, and the attention weights α
        (B, U, T) (None for the bottleneck): the explanation interface (seqviz.analysis.explain), the email
        classifiers' too (seqviz.models.classifiers.base).

        ``embedded`` (B, T, E) replaces the source word vectors, ``mix`` the attention weights; both for this call
        only."""
        bos = torch.full((targets.size(0), 1), BOS_ID, dtype=targets.dtype, device=targets.device)
        tgt_in = torch.cat([bos, targets[:, :-1]], dim=1)  # (B, U): <bos> y_1 .. y_{U-1}
        logits, weights = self.teacher_forced(src, src_lengths, tgt_in, mix=mix, embedded=embedded)  # (B, U, V)
        return logits.log_softmax(dim=-1).gather(-1, targets[..., None])[..., 0], weights  # (B, U), (B, U, T)

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Mean cross-entropy of y_t given y_<t and the source (teacher forcing), <pad> ignored."""
        tgt = batch["tgt"]
        logits = self(batch["src"], batch["src_lengths"], tgt[:, :-1])  # (B, U+1, V)
        return teacher_forced_loss(logits, tgt, self.config.label_smoothing)

    def greedy(
        self,
        src: torch.Tensor,
        src_lengths: torch.Tensor,
        max_len: int | None = None,
        record: bool = False,
        mix: Mix | None = None,
    ) -> tuple[list[list[int]], list[Any]]:
        """Greedy decoding: each step writes its most likely word, until <eos> or the length limit.

        Sentence b stops at <eos> or after ``max_len`` words (None: ``output_limit(src_lengths[b])``).
        Returns the outputs (ids, no <bos>/<eos>) and, with ``record``, each step's attention details.
        ``mix`` replaces the attention weights of every step (this call only; see the module doc).
        """
        lengths = [int(n) for n in src_lengths.tolist()]
        limits = [output_limit(n) if max_len is None else max(0, int(max_len)) for n in lengths]
        outputs: list[list[int]] = [[] for _ in lengths]
        done = [limit == 0 for limit in limits]
        records: list[Any] = []
        state = self.start(src, src_lengths) if mix is None else self.start(src, src_lengths, mix=mix)
        y = torch.full((len(lengths),), BOS_ID, dtype=torch.long, device=src.device)  # (B,)
        while not all(done):
            logits, state, details = self.step(y, state)  # (B, V)
            y = logits.argmax(dim=-1)  # (B,)
            if record:
                records.append(details)
            for b, word in enumerate(y.tolist()):
                if done[b]:
                    continue
                if word == EOS_ID:
                    done[b] = True
                else:
                    outputs[b].append(word)
                    done[b] = len(outputs[b]) >= limits[b]
        return outputs, records

    def translate(
        self, src: torch.Tensor, src_lengths: torch.Tensor, max_len: int | None = None, mix: Mix | None = None
    ) -> list[list[int]]:
        """Greedy translations of a batch (ids without <bos>/<eos>); ``max_len`` and ``mix`` as in :meth:`greedy`."""
        with torch.inference_mode():
            outputs, _ = self.greedy(src, src_lengths, max_len, mix=mix)
        return outputs

    def translate_many(self, sources: Sequence[Sequence[int]], max_len: int | None = None) -> list[list[int]]:
        """Greedy translations of many sentences (lists of source ids) in one padded batch.

        One encoder pass and one decoder step per output position for all of them, until every sentence
        has written <eos> or reached its own length limit (``output_limit`` of its source length, or
        ``max_len``): the same words as translating each sentence alone (tests/unit/test_batch_decode.py),
        for the cost of about one."""
        sources = [[int(i) for i in ids] for ids in sources]
        if not sources:
            return []
        if any(not ids for ids in sources):
            raise ValueError("The sentence has no words to translate: type at least one word.")
        lengths = torch.tensor([len(ids) for ids in sources])  # (B,)
        src = torch.full((len(sources), int(lengths.max())), PAD_ID, dtype=torch.long)  # (B, T)
        for row, ids in enumerate(sources):
            src[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
        return self.translate(src, lengths, max_len)

    @staticmethod
    def _one_source(src_ids) -> tuple[torch.Tensor, torch.Tensor]:
        src_ids = [int(i) for i in src_ids]
        if not src_ids:
            raise ValueError("The sentence has no words to translate: type at least one word.")
        return torch.tensor([src_ids], dtype=torch.long), torch.tensor([len(src_ids)])  # (1, T), (1,)
