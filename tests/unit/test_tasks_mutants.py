"""Tests written for mutmut's survivors in seqviz/tasks/ (issue 28, scripts/mutation seqviz/tasks/): each task's
held-out metrics from models whose answers are known in advance (so every figure is computed here by hand), its
batches, its vocabularies and its refusals, word for word."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from seqviz.tasks import TASKS, make_task, pad_batch, task_labels, token_matches
from seqviz.tasks.base import _batched_proba, _pct
from seqviz.tasks.classification import _ClassificationTask
from seqviz.tasks.pairs import PairTask
from seqviz.text import BOS, EOS, Vocab, tokenize


class Classifier:
    """Probability 0.9 on ``pick(real ids of the row)``, the rest shared by the other classes."""

    def __init__(self, pick, classes: int):
        self.pick, self.classes = pick, classes

    def predict_proba(self, ids, lengths):
        rows = np.full((len(lengths), self.classes), 0.1 / (self.classes - 1))
        for r, (row, n) in enumerate(zip(ids.tolist(), lengths.tolist(), strict=True)):
            rows[r, self.pick(row[:n])] = 0.9
        return rows


def test_pad_batch_pads_with_zeros_to_the_longest():
    ids, lengths = pad_batch([[5, 6, 7], [8], [9, 9]])
    assert ids.tolist() == [[5, 6, 7], [8, 0, 0], [9, 9, 0]] and lengths.tolist() == [3, 1, 2]
    assert ids.dtype == lengths.dtype == torch.long
    empty, no_lengths = pad_batch([])
    assert empty.shape == (0, 0) and no_lengths.tolist() == []


def test_batched_probabilities_come_back_in_the_order_given():
    sequences = [[1] * n for n in (5, 1, 3, 2, 4)]  # batches of 2 by length: (1, 2), (3, 4), (5)
    model = Classifier(lambda row: len(row) % 3, 3)
    probs = _batched_proba(model, sequences, batch_size=2)
    assert probs.shape == (5, 3) and probs.argmax(axis=1).tolist() == [2, 1, 0, 2, 1]
    assert np.allclose(probs.sum(axis=1), 1.0)


def test_percentages_and_token_matches():
    assert (_pct(None), _pct(0.1234), _pct(1)) == ("–", "12.3%", "100.0%")
    assert token_matches(["a", "b", "c"], ["a", "x"]) == (1, 3) and token_matches([], ["a"]) == (0, 1)
    assert token_matches(["a", "b"], ["a", "b"]) == (2, 2)


def test_an_unknown_task_is_refused_naming_the_known_ones():
    for ask in (task_labels, make_task):
        with pytest.raises(KeyError, match=r"unknown task 'poetry'; known: emails, memory, translation"):
            ask("poetry")


def test_a_classification_task_of_two_sentences():
    """Its vocabulary, labels and batches (every row drawn, row 0 too; cut to the longest row drawn)."""
    task = _ClassificationTask([(["a"], 0), (["b", "c", "d"], 1)], None)
    task.labels = ("zero", "one")
    assert task.vocabularies == {"tokens": task.vocab} and task.vocab.encode(["a", "d"]) == [4, 7]
    assert task.train_ids == [[4], [5, 6, 7]] and task.train_labels == [0, 1]
    assert task.model_fields() == {"vocab_size": 8, "labels": ("zero", "one")}
    batch = task.batch(np.random.default_rng(0), 64)
    assert set(batch["labels"].tolist()) == {0, 1} and batch["labels"].dtype == torch.long
    for ids, n, label in zip(batch["ids"].tolist(), batch["lengths"].tolist(), batch["labels"].tolist(), strict=True):
        assert ids[:n] == task.train_ids[label] and n == [1, 3][label]
    assert batch["ids"].shape == (64, 3)
    ones = task.batch(np.random.default_rng(0), 1)  # one row: no wider than itself
    assert ones["ids"].shape == (1, int(ones["lengths"][0]))
    given = Vocab.build([["a", "z"]])
    assert _ClassificationTask([(["a"], 0)], given).vocab is given


def test_accuracy_is_the_share_of_right_answers():
    task = _ClassificationTask([(["a"], 0), (["b", "c"], 1)], None)
    model = Classifier(lambda row: len(row) - 1, 2)  # one word: 0, two words: 1
    accuracy, predicted = task.accuracy(model, [(["a"], 0), (["b", "c"], 1), (["b"], 1), (["a", "a"], 1)])
    assert accuracy == 0.75 and predicted.tolist() == [0, 1, 0, 1]


@pytest.fixture(scope="module")
def emails():
    return make_task("emails")


def test_the_email_task_reads_its_seeded_split_and_a_given_vocabulary(emails):
    from seqviz.data.emails import CHAPTER_EMAILS, make_email_splits

    assert [e.tokens for e in emails.splits.test] == [e.tokens for e in make_email_splits(0).test]
    assert emails.chapter_emails == CHAPTER_EMAILS and emails.vocabularies == {"tokens": emails.vocab}
    given = Vocab.build([["my", "parcel"]])
    assert make_task("emails", vocabularies={"tokens": given}).vocab is given


def ordered(ids) -> int:
    """A class that depends on the words' order (twins share their words, not their order)."""
    return sum(i * word for i, word in enumerate(ids)) % 4


