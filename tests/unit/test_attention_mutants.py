"""Tests written for mutmut's survivors in seqviz/models/attention.py (issue 28, scripts/mutation
seqviz/models/attention.py): a mix given to attention (both of its arguments, and what it returns is what mixes the
values), dropout on the mixing weights only, the parts' defaults and every refusal word for word."""

from __future__ import annotations

import math
import re
from types import SimpleNamespace

import pytest
import torch

from seqviz.models.attention import (
    AdditiveAttention,
    DecoderAttention,
    EncoderMemory,
    GeneralAttention,
    MultiHeadAttention,
    attention,
)


def refuses(message: str):
    return pytest.raises(ValueError, match=f"^{re.escape(message)}$")


def test_scaled_dot_product_of_one_query_by_hand():
    """Shapes without batch or head axes (the formula works on the last two): q·k / √2 for keys (1, 0), (0, 1)."""
    q, k = torch.tensor([[2.0, 0.0]]), torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    v = torch.tensor([[10.0], [20.0]])
    out, p = attention(q, k, v)
    first = math.exp(2 / math.sqrt(2)) / (math.exp(2 / math.sqrt(2)) + 1)
    assert p.shape == (1, 2) and p[0].tolist() == pytest.approx([first, 1 - first])
    assert out.shape == (1, 1) and out.item() == pytest.approx(10 * first + 20 * (1 - first))


def test_a_mix_gets_the_weights_and_the_mask_and_its_weights_mix_the_values():
    q, k = torch.zeros(1, 1, 1, 2), torch.zeros(1, 1, 3, 2)
    v = torch.tensor([1.0, 2.0, 4.0]).view(1, 1, 3, 1)
    mask = torch.tensor([True, True, False]).view(1, 1, 1, 3)
    seen = {}

    def mix(weights, given_mask):
        seen["weights"], seen["mask"] = weights.tolist(), given_mask
        return torch.tensor([0.0, 1.0, 0.0]).view(1, 1, 1, 3)

    out, p = attention(q, k, v, mask, mix=mix)
    assert seen["weights"] == [[[[0.5, 0.5, 0.0]]]] and seen["mask"] is mask
    assert p.tolist() == [[[[0.0, 1.0, 0.0]]]] and out.item() == 2.0


def test_multi_head_attention_passes_its_mix_on():
    torch.manual_seed(0)
    part = MultiHeadAttention(4, 2).eval()
    x = torch.randn(1, 3, 4)
    _, p = part(x, mix=lambda weights, mask: torch.full_like(weights, 1 / 3))
    assert torch.equal(p, torch.full((1, 2, 3, 3), 1 / 3))


def test_dropout_acts_on_the_mixing_weights_only_and_is_off_by_default():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 8)
    plain = MultiHeadAttention(8, 2)  # dropout 0 by default: training and eval give the same numbers
    assert torch.allclose(plain.train()(x)[0], plain.eval()(x)[0])
    dropping = MultiHeadAttention(8, 2, dropout=0.5).train()
    dropping.load_state_dict(plain.state_dict())
    out, p = dropping(x)
    assert not torch.allclose(out, plain.eval()(x)[0])  # some weights dropped, the rest scaled by 2
    assert torch.allclose(p.sum(-1), torch.ones(2, 2, 5))  # the weights returned are the softmax's, undropped
    assert torch.allclose(p, plain.eval()(x)[1])


def test_heads_must_divide_the_width():
    with refuses("d_model (6) must be divisible by n_heads (4)"):
        MultiHeadAttention(6, 4)


def test_a_decoder_part_uses_its_memorys_mix_with_the_weights_and_the_mask():
    seen = {}

    def mix(weights, mask):
        seen["weights"], seen["mask"] = weights.tolist(), mask.tolist()
        return weights.flip(-1)

    memory = EncoderMemory(states=torch.zeros(1, 2, 3), final=torch.zeros(1, 3),
                           mask=torch.tensor([[True, True]]), mix=mix)
    weights = DecoderAttention.weigh(torch.tensor([[[math.log(3.0), 0.0]]]), memory)
    assert seen == {"weights": [[[pytest.approx(0.75), pytest.approx(0.25)]]], "mask": [[[True, True]]]}
    assert weights.tolist() == [[[pytest.approx(0.25), pytest.approx(0.75)]]]


def test_a_part_that_needs_a_one_way_encoder_says_so():
    class OneWay(DecoderAttention):
        one_way_encoder = True

    OneWay.check(SimpleNamespace(kind="oneway", bidirectional=False))
    with refuses("the oneway attention compares s_t (H,) with h_j (2H,): use a one-way encoder (bidirectional False)"):
        OneWay.check(SimpleNamespace(kind="oneway", bidirectional=True))


def test_general_attention_refuses_word_for_word():
    with refuses("dot_score must be 'general' or 'dot', not 'cosine'"):
        GeneralAttention.check(SimpleNamespace(dot_score="cosine", bidirectional=False))
    with refuses("dot_score='dot' compares s_t (H,) with h_j (2H,): use a unidirectional encoder"):
        GeneralAttention.check(SimpleNamespace(dot_score="dot", bidirectional=True))
    GeneralAttention.check(SimpleNamespace(dot_score="dot", bidirectional=False))
    with refuses("s_t · h_j needs s_t (4) and h_j (8) of one size"):
        GeneralAttention(4, 8, general=False)


def test_general_is_the_default_and_the_config_chooses_dot():
    assert GeneralAttention(4, 8).W_a is not None and GeneralAttention(4, 8).score_rule == "score_j = s_t · (W_a h_j)"
    dot = GeneralAttention.from_config(SimpleNamespace(hidden=4, encoder_dim=4, dot_score="dot"))
    assert dot.W_a is None and dot.score_rule == "score_j = s_t · h_j"
    general = GeneralAttention.from_config(SimpleNamespace(hidden=4, encoder_dim=8, dot_score="general"))
    assert general.W_a.weight.shape == (4, 8)


def test_the_parts_biases():
    """vᵀ tanh(W s + U h): only U has a bias; W_a h has none."""
    additive = AdditiveAttention(3, 5, 7)
    assert additive.W.bias is None and additive.U.bias.shape == (7,) and additive.v.bias is None
    assert GeneralAttention(3, 5).W_a.bias is None
