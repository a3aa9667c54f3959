"""benchmarks/classroom.py's pure parts: the students' runs, a class's summary, the ratio to one student alone, the
report's section. No timing is asserted: the records below are made up, only what is made of them is checked."""

from __future__ import annotations

from benchmarks import classroom_figures as figures
from benchmarks.classroom import student_specs
from seqviz.runs import RunSpec

BASE = RunSpec(task="emails", family="lstm", embedding=8, hidden=8, steps=300, batch_size=16, seed=5)


def student(pressed: float, model: float | None, run: str = "a", started: float | None = 10.0, followers: int = 3,
            refused: bool = False, expected=()) -> dict:
    return {"pressed_at": pressed, "run": None if refused else run, "refused": refused, "status": "finished",
            "model_at": model, "started_at": started, "ended_at": None if started is None else started + 60,
            "train_seconds": 55.0, "followers": followers, "metric": 0.9, "fingerprint": f"fp-{run}" if model else None,
            "expected": list(expected)}


def test_a_same_class_asks_for_one_run_and_a_mixed_class_for_a_seed_each():
    same = student_specs("same", 3, 100, BASE)
    assert len(set(same)) == 1 and same[0].steps == 100 and same[0].seed == 5
    mixed = student_specs("mixed", 3, 100, BASE)
    assert [s.seed for s in mixed] == [5, 6, 7] and {s.steps for s in mixed} == {100}


def test_a_class_following_one_run_is_summarised_per_student_and_per_run():
    records = [student(0.0, 80.0, expected=[(1.0, 12.0)]), student(2.0, 80.5), student(4.0, 81.0),
               student(5.0, None, refused=True)]
    summary = figures.class_summary(records)
    assert summary["accepted"] == 3 and summary["refused"] == 1 and summary["with_model"] == 3
    assert summary["to_model_max_s"] == 80.0 and summary["to_model_median_s"] == 78.5
    assert summary["to_model_min_s"] == 77.0 and summary["seconds_to_last_model"] == 81.0
    assert summary["presses_over_s"] == 5.0 and summary["models_arrived_over_s"] == 1.0
    assert summary["runs"] == summary["runs_trained"] == 1 and summary["followers_per_run"] == [3]
    assert summary["models_distinct"] == 1 and summary["longest_wait_s"] == 10.0 and summary["median_wait_s"] == 8.0
    assert summary["estimate_relative_error_median"] == round(2 / 9, 3)  # 2 s off with 9 s left


def test_the_slowest_student_is_set_against_one_alone():
    group = {"to_model_max_s": 150.0, "to_model_median_s": 120.0}
    assert figures.ratio_to_alone(group, {"to_model_max_s": 75.0}) == {"slowest": 2.0, "median": 1.6, "goal": 2.5}
    assert figures.ratio_to_alone(group, {"to_model_max_s": None})["slowest"] is None


def test_the_report_section_replaces_an_earlier_one(tmp_path):
    summary = figures.class_summary([student(0.0, 80.0, followers=1)])
    measurement = {"cluster": "local", "workers": 1, "students": 1, "workers_peak_rss_mb": 500.0,
                   "health_p50_s": 0.002, "health_p95_s": 0.01, "health_failures": 0, "cpus": 2,
                   "load_average_at_end": [1.0, 2.0, 3.0], **summary}
    same = {"class": "same", "spec": "a run", "measured": "2026-12-02 05:00", "load_average_at_start": [1, 2, 3],
            "alone": measurement, "class_of_students": {**measurement, "students": 30},
            "slowest_to_alone": figures.ratio_to_alone(measurement, measurement)}
    report, report_json = tmp_path / "report.md", tmp_path / "report.json"
    report.write_text("# seqviz benchmarks\n\n## Pages\n\ntext\n\n## Last\n\nend\n", encoding="utf-8")
    figures.write_report([same], report, report_json)
    figures.write_report([same], report, report_json)
    text = report.read_text(encoding="utf-8")
    assert text.count(figures.HEADING) == 1 and text.startswith("# seqviz benchmarks\n\n## Pages")
    assert "| one student alone (12-02 05:00) | class of 30, same preset and seed (12-02 05:00) |" in text
    assert "1.0x (1.0x); goal 2.5x" in text
    assert '"classroom"' in report_json.read_text(encoding="utf-8")


def test_the_estimates_bias_jumps_and_the_queues_hand_overs_are_summarised():
    # Two runs one after the other on one worker (the second starts 3 s after the first ends). The second's student
    # was shown a start at 53 s twice (20 s early, with 60 s and then 50 s left), then at 83 s (10 s late, 40 s
    # left): the first refresh only counted down (30 s left of the start shown before, 30 s shown), the second moved
    # the start from 20 s away to 50 s away (2.5x).
    first = student(0.0, 75.0, run="a", started=10.0, followers=1)
    second = student(1.0, 140.0, run="b", started=73.0, followers=1,
                     expected=[(13.0, 53.0), (23.0, 53.0), (33.0, 83.0)])
    summary = figures.class_summary([first, second])
    assert summary["estimate_signed_error_median"] == round(-20 / 60, 3)  # too early: negative
    assert summary["estimate_relative_error_median"] == round(20 / 60, 3)
    assert summary["estimate_jump_max"] == 2.5 and summary["estimate_jumps_over_2x"] == 1
    assert summary["estimate_refreshes"] == 2 and summary["handover_median_s"] == 3.0
