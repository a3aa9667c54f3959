"""LSTM encoder-decoder translators: the one-vector bottleneck and the attention that removed it.

Three kinds share one encoder, a (bidirectional) LSTM over the source words:

    h_j = [→h_j ; ←h_j]                      encoder state of source word j, (2H,) or (H,)

and one decoder LSTM that writes the French one word at a time, starting from a state
built from the encoder's final memory z = [→h_T; ←h_1] (s_0 = tanh(W_init z)). They differ only
in what the decoder may look at:

- ``plain`` (Sutskever et al. 2014; Cho et al. 2014): no attention. Every step sees the same
  fixed summary z = final encoder memory: s_t = LSTM([y_{t-1}; z], s_{t-1}). The whole sentence
  has to squeeze through z: the chapter's bottleneck.
- ``additive`` (Bahdanau et al. 2014): before writing word t, the previous decoder state
  s_{t-1} scores every encoder state, and the decoder receives a fresh context vector:

      score_j = vᵀ tanh(W s_{t-1} + U h_j)    (1) score every source word
      α = softmax(score)                      (2) over the real (unpadded) words only
      c_t = Σ_j α_j h_j                       (3) weighted average of encoder states
      s_t = LSTMCell([y_{t-1}; c_t], s_{t-1})

  Decoded step by step (a Python loop over nn.LSTMCell), as in the paper.
- ``dot`` (Luong et al. 2015): attention after the decoder step, so teacher-forced training runs
  every step at once: s_t = LSTM(y_{t-1}, s_{t-1}) for all t, then

      score_j = s_t · (W_a h_j)  ("general")  or  s_t · h_j  ("dot")
      α = softmax(score),  c_t = Σ_j α_j h_j,  õ_t = tanh(W_c [s_t; c_t])

The output distribution is softmax(W_y o_t) with o_t = tanh(W_r [s_t; c_t; y_{t-1}]) for
plain (c_t = z) and additive, and õ_t for dot.

Batches (the contract with seqviz.train): {"src": (B, T) long padded with <pad>=0,
"src_lengths": (B,), "tgt": (B, U+2) long = <bos> ... <eos> then <pad>}.

Recommended training (RECOMMENDED_TRAINING below; the default config: emb 64, H = 64 per direction,
bidirectional encoder, attn 64, no dropout): 3000 steps of batch 64, AdamW lr 3e-3 (no weight decay),
100 warm-up steps then cosine to 0.1·lr, gradient norm clipped to 1.0; the same for all three kinds.
Measured with seqviz.train on the generated task (seed 0; 20 000 training pairs of 3..30 tokens, 150
held-out pairs per length bucket), exact match % / token accuracy % per source length:

    source tokens   3-9      10-14    15-19    20-24    25-30    31-35   36-40   41-45
    plain         100/100   97/99    93/99    68/90    39/75     5/54    0/40    0/33
    additive      100/100  100/100  100/100  100/100  100/100   93/97   75/88   51/74
    dot           100/100  100/100  100/100  100/100   98/99    91/96   75/91   47/76

    exact match   <=30 tokens  >=25 tokens   training CPU seconds (1 thread, 3000 steps)
    plain            79.3         11.0          ~160
    additive        100.0         80.0          ~380
    dot              99.6         77.7          ~170

All six chapter pairs come out exactly from all three (plain too: they are short). Lengths above 30 were
never seen in training. CPU seconds are process time with one thread (wall time on the shared 2-core
machine was about twice that).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from seqviz.traces import AttentionStep, TranslationTrace

# Special ids fixed by the contract of seqviz.text.Vocab: <pad>=0, <unk>=1, <bos>=2, <eos>=3.
PAD_ID, BOS_ID, EOS_ID = 0, 2, 3


def teacher_forced_loss(logits: torch.Tensor, tgt: torch.Tensor, label_smoothing: float = 0.0) -> torch.Tensor:
    """Mean cross-entropy of y_t given y_<t and the source, <pad> ignored.

    ``tgt`` (B, U+2) is <bos> y_1 .. y_U <eos> <pad>..., ``logits`` (B, U+1, V) predict tgt[:, 1:]."""
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt[:, 1:].reshape(-1), ignore_index=PAD_ID,
                           label_smoothing=label_smoothing)


def keep_greedy_step(outputs: list[list[int]], y: torch.Tensor, done: torch.Tensor, max_len: int) -> torch.Tensor:
    """Append this step's words y (B,) to the unfinished outputs (never <eos>, at most max_len each);
    returns the updated "finished" mask (B,)."""
    for b in torch.nonzero(~done & (y != EOS_ID)).flatten().tolist():
        if len(outputs[b]) < max_len:
            outputs[b].append(int(y[b]))
    return done | (y == EOS_ID)

KINDS = ("plain", "additive", "dot")

# Settings for the one training loop (seqviz.train.TrainConfig fields), per kind, for the default config
# below. Plain gets the same budget as additive, so that its fall-off with length is the bottleneck's
# doing, not a smaller training run.
_LSTM_TRAINING: dict[str, Any] = {
    "steps": 3000, "batch_size": 64, "lr": 3e-3, "warmup": 100, "clip": 1.0, "weight_decay": 0.0,
    "schedule": "cosine", "min_lr_ratio": 0.1,
}
RECOMMENDED_TRAINING: dict[str, dict[str, Any]] = {kind: dict(_LSTM_TRAINING) for kind in KINDS}


@dataclass
class Seq2SeqConfig:
    kind: str = "additive"  # "plain" (no attention) | "additive" (Bahdanau) | "dot" (Luong)
    src_vocab_size: int = 64  # English vocabulary, specials included
    tgt_vocab_size: int = 64  # French vocabulary, specials included
    emb_dim: int = 64  # size of a word vector x_t
    hidden: int = 64  # H: units of each LSTM (encoder direction and decoder); z = [→h_T; ←h_1] is 2H
    layers: int = 1  # stacked LSTM layers in encoder and decoder
    dropout: float = 0.0  # on embeddings and before the output layer
    bidirectional: bool = True  # encoder reads both ways: h_j = [→h_j; ←h_j], (2H,)
    attn_dim: int = 64  # additive: size of W s_{t-1} + U h_j before tanh and v
    dot_score: str = "general"  # dot: "general" s_t·(W_a h_j) or "dot" s_t·h_j (needs 2H == H: unidirectional)
    label_smoothing: float = 0.0  # cross-entropy label smoothing used by loss()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, not {self.kind!r}")
        if self.dot_score not in ("general", "dot"):
            raise ValueError(f"dot_score must be 'general' or 'dot', not {self.dot_score!r}")
        if self.kind == "dot" and self.dot_score == "dot" and self.bidirectional:
            raise ValueError("dot_score='dot' compares s_t (H,) with h_j (2H,): use a unidirectional encoder")


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """softmax over the last axis where mask is True; exactly 0 where it is False (padding)."""
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)


class Encoder(nn.Module):
    """Embeds the source words and runs the (bi)LSTM over them, padding excluded (packed)."""

    def __init__(self, config: Seq2SeqConfig) -> None:
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.src_vocab_size, config.emb_dim, padding_idx=PAD_ID)
        self.drop = nn.Dropout(config.dropout)
        self.lstm = nn.LSTM(
            config.emb_dim,
            config.hidden,
            num_layers=config.layers,
            batch_first=True,
            bidirectional=config.bidirectional,
            dropout=config.dropout if config.layers > 1 else 0.0,
        )

    def forward(self, src: torch.Tensor, src_lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Returns every encoder state h_j (B, T, D*H) (zeros on padding) and the final memory (B, D*H)."""
        B, T = src.shape
        x = self.drop(self.embed(src))  # (B, T, E)
        packed = pack_padded_sequence(x, src_lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, (h_n, _) = self.lstm(packed)  # h_n: (layers*D, B, H)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=T)  # (B, T, D*H)
        D = 2 if self.config.bidirectional else 1
        h_last = h_n.view(self.config.layers, D, B, self.config.hidden)[-1]  # (D, B, H)
        final = h_last.transpose(0, 1).reshape(B, D * self.config.hidden)  # (B, D*H): [→h_T; ←h_1]
        return out, final


class AdditiveAttention(nn.Module):
    """score_j = vᵀ tanh(W s_{t-1} + U h_j); α = softmax(score); c_t = Σ_j α_j h_j."""

    def __init__(self, query_dim: int, key_dim: int, attn_dim: int) -> None:
        super().__init__()
        self.W = nn.Linear(query_dim, attn_dim, bias=False)
        self.U = nn.Linear(key_dim, attn_dim, bias=True)
        self.v = nn.Linear(attn_dim, 1, bias=False)

    def forward(
        self, query: torch.Tensor, keys_proj: torch.Tensor, values: torch.Tensor, mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """query (B, H), keys_proj = U h (B, T, A), values h (B, T, D*H), mask (B, T).

        Returns context (B, D*H), weights α (B, T), scores (B, T)."""
        scores = self.v(torch.tanh(self.W(query).unsqueeze(1) + keys_proj)).squeeze(-1)  # (B, T)
        weights = masked_softmax(scores, mask)  # (B, T)
        context = torch.bmm(weights.unsqueeze(1), values).squeeze(1)  # (B, D*H)
        return context, weights, scores


@dataclass
class _Encoded:
    """What the decoder reads from the encoder (per call; never stored on the module)."""

    states: torch.Tensor  # (B, T, D*H) h_j
    final: torch.Tensor  # (B, D*H) the encoder's final memory z
    mask: torch.Tensor  # (B, T) True on real source words
    keys: torch.Tensor | None  # additive: U h_j (B, T, A); dot: W_a h_j or h_j (B, T, H); plain: None


class Seq2Seq(nn.Module):
    """LSTM encoder-decoder; ``config.kind`` picks plain, additive or dot attention (see module doc)."""

    def __init__(self, config: Seq2SeqConfig) -> None:
        super().__init__()
        self.config = config
        H, L = config.hidden, config.layers
        enc_dim = H * (2 if config.bidirectional else 1)
        self.enc_dim = enc_dim
        self.encoder = Encoder(config)
        self.tgt_embed = nn.Embedding(config.tgt_vocab_size, config.emb_dim, padding_idx=PAD_ID)
        self.drop = nn.Dropout(config.dropout)
        # s_0 = tanh(W_init z), m_0 = W_cell z: the decoder starts from the encoder's final memory.
        self.init_h = nn.Linear(enc_dim, L * H)
        self.init_c = nn.Linear(enc_dim, L * H)
        E = config.emb_dim
        if config.kind == "plain":
            self.decoder = nn.LSTM(E + enc_dim, H, num_layers=L, batch_first=True,
                                   dropout=config.dropout if L > 1 else 0.0)
            self.readout = nn.Linear(H + enc_dim + E, H)
        elif config.kind == "additive":
            self.attention = AdditiveAttention(H, enc_dim, config.attn_dim)
            self.cells = nn.ModuleList([nn.LSTMCell(E + enc_dim if i == 0 else H, H) for i in range(L)])
            self.readout = nn.Linear(H + enc_dim + E, H)
        else:  # dot
            self.decoder = nn.LSTM(E, H, num_layers=L, batch_first=True,
                                   dropout=config.dropout if L > 1 else 0.0)
            self.W_a = nn.Linear(enc_dim, H, bias=False) if config.dot_score == "general" else None
            self.readout = nn.Linear(H + enc_dim, H)  # õ_t = tanh(W_c [s_t; c_t])
        self.out = nn.Linear(H, config.tgt_vocab_size)

    # ----------------------------------------------------------------- encoder side
    def encode(self, src: torch.Tensor, src_lengths: torch.Tensor) -> _Encoded:
        states, final = self.encoder(src, src_lengths)  # (B, T, D*H), (B, D*H)
        mask = torch.arange(src.size(1), device=src.device)[None, :] < src_lengths.to(src.device)[:, None]
        keys = None
        if self.config.kind == "additive":
            keys = self.attention.U(states)  # (B, T, A), computed once per sentence
        elif self.config.kind == "dot":
            keys = self.W_a(states) if self.W_a is not None else states  # (B, T, H)
        return _Encoded(states, final, mask, keys)

    def initial_state(self, enc: _Encoded) -> tuple[torch.Tensor, torch.Tensor]:
        """(s_0, m_0), each (L, B, H), from the encoder's final memory z."""
        B, L, H = enc.final.size(0), self.config.layers, self.config.hidden
        h0 = torch.tanh(self.init_h(enc.final)).view(B, L, H).transpose(0, 1).contiguous()  # (L, B, H)
        c0 = self.init_c(enc.final).view(B, L, H).transpose(0, 1).contiguous()  # (L, B, H)
        return h0, c0

    # ----------------------------------------------------------------- decoder side
    def _dot_attend(self, s: torch.Tensor, enc: _Encoded) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """s (B, U, H) -> context (B, U, D*H), weights (B, U, T), scores (B, U, T)."""
        scores = torch.bmm(s, enc.keys.transpose(1, 2))  # (B, U, T)
        weights = masked_softmax(scores, enc.mask[:, None, :])  # (B, U, T)
        context = torch.bmm(weights, enc.states)  # (B, U, D*H)
        return context, weights, scores

    def _logits(self, s: torch.Tensor, context: torch.Tensor, emb: torch.Tensor) -> torch.Tensor:
        if self.config.kind == "dot":
            o = torch.tanh(self.readout(torch.cat([s, context], dim=-1)))
        else:
            o = torch.tanh(self.readout(torch.cat([s, context, emb], dim=-1)))
        return self.out(self.drop(o))  # (..., V)

    def _additive_step(
        self, emb: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor], enc: _Encoded
    ) -> tuple[torch.Tensor, torch.Tensor, tuple[torch.Tensor, torch.Tensor], dict[str, torch.Tensor]]:
        """One Bahdanau step. emb (B, E) is y_{t-1}; state (L, B, H) x2 holds s_{t-1}.

        Returns s_t (B, H), c_t (B, D*H), the new state and the step's attention details."""
        h, c = state
        query = h[-1]  # (B, H) s_{t-1} of the top layer
        context, weights, scores = self.attention(query, enc.keys, enc.states, enc.mask)
        x = torch.cat([emb, context], dim=-1)  # (B, E + D*H)
        new_h, new_c = [], []
        for i, cell in enumerate(self.cells):
            hi, ci = cell(x, (h[i], c[i]))  # (B, H)
            new_h.append(hi)
            new_c.append(ci)
            x = hi
        h2, c2 = torch.stack(new_h), torch.stack(new_c)  # (L, B, H)
        return h2[-1], context, (h2, c2), {"query": query, "scores": scores, "weights": weights,
                                           "context": context}

    def _recurrent_step(
        self, emb: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor], enc: _Encoded
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor], dict[str, torch.Tensor]]:
        """One step of plain or dot, through the same nn.LSTM used for all-steps-at-once training."""
        if self.config.kind == "plain":
            x = torch.cat([emb, enc.final], dim=-1)[:, None, :]  # (B, 1, E + D*H)
            s, state = self.decoder(x, state)  # (B, 1, H)
            logits = self._logits(s[:, 0], enc.final, emb)
            return logits, state, {}
        s, state = self.decoder(emb[:, None, :], state)  # (B, 1, H)
        context, weights, scores = self._dot_attend(s, enc)
        logits = self._logits(s[:, 0], context[:, 0], emb)
        return logits, state, {"query": s[:, 0], "scores": scores[:, 0], "weights": weights[:, 0],
                               "context": context[:, 0]}

    def step(self, y_prev: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor], enc: _Encoded):
        """Greedy-decoding step: y_prev (B,) ids -> logits (B, V), new state, attention details."""
        emb = self.tgt_embed(y_prev)  # (B, E)
        if self.config.kind == "additive":
            s, context, state, info = self._additive_step(emb, state, enc)
            return self._logits(s, context, emb), state, info
        return self._recurrent_step(emb, state, enc)

    def forward(self, src: torch.Tensor, src_lengths: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """Teacher forcing: tgt_in (B, U+1) = <bos> y_1 ... -> logits (B, U+1, V)."""
        enc = self.encode(src, src_lengths)
        state = self.initial_state(enc)
        emb = self.drop(self.tgt_embed(tgt_in))  # (B, U+1, E)
        kind = self.config.kind
        if kind == "additive":
            states, contexts = [], []
            for t in range(tgt_in.size(1)):  # the recurrence: s_t needs s_{t-1}
                s, context, state, _ = self._additive_step(emb[:, t], state, enc)
                states.append(s)
                contexts.append(context)
            # the read-out does not feed back, so it runs on all steps at once
            return self._logits(torch.stack(states, 1), torch.stack(contexts, 1), emb)  # (B, U+1, V)
        if kind == "plain":
            z = enc.final[:, None, :].expand(-1, tgt_in.size(1), -1)  # (B, U+1, D*H)
            s, _ = self.decoder(torch.cat([emb, z], dim=-1), state)  # (B, U+1, H)
            return self._logits(s, z, emb)
        s, _ = self.decoder(emb, state)  # (B, U+1, H), all steps at once
        context, _, _ = self._dot_attend(s, enc)
        return self._logits(s, context, emb)

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Mean cross-entropy of y_t given y_<t and the source (teacher forcing), <pad> ignored."""
        tgt = batch["tgt"]
        logits = self(batch["src"], batch["src_lengths"], tgt[:, :-1])  # (B, U+1, V)
        return teacher_forced_loss(logits, tgt, self.config.label_smoothing)

    # ----------------------------------------------------------------- inference
    def _greedy(
        self, src: torch.Tensor, src_lengths: torch.Tensor, max_len: int, record: bool
    ) -> tuple[list[list[int]], list[dict[str, torch.Tensor]]]:
        enc = self.encode(src, src_lengths)
        state = self.initial_state(enc)
        B = src.size(0)
        y = torch.full((B,), BOS_ID, dtype=torch.long, device=src.device)
        done = torch.zeros(B, dtype=torch.bool, device=src.device)
        outputs: list[list[int]] = [[] for _ in range(B)]
        records: list[dict[str, torch.Tensor]] = []
        for _ in range(max_len + 1):
            logits, state, info = self.step(y, state, enc)
            y = logits.argmax(dim=-1)  # (B,)
            if record:
                records.append(info)
            done = keep_greedy_step(outputs, y, done, max_len)
            if bool(done.all()):
                break
        return outputs, records

    def translate(self, src: torch.Tensor, src_lengths: torch.Tensor, max_len: int = 80) -> list[list[int]]:
        """Greedy decoding of a batch; each output without <bos>/<eos>, at most max_len ids."""
        with torch.inference_mode():
            outputs, _ = self._greedy(src, src_lengths, max_len, record=False)
        return outputs

    def trace(self, src_ids: list[int], src_vocab: Any, tgt_vocab: Any, max_len: int = 80) -> TranslationTrace:
        """Translate one sentence and return its tokens, the alignment (U, T) and, for additive,
        each step's query s_{t-1}, scores, weights and context (the chapter's three steps)."""
        if not src_ids:
            raise ValueError("trace needs at least one source token")
        src = torch.tensor([src_ids], dtype=torch.long)  # (1, T)
        lengths = torch.tensor([len(src_ids)])
        with torch.inference_mode():
            outputs, records = self._greedy(src, lengths, max_len, record=True)
        out_ids = outputs[0]
        out_tokens = list(tgt_vocab.decode(out_ids))
        src_tokens = list(src_vocab.decode(src_ids))
        if self.config.kind == "plain":
            return TranslationTrace(src_tokens=src_tokens, out_tokens=out_tokens, alignment=None)
        U = len(out_ids)  # the rows of the steps that wrote a word (the <eos> step is left out)
        rows = records[:U]
        alignment = np.stack([r["weights"][0].float().numpy() for r in rows]) if U else np.zeros((0, len(src_ids)))
        steps: list[AttentionStep] = []
        if self.config.kind == "additive":
            steps = [
                AttentionStep(
                    output_token=tok,
                    query=r["query"][0].float().numpy().copy(),
                    scores=r["scores"][0].float().numpy().copy(),
                    weights=r["weights"][0].float().numpy().copy(),
                    context=r["context"][0].float().numpy().copy(),
                )
                for tok, r in zip(out_tokens, rows, strict=True)
            ]
        return TranslationTrace(src_tokens=src_tokens, out_tokens=out_tokens, alignment=alignment, steps=steps)


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


__all__ = [
    "KINDS",
    "RECOMMENDED_TRAINING",
    "AdditiveAttention",
    "Seq2Seq",
    "Seq2SeqConfig",
    "masked_softmax",
]
