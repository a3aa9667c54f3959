"""benchmarks/translators.py: the tutorial-style baseline is a working translator, and the report renders.

No timing is asserted: the figures below are made up, only their rendering is checked.
"""

from __future__ import annotations

import torch

from benchmarks import translators
from benchmarks.translators import TutorialConfig, TutorialTranslator


def tiny_batch():
    src = torch.tensor([[5, 6, 7, 8], [9, 5, 0, 0]])
    tgt = torch.tensor([[2, 5, 6, 7, 3], [2, 8, 3, 0, 0]])
    return {"src": src, "src_lengths": torch.tensor([4, 2]), "tgt": tgt}


def test_the_baseline_learns_and_translates():
    torch.manual_seed(0)
    model = TutorialTranslator(TutorialConfig(src_vocab_size=12, tgt_vocab_size=12, hidden=16))
    batch = tiny_batch()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(30):
        loss = model.loss(batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    assert losses[-1] < 0.5 * losses[0]
    model.eval()
    outputs = model.translate(batch["src"], batch["src_lengths"])
    assert outputs == [[5, 6, 7], [8]]  # learned by heart
    log_probs = model(batch["src"], batch["src_lengths"], batch["tgt"][:, :-1])  # (B, U, V), log-probabilities
    torch.testing.assert_close(log_probs.exp().sum(-1), torch.ones(2, 4))


def test_padding_does_not_reach_the_baseline():
    """It reads each sentence to its own last word and attends only to real words, as the zoo's translators do."""
    torch.manual_seed(1)
    model = TutorialTranslator(TutorialConfig(src_vocab_size=12, tgt_vocab_size=12, hidden=16)).eval()
    alone = model.translate(torch.tensor([[9, 5]]), torch.tensor([2]), max_len=6)
    padded = model.translate(torch.tensor([[9, 5, 0, 0, 0]]), torch.tensor([2]), max_len=6)
    assert alone == padded


def point(step, batch, seconds, exact):
    return {"step": step, "examples": step * batch, "seconds": seconds, "cpu_seconds": seconds * 0.9,
            "exact_le30": exact, "loss": 0.1}


def run_row(name, batch, curve, budget=60.0):
    reached = next((p for p in curve if p["exact_le30"] >= 0.95), None)
    before = curve[curve.index(reached) - 1] if reached and curve.index(reached) else None
    last = curve[-1]
    return {"name": name, "what": "a model", "params": 1000, "batch_size": batch, "lr": 1e-3,
            "measured_every_steps": 25, "budget_s": budget, "reached": reached, "measure_before": before,
            "last": last, "ms_per_example": 1000 * last["seconds"] / last["examples"],
            "cpu_ms_per_example": 900 * last["seconds"] / last["examples"], "curve": curve,
            "load_min": 1.0, "load_mean": 1.5, "load_max": 2.0}


def test_the_report_renders_goals_and_what_makes_the_difference():
    fast = run_row(translators.FASTEST_ROW, 64, [point(200, 64, 14.0, 0.9), point(250, 64, 17.5, 0.961)])
    base = run_row(translators.BASELINE, 32, [point(500, 32, 70.0, 0.2), point(4000, 32, 600.0, 0.9)], 600.0)
    figures = {"quick": False, "threads": 1, "cpus": 2, "target": 0.95, "wall_seconds": 700.0,
               "runs": {fast["name"]: fast, base["name"]: base}}
    figures["comparison"] = translators.compare(figures["runs"])
    figures["goals"] = translators.goals(figures)
    assert figures["comparison"]["lower_bound"] and figures["comparison"]["seconds_ratio"] > 30
    assert [g["met"] for g in figures["goals"]] == [True, True]
    text = translators.markdown(figures)
    assert "## Translators: training, for the record" in text
    assert "What makes the difference" in text and "16,000 examples" in text
    assert "had not reached 95%" in text
