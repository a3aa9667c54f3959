"""Why recurrence lost, measured: an LSTM's T sequential steps against attention's one step.

The chapter's code, with its shapes:

    emails = torch.randn(8, 40, 64)                       # (B, T, E)
    out, (h, c) = nn.LSTM(64, 128, batch_first=True)(emails)      # out (8, 40, 128), h (1, 8, 128)
    mixed, weights = nn.MultiheadAttention(64, 4, batch_first=True)(emails, emails, emails)
                                                          # mixed (8, 40, 64), weights (8, 40, 40)

Timings are wall-clock medians on this machine (noisy when it is shared); they are reported, never
asserted.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class ChapterShapes:
    emails: tuple[int, ...]
    out: tuple[int, ...]
    h: tuple[int, ...]
    mixed: tuple[int, ...]
    weights: tuple[int, ...]


def chapter_shapes(seed: int = 0) -> ChapterShapes:
    """Run the chapter's code and return the shapes it prints (the process's random state is left alone)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        emails = torch.randn(8, 40, 64)  # (1) 8 emails, 40 words each, 64 numbers per word
        lstm = nn.LSTM(input_size=64, hidden_size=128, batch_first=True)
        attn = nn.MultiheadAttention(embed_dim=64, num_heads=4, batch_first=True)
    with torch.inference_mode():
        out, (h, _c) = lstm(emails)  # (2) reads the 40 words in order
        mixed, weights = attn(emails, emails, emails)  # (3) every word looks at every word, all at once
    return ChapterShapes(tuple(emails.shape), tuple(out.shape), tuple(h.shape), tuple(mixed.shape),
                         tuple(weights.shape))


@dataclass(frozen=True)
class TimingRow:
    length: int
    layer: str  # "LSTM (T sequential steps)" or "self-attention (one step)"
    milliseconds: float  # median forward time of one batch


LSTM_LABEL = "LSTM layer (T steps, one after another)"
ATTENTION_LABEL = "self-attention layer (all positions at once)"


def _median_ms(fn, repeats: int) -> float:
    fn()  # warm up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return times[len(times) // 2]


def forward_times(lengths=(10, 20, 40, 80, 160, 320), batch: int = 8, dim: int = 64, repeats: int = 5,
                  lstm_step_by_step: bool = True) -> list[TimingRow]:
    """Median forward time of an LSTM layer and a self-attention layer as the sequence grows.

    ``lstm_step_by_step`` runs the LSTM as the chapter describes it, one ``LSTMCell`` call per word in a
    Python loop (what any GPU implementation must do in order); otherwise ``nn.LSTM``'s fused kernel,
    which still walks the T steps in order inside.
    """
    generator = torch.Generator().manual_seed(0)  # the inputs; the process's random state is left alone
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)  # the layers' initial weights
        lstm = nn.LSTM(dim, dim, batch_first=True)
        cell = nn.LSTMCell(dim, dim)
        attn = nn.MultiheadAttention(dim, num_heads=4, batch_first=True)
    rows = []
    with torch.inference_mode():
        for length in lengths:
            x = torch.randn(batch, length, dim, generator=generator)  # (B, T, E)

            def run_lstm(x=x):
                if not lstm_step_by_step:
                    return lstm(x)
                h = c = torch.zeros(batch, dim)
                for t in range(x.shape[1]):  # step t must wait for step t-1
                    h, c = cell(x[:, t], (h, c))
                return h

            def run_attention(x=x):
                return attn(x, x, x, need_weights=False)

            rows.append(TimingRow(length, LSTM_LABEL, _median_ms(run_lstm, repeats)))
            rows.append(TimingRow(length, ATTENTION_LABEL, _median_ms(run_attention, repeats)))
    return rows
