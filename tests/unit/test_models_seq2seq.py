"""The translators: LSTM seq2seq (plain, additive, dot) and the encoder-decoder transformer.

Small untrained models on a tiny vocabulary: shapes, masks, the attention traces' three steps, one
decoder whose only difference is its attention part, greedy steps that agree with teacher forcing, the
encoder's gate replay, and a loss that falls when trained for a few steps. The trained zoo models are
checked by ``evaluate``.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from seqviz.families import get as family
from seqviz.families import lstm_translator_kinds
from seqviz.limits import output_limit
from seqviz.models import attention as attention_module
from seqviz.models.attention import AdditiveAttention, GeneralAttention, NoAttention, attention
from seqviz.models.seq2seq import Seq2Seq, Seq2SeqConfig, attention_part
from seqviz.models.transformer_seq2seq import TransformerSeq2Seq, TransformerSeq2SeqConfig, sinusoidal_positions
from seqviz.text import Vocab
from seqviz.traces import LSTMGateTrace, TransformerTranslationTrace, TranslationTrace

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
KINDS = lstm_translator_kinds()  # every LSTM translator family: its attention part is the only difference


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


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
                  emb_dim=12, hidden=16, attn_dim=16, bidirectional=not family(kind).part_class.one_way_encoder)
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


def test_config_rejects_unknown_kind_impossible_dot_score_and_absurd_sizes():
    with pytest.raises(ValueError):
        Seq2SeqConfig(kind="luong")
    with pytest.raises(ValueError):
        Seq2SeqConfig(kind="dot", dot_score="dot", bidirectional=True)
    Seq2SeqConfig(kind="dot", dot_score="dot", bidirectional=False)  # H == H: fine
    for field, value in (("hidden", 10**6), ("layers", 100), ("src_vocab_size", 3), ("emb_dim", 0)):
        with pytest.raises(ValueError, match=field):
            Seq2SeqConfig(**{field: value})


def test_the_kind_chooses_only_the_attention_part():
    """The bottleneck and attention differ in one part: the encoder and the decoder are the same classes."""
    shipped = {"plain": NoAttention, "additive": AdditiveAttention, "dot": GeneralAttention}
    assert all(family(kind).part_class is part for kind, part in shipped.items())
    models = {kind: lstm_model(kind) for kind in KINDS}
    for kind, model in models.items():
        part = family(kind).part_class
        assert type(model.decoder.attention) is part and type(attention_part(model.config)) is part
        assert model.has_attention == (not part.fixed_context) and model.family == kind
    assert len({type(m.encoder) for m in models.values()}) == len({type(m.decoder) for m in models.values()}) == 1
    encoder_names = {kind: {n for n, _ in m.encoder.named_parameters()} for kind, m in models.items()}
    assert encoder_names["plain"] == encoder_names["additive"] == encoder_names["dot"]
    assert TransformerSeq2Seq.has_attention


@pytest.mark.parametrize("kind", KINDS)
def test_greedy_steps_agree_with_teacher_forcing(kind):
    """step() one word at a time gives the logits forward() gives for all words at once."""
    model = lstm_model(kind, seed=2)
    batch = make_batch([3, 1])
    tgt_in = batch["tgt"][:, :-1]
    with torch.inference_mode():
        all_at_once = model(batch["src"], batch["src_lengths"], tgt_in)  # (B, U, V)
        state = model.start(batch["src"], batch["src_lengths"])
        for t in range(tgt_in.size(1)):
            logits, state, _ = model.step(tgt_in[:, t], state)
            torch.testing.assert_close(logits, all_at_once[:, t], atol=1e-5, rtol=1e-5)


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
    part = family(kind).part_class
    if part.fixed_context:  # the bottleneck
        assert trace.alignment is None and trace.steps == [] and trace.score_rule is None
        return
    assert trace.alignment.shape == (U, T)
    np.testing.assert_allclose(trace.alignment.sum(axis=1), 1.0, atol=1e-5)
    assert len(trace.steps) == U and trace.score_rule.startswith("score_j = ")
    H = model.config.hidden
    for step, token in zip(trace.steps, trace.out_tokens, strict=True):
        assert step.output_token == token
        assert step.query.shape == (H,) and step.scores.shape == (T,) and step.weights.shape == (T,)
        assert step.context.shape == (model.config.encoder_dim,)  # 2H both ways, H one way
        assert step.query_name == ("s_{t-1}" if part.before_step else "s_t")


@pytest.mark.parametrize("kind", ["additive", "dot"])
def test_trace_steps_are_the_chapters_three_steps_and_the_alignment_rows(kind):
    model = lstm_model(kind, seed=3)
    src_ids = SRC_VOCAB.encode(SOURCES[3])
    trace = model.trace(src_ids, SRC_VOCAB, TGT_VOCAB, max_len=8)
    assert len(trace.steps) == len(trace.out_tokens) > 0
    with torch.inference_mode():
        memory = model.encode(torch.tensor([src_ids]), torch.tensor([len(src_ids)]))
        s0 = model.decoder.initial_state(memory)[0][-1, 0].numpy()
    states = memory.states[0].numpy()  # (T, 2H): the encoder states h_j
    for u, step in enumerate(trace.steps):
        softmax = np.exp(step.scores - step.scores.max())
        np.testing.assert_allclose(step.weights, softmax / softmax.sum(), atol=1e-6)  # (2) α = softmax(score)
        np.testing.assert_allclose(step.context, step.weights @ states, atol=1e-5)  # (3) c = Σ α_j h_j
        np.testing.assert_allclose(trace.alignment[u], step.weights, atol=1e-7)
        if kind == "dot":  # (1) score_j = s_t · (W_a h_j)
            keys = memory.keys[0].numpy()  # (T, H)
            np.testing.assert_allclose(step.scores, keys @ step.query, atol=1e-5)
    if kind == "additive":  # (1) the first query is s_0, the decoder's start state built from z
        np.testing.assert_allclose(trace.steps[0].query, s0, atol=1e-6)


@pytest.mark.parametrize("kind", ["additive", "dot"])
def test_attention_sums_to_one_over_real_words_and_is_zero_on_padding(kind):
    model = lstm_model(kind)
    batch = make_batch([0, 3, 2])
    lengths = batch["src_lengths"]
    with torch.inference_mode():
        state = model.start(batch["src"], lengths)
        y = torch.full((3,), BOS)
        for _ in range(4):
            logits, state, details = model.step(y, state)
            weights = details.weights[:, 0]  # (B, T)
            for b, n in enumerate(lengths.tolist()):
                assert float(weights[b, :n].sum()) == pytest.approx(1.0, abs=1e-5)
                assert torch.all(weights[b, n:] == 0)
            y = logits.argmax(-1)


def test_plain_decoder_sees_only_the_final_memory():
    """Changing an encoder state other than the last cannot reach the plain decoder except through z."""
    model = lstm_model("plain")
    batch = make_batch([1])
    with torch.inference_mode():
        memory, lstm_state = model.start(batch["src"], batch["src_lengths"])
        y = torch.tensor([BOS])
        logits_a, _, details = model.step(y, (memory, lstm_state))
        memory.states.mul_(0.0)  # wipe every per-word state; z (memory.final) is kept
        logits_b, _, _ = model.step(y, (memory, lstm_state))
    assert details.weights is None and details.scores is None
    assert torch.allclose(logits_a, logits_b)


def test_two_layer_models_run():
    for kind in KINDS:
        model = lstm_model(kind, layers=2)
        trace = model.trace(SRC_VOCAB.encode(SOURCES[0]), SRC_VOCAB, TGT_VOCAB, max_len=5)
        assert len(trace.out_tokens) <= 5


@pytest.mark.parametrize("kind", KINDS)
def test_encoder_gate_replay_reproduces_its_lstm(kind):
    """gate_trace replays the encoder's first layer, forward direction, on the source words."""
    model = lstm_model(kind)
    sentence = [*SOURCES[1], "zebra"]
    trace = model.gate_trace(sentence, SRC_VOCAB)
    assert isinstance(trace, LSTMGateTrace) and trace.tokens == [*SOURCES[1], "<unk>"]
    with torch.inference_mode():
        memory = model.encode(torch.tensor([SRC_VOCAB.encode(sentence)]), torch.tensor([len(sentence)]))
    H = model.config.hidden
    np.testing.assert_allclose(trace.hidden, memory.states[0, :, :H].numpy(), atol=1e-5)  # →h_j
    assert trace.forget_gate.shape == (len(sentence), H)
    with pytest.raises(ValueError, match="no words"):
        model.gate_trace([], SRC_VOCAB)


