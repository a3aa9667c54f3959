"""The translators: LSTM seq2seq (plain, additive, dot) and the encoder-decoder transformer.

Small untrained models on a tiny vocabulary: shapes, masks, the additive trace's three steps, and a
loss that falls when trained for a few steps. The trained zoo models are checked by ``evaluate``.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from seqviz.models.seq2seq import KINDS, RECOMMENDED_TRAINING, Seq2Seq, Seq2SeqConfig
from seqviz.models.transformer_seq2seq import (
    TransformerSeq2Seq,
    TransformerSeq2SeqConfig,
    attention,
    sinusoidal_positions,
)
from seqviz.text import Vocab
from seqviz.traces import TransformerTranslationTrace, TranslationTrace

SOURCES = [
    "the parcel arrived .".split(),
    "my red phone never arrived .".split(),
    "where is my order ?".split(),
    "the wrong cable was shipped and the box arrived .".split(),
]
TARGETS = [
    "le colis est arrivé .".split(),
    "mon téléphone rouge n' est jamais arrivé .".split(),
    "où est ma commande ?".split(),
    "le mauvais câble a été expédié et la boîte est arrivée .".split(),
]
SRC_VOCAB = Vocab.build(SOURCES)
TGT_VOCAB = Vocab.build(TARGETS)
BOS, EOS = 2, 3


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny tensors: one thread is fastest, and kind to a shared machine."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def make_batch(rows: list[int]) -> dict[str, torch.Tensor]:
    src = [SRC_VOCAB.encode(SOURCES[i]) for i in rows]
    tgt = [[BOS, *TGT_VOCAB.encode(TARGETS[i]), EOS] for i in rows]
    batch_src = torch.zeros(len(rows), max(map(len, src)), dtype=torch.long)
    batch_tgt = torch.zeros(len(rows), max(map(len, tgt)), dtype=torch.long)
    for r, (s, t) in enumerate(zip(src, tgt, strict=True)):
        batch_src[r, : len(s)] = torch.tensor(s)
        batch_tgt[r, : len(t)] = torch.tensor(t)
    return {"src": batch_src, "src_lengths": torch.tensor([len(s) for s in src]), "tgt": batch_tgt}


def lstm_model(kind: str, seed: int = 0, **overrides) -> Seq2Seq:
    torch.manual_seed(seed)
    fields = dict(kind=kind, src_vocab_size=len(SRC_VOCAB), tgt_vocab_size=len(TGT_VOCAB),
                  emb_dim=12, hidden=16, attn_dim=16)
    fields.update(overrides)
    return Seq2Seq(Seq2SeqConfig(**fields)).eval()


def transformer_model(seed: int = 0) -> TransformerSeq2Seq:
    torch.manual_seed(seed)
    config = TransformerSeq2SeqConfig(src_vocab_size=len(SRC_VOCAB), tgt_vocab_size=len(TGT_VOCAB),
                                      d_model=16, n_heads=2, enc_layers=2, dec_layers=3, d_ff=32)
    return TransformerSeq2Seq(config).eval()


ALL_MODELS = [*(pytest.param(k, id=k) for k in KINDS), pytest.param("transformer", id="transformer")]


def build(name: str, seed: int = 0):
    return transformer_model(seed) if name == "transformer" else lstm_model(name, seed)


# ------------------------------------------------------------------------------------ every translator


@pytest.mark.parametrize("name", ALL_MODELS)
def test_loss_is_a_finite_scalar_with_gradients(name):
    model = build(name).train()
    loss = model.loss(make_batch([0, 1, 2, 3]))
    assert loss.shape == () and torch.isfinite(loss)
    loss.backward()
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad and p.dim() > 1)


@pytest.mark.parametrize("name", ALL_MODELS)
def test_translate_returns_one_id_list_per_sentence_without_specials(name):
    model = build(name)
    batch = make_batch([0, 1, 2])
    outputs = model.translate(batch["src"], batch["src_lengths"], max_len=7)
    assert len(outputs) == 3
    for ids in outputs:
        assert len(ids) <= 7
        assert all(isinstance(i, int) and 0 <= i < len(TGT_VOCAB) and i not in (BOS, EOS) for i in ids)


@pytest.mark.parametrize("name", ALL_MODELS)
def test_padding_a_batch_does_not_change_a_translation(name):
    model = build(name)
    alone = make_batch([0])
    padded = make_batch([0, 3])  # sentence 3 is longer: sentence 0 is padded
    assert padded["src"].shape[1] > alone["src"].shape[1]
    out_alone = model.translate(alone["src"], alone["src_lengths"], max_len=12)[0]
    out_padded = model.translate(padded["src"], padded["src_lengths"], max_len=12)[0]
    assert out_alone == out_padded


@pytest.mark.parametrize("name", ALL_MODELS)
def test_loss_falls_when_a_tiny_model_trains(name):
    model = build(name).train()
    batch = make_batch([0, 1, 2, 3])
    step_size = 1.0 if name == "transformer" else 2.0  # large steps: few of them, tiny model
    first = float(model.loss(batch).detach())
    for _ in range(30):  # plain gradient descent (a torch.optim optimizer's first step imports for seconds)
        model.zero_grad()
        model.loss(batch).backward()
        with torch.no_grad():
            for p in model.parameters():
                if p.grad is not None:
                    p -= step_size * p.grad
    assert float(model.loss(batch).detach()) < 0.5 * first


@pytest.mark.parametrize("name", ALL_MODELS)
def test_trace_keeps_no_state_on_the_model(name):
    model = build(name)
    before = {k: id(v) for k, v in vars(model).items()}
    model.trace(SRC_VOCAB.encode(SOURCES[1]), SRC_VOCAB, TGT_VOCAB, max_len=6)
    assert {k: id(v) for k, v in vars(model).items()} == before


# ------------------------------------------------------------------------------------ LSTM seq2seq


def test_config_rejects_unknown_kind_and_impossible_dot_score():
    with pytest.raises(ValueError):
        Seq2SeqConfig(kind="luong")
    with pytest.raises(ValueError):
        Seq2SeqConfig(kind="dot", dot_score="dot", bidirectional=True)
    Seq2SeqConfig(kind="dot", dot_score="dot", bidirectional=False)  # H == H: fine


def test_recommended_training_covers_every_kind_with_the_same_budget_for_plain_and_additive():
    assert set(RECOMMENDED_TRAINING) == set(KINDS)
    for key in ("steps", "batch_size", "lr", "clip"):
        assert RECOMMENDED_TRAINING["plain"][key] == RECOMMENDED_TRAINING["additive"][key]


@pytest.mark.parametrize("kind", KINDS)
def test_trace_shapes(kind):
    model = lstm_model(kind)
    src_ids = SRC_VOCAB.encode(SOURCES[1])
    trace = model.trace(src_ids, SRC_VOCAB, TGT_VOCAB, max_len=9)
    assert isinstance(trace, TranslationTrace)
    assert trace.src_tokens == SOURCES[1]
    out = model.translate(torch.tensor([src_ids]), torch.tensor([len(src_ids)]), max_len=9)[0]
    assert trace.out_tokens == TGT_VOCAB.decode(out)
    U, T = len(trace.out_tokens), len(src_ids)
    if kind == "plain":
        assert trace.alignment is None and trace.steps == []
        return
    assert trace.alignment.shape == (U, T)
    np.testing.assert_allclose(trace.alignment.sum(axis=1), 1.0, atol=1e-5)
    if kind == "dot":
        assert trace.steps == []
    else:
        assert len(trace.steps) == U
        H = model.config.hidden
        for step, token in zip(trace.steps, trace.out_tokens, strict=True):
            assert step.output_token == token
            assert step.query.shape == (H,) and step.scores.shape == (T,) and step.weights.shape == (T,)
            assert step.context.shape == (2 * H,)


def test_additive_trace_steps_are_the_chapters_three_steps_and_the_alignment_rows():
    model = lstm_model("additive", seed=3)
    src_ids = SRC_VOCAB.encode(SOURCES[3])
    trace = model.trace(src_ids, SRC_VOCAB, TGT_VOCAB, max_len=8)
    assert len(trace.steps) == len(trace.out_tokens) > 0
    with torch.inference_mode():
        enc = model.encode(torch.tensor([src_ids]), torch.tensor([len(src_ids)]))
    states = enc.states[0].numpy()  # (T, 2H): the encoder states h_j
    for u, step in enumerate(trace.steps):
        softmax = np.exp(step.scores - step.scores.max())
        np.testing.assert_allclose(step.weights, softmax / softmax.sum(), atol=1e-6)  # (2) α = softmax(score)
        np.testing.assert_allclose(step.context, step.weights @ states, atol=1e-5)  # (3) c = Σ α_j h_j
        np.testing.assert_allclose(trace.alignment[u], step.weights, atol=1e-7)
    # (1) the first query is s_0, the decoder's start state built from the encoder's final memory
    with torch.inference_mode():
        s0 = model.initial_state(enc)[0][-1, 0].numpy()
    np.testing.assert_allclose(trace.steps[0].query, s0, atol=1e-6)


@pytest.mark.parametrize("kind", ["additive", "dot"])
def test_attention_sums_to_one_over_real_words_and_is_zero_on_padding(kind):
    model = lstm_model(kind)
    batch = make_batch([0, 3, 2])
    lengths = batch["src_lengths"]
    with torch.inference_mode():
        enc = model.encode(batch["src"], lengths)
        state = model.initial_state(enc)
        y = torch.full((3,), BOS)
        for _ in range(4):
            logits, state, info = model.step(y, state, enc)
            weights = info["weights"]  # (B, T)
            for b, n in enumerate(lengths.tolist()):
                assert float(weights[b, :n].sum()) == pytest.approx(1.0, abs=1e-5)
                assert torch.all(weights[b, n:] == 0)
            y = logits.argmax(-1)


def test_plain_decoder_sees_only_the_final_memory():
    """Changing an encoder state other than the last cannot reach the plain decoder except through z."""
    model = lstm_model("plain")
    batch = make_batch([1])
    with torch.inference_mode():
        enc = model.encode(batch["src"], batch["src_lengths"])
        state = model.initial_state(enc)
        y = torch.tensor([BOS])
        logits_a, _, info = model.step(y, state, enc)
        enc.states.mul_(0.0)  # wipe every per-word state; z (enc.final) is kept
        logits_b, _, _ = model.step(y, state, enc)
    assert info == {}
    assert torch.allclose(logits_a, logits_b)


def test_two_layer_models_run():
    for kind in KINDS:
        model = lstm_model(kind, layers=2)
        trace = model.trace(SRC_VOCAB.encode(SOURCES[0]), SRC_VOCAB, TGT_VOCAB, max_len=5)
        assert len(trace.out_tokens) <= 5


# ------------------------------------------------------------------------------------ transformer


def test_attention_returns_its_weights_and_respects_the_mask():
    q, k, v = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 5, 4), torch.randn(1, 2, 5, 4)
    mask = torch.tensor([True, True, True, False, False])[None, None, None, :]
    out, p = attention(q, k, v, mask)
    assert out.shape == (1, 2, 3, 4) and p.shape == (1, 2, 3, 5)
    assert torch.allclose(p.sum(-1), torch.ones(1, 2, 3))
    assert torch.all(p[..., 3:] == 0)


def test_sinusoidal_positions_cover_long_sentences():
    pe = sinusoidal_positions(100, 16)
    assert pe.shape == (100, 16)
    assert torch.allclose(pe[0, 0::2], torch.zeros(8)) and torch.allclose(pe[0, 1::2], torch.ones(8))
    assert len({tuple(row.round(decimals=4).tolist()) for row in pe}) == 100  # every position distinct


def test_transformer_trace_shapes_and_masks():
    model = transformer_model()
    src_ids = SRC_VOCAB.encode(SOURCES[3])
    trace = model.trace(src_ids, SRC_VOCAB, TGT_VOCAB, max_len=6)
    assert isinstance(trace, TransformerTranslationTrace)
    L_enc, L_dec, N = model.config.enc_layers, model.config.dec_layers, model.config.n_heads
    T, U = len(src_ids), len(trace.out_tokens)
    assert trace.src_tokens == SOURCES[3]
    assert trace.encoder_self.shape == (L_enc, N, T, T)
    assert trace.decoder_self.shape == (L_dec, N, U, U)
    assert trace.cross.shape == (L_dec, N, U, T)
    assert trace.alignment.shape == (U, T)
    np.testing.assert_allclose(trace.encoder_self.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(trace.cross.sum(-1), 1.0, atol=1e-5)
    if U > 1:  # causal: nobody looks at a word not yet written
        assert np.all(np.triu(trace.decoder_self, k=1) == 0)


def test_transformer_encoder_never_attends_to_padding():
    model = transformer_model()
    batch = make_batch([0, 3])
    with torch.inference_mode():
        _, _, weights = model.encode(batch["src"], batch["src_lengths"])
    n = int(batch["src_lengths"][0])
    for w in weights:  # (B, N, T, T)
        assert torch.all(w[0, :, :, n:] == 0)


def test_position_shift_only_acts_in_training():
    model = transformer_model()
    assert model.config.max_position_shift > 0
    batch = make_batch([0, 1, 2, 3])
    with torch.inference_mode():
        assert float(model.loss(batch)) == float(model.loss(batch))  # eval: positions start at 0
        model.train()
        torch.manual_seed(1)
        first = float(model.loss(batch))
        torch.manual_seed(2)
        second = float(model.loss(batch))
        model.eval()
    assert first != second  # training: each sentence starts at its own random position
