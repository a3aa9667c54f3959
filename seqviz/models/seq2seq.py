"""LSTM encoder-decoder translators: the one-vector bottleneck and the attention that removed it.

One encoder, a (bidirectional) LSTM over the source words:

    h_j = [→h_j ; ←h_j]                      encoder state of source word j, (2H,) or (H,)
    z = [→h_T ; ←h_1]                        the encoder's final memory

and one decoder LSTM that writes the French one word at a time, starting from s_0 = tanh(W_init z).
The decoder is given an attention part (seqviz.models.attention) and that part is the only difference
between the LSTM translators; ``Seq2SeqConfig.kind`` names the family, whose descriptor (seqviz.families)
names the part (:func:`attention_part`). The shipped three:

- ``plain`` (Sutskever et al. 2014; Cho et al. 2014), :class:`NoAttention`: every step is fed the same
  fixed summary, c_t = z: s_t = LSTM([y_{t-1}; z], s_{t-1}). The whole sentence has to squeeze
  through z: the chapter's bottleneck.
- ``additive`` (Bahdanau et al. 2014), :class:`AdditiveAttention`: before writing word t, the previous
  decoder state s_{t-1} scores every encoder state, and the step is fed a fresh context vector:

      score_j = vᵀ tanh(W s_{t-1} + U h_j)    (1) score every source word
      α = softmax(score)                      (2) over the real (unpadded) words only
      c_t = Σ_j α_j h_j                       (3) weighted average of encoder states
      s_t = LSTM([y_{t-1}; c_t], s_{t-1})

  c_t needs s_{t-1}, so even teacher-forced training runs one step at a time.
- ``dot`` (Luong et al. 2015), :class:`GeneralAttention`: attention after the decoder step, so
  teacher-forced training runs every step at once: s_t = LSTM(y_{t-1}, s_{t-1}) for all t, then

      score_j = s_t · (W_a h_j)  ("general")  or  s_t · h_j  ("dot")
      α = softmax(score),  c_t = Σ_j α_j h_j

The output distribution is softmax(W_y o_t) with o_t = tanh(W_r [s_t; c_t; y_{t-1}]) when the context
is fed into the step (plain, additive) and o_t = tanh(W_c [s_t; c_t]) when it is found after (dot).

Loss and greedy decoding come from :class:`seqviz.models.translator.Translator`, shared with the
transformer. Held-out results of the shipped models: assets/models/README.md.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from seqviz import families
from seqviz.models.attention import DecoderAttention, EncoderMemory, Mix
from seqviz.models.common import PAD_ID, check_sizes, one_sentence
from seqviz.models.gates import lstm_gate_trace
from seqviz.models.translator import DecoderStep, Translator
from seqviz.traces import AttentionStep, LSTMGateTrace, TranslationTrace


@dataclass
class Seq2SeqConfig:
    kind: str = "additive"  # the family: "plain" (no attention) | "additive" (Bahdanau) | "dot" (Luong) | ...
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
        kinds = families.lstm_translator_kinds()
        if self.kind not in kinds:
            raise ValueError(f"kind must be one of {kinds}, not {self.kind!r:.40}")
        check_sizes(self, vocab=("src_vocab_size", "tgt_vocab_size"), width=("emb_dim", "hidden", "attn_dim"),
                    layers=("layers",))
        families.get(self.kind).part_class.check(self)
        if not 0.0 <= self.dropout < 1.0 or not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError("dropout and label_smoothing must be in [0, 1)")

    @property
    def encoder_dim(self) -> int:
        """D, the size of an encoder state h_j (and of z): 2H bidirectional, H otherwise."""
        return self.hidden * (2 if self.bidirectional else 1)


def attention_part(config: Seq2SeqConfig) -> DecoderAttention:
    """The decoder's attention part for ``config.kind``, as the family's descriptor names it."""
    return families.get(config.kind).part_class.from_config(config)


class Encoder(nn.Module):
    """Embeds the source words and runs the (bi)LSTM over them, padding excluded (packed)."""

    def __init__(self, config: Seq2SeqConfig) -> None:
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.src_vocab_size, config.emb_dim, padding_idx=PAD_ID)
        self.drop = nn.Dropout(config.dropout)
        self.lstm = nn.LSTM(config.emb_dim, config.hidden, num_layers=config.layers, batch_first=True,
                            bidirectional=config.bidirectional, dropout=config.dropout if config.layers > 1 else 0.0)

    def forward(
        self, src: torch.Tensor, src_lengths: torch.Tensor, embedded: torch.Tensor | None = None
    ) -> EncoderMemory:
        """Every encoder state h_j (B, T, D) (zeros on padding), the final memory z (B, D) and the mask (B, T).

        ``embedded`` (B, T, E): the word vectors e_j to read instead of looking ``src`` up (gradient saliency
        differentiates with respect to them); None reads ``self.embed(src)``.

        In training the LSTM runs on the padded batch, one direction at a time (:meth:`_padded`): the same
        numbers as the packed run to float rounding, in less than half its time on a CPU (a packed LSTM steps
        through the batch in Python-sized pieces; a padded one is one fused kernel per direction). Evaluation
        keeps the packed run, so a trained model's outputs never depend on which path trained it.
        """
        B, T = src.shape
        x = self.drop(self.embed(src) if embedded is None else embedded)  # (B, T, E)
        mask = torch.arange(T, device=src.device)[None, :] < src_lengths.to(src.device)[:, None]  # (B, T)
        if self.training:
            states, final = self._padded(x, src_lengths.to(src.device), mask)
            return EncoderMemory(states=states, final=final, mask=mask)
        packed = pack_padded_sequence(x, src_lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, (h_n, _) = self.lstm(packed)  # h_n: (layers * directions, B, H)
        states, _ = pad_packed_sequence(out, batch_first=True, total_length=T)  # (B, T, D)
        directions = 2 if self.config.bidirectional else 1
        h_last = h_n.view(self.config.layers, directions, B, self.config.hidden)[-1]  # (directions, B, H)
        final = h_last.transpose(0, 1).reshape(B, directions * self.config.hidden)  # (B, D): [→h_T; ←h_1]
        return EncoderMemory(states=states, final=final, mask=mask)

    def _padded(
        self, x: torch.Tensor, lengths: torch.Tensor, mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The packed run's (states (B, T, D), final (B, D)) from the padded batch, with ``self.lstm``'s weights.

        The forward direction reads each sentence from its first word; whatever it computes on the padding
        after the last word is never used. The backward direction reads each sentence reversed within its own
        length (:func:`reverse_within`), so it too starts on a real word and meets the padding only at the end.
        """
        lstm, B, H = self.lstm, x.size(0), self.config.hidden
        zeros = x.new_zeros(1, B, H)
        directions = ("", "_reverse") if self.config.bidirectional else ("",)
        layer_input = x  # (B, T, E), then (B, T, D)
        for layer in range(self.config.layers):
            if layer and self.training and lstm.dropout:
                layer_input = nn.functional.dropout(layer_input, lstm.dropout)  # as nn.LSTM does between layers
            outputs = []
            for suffix in directions:
                weights = [getattr(lstm, f"{name}_l{layer}{suffix}")
                           for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
                reverse = suffix == "_reverse"
                inputs = reverse_within(layer_input, lengths) if reverse else layer_input
                out = torch.lstm(inputs, (zeros, zeros), weights, True, 1, 0.0, self.training, False, True)[0]
                outputs.append(reverse_within(out, lengths) if reverse else out)  # (B, T, H)
            layer_input = torch.cat(outputs, dim=-1)  # (B, T, D)
        states = layer_input * mask[..., None]  # (B, T, D), zeros on padding as the packed run gives
        last = states[torch.arange(B, device=x.device), lengths - 1, :H]  # (B, H): →h_T
        final = torch.cat([last, states[:, 0, H:]], dim=-1)  # (B, D): [→h_T; ←h_1] (just →h_T one way)
        return states, final


def reverse_within(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """x (B, T, F) with each row's first ``lengths[b]`` steps in reverse order; the padding after them stays."""
    B, T = x.shape[:2]
    index = torch.arange(T, device=x.device)[None, :].expand(B, T)  # (B, T)
    flipped = lengths[:, None] - 1 - index  # (B, T): where step t of the reversed row comes from
    index = torch.where(flipped >= 0, flipped, index)
    return x.gather(1, index[..., None].expand_as(x))


@dataclass
class StepDetails:
    """What the attention part did during some decoder steps (tensors; per call, never kept on a module)."""

    query: torch.Tensor  # (B, U, H): s_{t-1} (context fed into the step) or s_t (found after it)
    scores: torch.Tensor | None  # (B, U, T); None for the bottleneck
    weights: torch.Tensor | None  # (B, U, T)
    context: torch.Tensor  # (B, U, D)


class Decoder(nn.Module):
    """An LSTM that writes the target one word at a time, reading the source through ``attention``."""

    def __init__(self, config: Seq2SeqConfig, attention: DecoderAttention) -> None:
        super().__init__()
        E, H, L, D = config.emb_dim, config.hidden, config.layers, config.encoder_dim
        self.config = config
        self.attention = attention
        self.embed = nn.Embedding(config.tgt_vocab_size, E, padding_idx=PAD_ID)
        self.drop = nn.Dropout(config.dropout)
        # s_0 = tanh(W_init z), m_0 = W_cell z: the decoder starts from the encoder's final memory.
        self.init_h = nn.Linear(D, L * H)
        self.init_c = nn.Linear(D, L * H)
        fed = attention.before_step  # is c_t an input of the step (plain, additive) or found after it (dot)?
        self.lstm = nn.LSTM(E + (D if fed else 0), H, num_layers=L, batch_first=True,
                            dropout=config.dropout if L > 1 else 0.0)
        self.readout = nn.Linear(H + D + (E if fed else 0), H)  # o_t = tanh(W_r [s_t; c_t; (y_{t-1})])
        self.out = nn.Linear(H, config.tgt_vocab_size)

    def initial_state(self, memory: EncoderMemory) -> tuple[torch.Tensor, torch.Tensor]:
        """(s_0, m_0), each (L, B, H), from the encoder's final memory z."""
        B, L, H = memory.final.size(0), self.config.layers, self.config.hidden
        h0 = torch.tanh(self.init_h(memory.final)).view(B, L, H).transpose(0, 1).contiguous()  # (L, B, H)
        c0 = self.init_c(memory.final).view(B, L, H).transpose(0, 1).contiguous()  # (L, B, H)
        return h0, c0

    def advance(
        self, emb: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor], memory: EncoderMemory
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor], StepDetails]:
        """U decoder steps from ``state`` on inputs y_{t-1} embedded (B, U, E) -> s_t (B, U, H), state, details.

        U > 1 only where the context of every step can be found at once: after the steps (dot), or when it
        does not depend on them (plain). Additive attention needs s_{t-1}, so it comes one step at a time.
        """
        if self.attention.before_step:
            query = state[0][-1][:, None, :].expand(-1, emb.size(1), -1)  # (B, U, H): s_{t-1}, top layer
            context, weights, scores = self.attention(query, memory)  # (B, U, D)
            s, state = self.lstm(torch.cat([emb, context], dim=-1), state)  # (B, U, H)
        else:
            s, state = self.lstm(emb, state)  # (B, U, H)
            query = s
            context, weights, scores = self.attention(query, memory)  # (B, U, D)
        return s, state, StepDetails(query=query, scores=scores, weights=weights, context=context)

    def logits(self, s: torch.Tensor, details: StepDetails, emb: torch.Tensor) -> torch.Tensor:
        """Scores of every target word (B, U, V) from s_t, c_t and (when c_t was fed in) y_{t-1}."""
        parts = [s, details.context, emb] if self.attention.before_step else [s, details.context]
        return self.out(self.drop(torch.tanh(self.readout(torch.cat(parts, dim=-1)))))

    def forward(self, tgt_in: torch.Tensor, memory: EncoderMemory) -> torch.Tensor:
        """Teacher forcing: tgt_in (B, U) = <bos> y_1 ... -> logits (B, U, V)."""
        return self.run(tgt_in, memory)[0]

    def run(self, tgt_in: torch.Tensor, memory: EncoderMemory) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Teacher forcing: tgt_in (B, U) = <bos> y_1 ... -> logits (B, U, V) and the weights α (B, U, T) of
        every step (None for the bottleneck)."""
        emb = self.drop(self.embed(tgt_in))  # (B, U, E)
        state = self.initial_state(memory)
        if self.attention.before_step and not self.attention.fixed_context:
            steps = []
            for t in range(tgt_in.size(1)):  # the recurrence: c_t needs s_{t-1}
                s, state, details = self.advance(emb[:, t : t + 1], state, memory)
                steps.append((s, details))
            s = torch.cat([s for s, _ in steps], dim=1)  # (B, U, H)
            context = torch.cat([d.context for _, d in steps], dim=1)  # (B, U, D)
            weights = None if steps[0][1].weights is None else torch.cat([d.weights for _, d in steps], dim=1)
            details = StepDetails(query=s, scores=None, weights=weights, context=context)
        else:
            s, _, details = self.advance(emb, state, memory)  # every step at once
        return self.logits(s, details, emb), details.weights  # the read-out does not feed back: all steps at once


class Seq2Seq(Translator):
    """LSTM encoder-decoder; ``config.kind`` picks the decoder's attention part (see the module doc)."""

    def __init__(self, config: Seq2SeqConfig) -> None:
        super().__init__()
        self.config = config
        self.encoder = Encoder(config)
        self.decoder = Decoder(config, attention_part(config))

    @property
    def family(self) -> str:
        return self.config.kind

    @property
    def has_attention(self) -> bool:  # type: ignore[override]
        return not self.decoder.attention.fixed_context

    def encode(
        self, src: torch.Tensor, src_lengths: torch.Tensor, mix: Mix | None = None,
        embedded: torch.Tensor | None = None,
    ) -> EncoderMemory:
        """The encoder's states, final memory and mask, with the attention part's keys computed once.

        ``mix`` replaces the attention weights of every step decoded from this memory (seqviz.models.attention.Mix);
        ``embedded`` (B, T, E) the source word vectors (:meth:`Encoder.forward`). Both for this call only."""
        memory = self.decoder.attention.prepare(self.encoder(src, src_lengths, embedded))
        memory.mix = mix
        return memory

    def forward(self, src: torch.Tensor, src_lengths: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """Teacher forcing: tgt_in (B, U+1) = <bos> y_1 ... -> logits (B, U+1, V)."""
        return self.decoder(tgt_in, self.encode(src, src_lengths))

    def teacher_forced(self, src, src_lengths, tgt_in, mix=None, embedded=None):
        """Teacher forcing, as :meth:`seqviz.models.translator.Translator.teacher_forced` says."""
        return self.decoder.run(tgt_in, self.encode(src, src_lengths, mix, embedded))

    def embed_source(self, src: torch.Tensor) -> torch.Tensor:
        return self.encoder.embed(src)  # (B, T, E)

    def start(self, src: torch.Tensor, src_lengths: torch.Tensor, mix: Mix | None = None):
        memory = self.encode(src, src_lengths, mix)
        return memory, self.decoder.initial_state(memory)

    def step(self, y_prev: torch.Tensor, state):
        """One greedy step: y_prev (B,) -> logits (B, V), new state, the step's StepDetails (U = 1)."""
        memory, lstm_state = state
        emb = self.decoder.drop(self.decoder.embed(y_prev))[:, None, :]  # (B, 1, E)
        s, lstm_state, details = self.decoder.advance(emb, lstm_state, memory)
        return self.decoder.logits(s, details, emb)[:, 0], (memory, lstm_state), details

    def trace(self, src_ids, src_vocab, tgt_vocab, max_len: int | None = None) -> TranslationTrace:
        """Translate one sentence: its tokens, the alignment (U, T) and each step's query, scores, weights
        and context (the chapter's three steps); no alignment and no steps for the bottleneck.

        ``max_len`` None: at most ``seqviz.limits.output_limit(len(src_ids))`` words."""
        src, lengths = self._one_source(src_ids)
        with torch.inference_mode():
            outputs, records = self.greedy(src, lengths, max_len, record=True)
        out_ids = outputs[0]
        src_tokens, out_tokens = list(src_vocab.decode(src[0].tolist())), list(tgt_vocab.decode(out_ids))
        if not self.has_attention:
            return TranslationTrace(src_tokens=src_tokens, out_tokens=out_tokens, alignment=None)
        rows = records[: len(out_ids)]  # the steps that wrote a word (the <eos> step is left out)

        def row(tensor: torch.Tensor) -> np.ndarray:
            return tensor[0, 0].float().numpy().copy()

        query_name = "s_{t-1}" if self.decoder.attention.before_step else "s_t"
        steps = [
            AttentionStep(output_token=token, query=row(r.query), scores=row(r.scores), weights=row(r.weights),
                          context=row(r.context), query_name=query_name)
            for token, r in zip(out_tokens, rows, strict=True)
        ]
        alignment = np.stack([s.weights for s in steps]) if steps else np.zeros((0, len(src_tokens)), np.float32)
        return TranslationTrace(src_tokens=src_tokens, out_tokens=out_tokens, alignment=alignment, steps=steps,
                                score_rule=self.decoder.attention.score_rule)

    def gate_trace(self, tokens, vocab) -> LSTMGateTrace:
        """The encoder's gates on a source sentence (first layer, forward direction), replayed from its
        nn.LSTM's weights; ``vocab`` is the source vocabulary."""
        ids, seen = one_sentence(tokens, vocab)
        with torch.inference_mode():
            emb = self.encoder.embed(torch.tensor([ids]))[0]  # (T, E)
        return lstm_gate_trace(self.encoder.lstm, emb, seen)

    def encoder_states(self, src: torch.Tensor, src_lengths: torch.Tensor) -> torch.Tensor:
        """Every encoder state h_j (B, T, D), zeros on padding."""
        return self.encoder(src, src_lengths).states

    def decode_step(self, y_prev: torch.Tensor, state, attention: torch.Tensor | None = None) -> DecoderStep:
        """One decoder step on y_prev (B,) from ``state`` (:meth:`start`'s or the last step's), as :meth:`step` does.

        ``attention`` (B, T): the weights α that step (3) mixes the h_j with at this step instead of the model's own
        (each row adding to 1 over the real source words), so c_t = Σ_j α_j h_j is the caller's; this step only.
        Additive attention feeds c_t into the LSTM, so s_t, and every later step through it, follows the edit; dot
        attention finds c_t after the step, so the edit reaches this step's output only. The plain translator has
        no weights to replace (ValueError)."""
        memory, lstm_state = state
        step_memory = memory
        if attention is not None:
            if not self.has_attention:
                raise ValueError("the plain translator has no attention: it reads only the encoder's final memory z")

            def given(weights: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
                return attention[:, None, :].to(weights.dtype).expand_as(weights)  # (B, 1, T)

            step_memory = replace(memory, mix=given)
        logits, (_, lstm_state), details = self.step(y_prev, (step_memory, lstm_state))
        weights = None if details.weights is None else details.weights[:, 0]  # (B, T)
        return DecoderStep(log_probs=torch.log_softmax(logits, dim=-1), state=(memory, lstm_state), weights=weights,
                           hidden=lstm_state[0][-1])  # s_t (B, H), top layer

    def decoder_states(self, src: torch.Tensor, src_lengths: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """Teacher forcing on tgt_in (B, U) = <bos> y_1 ...: s_t of every step (B, U, H), as :meth:`decode_step`
        gives them."""
        state, states = self.start(src, src_lengths), []
        for t in range(tgt_in.size(1)):
            step = self.decode_step(tgt_in[:, t], state)
            state = step.state
            states.append(step.hidden)
        return torch.stack(states, dim=1)  # (B, U, H)

    def reorder_state(self, state, index: torch.Tensor):
        """The decoding state of rows ``index`` (K,) of the batch (repeats allowed): how beam search lets each
        kept hypothesis go on from its parent's state."""
        memory, (h, c) = state
        memory = replace(memory, states=memory.states[index], final=memory.final[index], mask=memory.mask[index],
                         keys=None if memory.keys is None else memory.keys[index])  # (K, ...)
        return memory, (h[:, index], c[:, index])  # (L, K, H)


__all__ = [
    "Decoder",
    "Encoder",
    "Seq2Seq",
    "Seq2SeqConfig",
    "StepDetails",
    "attention_part",
    "reverse_within",
]
