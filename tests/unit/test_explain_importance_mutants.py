"""Tests written for mutmut's survivors in seqviz/analysis/explain/ (issue 28, scripts/mutation
seqviz/analysis/explain/), the second file: what the ablated translations pass on to the model, the held-out
studies' defaults, the measures' refusals and "it"'s attention, word for word. The first: test_explain_mutants.py.
"""

from __future__ import annotations

import re
import types

import numpy as np
import pytest
import torch

from seqviz.analysis import explain
from seqviz.analysis.explain import importance
from seqviz.models import build
from seqviz.text import Vocab

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

WORDS = [["my", "parcel", "never", "came"], ["it", "is", "broken"], ["the", "bill", "is", "wrong", "it", "says"]]
VOCAB = Vocab.build(WORDS)
TEAMS = ("lost_parcel", "missing_item", "damaged_item", "billing")


def refuses(message: str):
    return pytest.raises(ValueError, match=f"^{re.escape(message)}$")


def classifier(name: str, seed: int = 0):
    torch.manual_seed(seed)
    fields = {"vocab_size": len(VOCAB), "labels": TEAMS}
    if name == "transformer":
        fields |= {"d_model": 8, "n_heads": 2, "n_layers": 2, "d_ff": 16, "max_len": 32}
    else:
        fields |= {"emb_dim": 4, "hidden_dim": 3} | ({"attn_dim": 5} if name == "attention-lstm" else {})
    return build(name, fields).eval()


class Recorder:
    """A translator that answers its source's ids and records what it was asked."""

    def __init__(self):
        self.asked = []

    def translate(self, src, lengths, max_len=None, mix=None):
        self.asked.append((max_len, mix))
        return [row[:n] for row, n in zip(src.tolist(), lengths.tolist(), strict=True)]


def mixes_alike(mix, other, src) -> bool:
    weights = torch.rand(src.shape[0], 1, src.shape[1], generator=torch.Generator().manual_seed(0))
    mask = torch.ones_like(weights, dtype=torch.bool)
    return torch.equal(mix(weights, mask), other(weights, mask))


def test_an_ablated_translation_passes_its_length_and_its_seeded_mix_on():
    vocabularies = {"src": VOCAB, "tgt": VOCAB}
    model = Recorder()
    assert explain.translate_with(model, vocabularies, WORDS[2], "permuted", seed=5, max_len=4) == WORDS[2]
    max_len, mix = model.asked[-1]
    src = torch.tensor([VOCAB.encode(WORDS[2])])
    assert max_len == 4 and mixes_alike(mix, explain.permutation_mix(src, torch.tensor([6]), seed=5), src)
    assert not mixes_alike(mix, explain.permutation_mix(src, torch.tensor([6]), seed=0), src)
    explain.translate_with(model, vocabularies, WORDS[2], "permuted")
    assert model.asked[-1][0] is None and mixes_alike(model.asked[-1][1], explain.permutation_mix(
        src, torch.tensor([6])), src)
    explain.translate_with(model, vocabularies, WORDS[2], "none")
    assert model.asked[-1] == (None, None)


def test_the_held_out_exact_match_passes_each_batch_on_with_its_mix():
    src, lengths = torch.tensor([VOCAB.encode(WORDS[2])]), torch.tensor([6])

    def translate(ablated, sources):
        return [VOCAB.decode(ablated.translate(src, lengths, 9)[0]) for _ in sources]

    pairs = [types.SimpleNamespace(src=WORDS[2], tgt=WORDS[2])]
    task = types.SimpleNamespace(max_train_src_len=6, splits=types.SimpleNamespace(test=pairs), translate=translate)
    model = Recorder()
    assert explain.held_out_exact_match(model, task, "permuted", seed=3).exact_match == 1.0
    assert model.asked[-1][0] == 9 and mixes_alike(model.asked[-1][1], explain.permutation_mix(src, lengths, 3), src)
    explain.held_out_exact_match(model, task, "uniform")
    assert model.asked[-1] == (9, explain.uniform_weights)


def test_the_held_out_studies_take_300_sentences_and_200_emails_and_two_measures(monkeypatch):
    asked = {}
    monkeypatch.setattr(importance.batches, "held_out_pairs", lambda task, limit: asked.setdefault("pairs", limit)
                        and [])
    monkeypatch.setattr(importance.batches, "held_out_emails", lambda task, limit: asked.setdefault("emails", limit)
                        and [])
    task = types.SimpleNamespace(src_vocab=VOCAB, vocab=VOCAB)
    from seqviz.models.seq2seq import Seq2Seq, Seq2SeqConfig

    translator = Seq2Seq(Seq2SeqConfig(kind="dot", src_vocab_size=len(VOCAB), tgt_vocab_size=len(VOCAB), emb_dim=4,
                                       hidden=4, attn_dim=4, bidirectional=False)).eval()
    taus = explain.held_out_taus(translator, task)
    assert (taus.inputs, taus.outputs) == (0, 0) and taus.agreement["gradient"].tau == []
    assert explain.held_out_classifier_taus(classifier("attention-lstm"), task).inputs == 0
    assert asked == {"pairs": 300, "emails": 200}


def test_held_out_classifier_taus_one_entry_per_email_of_each_statistic(monkeypatch):
    taken = []
    real = importance.measure
    monkeypatch.setattr(importance, "measure", lambda *args: taken.append(args[-1]) or real(*args))
    task = types.SimpleNamespace(vocab=VOCAB, splits=types.SimpleNamespace(
        test=[types.SimpleNamespace(tokens=tuple(w)) for w in WORDS]))
    model = classifier("attention-lstm", seed=3)
    taus = explain.held_out_classifier_taus(model, task, limit=None)
    assert taken == [importance.HELD_OUT_MEASURES] and (taus.inputs, taus.outputs) == (3, 3)
    one = [explain.explain_classification(model, VOCAB, w) for w in WORDS]
    for measure in importance.HELD_OUT_MEASURES:
        for statistic in explain.STATISTICS:
            assert getattr(taus.agreement[measure], statistic) == [e.agrees(measure, statistic) for e in one]
    assert all(isinstance(t, bool) for t in taus.agreement["gradient"].top1 if t is not None)


