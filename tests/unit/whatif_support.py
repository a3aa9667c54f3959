"""/what-if's decoding tests' shared models and references (tests/unit/test_whatif_decoding.py and
test_whatif_decoding_edits.py): the shipped translators and two small ones trained here for a few seconds (the
module-scoped ``models`` fixture: each test module trains its own), the sentences they read, and greedy decoding
from a forced prefix by teacher forcing."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from seqviz import zoo
from seqviz.analysis import decoding
from seqviz.data.translation import CHAPTER_PAIRS, render_english, render_french, sample_sentence
from seqviz.models.common import BOS_ID, EOS_ID
from seqviz.models.seq2seq import Seq2Seq, Seq2SeqConfig
from seqviz.models.transformer_seq2seq import TransformerSeq2Seq, TransformerSeq2SeqConfig
from seqviz.tasks import Task, pad_batch
from seqviz.text import Vocab
from seqviz.train import TrainConfig, train

SHIPPED = [name for name in ("plain", "additive", "dot", "transformer-translator") if name in zoo.available()]
TINY = ["tiny-additive", "tiny-transformer"]
MODELS = SHIPPED + TINY
SENTENCES = [
    CHAPTER_PAIRS[0][0].split(),
    "my red phone never arrived .".split(),
    "the small box was delivered and the black watch arrived .".split(),
    "where is my zebra ?".split(),  # "zebra" is read as <unk>
]


class TinyTranslation(Task):
    """Short sentences of the grammar (3 to 9 tokens), for a model that trains in a few seconds."""

    name = kind = "translation"

    def __init__(self, count: int = 300, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        trees = [sample_sentence(rng, int(rng.integers(3, 10))) for _ in range(count)]
        self.pairs = [(render_english(t), render_french(t)) for t in trees]
        self.vocabularies = {"src": Vocab.build(e for e, _ in self.pairs), "tgt": Vocab.build(f for _, f in self.pairs)}
        src, tgt = self.vocabularies["src"], self.vocabularies["tgt"]
        self._src, self._lengths = pad_batch([src.encode(e) for e, _ in self.pairs])
        self._tgt, _ = pad_batch([[BOS_ID, *tgt.encode(f), EOS_ID] for _, f in self.pairs])

    def model_fields(self) -> dict:
        return {"src_vocab_size": len(self.vocabularies["src"]), "tgt_vocab_size": len(self.vocabularies["tgt"])}

    def batch(self, rng, batch_size, progress=1.0):
        rows = torch.from_numpy(rng.integers(0, len(self.pairs), size=batch_size))
        lengths = self._lengths[rows]
        return {"src": self._src[rows, : int(lengths.max())], "src_lengths": lengths, "tgt": self._tgt[rows]}


@pytest.fixture(scope="module")
def models():
    """name -> (model, vocabularies): the shipped translators and two trained here."""
    loaded = {name: (zoo.load(name).model, zoo.load(name).vocabularies) for name in SHIPPED}
    task = TinyTranslation()
    torch.manual_seed(0)
    lstm = Seq2Seq(Seq2SeqConfig(kind="additive", **task.model_fields(), emb_dim=12, hidden=12, attn_dim=12, layers=2))
    transformer = TransformerSeq2Seq(TransformerSeq2SeqConfig(**task.model_fields(), d_model=16, n_heads=2,
                                                              enc_layers=1, dec_layers=2, d_ff=32))
    for model in (lstm, transformer):
        train(model, task, TrainConfig(steps=60, batch_size=16, lr=1e-2, warmup=5))
        for p in model.parameters():
            p.requires_grad_(False)
    loaded["tiny-additive"] = (lstm, task.vocabularies)
    loaded["tiny-transformer"] = (transformer, task.vocabularies)
    return loaded


def teacher_greedy(model, vocabularies, tokens, prefix: list[int]) -> tuple[list[int], bool]:
    """Greedy decoding from a forced prefix, one teacher-forced pass per word: the reference for forcing."""
    src_ids = vocabularies["src"].encode(tokens)
    limit = 2 * len(src_ids) + 5
    if prefix and prefix[-1] == EOS_ID:
        return prefix[:-1], True
    out = list(prefix)
    with torch.inference_mode():
        while len(out) < limit:
            logits, _ = model.teacher_forced(torch.tensor([src_ids]), torch.tensor([len(src_ids)]),
                                             torch.tensor([[BOS_ID, *out]]))
            word = int(logits[0, -1].argmax())
            if word == EOS_ID:
                return out, True
            out.append(word)
    return out, False


def written(decoded: decoding.Decoded) -> list[int]:
    return [*decoded.ids, EOS_ID] if decoded.ended else list(decoded.ids)
