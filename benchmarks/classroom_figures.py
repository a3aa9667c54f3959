"""benchmarks/classroom.py's figures: a class's summary from its students' records, the ratio of the class's slowest
student to one student alone, and the section of benchmarks/report.md (and report.json's "classroom"). Pure: no
torch, no store, no cluster (tests/unit/test_benchmark_classroom.py)."""

from __future__ import annotations

import itertools
import json
import statistics
from collections import Counter
from pathlib import Path

from benchmarks.report import REPORT, REPORT_JSON

HEADING = "## A class presses Start at once (benchmarks/classroom.py)"


def quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)


def _round(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def class_summary(students: list[dict]) -> dict:
    """A class's figures from one record per student: ``pressed_at`` (time.time() it pressed Start), ``refused``,
    ``run`` (the run it follows), ``status``, ``model_at`` (when its model landed in its lab, or None),
    ``started_at``/``ended_at``/``train_seconds``/``followers``/``metric``/``fingerprint`` (of its run, as its lab
    reads it) and ``expected`` ((seen at, expected start) pairs the page showed while it waited)."""
    accepted = [s for s in students if not s["refused"]]
    to_model = [s["model_at"] - s["pressed_at"] for s in accepted if s["model_at"] is not None]
    waits = [max(0.0, s["started_at"] - s["pressed_at"]) for s in accepted if s["started_at"] is not None]
    runs: dict[str, dict] = {}
    for s in accepted:  # one record per run: the last student's view of it (its followers at the end)
        if s["run"] is not None:
            runs[s["run"]] = s
    trained = [r for r in runs.values() if r["started_at"] is not None]
    signed = []  # the expected start shown on the page less the actual start, over the wait left (estimates made
    jumps = []  # while waiting); and each refresh's wait shown over the one before it (larger over smaller)
    for s in accepted:
        before = None  # the start shown at the refresh before
        for seen_at, guess in s["expected"]:
            if s["started_at"] is not None and s["started_at"] - seen_at > 5:
                signed.append((guess - s["started_at"]) / (s["started_at"] - seen_at))
            # the wait shown now against the wait the start shown before leaves now (a countdown is no change)
            shown, left_then = guess - seen_at, None if before is None else before - seen_at
            if left_then is not None and min(left_then, shown) > 5:
                jumps.append(max(left_then, shown) / min(left_then, shown))
            before = guess
    errors = [abs(e) for e in signed]
    # With one worker, seconds from one run's end to the next one's start (the queue's hand-over), which a wait
    # spans once per run ahead
    spans = sorted((r["started_at"], r["ended_at"]) for r in trained if r["ended_at"] is not None)
    handovers = [start - end for (_s, end), (start, _e) in itertools.pairwise(spans) if start >= end]
    first = min((s["pressed_at"] for s in students), default=None)
    arrived = [s["model_at"] for s in accepted if s["model_at"] is not None]
    last = max((s["model_at"] or s["ended_at"] or 0 for s in accepted), default=None)
    return {
        "accepted": len(accepted), "refused": len(students) - len(accepted),
        "statuses": dict(Counter(str(s["status"]) for s in accepted)),
        "with_model": len(to_model), "without_model": len(accepted) - len(to_model),
        "to_model_max_s": _round(max(to_model, default=None)),
        "to_model_median_s": _round(_median(to_model)),
        "to_model_min_s": _round(min(to_model, default=None)),
        "to_model_s": [round(v, 1) for v in sorted(to_model)],
        "seconds_to_last_model": None if first is None or not last else round(last - first, 1),
        "presses_over_s": _round(max(s["pressed_at"] for s in students) - first) if students else None,
        "models_arrived_over_s": _round(max(arrived) - min(arrived)) if arrived else None,
        "runs": len(runs), "runs_trained": len(trained),
        "followers_per_run": sorted((r["followers"] or 0 for r in runs.values()), reverse=True),
        "models_distinct": len({s["fingerprint"] for s in accepted if s["fingerprint"]}),
        "longest_wait_s": _round(max(waits, default=None)), "median_wait_s": _round(_median(waits)),
        "train_seconds_median": _round(_median([r["train_seconds"] for r in trained if r["train_seconds"]])),
        "train_seconds_max": _round(max((r["train_seconds"] for r in trained if r["train_seconds"]), default=None)),
        "run_seconds_median": _round(_median([r["ended_at"] - r["started_at"] for r in trained if r["ended_at"]])),
        "final_metric_median": _round(_median([r["metric"] for r in trained if r["metric"] is not None]), 4),
        "estimate_relative_error_median": quantile(errors, 0.5),
        "estimate_relative_error_p90": quantile(errors, 0.9),
        "estimate_signed_error_median": quantile(signed, 0.5),  # < 0: expected too early
        "estimate_jump_max": _round(max(jumps, default=None), 2),
        "estimate_jumps_over_2x": sum(jump > 2 for jump in jumps), "estimate_refreshes": len(jumps),
        "handover_median_s": _round(_median(handovers), 2),
    }


def ratio_to_alone(group: dict, alone: dict) -> dict:
    """The class's slowest (and median) student's seconds to their model over one student alone's."""
    one = alone.get("to_model_max_s")
    if not one:
        return {"slowest": None, "median": None, "goal": 2.5}
    return {"slowest": _round((group.get("to_model_max_s") or 0) / one, 2) if group.get("to_model_max_s") else None,
            "median": _round((group.get("to_model_median_s") or 0) / one, 2) if group.get("to_model_median_s")
            else None, "goal": 2.5}


def _load(values) -> str:
    return " / ".join(f"{v:.1f}" for v in values) if values else "–"


def _columns(figure_sets: list[dict]) -> list[tuple[str, dict, dict]]:
    """(heading, one measurement, its figure set) per column: a same class's alone then class, a mixed class."""
    columns = []
    for figures in figure_sets:
        if "alone" in figures:
            columns.append(("one student alone", figures["alone"], figures))
        group = figures["class_of_students"]
        kind = "same preset and seed" if figures["class"] == "same" else "a seed each"
        columns.append((f"class of {group['students']}, {kind}", group, figures))
    return [(f"{heading} ({figures['measured'][5:]})", measured, figures) for heading, measured, figures in columns]


ROWS = [
    ("run", lambda m, f: f["spec"].split(", ", 1)[-1]),
    ("cluster, workers", lambda m, f: f"{m['cluster']}, {m['workers']}"),
    ("accepted / refused", lambda m, f: f"{m['accepted']} / {m['refused']}"),
    ("runs trained (followers of each)", lambda m, f: f"{m['runs_trained']} ("
     + (", ".join(map(str, m["followers_per_run"])) if m["runs"] <= 3 else f"{m['followers_per_run'][0]} at most")
     + ")"),
    ("students with their model / distinct models", lambda m, f: f"{m['with_model']} / {m['models_distinct']}"),
    ("Start to model in the lab: slowest / median", lambda m, f: f"{m['to_model_max_s']} / {m['to_model_median_s']} s"),
    ("slowest (median) over one alone", lambda m, f: "–" if "slowest_to_alone" not in f or m is f.get("alone") else
     f"{f['slowest_to_alone']['slowest']}x ({f['slowest_to_alone']['median']}x); goal 2.5x"),
    ("first press to last model", lambda m, f: f"{m['seconds_to_last_model']} s"),
    ("longest / median wait", lambda m, f: f"{m['longest_wait_s']} / {m['median_wait_s']} s"),
    ("training of one run (median)", lambda m, f: f"{m['train_seconds_median']} s"),
    ("expected start's error (median, of the wait left)", lambda m, f: "–" if m["estimate_relative_error_median"]
     is None else f"{m['estimate_relative_error_median']:.0%}" + (
         "" if m.get("estimate_signed_error_median") is None else
         f" ({m['estimate_signed_error_median']:+.0%} signed: - is too early)")),
    ("expected start's largest change between two refreshes (over 2x: of all)", lambda m, f: "–"
     if m.get("estimate_jump_max") is None else
     f"{m['estimate_jump_max']}x ({m['estimate_jumps_over_2x']} of {m['estimate_refreshes']})"),
    ("one run's end to the next one's start (median)", lambda m, f: "–" if m.get("handover_median_s") is None else
     f"{m['handover_median_s']} s"),
    ("a worker's peak memory", lambda m, f: f"{m['workers_peak_rss_mb']:.0f} MB"),
    ("health check p50 / p95 / failures", lambda m, f: f"{m['health_p50_s']} / {m['health_p95_s']} s / "
     f"{m['health_failures']}"),
    ("this benchmark's own CPU (submitting, reading every lab each second)", lambda m, f: "–" if m.get(
        "benchmark_cpu_s") is None else f"{m['benchmark_cpu_s']} s"),
    ("load average at the end (1 / 5 / 15 min)", lambda m, f: _load(m["load_average_at_end"])),
]


def markdown(figure_sets: list[dict]) -> str:
    """The report's section: the measurements side by side."""
    columns = _columns(figure_sets)
    cpus = figure_sets[0]["class_of_students"]["cpus"]
    when = "; ".join(f"{f['class']}: {f['measured']}, load {_load(f['load_average_at_start'])} at the start"
                     for f in figure_sets)
    lines = [HEADING, "",
             f"The preset *{figure_sets[0]['spec'].split(',')[0]}* (seqviz/runs.py). Students (a lab each, "
             "a fresh SQLite store and cluster per measurement) press Start within 5 s through "
             "the app's RunManager, while a thread asks a real web server's health check every 0.2 s. *Start to "
             "model*: from a student's press to the model landing in their lab. Identical runs are trained once, so "
             f"a class on one preset and seed follows one run. Measured {when}, {cpus} CPUs, shared"
             " with other work. Written by `python -m benchmarks.classroom`; never asserted in tests.",
             "", "| | " + " | ".join(heading for heading, _m, _f in columns) + " |",
             "|---|" + "---|" * len(columns)]
    for label, value in ROWS:
        lines.append(f"| {label} | " + " | ".join(str(value(m, f)) for _h, m, f in columns) + " |")
    for f in figure_sets:
        lines += ["", f"{f['class']} ({f['measured']}): {f['note']}"] if f.get("note") else []
    return "\n".join(lines)


def write_report(figure_sets: list[dict], report: Path = REPORT, report_json: Path = REPORT_JSON) -> None:
    """Put the section in report.md (in place of an earlier one, else at the end) and the figures in report.json's
    "classroom"."""
    text = report.read_text(encoding="utf-8") if report.exists() else "# seqviz benchmarks\n"
    section = markdown(figure_sets) + "\n"
    start = text.find(HEADING)
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        end = text.find("\n## ", start + len(HEADING))
        text = text[:start] + section + ("" if end < 0 else text[end:])
    report.write_text(text, encoding="utf-8")
    figures = json.loads(report_json.read_text(encoding="utf-8")) if report_json.exists() else {}
    figures["classroom"] = figure_sets
    report_json.write_text(json.dumps(figures, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
