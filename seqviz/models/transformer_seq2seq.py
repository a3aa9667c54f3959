"""A small encoder-decoder transformer translator (Vaswani et al. 2017): attention, no recurrence.

Every attention in it is the chapter's three steps, with learned projections and N heads:

    Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V        (1) scores, (2) softmax, (3) weighted average

- encoder self-attention: every source word looks at every source word (padding masked out);
- decoder self-attention: each output position looks at itself and the words already written
  (a causal mask), so teacher-forced training runs every step at once;
- cross-attention: each output position looks at every source word; its weights, averaged over
  the heads of the last layer, are the alignment the attention pages draw.

Order comes back through sinusoidal positions added to the word vectors,
PE(p, 2i) = sin(p / 10000^{2i/d}), PE(p, 2i+1) = cos(p / 10000^{2i/d}); they are computed for any
length, so a 45-word sentence (longer than any in training) still gets positions. But a position
never seen in training is still new to the model: trained on positions 0..30 only, it translated
41% of the 31-35-token test sentences and none above 40. So in training each sentence's positions
start at a random offset p0 in 0..max_position_shift (source and target alike; a simple form of the
randomized positions of Ruoss et al. 2023): the model sees positions up to 70+, can only rely on
where words are relative to each other, and at inference (p0 = 0) it generalises far better.
Layers are pre-norm: x + Sublayer(LayerNorm(x)). Word vectors start at std d^-1/2, so
that √d·E[w] is about as large as PE (nn.Embedding's N(0, 1) would drown the positions: that model
learned three times slower).

Attention is :func:`seqviz.models.attention.attention` in :class:`~seqviz.models.attention.MultiHeadAttention`
(the transformer classifier's too); loss and greedy decoding come from
:class:`seqviz.models.translator.Translator`, shared with the LSTM translators.

The zoo's training settings are in seqviz.zoo; the shipped model's held-out results in
assets/models/README.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn

from seqviz.limits import MAX_MODEL_POSITIONS
from seqviz.models.attention import Mix, MultiHeadAttention
from seqviz.models.common import BOS_ID, PAD_ID, check_sizes
from seqviz.models.translator import DecoderStep, Translator
from seqviz.traces import TransformerTranslationTrace


@dataclass
class TransformerSeq2SeqConfig:
    src_vocab_size: int = 64  # English vocabulary, specials included
    tgt_vocab_size: int = 64  # French vocabulary, specials included
    d_model: int = 64  # width of every word vector and sublayer output
    n_heads: int = 4  # N: heads per attention; d_k = d_model / n_heads
    enc_layers: int = 2  # encoder blocks (self-attention + feed-forward)
    dec_layers: int = 2  # decoder blocks (causal self-attention + cross-attention + feed-forward)
    d_ff: int = 256  # hidden units of each position-wise feed-forward
    dropout: float = 0.0  # on embeddings, attention weights and sublayer outputs (the grammar needs none)
    label_smoothing: float = 0.0  # cross-entropy label smoothing used by loss()
    max_position_shift: int = 40  # training only: each sentence's positions start at a random p0 in 0..40

    def __post_init__(self) -> None:
        check_sizes(self, vocab=("src_vocab_size", "tgt_vocab_size"), width=("d_model", "d_ff"),
                    heads=("n_heads",), layers=("enc_layers", "dec_layers"))
        if not 0 <= self.max_position_shift <= MAX_MODEL_POSITIONS:
            raise ValueError(f"max_position_shift must be 0 to {MAX_MODEL_POSITIONS}")
        if not 0.0 <= self.dropout < 1.0 or not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError("dropout and label_smoothing must be in [0, 1)")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")


def sinusoidal_positions(length: int, d_model: int, device: torch.device | None = None) -> torch.Tensor:
    """PE (length, d_model): sin on even features, cos on odd, wavelengths from 2π to 10000·2π."""
    position = torch.arange(length, dtype=torch.float32, device=device)[:, None]  # (T, 1)
    div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32, device=device)
                    * (-math.log(10000.0) / d_model))  # (d/2,)
    pe = torch.zeros(length, d_model, device=device)
    pe[:, 0::2] = torch.sin(position * div)
    pe[:, 1::2] = torch.cos(position * div)
    return pe


class FeedForward(nn.Module):
    """FFN(x) = W_2 ReLU(W_1 x + b_1) + b_2, the same at every position."""

    def __init__(self, config: TransformerSeq2SeqConfig) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(config.d_model, config.d_ff), nn.ReLU(), nn.Linear(config.d_ff, config.d_model)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class EncoderLayer(nn.Module):
    def __init__(self, config: TransformerSeq2SeqConfig) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(config.d_model)
        self.self_attn = MultiHeadAttention(config.d_model, config.n_heads, config.dropout)
        self.ln2 = nn.LayerNorm(config.d_model)
        self.ff = FeedForward(config)
        self.drop = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor, src_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.ln1(x)
        a, weights = self.self_attn(h, mask=src_mask)  # weights (B, N, T, T)
        x = x + self.drop(a)
        x = x + self.drop(self.ff(self.ln2(x)))
        return x, weights


class DecoderLayer(nn.Module):
    def __init__(self, config: TransformerSeq2SeqConfig) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(config.d_model)
        self.self_attn = MultiHeadAttention(config.d_model, config.n_heads, config.dropout)
        self.ln2 = nn.LayerNorm(config.d_model)
        self.cross_attn = MultiHeadAttention(config.d_model, config.n_heads, config.dropout)
        self.ln3 = nn.LayerNorm(config.d_model)
        self.ff = FeedForward(config)
        self.drop = nn.Dropout(config.dropout)

    def forward(
        self, y: torch.Tensor, memory: torch.Tensor, causal_mask: torch.Tensor, src_mask: torch.Tensor,
        mix: Mix | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``mix`` replaces the cross-attention's weights (this call only)."""
        h = self.ln1(y)
        a, self_w = self.self_attn(h, mask=causal_mask)  # (B, N, U, U)
        y = y + self.drop(a)
        a, cross_w = self.cross_attn(self.ln2(y), memory, src_mask, mix)  # (B, N, U, T)
        y = y + self.drop(a)
        y = y + self.drop(self.ff(self.ln3(y)))
        return y, self_w, cross_w


