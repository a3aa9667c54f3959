"""Train your own: how fast the quick presets reach their goals, and the app's training speed against the CLI's.

Measured, never asserted in tests:

- ``presets``: each quick preset from scratch through :class:`seqviz.jobs.RunManager` (the app's own path: a
  Dask worker process of the app's own local cluster, one torch thread, the live held-out metric measured as often
  as keeps it under seqviz.limits.TRAIN_EVAL_SHARE of the run, snapshots of the app's default sentence). The run's state
  is polled every ``POLL_S`` seconds for (step, seconds of training), so a held-out measure taken after step s
  is dated by the seconds of training at step s. The live metric is only measured every few seconds: "first
  reached" means "first measured at or above", and the measure before it is reported beside it.
- ``app_vs_cli``: one spec trained from the command line (a subprocess) and from the real app
  (``streamlit run app.py`` driven by Debian's Chromium through Playwright, as tests/browser do): steps per
  second of training of each, and their ratio.

The machine is shared: the 1-minute load average is sampled every 2 s during each measurement and reported.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.report import LoadSampler, goal_line

ROOT = Path(__file__).resolve().parents[1]
POLL_S = 0.2
TRANSLATOR = "Quick: attention translator"
CLASSIFIER = "Quick: LSTM email classifier"
GRU = "Memory: GRU"
RNN = "Memory: plain RNN"
GOALS = {  # the goals ("Train in the browser", Speed)
    # the app's path, live measuring included; benchmarks/translators.py measures issue 9's 20 s, off the clock
    TRANSLATOR: "held-out exact match (sources <= 30 tokens) >= 95% within 30 s of training",
    CLASSIFIER: "held-out twins accuracy >= 95% within 15 s of training",
    GRU: "accuracy at distance 20 >= 95% within 30 s, the plain RNN far below on the same budget",
    "app_vs_cli": "the app trains at >= 0.8 of the command line's steps per second",
}


# ---------------------------------------------------------------------------------------------------------
# The quick presets, through the app's RunManager


def _seconds_at(samples: list[tuple[int, float]], step: int) -> float:
    """Seconds of training at ``step``, interpolated between polled (step, seconds) pairs."""
    before = max((s for s in samples if s[0] <= step), default=(0, 0.0))
    after = min((s for s in samples if s[0] >= step), default=samples[-1])
    if after[0] == before[0]:
        return after[1]
    return before[1] + (after[1] - before[1]) * (step - before[0]) / (after[0] - before[0])


def _first_at_least(history, threshold: float):
    """(step, metric, previous (step, metric) or None) of the first live measure >= threshold, or None."""
    previous = None
    for step, metric in history:
        if metric >= threshold:
            return step, metric, previous
        previous = (step, metric)
    return None


def train_preset(manager, lab: str, name: str, tokens: tuple[str, ...]) -> dict:
    """Train the preset ``name`` from scratch through ``manager`` for ``lab`` (as the Train page does, its state
    read from the store as the page polls it); its figures."""
    from seqviz import story
    from seqviz.runs import preset
    from seqviz.worker import SnapshotView

    spec = preset(name).spec
    watch = SnapshotView.for_run(spec, tokens, story.models("watch"))  # on the worker, as the Train page's
    with LoadSampler() as load:
        began = time.perf_counter()
        run_id = manager.submit(lab, spec, watch=watch)
        samples = [(0, 0.0)]
        while True:
            state = next(s for s in manager.runs_of(lab) if s.id == run_id)
            if state.ended:
                break
            if state.step:
                samples.append((state.step, state.trained_s))
            time.sleep(POLL_S)
        wall = time.perf_counter() - began
    if state.status != "finished":
        raise RuntimeError(f"{name}: the run ended {state.status}: {state.error or state.stop_reason}")
    samples.append((state.step, state.train_seconds))
    crossing = _first_at_least(state.metric_history, 0.95)
    result = {
        "preset": name, "family": spec.family, "steps": state.step, "batch_size": spec.batch_size,
        "train_seconds": state.train_seconds, "wall_seconds": wall, "metric_name": state.metric_name,
        "metric_history": [(s, round(m, 4)) for s, m in state.metric_history],
        "final_metric": state.metric, "metrics_summary": _summary(spec.task, state.metrics),
        "live_measures": len(state.metric_history), "snapshots": len(state.snapshots), **load.summary(),
    }
    if crossing:
        step, metric, previous = crossing
        result.update(reached_step=step, reached_metric=metric, reached_seconds=_seconds_at(samples, step),
                      below_before=None if previous is None else {
                          "step": previous[0], "metric": previous[1],
                          "seconds": _seconds_at(samples, previous[0])})
    result["metric_history_seconds"] = [(s, _seconds_at(samples, s), m) for s, m in state.metric_history]
    return result


def _summary(task: str, metrics: dict | None) -> dict:
    from seqviz.tasks import TASKS

    return TASKS[task].summary(metrics or {})


def twins_curve(name: str = CLASSIFIER, every: int = 25) -> dict:
    """The LSTM preset again, outside the app, with the twins accuracy measured every ``every`` steps (its
    cost left out of the clock): when the held-out twins first reach 95%, which the app's live metric (test
    accuracy) does not show."""
    from seqviz.runs import preset
    from seqviz.train import train

    spec = preset(name).spec
    model, task, config = spec.build()
    clock = {"eval": 0.0}
    curve: list[tuple[int, float, float]] = []

    def progress(p) -> None:
        if p.step % every == 0 or p.step == p.steps:
            spent_before = clock["eval"]  # measuring done before this step's: off the clock
            began = time.perf_counter()
            p.model.eval()  # the loop puts it back in training mode
            twins = task.evaluate(p.model)["twins_accuracy"]
            clock["eval"] += time.perf_counter() - began
            curve.append((p.step, p.elapsed_s - spent_before, twins))

    with LoadSampler() as load:
        train(model, task, config, progress=progress)
    first = next(((s, sec, t) for s, sec, t in curve if t >= 0.95), None)
    return {"curve": curve, "reached": first, **load.summary()}


def presets(names: tuple[str, ...] = (TRANSLATOR, CLASSIFIER, GRU, RNN)) -> dict:
    """Each named quick preset from scratch through one RunManager; the figures and the goals."""
    from seqviz.jobs import RunManager
    from seqviz.store import Database, labs
    from seqviz.text import prepare
    from seqviz.ui import DEFAULT_SENTENCE

    tokens = tuple(prepare(DEFAULT_SENTENCE).tokens)
    with tempfile.TemporaryDirectory(prefix="seqviz-presets-") as folder:
        db = Database(f"sqlite:///{Path(folder) / 'seqviz.db'}")
        # The app's own cluster (cores - 1 workers); every run trained for itself, none followed from another.
        manager = RunManager(db, train_identical_once=False, orphan_timeout_s=3600)
        try:
            lab = labs.open_lab(db, None).id
            runs = {name: train_preset(manager, lab, name, tokens) for name in names}
        finally:
            manager.close()
    out: dict = {"runs": runs}
    if CLASSIFIER in names:
        out["twins_curve"] = twins_curve()
    out["goals"] = goals(out)
    return out


def goals(figures: dict) -> list[dict]:
    runs = figures["runs"]
    rows = []
    if TRANSLATOR in runs:
        r = runs[TRANSLATOR]
        seconds = r.get("reached_seconds")
        rows.append({"goal": GOALS[TRANSLATOR], "met": seconds is not None and seconds <= 30,
                     "measured": (f"first measured >= 95% at step {r['reached_step']} ({r['reached_metric']:.1%}), "
                                  f"{seconds:.1f} s of training" if seconds is not None else
                                  f"never reached 95% (end: {r['final_metric']:.1%} after {r['steps']} steps, "
                                  f"{r['train_seconds']:.1f} s)")
                     + _before(r)})
    if CLASSIFIER in runs:
        r = runs[CLASSIFIER]
        twins = r["metrics_summary"]["twins_accuracy"]
        curve = figures.get("twins_curve", {}).get("reached")
        met = twins >= 0.95 and (r["train_seconds"] <= 15 or (curve is not None and curve[1] <= 15))
        text = (f"twins {twins:.1%} at the end ({r['steps']} steps, {r['train_seconds']:.1f} s of training in the "
                "app's path; twins measured at the end, the live metric is test accuracy")
        live = r.get("reached_seconds")
        text += f", which first read >= 95% at step {r['reached_step']}, {live:.1f} s)" if live is not None else ")"
        if curve is not None:
            text += f"; measured every 25 steps outside the app: twins >= 95% from step {curve[0]}, {curve[1]:.1f} s"
        rows.append({"goal": GOALS[CLASSIFIER], "met": met, "measured": text})
    if GRU in runs:
        g = runs[GRU]
        seconds = g.get("reached_seconds")
        text = (f"GRU first measured >= 95% at distance 20 at step {g['reached_step']} ({g['reached_metric']:.1%}), "
                f"{seconds:.1f} s; {g['final_metric']:.1%} at the end ({g['steps']} steps, {g['train_seconds']:.1f} s)"
                if seconds is not None else f"GRU never reached 95% (end {g['final_metric']:.1%})") + _before(g)
        met = seconds is not None and seconds <= 30
        if RNN in runs:
            r = runs[RNN]
            at_gru = None
            if seconds is not None:
                at_gru = max(((s, m) for s, m in r["metric_history"] if s <= g["reached_step"]), default=None)
            text += (f"; plain RNN on the same budget ({r['steps']} steps, {r['train_seconds']:.1f} s): "
                     f"{r['final_metric']:.1%} at distance 20 at the end")
            if at_gru:
                text += f", {at_gru[1]:.1%} at step {at_gru[0]} (the GRU's step of 95%)"
            met = met and r["final_metric"] <= g["final_metric"] - 0.2
        rows.append({"goal": GOALS[GRU], "met": met, "measured": text})
    return rows


def _before(r: dict) -> str:
    b = r.get("below_before")
    if not b:
        return ""
    return f" (the measure before: {b['metric']:.1%} at step {b['step']}, {b['seconds']:.1f} s)"


# ---------------------------------------------------------------------------------------------------------
# The same spec from the command line and from the app


APP_SPEC = {"preset": TRANSLATOR, "steps": 300}


def cli_args(steps: int, out: Path) -> list[str]:
    """The command line of the quick translator preset with ``steps`` steps."""
    from seqviz.runs import preset

    spec = preset(APP_SPEC["preset"]).spec
    return ["train", "--task", spec.task, "--family", spec.family, "--embedding", str(spec.embedding),
            "--hidden", str(spec.hidden), "--steps", str(steps), "--lr", f"{spec.lr:g}",
            "--batch-size", str(spec.batch_size), "--seed", str(spec.seed), "--out", str(out)]


def train_cli(steps: int) -> dict:
    from seqviz import checkpoints

    with tempfile.TemporaryDirectory() as tmp, LoadSampler() as load:
        out = Path(tmp) / "cli.safetensors"
        args = cli_args(steps, out)
        began = time.perf_counter()
        subprocess.run([sys.executable, "-m", "seqviz", *args], cwd=ROOT, check=True, capture_output=True,
                       text=True)
        wall = time.perf_counter() - began
        meta = checkpoints.read_meta(out)
    command = "python -m seqviz " + " ".join(args).replace(str(out), "/tmp/x.safetensors")
    return {"how": "command line", "command": command,
            "steps": meta["steps"], "train_seconds": meta["train_seconds"], "wall_seconds": wall,
            "steps_per_second": meta["steps"] / meta["train_seconds"],
            "exact_match_le30": meta["metrics"]["exact_match_le30"], **load.summary()}


DONE = re.compile(r"(Finished|Stopped[^.]*?) after (\d+) steps and (\d+) s of training")
FAILED = re.compile(r"Training failed|These settings cannot be trained")


def train_app(steps: int, log_path: Path, timeout_s: float = 400.0) -> dict:
    """Start `streamlit run app.py`, open /train in Chromium, set the Preset and Steps, press Start training, keep
    the page open until the success box, and read steps and seconds from it (and, to the hundredth of a second,
    from the downloaded checkpoint)."""
    from seqviz import browser, checkpoints

    with browser.streamlit_server(log_path) as server, tempfile.TemporaryDirectory() as tmp, \
            browser.chromium() as chromium:
        _, page = browser.new_visitor(chromium, accept_downloads=True)
        page.goto(f"{server.url}/train")
        browser.wait_painted(page)
        main = page.get_by_test_id("stMain")
        picker = main.get_by_test_id("stSelectbox").filter(has_text="Preset")
        if APP_SPEC["preset"] not in picker.inner_text():
            main.get_by_role("combobox", name="Preset").click()
            page.get_by_role("option", name=APP_SPEC["preset"], exact=True).click()
            browser.wait_painted(page)
        box = browser.set_number(page, "Steps", steps)
        if box.input_value() != str(steps):
            raise RuntimeError(f"the Steps box reads {box.input_value()}, not {steps}")
        with LoadSampler() as load:
            began = time.perf_counter()
            main.get_by_role("button", name="Start training", exact=True).click()
            done = main.get_by_test_id("stAlert").filter(has_text=DONE)
            try:
                done.wait_for(state="visible", timeout=int(timeout_s * 1000))
            except Exception:
                shot = ROOT / "test-output" / "benchmark-train-timeout.png"
                page.screenshot(path=str(shot), full_page=True)
                raise RuntimeError(f"no end of the run after {timeout_s:.0f} s: see {shot}") from None
            wall = time.perf_counter() - began
        text = done.inner_text()
        found = DONE.search(text)
        browser.wait_painted(page)
        with page.expect_download() as event:
            main.get_by_role("button", name="Download checkpoint", exact=True).click()
        saved = Path(tmp) / "app.safetensors"
        event.value.save_as(saved)
        meta = checkpoints.read_meta(saved)
    steps_done, seconds = int(found.group(2)), int(found.group(3))
    return {"how": "app (/train in Chromium)", "success_box": text[found.start():].strip(),
            "ended": found.group(1), "steps": steps_done,
            "train_seconds_shown": seconds, "train_seconds": meta["train_seconds"], "wall_seconds": wall,
            "steps_per_second": meta["steps"] / meta["train_seconds"],
            "steps_per_second_shown": steps_done / seconds if seconds else None,
            "exact_match_le30": meta["metrics"]["exact_match_le30"], **load.summary()}


def app_vs_cli(steps: int = APP_SPEC["steps"]) -> dict:
    """The command line, then the app, then the command line again (the machine's load moves)."""
    log = ROOT / "test-output" / "benchmark-streamlit.log"
    log.parent.mkdir(exist_ok=True)
    cli = [train_cli(steps)]
    try:
        app = train_app(steps, log)
    except Exception as error:  # keep the rest of the report
        return {"cli": cli, "error": f"{type(error).__name__}: {error}",
                "goal": {"goal": GOALS["app_vs_cli"], "met": False, "measured": f"the app's run failed: {error}"}}
    cli.append(train_cli(steps))
    cli_rate = sum(c["steps_per_second"] for c in cli) / len(cli)
    ratio = app["steps_per_second"] / cli_rate
    return {"cli": cli, "app": app, "cli_steps_per_second": cli_rate, "ratio": ratio,
            "goal": {"goal": GOALS["app_vs_cli"], "met": ratio >= 0.8,
                     "measured": f"app {app['steps_per_second']:.2f} steps/s, command line {cli_rate:.2f} "
                                 f"(mean of {len(cli)}): ratio {ratio:.2f}"}}


# ---------------------------------------------------------------------------------------------------------
# The report


SHORT_OUT = {"accuracy_at_1", "accuracy_at_10", "accuracy_at_40", "twins_same_prediction"}  # kept in the json


def markdown(figures: dict) -> str:
    """The "Train your own" section of benchmarks/report.md."""
    parts = ["## Train your own",
             "Each quick preset from scratch through `seqviz.jobs.RunManager` (the app's "
             "path: a Dask worker process, one torch thread, the live held-out metric measured as often as keeps it "
             "under 15% of the run, snapshots of the app's default sentence every 2 s). Seconds are seconds of "
             "training (the run's clock, live measuring and snapshots included). \"first >= 95%\" is the first "
             "live measure at or above 95%; the live metric is measured only every few seconds, so the crossing "
             "lies between the measure before it and it. The machine is shared with other work: the load average "
             f"(1 min, {os.cpu_count()} CPUs) is sampled every 2 s during each run."]
    presets_ = figures.get("presets")
    if presets_:
        rows = ["| preset | steps | train s | first >= 95% (step, s) | measure before | at the end | load avg "
                "(min-max) |", "|---|---:|---:|---|---|---|---|"]
        for name, r in presets_["runs"].items():
            reached = (f"{r['reached_step']}, {r['reached_seconds']:.1f} s" if r.get("reached_seconds") is not None
                       else "not reached")
            before = r.get("below_before")
            before = f"{before['metric']:.1%} at {before['step']}, {before['seconds']:.1f} s" if before else "–"
            summary = ", ".join(f"{k.replace('_', ' ')} {v:.1%}" for k, v in r["metrics_summary"].items()
                                if isinstance(v, float) and k not in SHORT_OUT)
            rows.append(f"| {name} | {r['steps']} | {r['train_seconds']:.1f} | {reached} | {before} | {summary} | "
                        f"{r['load_min']:.1f}-{r['load_max']:.1f} |")
        parts.append("\n".join(rows))
        curve = presets_.get("twins_curve")
        if curve:
            points = ", ".join(f"{s}: {t:.0%} ({sec:.1f} s)" for s, sec, t in curve["curve"])
            parts.append("LSTM classifier, twins accuracy (the app's live metric is test accuracy, so twins are "
                         "measured at the end of the app's run; here the same spec trained again outside the app "
                         f"with twins measured every 25 steps, the measuring left out of the clock): {points}.")
        parts.append("Goals (issue \"Train in the browser\", Speed):")
        parts.append("\n".join(goal_line(g) for g in presets_["goals"]))
    versus = figures.get("app_vs_cli")
    if versus and "error" in versus:
        parts.append(f"### App against command line\n\nNot measured: {versus['error']}")
    elif versus:
        parts.append("### App against command line")
        parts.append("The same spec (the quick translator preset with fewer steps) trained by `python -m seqviz train"
                     " --task ...` (a subprocess) and by the real app: `streamlit run app.py`, /train opened in "
                     "Chromium, Preset and Steps set, **Start training** pressed, the page kept open (it polls every "
                     "1.5 s) until the success box. The box rounds seconds to whole ones; the seconds below are the "
                     "run's own to the hundredth (from its downloaded checkpoint). The app's seconds include its live "
                     "held-out measures and snapshots; the command line measures only at the end, off the clock.")
        rows = ["| how | steps | train s | steps/s | exact <=30 | load avg (min-max) |",
                "|---|---:|---:|---:|---:|---|"]
        for r in [versus["cli"][0], versus["app"], *versus["cli"][1:]]:
            rows.append(f"| {r['how']} | {r['steps']} | {r['train_seconds']:.2f} | {r['steps_per_second']:.2f} | "
                        f"{r['exact_match_le30']:.1%} | {r['load_min']:.1f}-{r['load_max']:.1f} |")
        parts.append("\n".join(rows))
        parts.append(f"The app's box: \"{versus['app']['success_box']}\". Command line: "
                     f"`{versus['cli'][0]['command']}`.")
        parts.append(goal_line(versus["goal"]))
    return "\n\n".join(parts)
