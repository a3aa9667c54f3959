"""The one training loop: the loss falls on every task, training is deterministic, it stops when asked."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import torch

from seqviz.checkpoints import dumps
from seqviz.models import build
from seqviz.tasks import make_task
from seqviz.train import Progress, TrainConfig, TrainResult, learning_rate, train


@pytest.fixture(scope="module")
def emails():
    return make_task("emails")


@pytest.fixture(scope="module")
def memory():
    return make_task("memory", curriculum=10.0, start_distance=2)  # distances 2 .. ~5 in a short run


def tiny_classifier(family: str, task, seed: int = 0):
    torch.manual_seed(seed)
    sizes = {"transformer": {"d_model": 16, "n_heads": 2, "d_ff": 32, "dropout": 0.1}}
    return build(family, {**sizes.get(family, {"emb_dim": 8, "hidden_dim": 16}), **task.model_fields()})


def losses_of(model, task, config: TrainConfig) -> list[float]:
    seen: list[float] = []
    train(model, task, config, progress=lambda p: seen.append(p.loss))
    return seen


@pytest.mark.parametrize("family", ("lstm", "transformer"))
def test_loss_falls_on_emails(family, emails):
    model = tiny_classifier(family, emails)
    losses = losses_of(model, emails, TrainConfig(steps=80, batch_size=32, lr=2e-2, warmup=5))
    assert np.mean(losses[-10:]) < 0.9 * np.mean(losses[:10])
    assert not model.training  # left in eval mode


def test_loss_falls_on_memory(memory):
    model = tiny_classifier("gru", memory)
    losses = losses_of(model, memory, TrainConfig(steps=80, batch_size=32, lr=2e-2, warmup=5))
    assert np.mean(losses[-10:]) < 0.5 * np.mean(losses[:10])


def test_loss_falls_on_translation():
    task = make_task("translation")
    torch.manual_seed(0)
    model = build("dot", {"kind": "dot", "emb_dim": 16, "hidden": 24, "attn_dim": 16, **task.model_fields()})
    losses = losses_of(model, task, TrainConfig(steps=40, batch_size=16, lr=1e-2, warmup=5))
    assert np.mean(losses[-8:]) < 0.8 * np.mean(losses[:8])


def test_bow_is_fitted_by_counting(emails):
    model = build("bow", emails.model_fields())
    seen: list[Progress] = []
    result = train(model, emails, TrainConfig(), progress=seen.append)
    assert result.steps == 1 and len(seen) == 1
    assert model.word_counts.sum() == sum(len(ids) for ids in emails.train_ids)
    assert seen[0].metric == pytest.approx(emails.evaluate(model)["test_accuracy"])


def weights_bytes(model, task) -> bytes:
    return dumps(model, {"vocabularies": task.vocabularies})


def test_two_trainings_give_the_same_weights(emails):
    config = TrainConfig(steps=15, batch_size=16, lr=1e-2, warmup=2, seed=3)
    first, second = tiny_classifier("transformer", emails), tiny_classifier("transformer", emails)
    train(first, emails, config)
    train(second, emails, config)
    assert weights_bytes(first, emails) == weights_bytes(second, emails)
    third = tiny_classifier("transformer", emails)
    train(third, emails, TrainConfig(steps=15, batch_size=16, lr=1e-2, warmup=2, seed=4))
    assert weights_bytes(third, emails) != weights_bytes(first, emails)  # the seed drives batches and dropout


def test_stops_between_steps_and_reports_progress(emails):
    model = tiny_classifier("rnn", emails)
    stop = threading.Event()
    seen: list[Progress] = []

    def progress(p: Progress) -> None:
        seen.append(p)
        if p.step == 3:
            stop.set()

    started = time.perf_counter()
    result = train(model, emails, TrainConfig(steps=50, batch_size=8), progress=progress, stop=stop)
    wall = time.perf_counter() - started
    assert isinstance(result, TrainResult)
    assert result.steps == 3 and result.stopped and len(seen) == 3
    assert [p.step for p in seen] == [1, 2, 3] and all(p.steps == 50 for p in seen)
    assert seen[-1].model is model and np.isfinite(result.final_loss)
    # the time trained: it grows with every step, and is a duration of this call, not a clock reading
    elapsed = [p.elapsed_s for p in seen]
    assert 0 < elapsed[0] < elapsed[1] < elapsed[2] <= result.seconds <= wall, (elapsed, result.seconds, wall)
    assert train(model, emails, TrainConfig(steps=5), stop=lambda: True).steps == 0


def test_metric_every_n_steps(emails):
    model = tiny_classifier("rnn", emails)
    seen: list[Progress] = []
    train(model, emails, TrainConfig(steps=6, batch_size=8), progress=seen.append, eval_every=4)
    assert [p.metric is not None for p in seen] == [False, False, False, True, False, True]
    assert 0 <= seen[3].metric <= 1


def test_training_leaves_the_process_as_it_found_it(emails):
    """No thread count, deterministic flag or global random state changes: training seeds through fork_rng."""
    model = tiny_classifier("transformer", emails)  # dropout: training draws from torch's generator
    torch.manual_seed(123)
    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    rng_state = torch.random.get_rng_state()
    train(model, emails, TrainConfig(steps=3, batch_size=4, seed=9))
    assert torch.get_num_threads() == threads
    assert torch.are_deterministic_algorithms_enabled() == deterministic
    assert torch.equal(torch.random.get_rng_state(), rng_state)


def test_the_zoo_builds_its_initial_weights_without_touching_the_global_generator():
    from seqviz import zoo

    task = make_task("memory")
    torch.manual_seed(7)
    state = torch.random.get_rng_state()
    first, second = zoo.build("memory-gru", task), zoo.build("memory-gru", task)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert weights_bytes(first, task) == weights_bytes(second, task)  # seeded: the same weights every time


def test_configure_torch_acts_once_per_process():
    code = (
        "import torch; from seqviz import runtime; torch.set_num_threads(2); assert not runtime.is_configured(); "
        "runtime.configure_torch(); assert torch.get_num_threads() == 1; "
        "assert torch.are_deterministic_algorithms_enabled(); "
        "torch.set_num_threads(2); runtime.configure_torch(); assert torch.get_num_threads() == 2; "
        "assert runtime.is_configured(); print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"


def test_learning_rate_schedule():
    config = TrainConfig(steps=100, lr=1.0, warmup=10, min_lr_ratio=0.1)
    assert learning_rate(0, config) == pytest.approx(0.1)
    assert learning_rate(9, config) == pytest.approx(1.0)
    assert learning_rate(10, config) == pytest.approx(1.0)
    assert learning_rate(99, config) == pytest.approx(0.1, abs=1e-3)
    constant = TrainConfig(steps=100, lr=0.5, warmup=0, schedule="constant")
    assert learning_rate(70, constant) == 0.5
    with pytest.raises(ValueError):
        TrainConfig(schedule="triangle")


def test_memory_curriculum_grows_the_distance(memory):
    rng = np.random.default_rng(0)
    early = memory.batch(rng, 64, progress=0.0)
    assert int(early["lengths"].max()) <= 3  # the class word and at most 2 distractors
    assert int(memory.batch(rng, 64, progress=10.0)["lengths"].max()) > 20  # the ramp ends at 10x the run
    assert early["ids"].shape[0] == 64 and early["labels"].shape == (64,)
