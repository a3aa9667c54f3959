"""The transformer encoder email classifier (the chapter's section 5): no recurrence, every word attends to every
word in one step,

    Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V,

with learned position vectors added to the word vectors, and classifies from the mean of its outputs.
Attention is :class:`seqviz.models.attention.MultiHeadAttention`, the translator's too. Its weights are
returned by the forward pass (never kept on the module), so ``attention_trace`` can show every layer
and head; a call may replace them (a mix, as the translators' cross-attention takes one).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from seqviz.models.attention import Mix, MultiHeadAttention
from seqviz.models.classifiers.base import ClassifierBase, real_words
from seqviz.models.common import check_sizes, one_sentence
from seqviz.traces import SelfAttentionTrace


@dataclass
class TransformerClassifierConfig:
    vocab_size: int = 64  # words known, the four specials included (set from the task's Vocab)
    labels: tuple[str, ...] = ("a", "b")  # class names, in the order of the output scores
    d_model: int = 64  # numbers per position, in every layer
    n_heads: int = 4  # N: attention heads per layer (d_model must divide by it)
    n_layers: int = 2  # L: encoder blocks
    d_ff: int = 128  # hidden units of each block's feed-forward network
    max_len: int = 64  # positions with a learned position vector (>= the longest sentence read)
    dropout: float = 0.1  # dropout on attention weights and residual branches, during training only

    def __post_init__(self):
        self.labels = tuple(self.labels)
        check_sizes(self, vocab=("vocab_size",), labels=("labels",), width=("d_model", "d_ff"),
                    heads=("n_heads",), layers=("n_layers",), positions=("max_len",))
        if self.d_model % self.n_heads:
            raise ValueError("d_model must be a multiple of n_heads")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError("dropout must be in [0, 1)")


class EncoderBlock(nn.Module):
    """Pre-norm transformer block: x + attention(LN(x)), then x + FFN(LN(x))."""

    def __init__(self, config: TransformerClassifierConfig):
        super().__init__()
        self.norm1 = nn.LayerNorm(config.d_model)
        self.attn = MultiHeadAttention(config.d_model, config.n_heads, config.dropout)
        self.dropout = nn.Dropout(config.dropout)
        self.norm2 = nn.LayerNorm(config.d_model)
        self.ffn = nn.Sequential(
            nn.Linear(config.d_model, config.d_ff),
            nn.GELU(),
            nn.Linear(config.d_ff, config.d_model),
            nn.Dropout(config.dropout),
        )

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None, mix: Mix | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """x (B, T, D), mask (B, 1, 1, T) True on real words -> (B, T, D), weights (B, N, T, T); ``mix`` replaces
        the weights (this call only)."""
        mixed, weights = self.attn(self.norm1(x), mask=mask, mix=mix)
        x = x + self.dropout(mixed)  # (B, T, D)
        return x + self.ffn(self.norm2(x)), weights


class TransformerClassifier(ClassifierBase):
    """Word vector + learned position vector -> L encoder blocks -> mean over the words -> linear."""

    family = "transformer"
    has_attention = True

    def __init__(self, config: TransformerClassifierConfig):
        super().__init__()
        self.config = config
        self.labels = config.labels
        self.embedding = nn.Embedding(config.vocab_size, config.d_model, padding_idx=0)
        self.positions = nn.Embedding(config.max_len, config.d_model)
        self.dropout = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(EncoderBlock(config) for _ in range(config.n_layers))
        self.norm = nn.LayerNorm(config.d_model)
        self.head = nn.Linear(config.d_model, len(config.labels))

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """Word vectors x_t (positions not yet added): (B, T) ids -> (B, T, D)."""
        if ids.shape[1] > self.config.max_len:
            raise ValueError(f"this transformer reads at most {self.config.max_len} words")
        return self.embedding(ids)

    def encode(
        self, emb: torch.Tensor, lengths: torch.Tensor, mix: Mix | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Outputs (B, T, D) and the attention weights of every layer, stacked: (B, L, N, T, T); ``mix`` replaces
        every layer's weights (this call only)."""
        length = emb.shape[1]
        steps = torch.arange(length, device=emb.device)
        mask = (steps[None, :] < lengths.to(emb.device)[:, None])[:, None, None, :]  # (B, 1, 1, T): real words
        x = self.dropout(emb + self.positions(steps)[None])  # (B, T, D)
        all_weights = []
        for block in self.blocks:
            x, weights = block(x, mask, mix)  # weights (B, N, T, T)
            all_weights.append(weights)
        return self.norm(x), torch.stack(all_weights, dim=1)

    def forward_from_embeddings(self, emb: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Logits (B, C) from word vectors (B, T, D): mean of the outputs over each sentence's real words."""
        return self.decide(emb, lengths)[0]

    def decide(
        self, emb: torch.Tensor, lengths: torch.Tensor, mix: Mix | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits (B, C) and the weight a_j (B, T) the pooled vector pays each word, from word vectors (B, T, D).

        It classifies from the mean of its last layer's outputs, (1/T) Σ_i z_i, and the last layer's attention
        mixes word j into output i with weight A_ij (one per head), so the mean pays word j
        a_j = (1/N) Σ_heads (1/T) Σ_i A_ij: the last layer's attention averaged over the heads and over the
        attending (real) words. It leaves out the residual path (z_i also carries x_i itself) and what earlier
        layers mixed in, as every attention picture does; it is the one weight per word the picture shows."""
        out, weights = self.encode(emb, lengths, mix)  # (B, T, D), (B, L, N, T, T)
        real = real_words(lengths.to(emb.device), emb.shape[1]).to(out.dtype)  # (B, T)
        pooled = (out * real[..., None]).sum(1) / real.sum(1, keepdim=True)  # (B, D)
        last = weights[:, -1].mean(dim=1)  # (B, T, T): row i attends, averaged over the heads
        attention = (last * real[:, :, None]).sum(dim=1) / real.sum(dim=1, keepdim=True)  # (B, T)
        return self.head(pooled), attention  # (B, C), (B, T)

    def attention_trace(self, tokens, vocab) -> SelfAttentionTrace:
        """Self-attention weights of every layer and head for one sentence: (L, N, T, T)."""
        ids, seen = one_sentence(tokens, vocab)
        with torch.inference_mode():
            ids_t = torch.tensor([ids])  # (1, T)
            _, weights = self.encode(self.embed(ids_t), torch.tensor([len(ids)]))  # (1, L, N, T, T)
        return SelfAttentionTrace(tokens=seen, weights=weights[0].numpy().copy())


