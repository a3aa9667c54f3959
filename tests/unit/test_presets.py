"""Every figure a preset promises is reached: each preset that names one is trained here with its own seed.

The presets train through the one loop (RunSpec.build, seqviz.train.train) and are measured on held-out data
as the app measures them, two at a time in separate processes (one torch thread each). Their text may name
only figures that are promises: a number in ``look_for`` must be one of them.

The training (about 70 s on this project's 2-core machine) is this module's background work: tests/conftest.py
starts it, niced, as soon as the tests are collected (this file run as a script), and the ``background`` fixture
waits for its metrics.
"""

from __future__ import annotations

import json
import multiprocessing
import re
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from seqviz.runs import PRESETS, Promise

PROMISING = [p for p in PRESETS if p.promises]


def _train_and_measure(name: str) -> dict:
    import torch

    from seqviz.runs import preset
    from seqviz.train import train

    torch.set_num_threads(1)
    model, task, config = preset(name).spec.build()
    train(model, task, config)
    model.eval()
    return task.evaluate(model)


def _measure_all() -> dict[str, dict]:
    """Held-out metrics of every preset that promises a figure, slowest first so the two processes finish
    together."""
    slow_first = sorted(PROMISING, key=lambda p: -p.spec.num_parameters() * p.spec.steps)
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {p.name: pool.submit(_train_and_measure, p.name) for p in slow_first}
        # No deadline of its own: this runs niced beside the whole test run (a busy machine can leave it little CPU
        # for many minutes), and the test that waits for it un-nices it and gives it tests/conftest.py's WAIT_S.
        return {name: future.result() for name, future in futures.items()}


def background_command(output: Path) -> list[str]:
    """tests/conftest.py runs this when the tests are collected: the metrics, as JSON, in ``output``."""
    return [sys.executable, __file__, str(output)]


@pytest.fixture(scope="module")
def measured(background) -> dict[str, dict]:
    return json.loads(background.read_text(encoding="utf-8"))


@pytest.mark.parametrize("preset", PROMISING, ids=lambda p: p.name)
def test_the_preset_keeps_its_promise(measured, preset):
    metrics = measured[preset.name]
    for promise in preset.promises:
        assert promise.holds(metrics), (
            f"{preset.name} promises {promise} and measured {promise.measured(metrics):.4f} with seed "
            f"{preset.spec.seed}")


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.name)
def test_every_percentage_in_a_presets_text_is_a_promise(preset):
    """'past 90%', 'below 75%': each percentage the text names is the bound of a promise of this preset or of
    its partner in the same experiment (the GRU's text names the plain RNN's bound)."""
    named = {int(x) for x in re.findall(r"(\d+)%", preset.look_for)}
    partners = [p for p in PRESETS if p is preset or (preset.experiment and p.experiment == preset.experiment)]
    bounds = {round(100 * b) for p in partners for promise in p.promises
              for b in (promise.at_least, promise.at_most) if b is not None}
    assert named <= bounds, f"{preset.name}: {named - bounds} named but not promised"


def test_a_promise_reads_a_metric_or_a_length_bucket():
    metrics = {"accuracy_at_20": 0.5, "buckets": {"3-9": {"exact_match": 0.95}}}
    assert Promise("accuracy_at_20", at_most=0.75).holds(metrics)
    assert not Promise("accuracy_at_20", at_least=0.95).holds(metrics)
    assert Promise("bucket:3-9", at_least=0.9).holds(metrics)


if __name__ == "__main__":
    Path(sys.argv[1]).write_text(json.dumps(_measure_all()), encoding="utf-8")
