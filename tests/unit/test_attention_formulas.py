"""Each attention part's formula against a case worked by hand: tiny tensors with set weights, the expected scores,
weights and contexts computed here with scalar arithmetic (math.tanh, math.exp), not with the module's own code.

- additive (Bahdanau): score_j = vᵀ tanh(W s + U h_j + b): a part without the tanh scores 6.5 and 9.5 here;
- scaled dot product: softmax(Q Kᵀ / √d_k) V: without 1/√d_k the weights here are 0.047 / 0.953, not 0.182 / 0.818;
- general (Luong): score_j = s · (W_a h_j), and dot: s · h_j.
"""

from __future__ import annotations

import math

import pytest
import torch

from seqviz.models.attention import AdditiveAttention, EncoderMemory, GeneralAttention, attention


def softmax(scores: list[float]) -> list[float]:
    exps = [math.exp(s) for s in scores]
    return [e / sum(exps) for e in exps]


def memory_of(states: list[list[float]], real: list[bool]) -> EncoderMemory:
    states_t = torch.tensor([states], dtype=torch.float64)  # (1, T, D)
    return EncoderMemory(states=states_t, final=states_t[:, -1], mask=torch.tensor([real]))


def set_weight(layer: torch.nn.Linear, weight, bias=None) -> None:
    with torch.no_grad():
        layer.weight.copy_(torch.tensor(weight, dtype=torch.float64))
        if bias is not None:
            layer.bias.copy_(torch.tensor(bias, dtype=torch.float64))


def test_additive_attention_scores_v_tanh_of_W_s_plus_U_h():
    part = AdditiveAttention(query_dim=2, key_dim=2, attn_dim=2).double()
    set_weight(part.W, [[1.0, 2.0], [0.0, -1.0]])  # W s = (3, -1) for s = (1, 1)
    set_weight(part.U, [[1.0, 0.0], [0.0, 1.0]], bias=[0.5, -0.5])  # U h + b
    set_weight(part.v, [[1.0, -2.0]])
    h = [[0.0, 0.0], [1.0, -1.0], [9.0, 9.0]]  # the third is padding
    memory = part.prepare(memory_of(h, [True, True, False]))
    context, weights, scores = part(torch.tensor([[[1.0, 1.0]]], dtype=torch.float64), memory)
    # W s + U h_1 + b = (3.5, -1.5); W s + U h_2 + b = (4.5, -2.5)
    expected = [math.tanh(3.5) - 2 * math.tanh(-1.5), math.tanh(4.5) - 2 * math.tanh(-2.5)]  # 4.808, 5.964
    assert scores[0, 0, :2].tolist() == pytest.approx(expected, abs=1e-12)
    alpha = softmax(expected)
    assert weights[0, 0].tolist() == pytest.approx([*alpha, 0.0], abs=1e-12)  # padding gets exactly 0
    assert weights[0, 0, 2].item() == 0.0
    assert context[0, 0].tolist() == pytest.approx([alpha[1] * 1.0, alpha[1] * -1.0], abs=1e-12)
    assert softmax([6.5, 9.5])[0] < 0.05 < alpha[0]  # (a part without the tanh would put 0.047 here, not 0.239)


def test_scaled_dot_product_divides_by_the_square_root_of_d_k():
    q = torch.tensor([[[[1.0, 1.0, 1.0, 1.0]]]], dtype=torch.float64)  # (B=1, N=1, Tq=1, d_k=4)
    k = torch.tensor([[[[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]]]], dtype=torch.float64)  # q·k = 1, 4
    v = torch.tensor([[[[2.0, 0.0, 0.0, 0.0], [0.0, 4.0, 0.0, 0.0]]]], dtype=torch.float64)
    out, p = attention(q, k, v)
    alpha = softmax([1 / math.sqrt(4), 4 / math.sqrt(4)])  # 0.5 and 2: weights 0.182, 0.818
    assert p[0, 0, 0].tolist() == pytest.approx(alpha, abs=1e-12)
    assert out[0, 0, 0].tolist() == pytest.approx([2 * alpha[0], 4 * alpha[1], 0.0, 0.0], abs=1e-12)
    assert softmax([1.0, 4.0])[0] == pytest.approx(0.0474, abs=1e-4)  # unscaled, it would differ
    # a masked key gets exactly 0 and the rest renormalise
    out, p = attention(q, k, v, mask=torch.tensor([[[[False, True]]]]))
    assert p[0, 0, 0].tolist() == [0.0, 1.0] and out[0, 0, 0].tolist() == pytest.approx([0.0, 4.0, 0.0, 0.0])


def test_scaled_dot_product_with_d_k_of_9_divides_by_3():
    q = torch.full((1, 1, 1, 9), 1.0, dtype=torch.float64)
    k = torch.zeros((1, 1, 2, 9), dtype=torch.float64)
    k[0, 0, 1] = 1.0  # q·k = 0 and 9: scaled, 0 and 3
    _, p = attention(q, k, torch.eye(2, 9, dtype=torch.float64)[None, None])
    assert p[0, 0, 0].tolist() == pytest.approx(softmax([0.0, 3.0]), abs=1e-12)


def test_general_attention_scores_s_dot_W_a_h():
    part = GeneralAttention(query_dim=2, key_dim=3, general=True).double()
    set_weight(part.W_a, [[1.0, 0.0, 2.0], [0.0, -1.0, 1.0]])  # (query_dim, key_dim)
    h = [[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]]  # W_a h_1 = (1, -1); W_a h_2 = (2, 0)
    memory = part.prepare(memory_of(h, [True, True]))
    s = torch.tensor([[[0.5, 2.0], [1.0, 0.0]]], dtype=torch.float64)  # two decoder steps
    context, weights, scores = part(s, memory)
    expected = [[0.5 * 1 + 2 * -1, 0.5 * 2 + 2 * 0], [1 * 1 + 0 * -1, 1 * 2 + 0 * 0]]  # (-1.5, 1), (1, 2)
    assert scores[0].flatten().tolist() == pytest.approx([x for row in expected for x in row], abs=1e-12)
    for u in range(2):
        alpha = softmax(expected[u])
        assert weights[0, u].tolist() == pytest.approx(alpha, abs=1e-12)
        assert context[0, u].tolist() == pytest.approx(
            [alpha[0] * 1.0, alpha[0] * 1.0 + alpha[1] * 1.0, alpha[1] * 1.0], abs=1e-12)
    assert part.score_rule == "score_j = s_t · (W_a h_j)"


def test_dot_attention_scores_s_dot_h_with_no_weights():
    part = GeneralAttention(query_dim=2, key_dim=2, general=False).double()
    assert part.W_a is None and list(part.parameters()) == []
    memory = part.prepare(memory_of([[1.0, 2.0], [-1.0, 3.0]], [True, True]))
    _, weights, scores = part(torch.tensor([[[2.0, -1.0]]], dtype=torch.float64), memory)
    assert scores[0, 0].tolist() == pytest.approx([0.0, -5.0], abs=1e-12)
    assert weights[0, 0].tolist() == pytest.approx(softmax([0.0, -5.0]), abs=1e-12)