def test_email_metrics_of_a_model_that_reads_word_order(emails):
    metrics = emails.evaluate(Classifier(ordered, 4))
    right = [ordered(emails.vocab.encode(e.tokens)) == e.label for e in emails.splits.test]
    firsts = [ordered(emails.vocab.encode(a.tokens)) for a, _ in emails.splits.twins]
    seconds = [ordered(emails.vocab.encode(b.tokens)) for _, b in emails.splits.twins]
    first_right = np.mean([p == a.label for p, (a, _) in zip(firsts, emails.splits.twins, strict=True)])
    second_right = np.mean([p == b.label for p, (_, b) in zip(seconds, emails.splits.twins, strict=True)])
    assert first_right > 0 and second_right > 0 and first_right != second_right
    assert metrics["test_accuracy"] == pytest.approx(np.mean(right))
    assert metrics["twins_accuracy"] == pytest.approx((first_right + second_right) / 2)
    assert metrics["twins_same_prediction"] == pytest.approx(np.mean(np.equal(firsts, seconds)))
    assert 0 < metrics["twins_same_prediction"] < 1
    assert (metrics["n_test"], metrics["n_twin_pairs"]) == (len(emails.splits.test), len(emails.splits.twins))
    assert emails.headline(metrics) == metrics["test_accuracy"]
    for (text, label), chapter in zip(emails.chapter_emails, metrics["chapter_emails"], strict=True):
        first = ordered(emails.vocab.encode(tokenize(text)))
        assert chapter == {"text": text, "label": label, "predicted": emails.labels[first],
                           "probs": [0.9 if c == first else 0.033333 for c in range(4)]}


@pytest.fixture(scope="module")
def memory():
    return make_task("memory", curriculum=0.5, start_distance=4)


def test_memory_metrics_of_a_model_right_at_odd_distances(memory):
    def pick(row):  # the class word first, then `distance` distractors
        truth = memory.labels.index(memory.vocab.itos[row[0]])
        return truth if (len(row) - 1) % 2 else (truth + 1) % len(memory.labels)

    metrics = memory.evaluate(Classifier(pick, len(memory.labels)))
    assert list(metrics["accuracy_by_distance"]) == [str(d) for d in range(1, 61)]
    assert metrics["accuracy_by_distance"] == {str(d): float(d % 2) for d in range(1, 61)}
    assert metrics["accuracy_at_20"] == 0.0 == memory.headline(metrics)
    assert metrics["chance"] == 1 / 8 and metrics["n_per_distance"] == 200


def test_memory_curriculum_and_its_batches(memory):
    assert (memory.curriculum, memory.start_distance, memory.max_distance) == (0.5, 4, 60)
    assert [memory.longest_distance(p) for p in (0.0, 0.25, 0.5, 1.0)] == [4, 32, 60, 60]
    assert make_task("memory").longest_distance(0.0) == 60  # no curriculum: every distance from the start
    assert make_task("memory", curriculum=1.0).start_distance == 5
    batch = memory.batch(np.random.default_rng(0), 256, progress=0.0)
    assert sorted(set(batch["lengths"].tolist())) == [2, 3, 4, 5]  # the class word and 1 .. 4 distractors
    for ids, label in zip(batch["ids"].tolist(), batch["labels"].tolist(), strict=True):
        assert memory.vocab.itos[ids[0]] == memory.labels[label]
    assert memory.vocabularies == {"tokens": memory.vocab} and len(memory.vocab) == 4 + 8 + 10
    given = Vocab.build([["red", "blue", "0"]])
    assert make_task("memory", vocabularies={"tokens": given}).vocab is given