class TransformerSeq2Seq(Translator):
    """Encoder-decoder transformer with loss / translate / trace like the LSTM translators."""

    family = "transformer-seq2seq"
    has_attention = True

    @property
    def attention_heads(self) -> int:
        """N, the heads of each attention: its trace has cross-attention per layer and head."""
        return self.config.n_heads

    def __init__(self, config: TransformerSeq2SeqConfig) -> None:
        super().__init__()
        self.config = config
        d = config.d_model
        self.src_embed = nn.Embedding(config.src_vocab_size, d, padding_idx=PAD_ID)
        self.tgt_embed = nn.Embedding(config.tgt_vocab_size, d, padding_idx=PAD_ID)
        self.drop = nn.Dropout(config.dropout)
        self.encoder_layers = nn.ModuleList([EncoderLayer(config) for _ in range(config.enc_layers)])
        self.decoder_layers = nn.ModuleList([DecoderLayer(config) for _ in range(config.dec_layers)])
        self.enc_norm = nn.LayerNorm(d)
        self.dec_norm = nn.LayerNorm(d)
        self.out = nn.Linear(d, config.tgt_vocab_size)
        # word vectors start at about unit size per feature once scaled by √d, like the positions they are
        # added to (nn.Embedding's N(0, 1) times √d would drown the positions)
        for embed in (self.src_embed, self.tgt_embed):
            nn.init.normal_(embed.weight, std=d**-0.5)
            with torch.no_grad():
                embed.weight[PAD_ID].zero_()

    def _embed(
        self, embed: nn.Embedding, ids: torch.Tensor, shift: torch.Tensor | None, vectors: torch.Tensor | None = None
    ) -> torch.Tensor:
        """x_p = √d · E[w_p] + PE(p + shift): shift (B,) is 0 except when training with max_position_shift.

        ``vectors`` (B, T, d): the word vectors E[w_p] to use instead of looking ``ids`` up."""
        T = ids.size(1)
        x = (embed(ids) if vectors is None else vectors) * math.sqrt(self.config.d_model)  # (B, T, d)
        if shift is None:
            return self.drop(x + sinusoidal_positions(T, self.config.d_model, ids.device))
        table = sinusoidal_positions(T + self.config.max_position_shift, self.config.d_model, ids.device)
        positions = torch.arange(T, device=ids.device)[None, :] + shift[:, None]  # (B, T)
        return self.drop(x + table[positions])

    def _position_shift(self, batch_size: int, device: torch.device) -> torch.Tensor | None:
        if not (self.training and self.config.max_position_shift):
            return None
        return torch.randint(0, self.config.max_position_shift + 1, (batch_size,), device=device)

    def encode(
        self, src: torch.Tensor, src_lengths: torch.Tensor, shift: torch.Tensor | None = None,
        embedded: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]]:
        """-> memory (B, T, d), src_mask (B, 1, 1, T) True on real words, self-attention weights per layer.

        ``embedded`` (B, T, d): the source word vectors E[w_j] to read instead of looking ``src`` up (gradient
        saliency differentiates with respect to them)."""
        T = src.size(1)
        src_mask = (torch.arange(T, device=src.device)[None, :] < src_lengths.to(src.device)[:, None])
        src_mask = src_mask[:, None, None, :]  # (B, 1, 1, T)
        x = self._embed(self.src_embed, src, shift, embedded)
        weights = []
        for layer in self.encoder_layers:
            x, w = layer(x, src_mask)
            weights.append(w)
        return self.enc_norm(x), src_mask, weights

    def decode(
        self, tgt_in: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor, shift: torch.Tensor | None = None,
        mix: Mix | None = None,
    ) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
        """tgt_in (B, U) -> logits (B, U, V), decoder self weights and cross weights per layer.

        ``mix`` replaces every layer's cross-attention weights (this call only; the returned ones are the mix's)."""
        U = tgt_in.size(1)
        causal = torch.ones(U, U, dtype=torch.bool, device=tgt_in.device).tril()[None, None]  # (1, 1, U, U)
        y = self._embed(self.tgt_embed, tgt_in, shift)
        self_ws, cross_ws = [], []
        for layer in self.decoder_layers:
            y, sw, cw = layer(y, memory, causal, src_mask, mix)
            self_ws.append(sw)
            cross_ws.append(cw)
        return self.out(self.dec_norm(y)), self_ws, cross_ws

    def forward(self, src: torch.Tensor, src_lengths: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        shift = self._position_shift(src.size(0), src.device)
        memory, src_mask, _ = self.encode(src, src_lengths, shift)
        logits, _, _ = self.decode(tgt_in, memory, src_mask, shift)
        return logits  # (B, U, V)

    def teacher_forced(self, src, src_lengths, tgt_in, mix=None, embedded=None):
        """Teacher forcing, as :meth:`seqviz.models.translator.Translator.teacher_forced` says; the weights are the
        last layer's cross-attention averaged over the heads (the alignment the pages draw)."""
        memory, src_mask, _ = self.encode(src, src_lengths, embedded=embedded)
        logits, _, cross_ws = self.decode(tgt_in, memory, src_mask, mix=mix)
        return logits, cross_ws[-1].mean(dim=1)  # (B, U, V), (B, U, T)

    def embed_source(self, src: torch.Tensor) -> torch.Tensor:
        return self.src_embed(src)  # (B, T, d): E[w_j], before √d and the positions

    def start(self, src: torch.Tensor, src_lengths: torch.Tensor, mix: Mix | None = None):
        """-> (memory, src_mask, the words so far, ``mix``: every step's cross-attention weights replaced)."""
        memory, src_mask, _ = self.encode(src, src_lengths)
        ys = torch.full((src.size(0), 0), BOS_ID, dtype=torch.long, device=src.device)  # (B, 0): words so far
        return memory, src_mask, ys, mix

    def step(self, y_prev: torch.Tensor, state):
        """One greedy step: the decoder reads the whole prefix again (no cache: sentences are short)."""
        memory, src_mask, ys, mix = state
        ys = torch.cat([ys, y_prev[:, None]], dim=1)  # (B, t): <bos> y_1 .. y_{t-1}
        logits, _, _ = self.decode(ys, memory, src_mask, mix=mix)  # (B, t, V)
        return logits[:, -1], (memory, src_mask, ys, mix), None

    def trace(self, src_ids, src_vocab, tgt_vocab, max_len: int | None = None) -> TransformerTranslationTrace:
        """Translate one sentence; return every attention map, layer by layer and head by head.

        Row u of decoder_self and cross is the step that wrote out_tokens[u]: its decoder input is
        <bos> for u = 0 and out_tokens[u-1] after that (so decoder_self's columns are those inputs).
        ``max_len`` None: at most ``seqviz.limits.output_limit(len(src_ids))`` words."""
        src, lengths = self._one_source(src_ids)
        with torch.inference_mode():
            out_ids = self.greedy(src, lengths, max_len)[0][0]
            memory, src_mask, enc_ws = self.encode(src, lengths)
            tgt_in = torch.tensor([[BOS_ID, *out_ids]], dtype=torch.long)  # (1, U+1)
            _, self_ws, cross_ws = self.decode(tgt_in, memory, src_mask)
        U = len(out_ids)  # the <eos> step (last row) is left out

        def stack(ws: list[torch.Tensor]) -> np.ndarray:
            return torch.stack([w[0] for w in ws]).float().numpy().copy()  # (L, N, ., .)

        return TransformerTranslationTrace(
            src_tokens=list(src_vocab.decode(src[0].tolist())),
            out_tokens=list(tgt_vocab.decode(out_ids)),
            encoder_self=stack(enc_ws),  # (L, N, T, T)
            decoder_self=stack(self_ws)[:, :, :U, :U],  # (L, N, U, U)
            cross=stack(cross_ws)[:, :, :U, :],  # (L, N, U, T)
        )

    def encoder_states(self, src: torch.Tensor, src_lengths: torch.Tensor) -> torch.Tensor:
        """The encoder's output (B, T, d) for every source word (after its LayerNorm): what cross-attention reads."""
        return self.encode(src, src_lengths)[0]

    def decode_step(self, y_prev: torch.Tensor, state, attention: torch.Tensor | None = None) -> DecoderStep:
        """One decoder step on y_prev (B,) from ``state`` (:meth:`start`'s or the last step's), as :meth:`step` does.

        What an attention edit means here: ``attention`` replaces this step's cross-attention weights in the *last*
        layer, in every head: (B, T) puts the same row in every head (so their average, the alignment the pages
        draw, is that row), (B, N, T) gives each head its own. The earlier layers attend as they learned. The edit
        reaches exactly this step's next word: no later position reads the last layer's output at this one (the
        decoder's self-attention reads each layer's input), so later steps change only through the word written.
        ``weights`` are the last layer's cross-attention of this step averaged over the heads."""
        memory, src_mask, ys, mix = state
        ys = torch.cat([ys, y_prev[:, None]], dim=1)  # (B, t): <bos> y_1 .. y_{t-1}
        last_mix = mix
        if attention is not None:
            rows = attention if attention.dim() == 3 else attention[:, None, :]  # (B, N, T) or (B, 1, T)

            def last_mix(weights: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:  # weights (B, N, t, T)
                edited = weights.clone()
                edited[:, :, -1, :] = rows.to(weights.dtype)  # this step's row, every head
                return edited

        normed, cross = self._decoder_output(ys, memory, src_mask, mix, last_mix)  # (B, t, d), (B, N, t, T)
        logits = self.out(normed)[:, -1]  # (B, V): as decode() computes them, so greedy's words are the same
        return DecoderStep(log_probs=torch.log_softmax(logits, dim=-1), state=(memory, src_mask, ys, mix),
                           weights=cross[:, :, -1].mean(dim=1), hidden=normed[:, -1])  # (B, T), (B, d)

    def decoder_states(self, src: torch.Tensor, src_lengths: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """Teacher forcing on tgt_in (B, U) = <bos> y_1 ...: the decoder state of every step (B, U, d), row t the
        one :meth:`decode_step` gives after reading tgt_in[:, :t+1] (all at once: the decoder is causal)."""
        memory, src_mask, _ = self.encode(src, src_lengths)
        return self._decoder_output(tgt_in, memory, src_mask, None, None)[0]

    def reorder_state(self, state, index: torch.Tensor):
        """The decoding state of rows ``index`` (K,) of the batch (repeats allowed), as beam search needs it."""
        memory, src_mask, ys, mix = state
        return memory[index], src_mask[index], ys[index], mix  # (K, T, d), (K, 1, 1, T), (K, t)

    def _decoder_output(self, ys, memory, src_mask, mix, last_mix) -> tuple[torch.Tensor, torch.Tensor]:
        """The decoder's normalised output (B, t, d) on ys (B, t), with ``last_mix`` in the last layer's
        cross-attention and ``mix`` in the others'; and the last layer's cross-attention weights (B, N, t, T)."""
        t, last = ys.size(1), len(self.decoder_layers) - 1
        causal = torch.ones(t, t, dtype=torch.bool, device=ys.device).tril()[None, None]  # (1, 1, t, t)
        y = self._embed(self.tgt_embed, ys, None)  # (B, t, d)
        for index, layer in enumerate(self.decoder_layers):
            y, _, cross = layer(y, memory, causal, src_mask, last_mix if index == last else mix)
        return self.dec_norm(y), cross


__all__ = ["TransformerSeq2Seq", "TransformerSeq2SeqConfig", "sinusoidal_positions"]
