"""Bounds of seqviz.limits at their edges: a value exactly at the bound is accepted, one past it is refused (or cut)
with its message. (Checkpoint validation's own bounds: test_checkpoint_edges.py; the parameter limit of a run:
test_runs.py.)"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from seqviz import limits
from seqviz.analysis.tiny_rnn import parse_inputs, run_tiny_rnn
from seqviz.models.common import check_sizes
from seqviz.registry import clean_name
from seqviz.runs import RunSpec
from seqviz.text import prepare

# ---- the sentence every page works on -----------------------------------------------------------------------------


def test_max_chars_read_whole_and_one_more_cut_with_a_message():
    at = prepare("x" * (limits.MAX_CHARS - 1) + "y")  # the last character is read
    assert at.tokens == ["x" * (limits.MAX_CHARS - 1) + "y"] and at.dropped_chars == 0 and at.message is None
    past = prepare("x" * limits.MAX_CHARS + " y")
    assert past.dropped_chars == 2 and past.tokens == ["x" * limits.MAX_CHARS]
    assert past.message == f"Only the first {limits.MAX_CHARS} characters were read (2 more were left out)."
    one = prepare("x" * (limits.MAX_CHARS + 1))
    assert one.dropped_chars == 1 and one.tokens == ["x" * limits.MAX_CHARS]


def test_max_tokens_read_whole_and_one_more_dropped_with_a_message():
    at = prepare(" ".join(["a"] * limits.MAX_TOKENS))
    assert len(at.tokens) == limits.MAX_TOKENS and at.dropped == 0 and at.message is None
    past = prepare(" ".join(["a"] * limits.MAX_TOKENS + ["b"]))
    assert past.tokens == ["a"] * limits.MAX_TOKENS and past.dropped == 1  # the last one dropped
    assert f"at most {limits.MAX_TOKENS} tokens" in past.message and "the last 1 were left out" in past.message


# ---- the tiny RNN of /rnn-memory ----------------------------------------------------------------------------------


def test_the_tiny_rnn_runs_max_steps_and_refuses_one_more():
    assert len(run_tiny_rnn([0.5] * limits.TINY_RNN_MAX_STEPS).hidden) == limits.TINY_RNN_MAX_STEPS
    with pytest.raises(ValueError, match=f"at most {limits.TINY_RNN_MAX_STEPS} steps"):
        run_tiny_rnn([0.5] * (limits.TINY_RNN_MAX_STEPS + 1))
    assert len(parse_inputs("1", limits.TINY_RNN_MAX_STEPS + 1).values) == limits.TINY_RNN_MAX_STEPS  # clamped


@pytest.mark.parametrize("edge", limits.TINY_RNN_INPUT_RANGE)
def test_tiny_rnn_inputs_at_the_range_ends_are_read_and_past_them_refused(edge):
    at = parse_inputs(f"{edge:g}, 0", 2)
    assert at.values == [edge, 0.0] and at.problem is None
    past = edge + (1e-6 if edge > 0 else -1e-6)
    refused = parse_inputs(f"{past!r}, 0", 2)
    low, high = limits.TINY_RNN_INPUT_RANGE
    assert refused.values == [1.0, 0.0]  # the chapter's input instead
    assert refused.problem.startswith(f"Each input must be a number from {low:g} to {high:g}")


def test_tiny_rnn_input_text_is_read_to_max_input_chars_and_not_past():
    at = " " * (limits.TINY_RNN_MAX_INPUT_CHARS - 1) + "7"  # the number is the last character read
    assert parse_inputs(at, 1).values == [7.0]
    past = " " * limits.TINY_RNN_MAX_INPUT_CHARS + "7"  # one character further: not read
    parsed = parse_inputs(past, 1)
    assert parsed.values == [1.0] and parsed.problem.startswith("No inputs were given")


# ---- model configs -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("group", "low", "high"), [
    ("vocab", 4, limits.MAX_MODEL_VOCAB),
    ("width", 1, limits.MAX_MODEL_WIDTH),
    ("layers", 1, limits.MAX_MODEL_LAYERS),
    ("heads", 1, limits.MAX_MODEL_HEADS),
    ("positions", 1, limits.MAX_MODEL_POSITIONS),
])
def test_model_sizes_at_both_ends_are_accepted_and_one_past_refused(group, low, high):
    for value in (low, high):
        check_sizes(SimpleNamespace(size=value), **{group: ("size",)})
    for value in (low - 1, high + 1):
        with pytest.raises(ValueError, match=f"size must be {low} to {high}, not {value}"):
            check_sizes(SimpleNamespace(size=value), **{group: ("size",)})


def test_model_labels_from_2_to_max_model_labels():
    for n in (2, limits.MAX_MODEL_LABELS):
        check_sizes(SimpleNamespace(labels=tuple(map(str, range(n)))), labels=("labels",))
    for n in (1, limits.MAX_MODEL_LABELS + 1):
        with pytest.raises(ValueError, match=f"labels must be a tuple of 2 to {limits.MAX_MODEL_LABELS} names"):
            check_sizes(SimpleNamespace(labels=tuple(map(str, range(n)))), labels=("labels",))


def test_a_model_name_of_max_chars_is_kept_and_a_longer_one_ends_in_an_ellipsis():
    n = limits.MAX_MODEL_NAME_CHARS
    assert clean_name("x" * n) == "x" * n
    cut = clean_name("x" * (n + 1))
    assert len(cut) == n and cut == "x" * (n - 1) + "…"


# ---- a run trained in the app -------------------------------------------------------------------------------------


def refused(words: str, **fields):
    with pytest.raises(ValueError, match=words):
        RunSpec(**fields)


def test_run_widths_at_both_ends_are_accepted_and_one_past_refused():
    low, high = limits.TRAIN_WIDTH_RANGE
    for field in ("embedding", "hidden"):
        for value in (low, high):
            RunSpec(task="emails", family="lstm", **{field: value})
        for value in (low - 1, high + 1):
            refused("TRAIN_WIDTH_RANGE", task="emails", family="lstm", **{field: value})


def test_run_layers_and_heads_at_their_bounds():
    small = {"task": "emails", "family": "transformer", "embedding": 16, "hidden": 16}
    RunSpec(**small, layers=limits.TRAIN_MAX_LAYERS, heads=1)
    refused("TRAIN_MAX_LAYERS", **small, layers=limits.TRAIN_MAX_LAYERS + 1)
    refused("TRAIN_MAX_LAYERS", **small, layers=0)
    RunSpec(**small, heads=limits.TRAIN_MAX_HEADS)  # 16 divides by 8
    wide = {**small, "embedding": 16 * (limits.TRAIN_MAX_HEADS + 1)}  # divides by heads + 1: only the bound refuses
    refused("TRAIN_MAX_HEADS", **wide, heads=limits.TRAIN_MAX_HEADS + 1)
    refused("TRAIN_MAX_HEADS", **small, heads=0)


@pytest.mark.parametrize(("field", "low", "high", "bound", "past"), [
    ("steps", 1, limits.TRAIN_MAX_STEPS, "TRAIN_MAX_STEPS", 1),
    ("batch_size", *limits.TRAIN_BATCH_RANGE, "TRAIN_BATCH_RANGE", 1),
    ("seed", 0, limits.TRAIN_MAX_SEED, "TRAIN_MAX_SEED", 1),
    ("lr", *limits.TRAIN_LR_RANGE, "TRAIN_LR_RANGE", 1e-9),
])
def test_run_settings_at_both_ends_are_accepted_and_one_past_refused(field, low, high, bound, past):
    small = {"task": "emails", "family": "lstm", "embedding": 8, "hidden": 8}
    for value in (low, high):
        assert getattr(RunSpec(**small, **{field: value}), field) == value
    for value in (low - past, high + past):
        refused(bound, **small, **{field: value})


def test_the_output_limit_grows_two_words_per_source_word_plus_five():
    assert [limits.output_limit(n) for n in (0, 1, limits.MAX_TOKENS)] == [5, 7, 2 * limits.MAX_TOKENS + 5]