# ---- a task of pairs, from a data module made here --------------------------------------------------------------


@dataclass
class Pair:
    src: list[str]
    tgt: list[str]


LENGTHS = (3, 24, 25, 30, 31)  # on both sides of 25 and 30, the overall groups' edges


@pytest.fixture(scope="module")
def reverse():
    def make_splits(seed):
        rng = np.random.default_rng(seed)
        sources = [[str(d) for d in rng.integers(0, 10, size=n)] for n in LENGTHS]
        return types.SimpleNamespace(train=[Pair(s, [*s[::-1], "end"]) for s in sources],
                                     test=[Pair(s, s[::-1]) for s in sources])

    data = types.ModuleType("tasks_mutants_reverse")
    data.make_splits, data.MAX_TRAIN_SRC_LEN = make_splits, 31
    data.CHAPTER_PAIRS = (("1 2 3", "3 2 1"), ("2 2", "2 2"))
    data.LENGTH_BUCKETS = ((1, 24), (25, 30), (31, 40), (41, 50))
    data.length_bucket = lambda n: next(f"{lo}-{hi}" for lo, hi in data.LENGTH_BUCKETS if lo <= n <= hi)
    data.reference = lambda tokens: list(tokens)[::-1]
    sys.modules[data.__name__] = data

    class Reverse(PairTask):
        name, label, data = "tasks-mutants-reverse", "reverse", "tasks_mutants_reverse"

    yield Reverse(seed=3)
    del sys.modules[data.__name__]


class Reverser:
    """Reverses the source; at even lengths it adds a word, "end" (wrong, one position longer)."""

    def __init__(self, task):
        self.task, self.asked = task, []

    def translate(self, src, src_lengths, max_len):
        self.asked.append((src.shape[0], max_len))
        out = []
        for row, n in zip(src.tolist(), src_lengths.tolist(), strict=True):
            words = self.task.src_vocab.decode(row[:n])[::-1] + (["end"] if n % 2 == 0 else [])
            out.append(self.task.tgt_vocab.encode(words))
        return out


def test_a_task_of_pairs_is_evaluated_by_hand(reverse):
    metrics = reverse.evaluate(Reverser(reverse))
    assert metrics["buckets"] == {
        "1-24": {"n": 2, "exact_match": 0.5, "token_accuracy": 27 / 28},
        "25-30": {"n": 2, "exact_match": 0.5, "token_accuracy": 55 / 56},
        "31-40": {"n": 1, "exact_match": 1.0, "token_accuracy": 1.0},
    }
    assert (metrics["exact_match_le30"], metrics["token_accuracy_le30"], metrics["n_le30"]) == (0.5, 82 / 84, 4)
    assert (metrics["exact_match_ge25"], metrics["token_accuracy_ge25"], metrics["n_ge25"]) == (2 / 3, 86 / 87, 3)
    assert metrics["max_train_src_len"] == 31 and metrics["chapter_pairs_exact"] == 1
    assert metrics["chapter_pairs"] == [
        {"src": "1 2 3", "expected": "3 2 1", "output": "3 2 1", "exact": True},
        {"src": "2 2", "expected": "2 2", "output": "2 2 end", "exact": False},
    ]
    assert reverse.headline(metrics) == 0.5