@pytest.mark.parametrize("name", ALL_MODELS)
def test_the_decode_length_rule_is_output_limit(name):
    """Untrained models rarely stop: without max_len each sentence stops at output_limit(its length)."""
    model = build(name, seed=5)
    batch = make_batch([0, 3])
    outputs = model.translate(batch["src"], batch["src_lengths"])
    for ids, n in zip(outputs, batch["src_lengths"].tolist(), strict=True):
        assert len(ids) <= output_limit(n)
    src_ids = SRC_VOCAB.encode(SOURCES[0])
    assert len(model.trace(src_ids, SRC_VOCAB, TGT_VOCAB).out_tokens) <= output_limit(len(src_ids))
    assert model.translate(batch["src"], batch["src_lengths"], max_len=0) == [[], []]
    with pytest.raises(ValueError, match="no words"):
        model.trace([], SRC_VOCAB, TGT_VOCAB)


def test_output_limit():
    assert output_limit(10) == 25 and output_limit(0) == 5


# ------------------------------------------------------------------------------------ transformer


def test_one_attention_for_every_transformer():
    """The classifier and the translator use the same multi-head module, built on the same attention()."""
    from seqviz.models.classifiers import TransformerClassifier, TransformerClassifierConfig

    classifier = TransformerClassifier(TransformerClassifierConfig(vocab_size=10, d_model=8, n_heads=2))
    translator = transformer_model()
    kinds = {type(m) for model in (classifier, translator) for m in model.modules() if "Attention" in type(m).__name__}
    assert kinds == {attention_module.MultiHeadAttention}


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
        # eval: positions start at 0, whatever the random state (the same seeds as training's below, which differ)
        torch.manual_seed(1)
        eval_first = float(model.loss(batch))
        torch.manual_seed(2)
        assert float(model.loss(batch)) == eval_first
        model.train()
        torch.manual_seed(1)
        first = float(model.loss(batch))
        torch.manual_seed(2)
        second = float(model.loss(batch))
        model.eval()
    assert first != second  # training: each sentence starts at its own random position
