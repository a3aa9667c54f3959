"""benchmarks/report.py, what every section of the benchmark report shares, and the browser sections' rendering
(benchmarks/browser_report.py). No timing is asserted: the figures below are made up, only their rendering is
checked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks import browser_report
from benchmarks.report import LoadSampler, goal_line, previous, table

ROOT = Path(__file__).resolve().parents[2]


def test_a_table_has_the_first_rows_keys_as_headings_and_floats_to_two_decimals():
    text = table([{"page": "/", "cold s": 1.234, "runs": 3}, {"page": "/order", "cold s": 0.5, "runs": 1}])
    assert text.splitlines() == ["| page | cold s | runs |", "|---|---|---|", "| / | 1.23 | 3 |",
                                 "| /order | 0.50 | 1 |"]


def test_a_goal_line_says_met_or_missed():
    assert goal_line({"goal": "fast", "met": True, "measured": "1 s"}) == "- met: fast. 1 s."
    assert goal_line({"goal": "fast", "met": False, "measured": "9 s"}) == "- MISSED: fast. 9 s."


def test_the_last_report_is_read_when_there_is_one(tmp_path):
    found = tmp_path / "report.json"
    assert previous("browser", found) is None  # no report yet
    found.write_text("{not json", encoding="utf-8")
    assert previous("browser", found) is None
    found.write_text(json.dumps({"browser": {"seconds": 3}}), encoding="utf-8")
    assert previous("browser", found) == {"seconds": 3} and previous("classroom", found) is None


def test_the_load_sampler_samples_at_both_ends_and_in_between():
    with LoadSampler(every_s=0.01) as load:
        while len(load.samples) < 3:
            pass
    summary = load.summary()
    assert len(load.samples) >= 4
    assert summary["load_min"] <= summary["load_mean"] <= summary["load_max"]


def test_no_section_imports_the_entry_point():
    """The sections render their tables from benchmarks/report.py: none of them imports `python -m benchmarks`."""
    rows = [{"model": "dot", "sentence": "where is my order ?", "attention trace ms": 2.0, "three measures ms": 9.0}]
    figures = {"per_sentence": rows, "held_out": [{"model": "dot", "held-out study s": 1.5}], "goal": "a goal"}
    code = ("import sys, benchmarks.browser, benchmarks.classroom_figures, benchmarks.classroom_typing, "
            "benchmarks.explain, benchmarks.store, benchmarks.training; "
            f"text = benchmarks.explain.markdown({figures!r}); assert '| dot | where is my order ? | 2.00 | 9.00 |' "
            "in text, text; print('benchmarks.__main__' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def _sample(seconds: float) -> dict:
    return {"median_s": seconds, "max_s": seconds * 1.5, "median_first_message_s": 0.02,
            "median_script_finished_s": seconds / 2, "median_drawing_after_finish_s": 0.01,
            "median_long_tasks_s": 0.0, "median_bytes": 20480, "median_server_cpu_s": 0.05, "n": 2}


def test_the_browser_sections_render_their_tables_and_goals():
    goal = {"goal": "a goal", "met": True, "measured": "measured"}
    figures = {
        "browser_version": "139", "painted_signal": "painted.", "seconds": 60.0,
        "typing": {"pages": {"/": {**_sample(0.1), "ratio": 1.0, "charts": 0, "open_s": 2.0, "fresh": True},
                             "/attention": {"error": "TimeoutError: no script_finished message"}},
                   "goal": goal, "load_min": 1.0, "load_mean": 1.5, "load_max": 2.0},
        "widgets": {"widgets": [{"page": "/rnn-memory", "widget": "Recurrent weight w", **_sample(0.08),
                                 "first_move_s": 0.2, "first_move": {"exceptions": 0}}], "goal": goal},
        "cpu_per_view": {"error": "RuntimeError: a tab closed"},
        "memory_mb": {"just started": {"VmRSS": 300.0, "VmHWM": 310.0}},
        "growth": {"pages": {"/attention": {"5": _sample(0.2), "60": _sample(0.4)}}},
        "cold_start": {"how": "quick: healthy + opening /attention after / and /rnn-memory", "healthy_s": 1.5,
                       "first_chart_s": 4.0, "painted_s": 4.5, "memory_mb": {"VmRSS": 500.0},
                       "torch_after": {"start": False, "/": False, "/rnn-memory": False, "/attention": True},
                       "goals": [goal, {**goal, "met": False}]},
    }
    text = browser_report.markdown(figures, {"typing": {"pages": {"/": {"median_s": 0.12}}}})
    headings = [line for line in text.splitlines() if line.startswith("#")]
    assert headings == ["## Speed a class feels (Chromium against the real server)", "### Typing to painted",
                        "### Moving a widget to painted", "### Server CPU per view",
                        "### Server memory against visitors", "### Growth with the sentence's length", "### Cold start"]
    assert "| / | 0.10 | 0.15 | 1.0 | 0.02 | 0.05 | 0.01 | 0.00 | 20 | 0.05 | 0 | 2.0 | 0.12 |" in text
    assert "| /attention | TimeoutError: no script_finished message |" in text
    assert "Not measured: RuntimeError: a tab closed" in text
    assert "| /attention | 60 | 0.40 | 0.60 | 0.20 | 20 | 0.05 |" in text
    assert "- met: a goal. measured." in text and "- MISSED: a goal. measured." in text
    assert "/attention loaded" in text and "/rnn-memory not loaded" in text


def test_keep_takes_the_last_reports_sections_not_measured_now():
    """python -m benchmarks --keep: a section measured now replaces the last report's; the browser's parts
    measured now replace only theirs; the kept sections are named for the report's header."""
    from benchmarks.__main__ import keep

    last = {"pages": [{"page": "/", "cold s": 9.0}], "worker": {"rounds": 2},
            "browser": {"typing": {"old": True}, "cold_start": {"healthy_s": 1.0}}}
    figures = {"pages": [{"page": "/", "cold s": 1.0}], "browser": {"typing": {"new": True}}}
    kept = keep(figures, last, ["pages", "typing"])
    assert figures["pages"] == [{"page": "/", "cold s": 1.0}] and figures["worker"] == {"rounds": 2}
    assert figures["browser"] == {"typing": {"new": True}, "cold_start": {"healthy_s": 1.0}}
    assert kept == ["worker", "widgets", "cpu", "growth", "cold"]  # in the report's order; none of the last's absent
