"""python -m benchmarks: page latency (cold and warm), peak memory, training throughput, train your own, and the
speed a class feels in a real browser.

Pages run through Streamlit's AppTest in this process, so "cold" includes loading torch and the models
the page needs, and "warm" is a rerun with everything cached. "Train your own" (benchmarks/training.py)
trains the quick presets through the app's RunManager and compares the app's training speed in a real
browser with the command line's. "Speed a class feels" (benchmarks/browser.py) drives Debian's Chromium against
`streamlit run app.py`: typing to painted on every page, moving a widget, the server's CPU seconds per view with
1 and 10 sessions, where the time goes on the slowest page, growth with sentence length and visitors, cold start.
Timings are on this machine, which may be shared and noisy: read them as rough costs (the load average is in the
report). The report goes to benchmarks/report.md, the same figures to benchmarks/report.json.

    python -m benchmarks                 # everything (15 minutes on a quiet 2-core machine, 40 on a busy one,
                                         # half of it the translators against the tutorial's baseline)
    python -m benchmarks --quick         # fewer repeats everywhere, no app- or worker-against-command-line run, of the
                                         # presets only the classifier (under 3 minutes on a quiet machine)
    python -m benchmarks --sections presets,app   # only "Train your own"
    python -m benchmarks --sections worker        # a training worker against the command line (issue 26's 1.15x)
    python -m benchmarks --sections typing,widgets,cpu,growth,cold   # only the browser's sections
    python -m benchmarks --sections typing,widgets --keep   # those again, the rest of the last report kept
    python -m benchmarks --sections translators   # our translators against the tutorial's (benchmarks/translators.py)
    python -m benchmarks --sections store         # the lab store: checkpoints, a class's size, restarts, a lost worker

A class pressing Start at once is measured apart (minutes a class): python -m benchmarks.classroom, whose --report
puts its section in the report; a run of python -m benchmarks keeps that section.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import resource
import statistics
import time

from benchmarks.report import REPORT, REPORT_JSON, ROOT, previous, progress, table

BROWSER = ("typing", "widgets", "cpu", "growth", "cold")  # benchmarks/browser.py
SECTIONS = ("pages", "throughput", "presets", "app", "worker", *BROWSER, "explain", "store", "translators")
OPTIONAL: tuple[str, ...] = ()  # sections measured only when named in --sections (none now)


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports kB


def page_latency(repeats: int) -> list[dict]:
    from streamlit.testing.v1 import AppTest

    from seqviz.story import PAGES

    rows = []
    for page in PAGES:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
        at.run()
        start = time.perf_counter()
        at.switch_page(page.script).run()
        cold = time.perf_counter() - start
        if at.exception:
            raise RuntimeError(f"{page.script} raised: {[e.value for e in at.exception]}")
        warm = []
        for _ in range(repeats):
            start = time.perf_counter()
            at.run()
            warm.append(time.perf_counter() - start)
        rows.append({"page": f"/{page.url_path}", "cold s": cold, "warm s": statistics.median(warm),
                     "peak RSS MB": _peak_rss_mb()})
    return rows


def training_throughput(steps: int) -> list[dict]:
    import torch

    from seqviz import zoo
    from seqviz.train import TrainConfig, train

    torch.set_num_threads(1)
    rows = []
    for name in ("lstm", "transformer", "memory-lstm", "plain", "additive", "dot", "transformer-translator"):
        task = zoo.make_task(name)
        model = zoo.build(name, task)
        config = TrainConfig(**{**zoo.entry(name).train, "steps": steps, "warmup": 0})
        result = train(model, task, config)
        batch = config.batch_size
        rows.append({"model": name, "steps": result.steps, "seconds": result.seconds,
                     "examples per second": result.steps * batch / result.seconds})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="warm reruns per page")
    parser.add_argument("--train-steps", type=int, default=30, help="training steps per model (0: skip)")
    parser.add_argument("--sections", default=",".join(SECTIONS),
                        help=f"what to measure, comma-separated: {', '.join(SECTIONS + OPTIONAL)} (default: all)")
    parser.add_argument("--app-steps", type=int, default=300, help="steps of the app-against-command-line run")
    parser.add_argument("--keep", action="store_true",
                        help="keep the last report's figures of the sections not measured now (each run's date said)")
    parser.add_argument("--quick", action="store_true",
                        help="the short version (under 3 minutes on a quiet machine): no app-against-command-line "
                             "run, of the presets only the email classifier, one warm rerun, 10 training steps, "
                             "fewer sentences, moves and sessions in the browser, the translators' short form")
    args = parser.parse_args()
    sections = [name.strip() for name in args.sections.split(",") if name.strip()]
    unknown = set(sections) - set(SECTIONS + OPTIONAL)
    if unknown:
        parser.error(f"unknown sections {', '.join(sorted(unknown))}; choose from {', '.join(SECTIONS + OPTIONAL)}")
    if args.quick:
        sections = [name for name in sections if name not in ("app", "worker")]
        args.repeats = min(args.repeats, 1)
        args.train_steps = min(args.train_steps, 10)

    began = time.perf_counter()
    started = time.strftime("%Y-%m-%d %H:%M")
    load = os.getloadavg()
    last = previous_report()
    before = last.get("browser")  # the last report's typing medians are shown beside the new ones
    figures: dict = {"measured": started, "machine": platform.machine(), "python": platform.python_version(),
                     "cpus": os.cpu_count(), "load_average_at_start": load, "sections": sections}
    measure(figures, sections, args)
    kept = keep(figures, last, sections) if args.keep else []
    if not any(part in sections for part in BROWSER):
        before = None  # the browser's figures are the last report's own (or none)
    classroom = previous("classroom")  # measured apart (python -m benchmarks.classroom: minutes a class): kept
    if classroom:
        figures["classroom"] = classroom
    figures["load_average_at_end"] = os.getloadavg()
    figures["seconds"] = time.perf_counter() - began
    whole = set(SECTIONS) <= set(sections) and not args.quick
    header = (f"Measured {started} on {platform.machine()}, {platform.python_version()}, {os.cpu_count()} CPUs, "
              f"load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1 / 5 / 15 min) at the start: the "
              "machine is shared with other work. Written by `python -m benchmarks"
              + (" --quick" if args.quick else "")
              + (f" --sections {','.join(sections)}" if set(sections) != set(SECTIONS) else "")
              + (" --keep" if args.keep else "") + "`; never asserted in tests."
              + ("" if whole or kept else " A partial run: the sections not measured are missing.")
              + (f" Kept from the run of {last.get('measured')}: {', '.join(kept)}." if kept else "")
              + f" This run took {figures['seconds']:.0f} s.")
    REPORT.write_text("\n\n".join(["# seqviz benchmarks", header, *sections_markdown(figures, before)]) + "\n",
                      encoding="utf-8")
    REPORT_JSON.write_text(json.dumps(figures, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(REPORT.read_text(encoding="utf-8"))


def previous_report() -> dict:
    """The last report.json's figures ({} when there is none)."""
    try:
        return json.loads(REPORT_JSON.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


# Where each section's figures live in report.json (the browser's parts share one entry)
FIGURES_OF = {"pages": "pages", "throughput": "throughput", "presets": "presets", "app": "app_vs_cli",
              "worker": "worker", **dict.fromkeys(BROWSER, "browser"), "explain": "explain", "store": "store",
              "translators": "translators"}


def keep(figures: dict, last: dict, sections: list[str]) -> list[str]:
    """Put the last report's figures of the sections not measured now into ``figures`` (the browser's parts
    measured now replace theirs); the sections kept, by name."""
    kept = []
    for section in SECTIONS:
        key = FIGURES_OF[section]
        if section in sections or key not in last:
            continue
        if key == "browser" and key in figures:
            figures[key] = {**last[key], **{k: v for k, v in figures[key].items()}}
        else:
            figures.setdefault(key, last[key])
        kept.append(section)
    return kept


def measure(figures: dict, sections: list[str], args) -> None:
    """Measure the sections asked for into ``figures``."""
    if "pages" in sections:
        figures["pages"] = page_latency(args.repeats)
    if "throughput" in sections and args.train_steps:
        figures["throughput"] = training_throughput(args.train_steps)
    if "presets" in sections or "app" in sections:
        from benchmarks import training

        if "presets" in sections:
            names = (training.TRANSLATOR, training.CLASSIFIER, training.GRU, training.RNN)
            if args.quick:  # the classifier alone: the memory pair takes half a minute (the full run has it)
                names = (training.CLASSIFIER,)
            figures["presets"] = training.presets(names)
            progress(training.markdown({"presets": figures["presets"]}))
        if "app" in sections:
            figures["app_vs_cli"] = training.app_vs_cli(args.app_steps)
    if "worker" in sections:
        from benchmarks import worker_speed

        figures["worker"] = worker_speed.figures()
    parts = tuple(name for name in BROWSER if name in sections)
    if parts:
        from benchmarks import browser

        plan = browser.Plan.quick_plan() if args.quick else browser.Plan()
        figures["browser"] = browser.measure(plan, parts)
    if "explain" in sections:
        from benchmarks import explain

        figures["explain"] = explain.measure(quick=args.quick)
    if "store" in sections:
        from benchmarks import store

        figures["store"] = store.measure(quick=args.quick)
    if "translators" in sections:
        from benchmarks import translators

        figures["translators"] = translators.run(quick=args.quick)


def sections_markdown(figures: dict, before: dict | None = None) -> list[str]:
    """The report's sections, from whatever ``figures`` holds (measured now or kept); ``before``: the last report's
    browser figures, beside the browser's measured now."""
    out = []
    if "pages" in figures:
        out += ["## Pages (AppTest, in one process)",
                "cold: the page's first run in this process (the first page to need torch pays for loading it; "
                "models and traces cached by earlier pages stay cached, as on a server shared by many visitors); "
                "warm: a rerun with caches filled; peak RSS: the process's peak memory so far.",
                table(figures["pages"])]
    if "throughput" in figures:
        out += ["## Training throughput (one thread, the zoo's batch sizes)", table(figures["throughput"])]
    if "presets" in figures or "app_vs_cli" in figures:
        from benchmarks import training

        out.append(training.markdown(figures))
    if "worker" in figures:
        from benchmarks import worker_speed

        out.append(worker_speed.markdown(figures["worker"]))
    if "browser" in figures:
        from benchmarks import browser

        out.append(browser.markdown(figures["browser"], before))
    for key in ("explain", "store", "translators"):
        if key in figures:
            out.append(importlib.import_module(f"benchmarks.{key}").markdown(figures[key]))
    if "classroom" in figures:
        from benchmarks import classroom_figures

        out.append(classroom_figures.markdown(figures["classroom"]))
    return out


if __name__ == "__main__":
    main()
