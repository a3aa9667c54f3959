"""Resuming a run from a saved point: a lost worker's run goes on elsewhere and ends with the weights, loss and
learning curve of an uninterrupted run, bit for bit; a damaged saved state is refused; the caller's random state
is left alone; states are handed out at most every ``save_every_s`` seconds of training."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import struct

import numpy as np
import pytest
import torch

from seqviz import driver
from seqviz import train as train_module
from seqviz.models import build
from seqviz.runs import RunSpec, shared_task
from seqviz.train import TrainState, TrainStateError, train

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py: small tensors, a shared machine

# One small run per kind of model; (spec, config changes, steps k after which the first worker is lost).
CASES = {
    "lstm emails": (RunSpec(task="emails", family="lstm", embedding=8, hidden=8, steps=8, batch_size=8, seed=1),
                    {}, 3),
    # Dropout and random position shifts: the steps after the resume draw from torch's generator.
    "transformer translator": (RunSpec(task="translation", family="transformer-seq2seq", embedding=8, hidden=8,
                                       heads=2, layers=1, steps=6, batch_size=8, seed=2), {"dropout": 0.2}, 2),
    "additive translator": (RunSpec(task="translation", family="additive", embedding=8, hidden=8, steps=6,
                                    batch_size=8, seed=3), {"dropout": 0.2}, 4),
    "memory gru": (RunSpec(task="memory", family="gru", embedding=4, hidden=8, steps=8, batch_size=8, seed=4), {}, 5),
}
CURVES = {"lstm emails": (2, 5, 8), "memory gru": (4,)}  # learning curves cost a held-out evaluation each


def recipe_of(case: str) -> driver.Recipe:
    spec, changes, _ = CASES[case]
    recipe = driver.from_spec(spec, "resume test")
    return dataclasses.replace(recipe, config={**recipe.config, **changes}, curve_steps=CURVES.get(case, ()))


def tensors_equal(a: dict, b: dict) -> bool:
    return list(a) == list(b) and all(torch.equal(a[k], b[k]) for k in a)


def weights_equal(a, b) -> bool:
    return tensors_equal(a.state_dict(), b.state_dict())


def optimizer_states_equal(a: dict, b: dict) -> bool:
    def same(x: dict, y: dict) -> bool:  # the same tensors by name, in any order
        return sorted(x) == sorted(y) and all(torch.equal(x[name], y[name]) for name in x)

    return a["param_groups"] == b["param_groups"] and sorted(a["state"]) == sorted(b["state"]) and all(
        same(a["state"][i], b["state"][i]) for i in a["state"])


@pytest.mark.parametrize("case", CASES)
def test_a_resumed_run_ends_as_the_uninterrupted_run(case):
    recipe, k = recipe_of(case), CASES[case][2]
    steps = recipe.train["steps"]
    whole_states: list[TrainState] = []
    whole = driver.run(recipe, save_state=whole_states.append, save_every_s=0)
    assert [s.step for s in whole_states] == list(range(1, steps + 1))  # 0 s: a state after every step

    lost: list[TrainState] = []  # the first worker: saves after every step, lost after step k
    first = driver.run(recipe, stop=lambda: len(lost) >= k, save_state=lost.append, save_every_s=0,
                       finished=lambda result: False)
    assert first.result.steps == k and first.result.stopped and not first.saved
    blob = lost[-1].to_bytes()
    state = TrainState.from_bytes(blob)  # what the second worker receives
    assert state.step == k and state.loss == whole_states[k - 1].loss
    # Saving states does not change the run: the lost worker's state is the uninterrupted run's at step k.
    assert tensors_equal(state.model, whole_states[k - 1].model)
    assert optimizer_states_equal(state.optimizer, whole_states[k - 1].optimizer)
    assert torch.equal(state.torch_rng, whole_states[k - 1].torch_rng)
    # The optimizer's moments are really in it: a resume that dropped them could not end the same.
    assert len(state.optimizer["state"]) == len(list(first.model.parameters()))
    assert all(entry["exp_avg_sq"].abs().sum() > 0 and float(entry["step"]) == k
               for entry in state.optimizer["state"].values())

    seen: list[int] = []
    second = driver.run(recipe, resume=state, progress=lambda p: seen.append(p.step))  # a fresh model, then the state
    assert seen == list(range(k + 1, steps + 1))
    assert weights_equal(second.model, whole.model)  # every tensor, bit for bit
    assert second.result.final_loss == whole.result.final_loss and second.result.steps == steps
    assert not second.result.stopped and second.result.seconds >= state.seconds
    assert second.metrics == whole.metrics  # the learning curve too: rows before step k came with the state
    if case in CURVES:
        assert [row["step"] for row in second.metrics["learning_curve"]] == list(CURVES[case])
        assert [row["step"] for row in state.curve] == [s for s in CURVES[case] if s <= k]


@pytest.fixture(scope="module")
def transformer_run():
    """A dropout transformer on emails, its uninterrupted weights, and its saved state after step 3 of 7."""
    task = shared_task("emails")
    spec = RunSpec(task="emails", family="transformer", embedding=8, hidden=8, heads=2, layers=1, steps=7,
                   batch_size=8, seed=5)

    def fresh():
        config = dataclasses.replace(spec.model_config(task), dropout=0.3)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(spec.seed)
            return build("transformer", config)

    config = spec.train_config()
    whole = fresh()
    states: list[TrainState] = []
    result = train(whole, task, config, save_state=states.append, save_every_s=0)
    untouched = fresh()
    train(untouched, task, config)
    assert weights_equal(whole, untouched) and result.steps == 7
    return fresh, task, config, whole, states[2]


def resumed_weights(transformer_run, state):
    fresh, task, config, _, _ = transformer_run
    model = fresh()
    train(model, task, config, resume=state)
    return model


def test_every_part_of_the_state_matters(transformer_run):
    """The controls: resuming with any part of the state lost or reset gives other weights."""
    _, _, _, whole, state = transformer_run
    before = TrainState.from_bytes(state.to_bytes())
    assert weights_equal(resumed_weights(transformer_run, state), whole)
    assert optimizer_states_equal(state.optimizer, before.optimizer)  # resuming leaves the state as it was
    assert weights_equal(resumed_weights(transformer_run, state), whole)  # so a state resumes twice alike
    fresh_torch = torch.Generator().manual_seed(0).get_state()
    broken = {
        "optimizer": {"state": {}, "param_groups": state.optimizer["param_groups"]},
        "batch_rng": np.random.default_rng(state.config["seed"]).bit_generator.state,
        "torch_rng": fresh_torch,
    }
    for field, value in broken.items():
        assert not weights_equal(resumed_weights(transformer_run, dataclasses.replace(state, **{field: value})),
                                 whole), field


def test_resuming_leaves_the_callers_random_state_alone(transformer_run):
    _, _, _, whole, state = transformer_run
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    model = resumed_weights(transformer_run, state)
    assert torch.equal(torch.random.get_rng_state(), before) and weights_equal(model, whole)


def test_a_state_reads_back_exactly(transformer_run):
    state = dataclasses.replace(transformer_run[4], curve=[{"step": 2, "test_accuracy": 0.5, "by": {"1": [0.25]}}])
    back = TrainState.from_bytes(state.to_bytes())
    assert back.batch_rng == state.batch_rng and back.batch_rng["state"]["state"] > 2**64  # 128-bit ints, exact
    assert tensors_equal(back.model, state.model) and optimizer_states_equal(back.optimizer, state.optimizer)
    assert torch.equal(back.torch_rng, state.torch_rng) and back.torch_rng.dtype == torch.uint8
    for field in ("step", "loss", "seconds", "config", "curve"):
        assert getattr(back, field) == getattr(state, field), field


def test_a_damaged_or_foreign_blob_is_refused(transformer_run):
    blob = transformer_run[4].to_bytes()
    flipped = bytearray(blob)
    flipped[len(blob) // 2] ^= 0x01  # one bit, deep in the tensors
    pickled = io.BytesIO()
    torch.save({"step": 3}, pickled)
    for bad in (blob[:-1], blob[: len(blob) // 2], bytes(flipped), blob + b"\x00"):
        with pytest.raises(TrainStateError, match="damaged or truncated"):
            TrainState.from_bytes(bad)
    for foreign in (b"", b"\x00" * 64, pickled.getvalue(), "text", 5):  # a pickle: refused before anything unpickles
        with pytest.raises(TrainStateError, match=r"not a seqviz training state|is bytes, not"):
            TrainState.from_bytes(foreign)
    # A well-formed checksum over a malformed body (a hostile blob) fails to parse, with the same error class.
    magic = blob[:16]
    for body in (b"junk", struct.pack("<Q", 10**12) + b"{}", struct.pack("<Q", 2) + b"{}" + b"not safetensors"):
        with pytest.raises(TrainStateError, match=r"malformed|longer than"):
            TrainState.from_bytes(magic + hashlib.sha256(body).digest() + body)
    assert issubclass(TrainStateError, ValueError)


def test_a_state_only_resumes_its_own_run(transformer_run):
    fresh, task, config, _, state = transformer_run
    with pytest.raises(TrainStateError, match="a different seed"):
        train(fresh(), task, dataclasses.replace(config, seed=config.seed + 1), resume=state)
    with pytest.raises(TrainStateError, match="past this run"):
        train(fresh(), task, config, resume=dataclasses.replace(state, step=config.steps + 1))
    other = build("transformer", {"d_model": 16, "n_heads": 2, "d_ff": 8, **task.model_fields()})
    with pytest.raises(TrainStateError, match="does not fit this model"):
        train(other, task, config, resume=state)


def test_states_come_at_most_every_save_every_s_seconds_of_training(monkeypatch):
    """A fake clock that moves a quarter second per step: with 1 s between states, one every fourth step."""
    task = shared_task("emails")
    spec = RunSpec(task="emails", family="rnn", embedding=4, hidden=4, steps=12, batch_size=4, seed=6)
    clock = [0.0]
    monkeypatch.setattr(train_module, "_now", lambda: clock[0])

    def tick(p) -> None:
        clock[0] += 0.25

    model, _, config = spec.build()
    states: list[TrainState] = []
    result = train(model, task, config, progress=tick, save_state=states.append, save_every_s=1.0)
    assert [s.step for s in states] == [4, 8, 12] and [s.seconds for s in states] == [1.0, 2.0, 3.0]
    assert result.seconds == 3.0

    again, _, _ = spec.build()  # from the state after step 4: seconds and Progress count on from it
    clock[0] = 100.0
    later: list[TrainState] = []
    seen: list[tuple[int, float]] = []
    resumed = train(again, task, config, progress=lambda p: (seen.append((p.step, p.elapsed_s)), tick(p)),
                    resume=states[0], save_state=later.append, save_every_s=1.0)
    assert seen[0] == (5, 1.0) and seen[-1] == (12, 2.75) and resumed.steps == 12 and resumed.seconds == 3.0
    assert [s.step for s in later] == [8, 12] and weights_equal(again, model)
    with pytest.raises(ValueError, match="save_every_s"):
        train(again, task, config, save_state=later.append, save_every_s=-1)


def test_the_bag_of_words_has_no_steps_to_save_or_resume():
    task = shared_task("emails")
    model, _, config = RunSpec(task="emails", family="bow").build()
    states: list[TrainState] = []
    assert train(model, task, config, save_state=states.append, save_every_s=0).steps == 1 and states == []
    with pytest.raises(TrainStateError, match="no steps to resume"):
        train(model, task, config, resume=object())