def test_a_classifier_that_does_not_attend_has_no_taus():
    task = types.SimpleNamespace(vocab=VOCAB, splits=types.SimpleNamespace(test=[]))
    with refuses("a GRUClassifier does not attend: there is no attention to compare"):
        explain.held_out_classifier_taus(classifier("gru"), task)
    with refuses("a object does not attend: there is no attention to compare"):
        explain.held_out_classifier_taus(object(), task)


def test_the_measures_refuse_word_for_word():
    model = classifier("attention-lstm")
    with refuses("measures are ('gradient', 'gradient_x_input', 'integrated_gradients', 'leave_one_out'), not "
                 "['saliency']"):
        explain.measure(model, [[5]], [[0]], 1, measures=("gradient", "saliency"))
    with refuses("The sentence has no words to read: type at least one word."):
        explain.measure(model, [[5], []], [[0], [0]], 1)
    with refuses("The email has no words to read: type at least one word."):
        explain.explain_emails(model, [[5], []], 1)


def test_an_input_without_outputs_gets_empty_rows_of_the_measures_asked_for():
    attends, plain = classifier("attention-lstm"), classifier("gru")
    empty = explain.measure(attends, [[5, 6, 7]], [[]], 1, measures=("integrated_gradients", "gradient"))[0]
    assert empty.attention.shape == empty.gradient.shape == empty.integrated_gradients.shape == (0, 3)
    assert empty.leave_one_out is None and empty.gradient_x_input is None and empty.log_prob.shape == (0,)
    assert empty.completeness_gap.shape == (0,) and set(empty.agreement) == {"gradient", "integrated_gradients"}
    assert empty.agreement["gradient"].tau == [] and empty.measures == ("gradient", "integrated_gradients")
    bare = explain.measure(plain, [[5, 6]], [[]], 1, measures=("gradient",))[0]
    assert bare.attention is None and bare.agreement == {} and bare.completeness_gap is None


def test_a_translations_mean_agreement_per_statistic(monkeypatch):
    rows = explain.Agreement(tau=[0.5, None, -0.25], weighted_tau=[0.1, 0.2, None], top1=[True, False, None],
                             top3=[None, None, True])
    explained = importance.TranslationExplanation(
        attention=None, gradient=None, gradient_x_input=None, integrated_gradients=None, leave_one_out=None,
        log_prob=np.zeros(0), completeness_gap=None, agreement={"gradient": rows})
    assert explained.mean("gradient") == 0.125 and explained.mean("gradient", "top1") == 0.5
    assert explained.mean("gradient", "weighted_tau") == pytest.approx(0.15)


def test_where_it_looks_and_its_refusals():
    model = classifier("transformer", seed=6)
    found = explain.pronoun_attention(model, VOCAB, WORDS[2])
    assert found.word == "it" and found.position == 4 and found.tokens == WORDS[2]
    assert found.weights.shape == (2, 2, 6) and np.allclose(found.weights.sum(-1), 1.0)
    assert explain.pronoun_attention(model, VOCAB, WORDS[2], word="IS").position == 2  # read as the model reads
    assert explain.pronoun_attention(model, VOCAB, WORDS[0]) is None
    with refuses("ask about one word, not 'it is'"):
        explain.pronoun_attention(model, VOCAB, WORDS[2], word="it is")
    with refuses("the attention of one word to every word, per layer and head, is a transformer's, not a "
                 "AttentionLSTMClassifier's"):
        explain.pronoun_attention(classifier("attention-lstm"), VOCAB, WORDS[2])


def test_without_tokens_the_ids_are_shown_and_probabilities_are_float64():
    model = classifier("attention-lstm", seed=2)
    email = explain.explain_emails(model, [[5, 6, 7]], 1, measures=("gradient",))[0]
    assert email.tokens == ["5", "6", "7"] and email.probs.dtype == np.float64 and email.leave_one_out is None
    assert email.probs.sum() == pytest.approx(1.0)
    translator = tiny_translator()
    sentence = explain.explain_many(translator, [[5, 6]], [[7, 8, 9]], 1, measures=("gradient",))[0]
    assert sentence.src_tokens == ["5", "6"] and sentence.out_tokens == ["7", "8", "9"]


def tiny_translator():
    from seqviz.models.seq2seq import Seq2Seq, Seq2SeqConfig

    torch.manual_seed(0)
    return Seq2Seq(Seq2SeqConfig(kind="dot", src_vocab_size=len(VOCAB), tgt_vocab_size=len(VOCAB), emb_dim=4,
                                 hidden=4, attn_dim=4, bidirectional=False)).eval()


def test_held_out_taus_take_the_two_measures_only(monkeypatch):
    taken = []
    real = importance.measure
    monkeypatch.setattr(importance, "measure", lambda *args: taken.append(args[-1]) or real(*args))
    task = types.SimpleNamespace(src_vocab=VOCAB, max_train_src_len=6, splits=types.SimpleNamespace(
        test=[types.SimpleNamespace(src=w) for w in WORDS]))
    taus = explain.held_out_taus(tiny_translator(), task, limit=None)
    assert taken == [importance.HELD_OUT_MEASURES] and taus.inputs == 3 and set(taus.agreement) == {
        "gradient", "leave_one_out"}
