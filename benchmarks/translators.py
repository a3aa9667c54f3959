"""Training, for the record: our translators against a baseline trained the way PyTorch's seq2seq tutorial trains.

The baseline (:class:`TutorialTranslator`) is written here, in our own code, after PyTorch's tutorial "NLP From
Scratch: Translation with a Sequence to Sequence Network and Attention" (pytorch/tutorials,
``intermediate_source/seq2seq_translation_tutorial.py``): a GRU encoder; a GRU decoder with Bahdanau (additive)
attention whose query is the decoder's previous hidden state, so every target step waits for the one before;
hidden size 128 (word vectors too), dropout 0.1 on the word vectors; log_softmax and NLLLoss; teacher forcing on
every step, as the tutorial's batched version does; Adam at learning rate 0.001 (the tutorial's two Adams, one
for the encoder and one for the decoder, are one Adam over both), no schedule, no gradient clipping; 32 sentence
pairs per batch. Two things differ, both in its favour: the tutorial pads every sentence to a fixed MAX_LENGTH and
lets padding into the encoder's final state, the attention and the loss (its sentences are at most 10 words);
ours are 3 to 30 words, so the baseline reads each sentence to its own last word, attends only to real words and
leaves padding out of the loss. And U h_j is computed once per sentence, not once per step.

Every model trains on the same task (seqviz.tasks.TranslationTask: the shipped data split and vocabularies), from
the same seed, on one torch thread, with the one training loop (seqviz.train). Held-out exact match on the test
sentences of at most 30 tokens (the zoo's and presets' headline, ``exact_match_le30``, computed by the same greedy
translation, ``TranslationTask.translate``) is measured every few steps, its cost left out of the clock, against
training seconds (wall, and the training thread's CPU seconds, which a busy machine inflates less) and against
examples seen (steps x batch size). The 1-minute load average is sampled every 2 s.

    run(quick=True)   # the fastest translator to 95%, the baseline for 6 s: its cost per example (about a minute)
    run(quick=False)  # every model to 95% or its budget (about 15 to 25 minutes on a 2-core machine)
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from benchmarks.report import LoadSampler
from seqviz.models.common import PAD_ID
from seqviz.models.translator import Translator

TARGET = 0.95  # the goal's held-out exact match
GOAL_SECONDS = 20.0  # the goal: our fastest translator reaches TARGET within this many seconds...
GOAL_RATIO = 10.0  # ... and at least this many times faster than the baseline to the same figure
FASTEST = "Quick: attention translator"  # the preset (seqviz.runs.PRESETS) that holds our fastest configuration
GOALS = {
    "seconds": f"our fastest translator reaches {TARGET:.0%} held-out exact match (sources <= 30 tokens) within "
               f"{GOAL_SECONDS:g} s of training on one thread",
    "ratio": f"and at least {GOAL_RATIO:g}x faster than the tutorial-style baseline to the same figure",
}


# ---------------------------------------------------------------------------------------------------------
# The baseline


@dataclass
class TutorialConfig:
    src_vocab_size: int = 64  # English vocabulary, specials included
    tgt_vocab_size: int = 64  # French vocabulary, specials included
    hidden: int = 128  # the tutorial's hidden_size: word vectors, GRU states and attention
    dropout: float = 0.1  # the tutorial's dropout_p, on the word vectors
    label_smoothing: float = 0.0  # (Translator.loss reads it; the baseline's loss is NLLLoss)


class TutorialTranslator(Translator):
    """GRU encoder, GRU decoder with Bahdanau attention, log_softmax outputs: the tutorial's model, on our data.

    score_j = Vaᵀ tanh(Wa s_{t-1} + Ua h_j);  α = softmax(score);  c_t = Σ_j α_j h_j;
    s_t = GRU([E y_{t-1}; c_t], s_{t-1});  log p(y_t) = log_softmax(W_out s_t).  s_0 is the encoder's last state.
    """

    family = "tutorial-baseline"  # not a registered family: it is only trained and measured here

    def __init__(self, config: TutorialConfig) -> None:
        super().__init__()
        H = config.hidden
        self.config = config
        self.src_embed = nn.Embedding(config.src_vocab_size, H)
        self.encoder = nn.GRU(H, H, batch_first=True)
        self.tgt_embed = nn.Embedding(config.tgt_vocab_size, H)
        self.Wa, self.Ua, self.Va = nn.Linear(H, H), nn.Linear(H, H), nn.Linear(H, 1)
        self.decoder = nn.GRU(2 * H, H, batch_first=True)
        self.out = nn.Linear(H, config.tgt_vocab_size)
        self.drop = nn.Dropout(config.dropout)

    def start(self, src: torch.Tensor, src_lengths: torch.Tensor):
        """-> (keys h_j (B, T, H), Ua h_j (B, T, H), mask (B, T)), s_0 (1, B, H)."""
        B, T = src.shape
        lengths = src_lengths.to(src.device)
        states, _ = self.encoder(self.drop(self.src_embed(src)))  # (B, T, H); padding only after each sentence
        mask = torch.arange(T, device=src.device)[None, :] < lengths[:, None]  # (B, T)
        last = states[torch.arange(B, device=src.device), lengths - 1]  # (B, H): the state after the last word
        return (states, self.Ua(states), mask), last[None].contiguous()

    def step(self, y_prev: torch.Tensor, state):
        """y_{t-1} (B,) -> log-probabilities (B, V), the new state, the attention weights (B, T)."""
        (keys, projected, mask), hidden = state
        embedded = self.drop(self.tgt_embed(y_prev))[:, None, :]  # (B, 1, H)
        scores = self.Va(torch.tanh(self.Wa(hidden[-1])[:, None, :] + projected)).squeeze(-1)  # (B, T)
        weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)  # (B, T)
        context = (weights[:, None, :] @ keys)  # (B, 1, H)
        output, hidden = self.decoder(torch.cat([embedded, context], dim=-1), hidden)  # (B, 1, H)
        return F.log_softmax(self.out(output[:, 0]), dim=-1), ((keys, projected, mask), hidden), weights

    def forward(self, src: torch.Tensor, src_lengths: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """Teacher forcing, one step at a time (the query is s_{t-1}): tgt_in (B, U) -> log-probs (B, U, V)."""
        state = self.start(src, src_lengths)
        steps = []
        for t in range(tgt_in.size(1)):
            log_probs, state, _ = self.step(tgt_in[:, t], state)
            steps.append(log_probs)
        return torch.stack(steps, dim=1)

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """NLLLoss of the log_softmax outputs, every real target word (and <eos>), padding left out."""
        tgt = batch["tgt"]
        log_probs = self(batch["src"], batch["src_lengths"], tgt[:, :-1])  # (B, U+1, V)
        return F.nll_loss(log_probs.reshape(-1, log_probs.size(-1)), tgt[:, 1:].reshape(-1), ignore_index=PAD_ID)


TUTORIAL_TRAIN = {"batch_size": 32, "lr": 1e-3, "warmup": 0, "schedule": "constant", "clip": 0.0,
                  "weight_decay": 0.0}  # Adam(lr=0.001), batches of 32, nothing else (AdamW with no decay is Adam)


# ---------------------------------------------------------------------------------------------------------
# The contenders


@dataclass(frozen=True)
class Contender:
    name: str  # a row of the report
    what: str  # one line: the model and how it trains
    budget_s: float  # stop after this many seconds of training if it has not reached TARGET
    every: int  # measure the held-out exact match every this many steps...
    first: int = 0  # ... from this step on (an untrained model decodes every sentence to its length limit: slow)


BASELINE = "tutorial baseline"
FASTEST_ROW = "fastest (preset)"
QUICK_BASELINE_S = 6.0  # the quick run trains the baseline this long: its cost per example, not its time to 95%


def _contenders(quick: bool) -> list[Contender]:
    fastest = Contender(FASTEST_ROW, _preset_text(), 90.0, 25, first=175)
    baseline_what = ("GRU encoder, GRU decoder with Bahdanau attention, hidden 128; Adam 1e-3, batch 32, NLLLoss, "
                     "teacher forcing on every step, no schedule, no clipping")
    if quick:
        return [fastest, Contender(BASELINE, baseline_what, QUICK_BASELINE_S, 10**9)]
    return [
        fastest,
        Contender("dot (zoo)", _zoo_text("dot"), 150.0, 50, first=300),
        Contender("transformer-translator (zoo)", _zoo_text("transformer-translator"), 300.0, 50, first=200),
        Contender("additive (zoo)", _zoo_text("additive"), 400.0, 25, first=200),
        Contender(BASELINE, baseline_what, 600.0, 50, first=300),
    ]


def _preset_text() -> str:
    from seqviz.runs import preset

    spec = preset(FASTEST).spec
    config = spec.train_config()
    return (f"the \"{FASTEST}\" preset: {spec.family} (Luong) LSTM translator, embedding {spec.embedding}, hidden "
            f"{spec.hidden}; AdamW {spec.lr:g} (warm-up {config.warmup} steps, then {config.schedule} to "
            f"{config.min_lr_ratio:g}x), batch {spec.batch_size}, {spec.steps} steps")


def _zoo_text(name: str) -> str:
    from seqviz import zoo

    entry, train = zoo.entry(name), zoo.entry(name).train
    sizes = {k: v for k, v in entry.config.items() if k in ("emb_dim", "hidden", "d_model", "d_ff", "enc_layers")}
    return (f"{entry.description}; {', '.join(f'{k} {v}' for k, v in sizes.items())}; AdamW {train['lr']:g}, "
            f"batch {train['batch_size']}, cosine over {train['steps']} steps")


def _build(name: str, task):
    """(model, TrainConfig) of a contender, seeded; the global random state untouched."""
    from seqviz import zoo
    from seqviz.runs import preset
    from seqviz.train import TrainConfig

    if name == FASTEST_ROW:
        spec = preset(FASTEST).spec
        model, _, config = spec.build()
        return model, config
    if name == BASELINE:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            model = TutorialTranslator(TutorialConfig(**task.model_fields()))
        return model, TrainConfig(steps=100_000, seed=0, **TUTORIAL_TRAIN)
    zoo_name = name.split(" ")[0]
    return zoo.build(zoo_name, task), zoo.train_config(zoo_name)


# ---------------------------------------------------------------------------------------------------------
# Measuring


def _le30_exact(task, model, pairs) -> float:
    model.eval()
    outputs = task.translate(model, [p.src for p in pairs])
    return sum(list(out) == list(p.tgt) for out, p in zip(outputs, pairs, strict=True)) / len(pairs)


def learning_curve(contender: Contender, task, budget_s: float | None = None) -> dict:
    """Train one contender until it first measures >= TARGET or spends its budget; its curve and figures."""
    from seqviz.models import num_parameters
    from seqviz.train import train

    budget = contender.budget_s if budget_s is None else budget_s
    le30 = [p for p in task.splits.test if len(p.src) <= 30]
    model, config = _build(contender.name, task)
    clock = {"eval_wall": 0.0, "eval_cpu": 0.0, "cpu0": time.thread_time(), "done": False}
    curve: list[dict] = []

    def progress(p) -> None:
        cpu = time.thread_time() - clock["cpu0"] - clock["eval_cpu"]
        wall = p.elapsed_s - clock["eval_wall"]
        due = p.step >= contender.first and p.step % contender.every == 0
        if not due and p.step != p.steps and wall < budget:
            return
        began, began_cpu = time.perf_counter(), time.thread_time()
        exact = _le30_exact(task, p.model, le30)
        clock["eval_wall"] += time.perf_counter() - began
        clock["eval_cpu"] += time.thread_time() - began_cpu
        curve.append({"step": p.step, "examples": p.step * config.batch_size, "seconds": round(wall, 2),
                      "cpu_seconds": round(cpu, 2), "exact_le30": round(exact, 4), "loss": round(p.loss, 4)})
        clock["done"] = exact >= TARGET or wall >= budget

    with LoadSampler() as load:
        train(model, task, config, progress=progress, stop=lambda: clock["done"])
    reached = next((point for point in curve if point["exact_le30"] >= TARGET), None)
    previous = None
    if reached is not None and curve.index(reached) > 0:
        previous = curve[curve.index(reached) - 1]
    last = curve[-1]
    return {
        "name": contender.name, "what": contender.what, "params": num_parameters(model),
        "batch_size": config.batch_size, "lr": config.lr, "measured_every_steps": contender.every,
        "budget_s": budget, "reached": reached, "measure_before": previous, "last": last,
        "ms_per_example": 1000 * last["seconds"] / last["examples"],
        "cpu_ms_per_example": 1000 * last["cpu_seconds"] / last["examples"],
        "curve": curve, **load.summary(),
    }


def run(quick: bool = False) -> dict:
    """Measure the contenders (quick: the fastest to TARGET, then the baseline for QUICK_BASELINE_S)."""
    from seqviz.runs import shared_task
    from seqviz.runtime import configure_torch

    configure_torch()  # one torch thread, deterministic (once per process)
    began = time.perf_counter()
    task = shared_task("translation")
    rows = []
    for contender in _contenders(quick):
        rows.append(learning_curve(contender, task))
    figures = {"quick": quick, "threads": torch.get_num_threads(), "cpus": os.cpu_count(), "target": TARGET,
               "runs": {row["name"]: row for row in rows}}
    figures["comparison"] = compare(figures["runs"])
    figures["goals"] = goals(figures)
    figures["wall_seconds"] = round(time.perf_counter() - began, 1)
    return figures


def compare(runs: dict) -> dict:
    """Baseline over fastest: to TARGET in seconds and in examples, and the cost of one example on each side.

    seconds = examples x seconds per example, so the speed-up splits into a factor of fewer examples and a factor
    of cheaper examples. Where the baseline never reached TARGET, its figures are lower bounds (">")."""
    fast, base = runs.get(FASTEST_ROW), runs.get(BASELINE)
    if not fast or not base or not fast["reached"]:
        return {}
    if base["reached"] is None and base["budget_s"] <= QUICK_BASELINE_S:  # the quick run: cost per example only
        return {"cost_per_example_ratio": base["cpu_ms_per_example"] / fast["cpu_ms_per_example"], "quick": True}
    reached = base["reached"] is not None
    point = base["reached"] or base["last"]
    out = {
        "baseline_reached": reached,
        "baseline_figure": point["exact_le30"],
        "seconds_ratio": point["seconds"] / fast["reached"]["seconds"],
        "cpu_seconds_ratio": point["cpu_seconds"] / fast["reached"]["cpu_seconds"],
        "examples_ratio": point["examples"] / fast["reached"]["examples"],
        "cost_per_example_ratio": base["cpu_ms_per_example"] / fast["cpu_ms_per_example"],  # CPU: loads differ
        "lower_bound": not reached,
    }
    before_base, before_fast = base["measure_before"], fast["measure_before"]
    if reached and before_base and before_fast:  # each crossing lies between a measure and the one before it
        out["seconds_ratio_range"] = (before_base["seconds"] / fast["reached"]["seconds"],
                                      point["seconds"] / before_fast["seconds"])
        out["cpu_seconds_ratio_range"] = (before_base["cpu_seconds"] / fast["reached"]["cpu_seconds"],
                                          point["cpu_seconds"] / before_fast["cpu_seconds"])
    if not reached:  # the baseline's exact match at the time the fastest reached TARGET
        at = [p for p in base["curve"] if p["seconds"] <= fast["reached"]["seconds"]]
        out["baseline_at_fastest_seconds"] = at[-1] if at else None
    return out


def goals(figures: dict) -> list[dict]:
    runs, comparison = figures["runs"], figures["comparison"]
    fast = runs.get(FASTEST_ROW)
    rows = []
    if fast:
        r = fast["reached"]
        rows.append({"goal": GOALS["seconds"], "met": bool(r and r["seconds"] <= GOAL_SECONDS),
                     # on a shared machine the thread's own CPU seconds are the nearer measure of one thread's time
                     "met_in_cpu_seconds": bool(r and r["cpu_seconds"] <= GOAL_SECONDS),
                     "measured": (f"{r['exact_le30']:.1%} first measured at step {r['step']} ({r['examples']:,} "
                                  f"examples), {r['seconds']:.1f} s of training ({r['cpu_seconds']:.1f} CPU s)"
                                  if r else f"not reached: {fast['last']['exact_le30']:.1%} after "
                                  f"{fast['last']['seconds']:.1f} s")})
    if comparison and not comparison.get("quick"):
        ratio, bound = comparison["seconds_ratio"], ">" if comparison["lower_bound"] else ""
        text = (f"{bound}{ratio:.1f}x in seconds ({bound}{comparison['cpu_seconds_ratio']:.1f}x in CPU seconds), "
                f"{bound}{comparison['examples_ratio']:.1f}x in examples seen")
        if "cpu_seconds_ratio_range" in comparison:
            low, high = comparison["cpu_seconds_ratio_range"]
            text += (f"; both crossings lie between a measure and the one before it, so in CPU seconds the ratio "
                     f"lies between {low:.1f}x and {high:.1f}x")
        if comparison["lower_bound"]:
            stopped = runs[BASELINE]["last"]["seconds"]
            text += (f": the baseline had not reached {TARGET:.0%} when it stopped "
                     f"({comparison['baseline_figure']:.1%} after {stopped:.0f} s)")
        rows.append({"goal": GOALS["ratio"], "met": ratio >= GOAL_RATIO, "measured": text})
    return rows


# ---------------------------------------------------------------------------------------------------------
# The report


def _seconds(point: dict | None) -> str:
    return "–" if point is None else f"{point['seconds']:.1f}"


def markdown(figures: dict) -> str:
    """The "Training, for the record" section of benchmarks/report.md."""
    runs = figures["runs"]
    parts = [
        "## Translators: training, for the record",
        "Each translator from scratch on the same task (the shipped data split and vocabularies), seed 0, one torch "
        "thread, with the one training loop (`seqviz.train`). Held-out exact match on the test sentences of at most "
        "30 tokens (`exact_match_le30`, the zoo's and presets' greedy evaluation) is measured every few steps, off the "
        "clock; \"to 95%\" is the first measure at or above 95%, so the crossing lies between it and the measure "
        "before. Seconds are wall seconds of training; CPU s are the training thread's own (a busy machine inflates "
        "them less). Examples = steps x batch size. The baseline is written after PyTorch's seq2seq tutorial (see "
        "`benchmarks/translators.py`)." + (f" Quick run: the fastest to 95%, the baseline for {QUICK_BASELINE_S:g} s."
                                          if figures["quick"] else ""),
    ]
    rows = ["| translator | params | batch | lr | to 95%: step | examples | s | CPU s | measure before | at the end "
            "(exact, step, s) | ms / example | CPU ms / example | load avg (min-max) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---|"]
    for r in runs.values():
        hit, before, last = r["reached"], r["measure_before"], r["last"]
        rows.append(
            f"| {r['name']} | {r['params']:,} | {r['batch_size']} | {r['lr']:g} | "
            + (f"{hit['step']} | {hit['examples']:,} | {hit['seconds']:.1f} | {hit['cpu_seconds']:.1f} | "
               if hit else "not reached | – | – | – | ")
            + (f"{before['exact_le30']:.1%} at {before['seconds']:.1f} s | " if before else "– | ")
            + f"{last['exact_le30']:.1%}, {last['step']}, {last['seconds']:.1f} | {r['ms_per_example']:.2f} | "
            f"{r['cpu_ms_per_example']:.2f} | {r['load_min']:.1f}-{r['load_max']:.1f} |")
    parts.append("\n".join(rows))
    parts.append("\n".join(f"- **{r['name']}**: {r['what']}." for r in runs.values()))
    parts.append(curve_tables(runs))
    parts.append(what_makes_the_difference(figures))
    if figures.get("goals"):
        parts.append("Goals (issue 9, \"Training, for the record\"):")
        parts.append("\n".join(f"- {_verdict(g)}: {g['goal']}. {g['measured']}." for g in figures["goals"]))
    parts.append(f"Measured in {figures['wall_seconds']:.0f} s of wall time, evaluations included.")
    return "\n\n".join(parts)


EXAMPLES_AXIS = (4_000, 8_000, 16_000, 32_000, 64_000, 128_000)
SECONDS_AXIS = (5, 10, 20, 40, 80, 160, 320)


def _at_most(curve: list[dict], key: str, limit: float) -> str:
    """The last measure taken at or before ``limit`` (examples or seconds), as "93.1%", or "–"."""
    points = [p for p in curve if p[key] <= limit]
    return f"{points[-1]['exact_le30']:.1%}" if points else "–"


def curve_tables(runs: dict) -> str:
    """Held-out exact match against examples seen and against CPU seconds of training: the last measure taken by then
    (measures are every few steps, and each run stops once it reaches 95%)."""
    out = []
    for key, axis, unit in (("examples", EXAMPLES_AXIS, "examples"), ("cpu_seconds", SECONDS_AXIS, "CPU s")):
        head = "| translator | " + " | ".join(f"{x:,} {unit}" for x in axis) + " |"
        rows = [head, "|---|" + "---:|" * len(axis)]
        for r in runs.values():
            rows.append(f"| {r['name']} | " + " | ".join(_at_most(r["curve"], key, x) for x in axis) + " |")
        out.append("\n".join(rows))
    return ("Exact match (<= 30 tokens) by examples seen, then by CPU seconds of training: the last measure taken "
            "by then (\"–\": none yet; a run stops once it measures 95%).\n\n" + "\n\n".join(out))


def _verdict(goal: dict) -> str:
    if goal["met"]:
        return "met"
    if goal.get("met_in_cpu_seconds"):
        return "met in CPU seconds, MISSED in wall seconds (a shared machine)"
    return "MISSED"


def what_makes_the_difference(figures: dict) -> str:
    """Time to 95% = examples needed x seconds per example: which factor each translator wins or loses."""
    runs, c = figures["runs"], figures["comparison"]
    fast = runs.get(FASTEST_ROW)
    lines = ["### What makes the difference",
             "CPU seconds to 95% (the runs met different loads, and CPU seconds vary less with load) = examples "
             "needed x CPU seconds per example, so each gap splits into a factor of examples "
             "(how much each example teaches: learning rate, schedule, batch size, the model) and a factor of cost "
             "per example (how long one example takes: above all, whether the decoder's teacher-forced steps run at "
             "once or one after another in Python)."]
    if fast and fast["reached"]:
        bullets = []
        for r in runs.values():
            if r is fast or (c.get("quick") and r["name"] == BASELINE):  # 8 s of it say nothing of its time to 95%
                continue
            point = r["reached"] or r["last"]
            bound = "" if r["reached"] else ">"
            ex = point["examples"] / fast["reached"]["examples"]
            cost = r["cpu_ms_per_example"] / fast["cpu_ms_per_example"]
            seconds = point["cpu_seconds"] / fast["reached"]["cpu_seconds"]
            bullets.append(f"- {r['name']}: {bound}{seconds:.1f}x the fastest's CPU seconds = {bound}{ex:.1f}x its "
                           f"examples x {cost:.1f}x its cost per example ({r['cpu_ms_per_example']:.2f} against "
                           f"{fast['cpu_ms_per_example']:.2f} CPU ms)"
                           + ("" if r["reached"] else f"; it had {point['exact_le30']:.1%} when it stopped"))
        lines.append("\n".join(bullets))
    if c.get("quick"):
        lines.append(f"Quick run: the baseline trained {QUICK_BASELINE_S:g} s only, for its cost per example: "
                     f"{c['cost_per_example_ratio']:.1f}x ours. Its time to 95% is measured by the full run.")
    elif c:
        per_example = c["examples_ratio"]
        side = ("the baseline needs more examples" if per_example > 1 else "the baseline needs fewer examples")
        lines.append(
            f"Per example seen, honestly: {side} ({per_example:.2f}x ours{' at least' if c['lower_bound'] else ''}), "
            f"and each of its examples costs {c['cost_per_example_ratio']:.1f}x ours in CPU seconds.")
    return "\n\n".join(lines)


if __name__ == "__main__":  # python -m benchmarks.translators [--quick]
    import json
    import sys

    figures = run(quick="--quick" in sys.argv)
    print(markdown(figures))
    print(json.dumps({k: v for k, v in figures.items() if k != "runs"}, indent=1))
