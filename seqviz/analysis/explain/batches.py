"""What the importance and ablation modules share: the held-out examples, batches of bounded size, and the
model in float64.

Every model explained here has one interface, translators and email classifiers alike (the translators' in
:class:`seqviz.models.translator.Translator`, the classifiers' in :mod:`seqviz.models.classifiers.base`):

- ``embed_source(src)`` -> the input word vectors e_j (B, T, E);
- ``target_log_probs(src, src_lengths, targets, embedded=None, mix=None)`` -> (log p (B, U), attention (B, U, T)
  or None): the log-probability of each given output (a translator's words y_1 .. y_U, teacher-forced; a
  classifier's one class, U = 1) and the attention the pages draw for it, with the word vectors replaced
  (``embedded``) and the attention weights replaced (``mix``, seqviz.models.attention.Mix) for that call only;
- ``has_attention``: whether it returns attention (and a mix has weights to replace).
"""

from __future__ import annotations

import copy

import numpy as np

ROWS_PER_BATCH = 128  # rows of one batched pass (copies of sentences): bounds its memory


def check_explainable(model) -> None:
    """ValueError unless ``model`` has the interface above and is in eval mode (dropout would make each measure a
    random draw)."""
    if not (hasattr(model, "embed_source") and hasattr(model, "target_log_probs")):
        raise ValueError(f"explain a torch model with word vectors, not a {type(model).__name__}: the bag of words "
                         "has no vectors to take a gradient by")
    if model.training:
        raise ValueError("explain a model in eval mode: dropout would make every measure a random draw")


def in_float64(model):
    """A float64 copy of ``model`` (the shared, cached model is left as it is): leave-one-out differences of
    nearly equal log-probabilities, and integrated gradients' completeness, need more than float32's 7 digits."""
    return copy.deepcopy(model).double()


def chunks(rows_needed: dict[int, int]) -> list[list[int]]:
    """Items (index -> the rows of copies they need), in order, grouped so that each group fits ROWS_PER_BATCH."""
    groups: list[list[int]] = []
    rows = 0
    for i, need in rows_needed.items():
        if groups and rows + need <= ROWS_PER_BATCH:
            groups[-1].append(i)
            rows += need
        else:
            groups.append([i])
            rows = need
    return groups


def spread(items: list, limit: int | None) -> list:
    """``limit`` of the items spread evenly over the list (all of them for None or a limit past its length)."""
    if limit is None or limit >= len(items):
        return items
    return [items[i] for i in np.linspace(0, len(items) - 1, max(0, int(limit))).round().astype(int)]


def held_out_pairs(task, limit: int | None = None) -> list:
    """The held-out pairs whose sources are as long as training's (at most ``task.max_train_src_len`` tokens, as
    the headline exact match), or ``limit`` of them spread evenly over the lengths (the test set is in length order)."""
    return spread([p for p in task.splits.test if len(p.src) <= task.max_train_src_len], limit)


def held_out_emails(task, limit: int | None = None) -> list:
    """The held-out emails (``task.splits.test``), or ``limit`` of them spread evenly over the set."""
    return spread(list(task.splits.test), limit)
