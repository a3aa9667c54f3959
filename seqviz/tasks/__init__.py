"""The three tasks the zoo is trained on: support emails, English -> French, remember the first word.

A task owns its data (generated from a fixed seed by :mod:`seqviz.data`), its vocabularies (built from
its training data only), the batches the training loop draws, and the held-out evaluation whose
numbers go into a checkpoint's JSON:

- ``emails``: accuracy on the test set and on the word-identical twins (and how often a model gives
  both twins the same answer: always, for a bag of words);
- ``translation``: exact match and token accuracy per source-length bucket, overall for sources of at
  most 30 tokens and of at least 25, and the chapter's six pairs;
- ``memory``: accuracy per distance between the word to remember and the end, 1 .. 60.

Each task class also reads its own metrics without generating any data: ``TASKS[name].summary(metrics)``
gives the few numbers that say whether a model reached its target, ``TASKS[name].describe(metrics)`` one
line of them for people (the command line, assets/models/README.md), ``TASKS[name].label_names()`` its
classes.

Batches are dicts of tensors, padded with ``<pad>`` = 0:
classification ``{"ids": (B, T), "lengths": (B,), "labels": (B,)}``;
translation ``{"src": (B, T), "src_lengths": (B,), "tgt": (B, U + 2)}`` with tgt = <bos> ... <eos> <pad>..
"""

from __future__ import annotations

from seqviz.tasks.base import DATA_SEED, Task, pad_batch
from seqviz.tasks.classification import EmailTask, MemoryTask
from seqviz.tasks.pairs import PairTask, token_matches
from seqviz.text import Vocab


class TranslationTask(PairTask):
    """English -> French from the chapter's grammar (seqviz.data.translation)."""

    name = "translation"
    label = "English → French translation"
    data = "seqviz.data.translation"


TASKS: dict[str, type[Task]] = {
    "emails": EmailTask,
    "memory": MemoryTask,
    "translation": TranslationTask,
}


def task_labels(name: str) -> tuple[str, ...] | None:
    """The classes a model of task ``name`` answers with (None for translation), without generating data."""
    if name not in TASKS:
        raise KeyError(f"unknown task {name!r}; known: {', '.join(TASKS)}")
    return TASKS[name].label_names()


def make_task(name: str, seed: int = DATA_SEED, vocabularies: dict[str, Vocab] | None = None, **options) -> Task:
    """The task called ``name``; pass a checkpoint's ``vocabularies`` to evaluate it with its own words."""
    if name not in TASKS:
        raise KeyError(f"unknown task {name!r}; known: {', '.join(TASKS)}")
    return TASKS[name](seed=seed, vocabularies=vocabularies, **options)


__all__ = ["DATA_SEED", "TASKS", "EmailTask", "MemoryTask", "PairTask", "Task", "TranslationTask", "make_task",
           "pad_batch", "task_labels", "token_matches"]