def test_translations_are_cut_at_the_output_limit_and_come_back_in_order(reverse):
    class Babbler:
        def __init__(self):
            self.asked = []

        def translate(self, src, src_lengths, max_len):
            self.asked.append((src.shape[0], max_len))
            return [[reverse.tgt_vocab.stoi["1"]] * 500 for _ in range(src.shape[0])]

    babbler = Babbler()
    sources = [["1"] * n for n in (4, 1, 2)]
    outputs = reverse.translate(babbler, sources, batch_size=2)
    assert [len(o) for o in outputs] == [13, 7, 9]  # 2 n + 5 words each (seqviz.limits.output_limit)
    assert babbler.asked == [(2, 9), (1, 13)]  # lengths 1 and 2 first, then 4: the longest of each batch
    assert reverse.translate(babbler, sources)[0] == ["1"] * 13 and babbler.asked[-1] == (3, 13)


def test_a_task_of_pairs_keeps_its_vocabularies_and_padded_targets(reverse):
    assert reverse.vocabularies == {"src": reverse.src_vocab, "tgt": reverse.tgt_vocab}
    assert "end" in reverse.tgt_vocab.stoi and "end" not in reverse.src_vocab.stoi
    bos, eos = reverse.tgt_vocab.stoi[BOS], reverse.tgt_vocab.stoi[EOS]
    for row, n, pair in zip(reverse._tgt.tolist(), reverse._tgt_lengths.tolist(), reverse.splits.train, strict=True):
        assert row[:n] == [bos, *reverse.tgt_vocab.encode(pair.tgt), eos] and set(row[n:]) <= {0}
    assert reverse.model_fields() == {"src_vocab_size": len(reverse.src_vocab),
                                      "tgt_vocab_size": len(reverse.tgt_vocab)}
    src, tgt = Vocab.build([["1"]]), Vocab.build([["2"]])
    given = type(reverse)(seed=3, vocabularies={"src": src, "tgt": tgt})
    assert given.src_vocab is src and given.tgt_vocab is tgt


def test_a_batch_of_pairs_is_cut_to_its_longest_rows(reverse):
    batch = reverse.batch(np.random.default_rng(1), 3)
    rows = [LENGTHS.index(n) for n in batch["src_lengths"].tolist()]
    longest = max(LENGTHS[i] for i in rows)
    assert batch["src"].tolist() == reverse._src[rows, :longest].tolist()
    assert batch["tgt"].shape == (3, longest + 3)  # <bos>, the reversed words, "end", <eos>
    every = reverse.batch(np.random.default_rng(0), 200)
    assert set(every["src_lengths"].tolist()) == set(LENGTHS)  # every pair drawn, the first too


def test_describe_a_translator_with_and_without_its_chapter_pairs():
    translation = TASKS["translation"]
    metrics = {"exact_match_le30": 0.5, "token_accuracy_le30": 0.75, "exact_match_ge25": 0.25,
               "chapter_pairs_exact": 0}
    assert translation.describe(metrics) == (
        "exact ≤30 tokens 50.0% (tokens 75.0%), exact ≥25 tokens 25.0%, chapter pairs 0/6")
    assert translation.describe({}).endswith("chapter pairs –/6")


def test_a_model_that_answers_for_fewer_rows_than_asked_is_caught(reverse):
    class Short:
        def predict_proba(self, ids, lengths):
            return np.full((len(lengths) - 1, 2), 0.5)

        def translate(self, src, src_lengths, max_len):
            return [[1]] * (src.shape[0] - 1)

    with pytest.raises(ValueError, match="zip"):
        _batched_proba(Short(), [[1], [2]])
    with pytest.raises(ValueError, match="zip"):
        reverse.translate(Short(), [["1"], ["2"]])


def test_the_seed_chooses_the_split(reverse):
    from seqviz.data.memory import make_memory_splits

    made = type(reverse)(seed=4)  # made here: mutmut runs only the tests that call __init__ themselves
    assert [p.src for p in made.splits.train] == [p.src for p in type(reverse).data_module().make_splits(4).train]
    other = make_task("memory", seed=1)
    assert other.splits.train == make_memory_splits(1).train != make_memory_splits(0).train


def test_a_memory_batch_without_progress_is_drawn_at_the_end_of_the_run(memory, monkeypatch):
    monkeypatch.setattr(memory, "curriculum", 10.0)  # the ramp ends at 10x the run: at its end, distance 4 + 5.6
    lengths = memory.batch(np.random.default_rng(0), 512)["lengths"]
    assert memory.longest_distance(1.0) == 10 and int(lengths.max()) == 11 and int(lengths.min()) == 2
