"""Batched greedy decoding gives the same words as decoding one sentence at a time.

The chapter-pairs table (seqviz.analysis.translation_check.chapter_table) decodes every sentence of a
translator in one padded batch; the pages' one-sentence path (``Checkpoint.translation``, a trace) decodes
them one by one. Checked on every shipped translator, on the chapter's sentences, held-out sentences of
every length and random id sequences (unknown words included), and on the LSTM encoder's two paths (the
padded one that trains, the packed one that evaluates).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from seqviz import zoo
from seqviz.analysis.translation_check import chapter_table, translate_all
from seqviz.data.translation import CHAPTER_PAIRS, make_translation_splits
from seqviz.models.seq2seq import Seq2Seq, Seq2SeqConfig, reverse_within
from seqviz.tracing import trace

TRANSLATORS = ["plain", "additive", "dot", "transformer-translator"]


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


@pytest.fixture(scope="module")
def checkpoints():
    return {name: zoo.load(name) for name in TRANSLATORS}  # every translator ships: a missing file fails here


def sentences() -> list[list[str]]:
    """The chapter's six, two held-out sentences of each length bucket (5 to 45 tokens), in mixed order."""
    test = make_translation_splits().test
    picked = [list(p.src) for p in test[::75]]
    return [english.split() for english, _ in CHAPTER_PAIRS] + picked[::-1]


@pytest.mark.parametrize("name", TRANSLATORS)
def test_batch_decode_matches_one_at_a_time_on_shipped_translators(checkpoints, name):
    ck = checkpoints[name]
    batch = sentences()
    together = translate_all(ck, batch)
    alone = [trace(ck, "translator", tokens).out_tokens for tokens in batch]
    assert together == alone


@pytest.mark.parametrize("name", TRANSLATORS)
def test_batch_decode_matches_one_at_a_time_on_random_ids(checkpoints, name):
    """Random ids (any word of the vocabulary, <unk> included) of 1 to 45 tokens: outputs that run to the length
    limit, stop at once or anywhere between must still agree row by row."""
    model = checkpoints[name].model
    vocab_size = len(checkpoints[name].vocabularies["src"])
    rng = np.random.default_rng(9)
    sources = [rng.integers(1, vocab_size, size=int(n)).tolist() for n in rng.integers(1, 46, size=16)]
    together = model.translate_many(sources)
    alone = [model.translate_many([ids])[0] for ids in sources]
    assert together == alone
    assert [len(out) for out in together] != [0] * len(sources)


def test_batch_decode_respects_max_len_and_empty_input(checkpoints):
    model = checkpoints["dot"].model
    ids = checkpoints["dot"].vocabularies["src"].encode("the parcel arrived .".split())
    assert model.translate_many([ids, ids], max_len=2) == [model.translate_many([ids])[0][:2]] * 2
    assert model.translate_many([]) == []
    with pytest.raises(ValueError):
        model.translate_many([ids, []])


def test_chapter_table_rows(checkpoints):
    rows = chapter_table([("dot", checkpoints["dot"])])
    assert [row["English"] for row in rows] == [english for english, _ in CHAPTER_PAIRS]
    assert [row["reference French"] for row in rows] == [french for _, french in CHAPTER_PAIRS]
    for row, (english, french) in zip(rows, CHAPTER_PAIRS, strict=True):
        out = trace(checkpoints["dot"], "translator", english.split()).out_tokens
        assert row["dot"] == ("✓" if out == french.split() else "✗ " + " ".join(out))


# ------------------------------------------------------------------------ the encoder's two paths


def test_reverse_within_reverses_each_row_in_its_own_length():
    x = torch.arange(10).reshape(2, 5, 1).float()
    out = reverse_within(x, torch.tensor([3, 5]))
    assert out[..., 0].tolist() == [[2, 1, 0, 3, 4], [9, 8, 7, 6, 5]]


@pytest.mark.parametrize(("layers", "bidirectional"), [(1, True), (1, False), (2, True)])
def test_padded_encoder_reproduces_the_packed_one(layers, bidirectional):
    """Training runs the encoder's LSTM on the padded batch; evaluation packs it: the same states, final
    memory and gradients, to float rounding."""
    torch.manual_seed(0)
    model = Seq2Seq(Seq2SeqConfig(kind="dot", src_vocab_size=20, tgt_vocab_size=20, emb_dim=6, hidden=8,
                                  layers=layers, bidirectional=bidirectional))
    lengths = torch.tensor([7, 3, 1, 5, 7])
    src = torch.randint(4, 20, (5, 7))
    src[torch.arange(7)[None, :] >= lengths[:, None]] = 0
    results = []
    for training in (True, False):
        model.encoder.train(training)
        memory = model.encoder(src, lengths)
        grads = torch.autograd.grad(memory.states.square().sum() + memory.final.sum(),
                                    list(model.encoder.parameters()))
        results.append((memory.states, memory.final, grads))
    (s1, f1, g1), (s2, f2, g2) = results
    torch.testing.assert_close(s1, s2, atol=1e-5, rtol=0)
    torch.testing.assert_close(f1, f2, atol=1e-5, rtol=0)
    for a, b in zip(g1, g2, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)
    assert s1[lengths[:, None] <= torch.arange(7)[None, :]].abs().max() == 0  # padding stays zero
