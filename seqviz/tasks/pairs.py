"""Tasks of pairs (source, target): a sequence-to-sequence task is its data module and one entry in TASKS."""

from __future__ import annotations

import importlib
from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import torch

from seqviz.limits import output_limit
from seqviz.tasks.base import DATA_SEED, Task, _pct, pad_batch
from seqviz.text import BOS, EOS, Vocab


def token_matches(output: Sequence[str], reference: Sequence[str]) -> tuple[int, int]:
    """(positions where output and reference agree, max of the two lengths): a length mismatch costs."""
    return sum(a == b for a, b in zip(output, reference, strict=False)), max(len(output), len(reference))


class PairTask(Task):
    """A sequence-to-sequence task of pairs (source, target), read from its data module; evaluated by greedy
    decoding of held-out sources. A new such task is its data module and one entry in TASKS: a subclass that
    names it, says it for people (``label``) and gives ``data``.

    The data module (``data``, imported when the task is made) offers: ``make_splits(seed)`` (``.train`` and
    ``.test``, pairs with ``.src`` and ``.tgt`` token lists), ``CHAPTER_PAIRS`` (source and target sentences the
    story quotes; may be empty), ``MAX_TRAIN_SRC_LEN``, ``LENGTH_BUCKETS`` with ``length_bucket(n)``, and
    ``reference(tokens)`` (the correct target of a source, or None when the data cannot tell).
    """

    kind = "translation"
    data: str = ""  # the data module's import path
    headline_name = "held-out exact match (sources of at most 30 tokens)"

    def __init__(self, seed: int = DATA_SEED, vocabularies: dict[str, Vocab] | None = None):
        data = self.data_module()
        self.splits = data.make_splits(seed)
        self.chapter_pairs = data.CHAPTER_PAIRS
        self.max_train_src_len = data.MAX_TRAIN_SRC_LEN
        vocabularies = vocabularies or {}
        self.src_vocab = vocabularies.get("src") or Vocab.build(p.src for p in self.splits.train)
        self.tgt_vocab = vocabularies.get("tgt") or Vocab.build(p.tgt for p in self.splits.train)
        self.vocabularies = {"src": self.src_vocab, "tgt": self.tgt_vocab}
        bos, eos = self.tgt_vocab.stoi[BOS], self.tgt_vocab.stoi[EOS]
        self._src, self._src_lengths = pad_batch([self.src_vocab.encode(list(p.src)) for p in self.splits.train])
        self._tgt, self._tgt_lengths = pad_batch(
            [[bos, *self.tgt_vocab.encode(list(p.tgt)), eos] for p in self.splits.train]
        )

    @classmethod
    def data_module(cls):
        return importlib.import_module(cls.data)

    @classmethod
    def reference(cls, tokens: Sequence[str]) -> list[str] | None:
        """The correct target of ``tokens``, or None when the task's data cannot tell (no data generated)."""
        return cls.data_module().reference(list(tokens))

    def model_fields(self) -> dict:
        return {"src_vocab_size": len(self.src_vocab), "tgt_vocab_size": len(self.tgt_vocab)}

    def batch(self, rng: np.random.Generator, batch_size: int, progress: float = 1.0) -> dict[str, torch.Tensor]:
        rows = torch.from_numpy(rng.integers(0, self._src.shape[0], size=batch_size))
        src_lengths = self._src_lengths[rows]
        tgt_width = int(self._tgt_lengths[rows].max())
        return {
            "src": self._src[rows, : int(src_lengths.max())],
            "src_lengths": src_lengths,
            "tgt": self._tgt[rows, :tgt_width],
        }

    def translate(self, model, sources: Sequence[Sequence[str]], batch_size: int = 128) -> list[list[str]]:
        """Greedy translations (tokens) of tokenized English sentences, in batches of similar length.

        Each is decoded to at most ``seqviz.limits.output_limit`` (its source length) words."""
        encoded = [self.src_vocab.encode(list(s)) for s in sources]
        order = np.argsort([len(s) for s in encoded], kind="stable")
        outputs: list[list[str]] = [[] for _ in sources]
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                chunk = order[start : start + batch_size]
                src, src_lengths = pad_batch([encoded[i] for i in chunk])
                longest = output_limit(int(src_lengths.max()))
                for i, ids in zip(chunk, model.translate(src, src_lengths, longest), strict=True):
                    outputs[i] = self.tgt_vocab.decode(list(ids)[: output_limit(len(encoded[i]))])
        return outputs

    def evaluate(self, model) -> dict:
        data = self.data_module()

        test = self.splits.test
        outputs = self.translate(model, [p.src for p in test])
        per_bucket: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # n, exact, matched, positions
        overall = {"le30": [0, 0, 0, 0], "ge25": [0, 0, 0, 0]}
        for pair, output in zip(test, outputs, strict=True):
            exact = int(list(output) == list(pair.tgt))
            matched, positions = token_matches(output, pair.tgt)
            groups = [per_bucket[data.length_bucket(len(pair.src))]]
            groups += [overall["le30"]] if len(pair.src) <= 30 else []
            groups += [overall["ge25"]] if len(pair.src) >= 25 else []
            for counts in groups:
                for k, v in enumerate((1, exact, matched, positions)):
                    counts[k] += v

        def summary(counts: list[int]) -> dict:
            n, exact, matched, positions = counts
            return {"n": n, "exact_match": exact / n if n else None,
                    "token_accuracy": matched / positions if positions else None}

        labels = [f"{lo}-{hi}" for lo, hi in data.LENGTH_BUCKETS]
        buckets = {label: summary(per_bucket[label]) for label in labels if label in per_bucket}
        le30, ge25 = summary(overall["le30"]), summary(overall["ge25"])
        chapter_sources = [english.split() for english, _ in self.chapter_pairs]
        chapter = [
            {"src": english, "expected": french, "output": " ".join(output), "exact": output == french.split()}
            for (english, french), output in zip(
                self.chapter_pairs, self.translate(model, chapter_sources), strict=True
            )
        ]
        return {
            "buckets": buckets,
            "exact_match_le30": le30["exact_match"],
            "token_accuracy_le30": le30["token_accuracy"],
            "n_le30": le30["n"],
            "exact_match_ge25": ge25["exact_match"],
            "token_accuracy_ge25": ge25["token_accuracy"],
            "n_ge25": ge25["n"],
            "max_train_src_len": self.max_train_src_len,
            "chapter_pairs": chapter,
            "chapter_pairs_exact": sum(c["exact"] for c in chapter),
        }

    def headline(self, metrics: dict) -> float:
        return metrics["exact_match_le30"]

    @classmethod
    def summary(cls, metrics: dict) -> dict:
        keys = ("exact_match_le30", "token_accuracy_le30", "exact_match_ge25", "chapter_pairs_exact")
        return {k: metrics.get(k) for k in keys}

    @classmethod
    def describe(cls, metrics: dict) -> str:
        m = cls.summary(metrics)
        pairs = "–" if m["chapter_pairs_exact"] is None else m["chapter_pairs_exact"]
        return (f"exact ≤30 tokens {_pct(m['exact_match_le30'])} (tokens {_pct(m['token_accuracy_le30'])}), "
                f"exact ≥25 tokens {_pct(m['exact_match_ge25'])}, chapter pairs {pairs}/6")
