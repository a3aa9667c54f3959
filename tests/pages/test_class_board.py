"""/class through the router (AppTest): a teacher starts a class and gets its key once, a student joins by its link,
posts a finished run and sees it on the board; what a student may not do; the teacher's CSV; "Use this model";
wrong and hostile codes, hostile nicknames, a wrong teacher key; the store unreachable.

Each session is a browser of its own unless the test sends a lab's cookie (the ``cookies`` fixture); labs, runs and
models are made in the test run's own store (tests/conftest.py) as the app would make them.
"""

import io
import re
from pathlib import Path

import pandas as pd
import pytest
from conftest import all_text
from streamlit.testing.v1 import AppTest

from seqviz import limits
from seqviz.charts.board import board_table
from seqviz.store import board, classes, database, labs, models, runs
from seqviz.ui.board import board_csv

APP = str(Path(__file__).resolve().parents[2] / "app.py")
PAGE = "app_pages/class_board.py"
BOW = Path(__file__).resolve().parents[2] / "assets" / "models" / "bow.safetensors"
METRICS = {"test_accuracy": 0.875, "twins_accuracy": 0.5, "twins_same_prediction": 1.0}


def open_class(cookies: dict, key: str | None = None, **query) -> AppTest:
    if key is not None:
        cookies["seqviz_lab"] = key
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    for name, value in query.items():
        at.query_params[name] = value
    at.switch_page(PAGE).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def a_lab():
    return labs.open_lab(database(), None)


def finished_run(lab_id: str, name: str = "bow") -> str:
    """A finished bag-of-words run of the lab with its model in the lab (as a worker leaves it); its id."""
    from checkpoint_files import rewrite_meta

    from seqviz.runs import RunSpec

    data = rewrite_meta(BOW.read_bytes(), lambda doc: doc.update(name=name))
    model, _ = models.add(database(), lab_id, data, origin="trained here")
    run_id = runs.create(database(), lab_id, RunSpec(task="emails", family="bow", name=name))
    runs.end(database(), run_id, "finished", metrics=METRICS, train_seconds=1.5,
             model_id=models.model_id(database(), lab_id, model.fingerprint))
    return run_id


def errors(at: AppTest) -> str:
    return "\n".join(str(e.value) for e in at.error).replace("\\", "")


def test_a_teacher_starts_a_class_and_gets_its_key_once(cookies):
    teacher = a_lab()
    at = open_class(cookies, teacher.key)
    at.text_input(key="class-name").set_value("Year 12 <b>Tuesday</b>")
    at.selectbox(key="new-experiment").set_value("bottleneck")
    at.button[[b.label for b in at.button].index("Start a class")].click().run()
    assert not at.exception, [e.value for e in at.exception]
    code = at.query_params["c"]
    found = classes.find(database(), code)
    assert found is not None and found.name == "Year 12 <b>Tuesday</b>" and found.experiment.setting == "hidden"
    shown = [c.value for c in at.code]
    key = shown[0]
    assert classes.is_teacher(database(), code, key=key) and f"/class?c={code}&t={key}" in shown[1]
    assert any(v.endswith(f"/class?c={code}") for v in shown)
    assert "keep it now" in " ".join(e.value for e in at.success) and "<b>" not in "".join(e.value for e in at.header)
    at.button(key="class-kept").click().run()
    assert key not in [c.value for c in at.code]  # shown once
    again = open_class(cookies, teacher.key, c=code)  # a reload: the lab manages the class, no key shown
    assert key not in all_text(again) and "Manage this class (teacher)" in [e.label for e in again.expander]


@pytest.mark.parametrize("code", ["ZZZZZZZZ", "", "<script>alert(1)</script>", "A" * 10_000, "ABCD\x00EFG",
                                  "**bold**", "\u202eHGFEDCBA", "%ZZ%", "📦" * 8])
def test_a_wrong_or_hostile_code_gets_a_plain_message(cookies, code):
    at = open_class(cookies, c=code)
    assert "No class has this code" in errors(at)
    shown = all_text(at) + errors(at)
    for marker in ("<script", "**bold**", "\u202e"):
        assert marker not in shown
    assert "Start a class" in [b.label for b in at.button]  # the page goes on


def test_a_deleted_class_gets_the_same_message(cookies):
    made = classes.start(database(), "gone")
    classes.delete_class(database(), made.code, key=made.key)
    assert "No class has this code" in errors(open_class(cookies, c=made.code))


def test_a_student_joins_posts_and_sees_the_board(cookies):
    made = classes.start(database(), "class")
    student = a_lab()
    finished_run(student.id, "my bow")
    at = open_class(cookies, student.key, c=made.code)
    assert classes.membership(database(), made.id, student.id) is not None
    assert "Nothing posted yet" in all_text(at)
    hostile = "**me** <img src=x onerror=1> $x$ " + "n" * 100
    at.text_input(key="class-nickname").set_value(hostile).run()
    at.button[[b.label for b in at.button].index("Post it")].click().run()
    assert not at.exception, [e.value for e in at.exception]
    (post,) = board.posts(database(), made.code)
    assert post.nickname == hostile[:limits.CLASS_NICKNAME_CHARS].strip() and post.lab_id == student.id
    table = at.table[0].value
    assert "\\<img" in table["nickname"].iloc[0] and "\\*\\*me" in table["nickname"].iloc[0]  # escaped text
    assert "87.5%" in table.to_string().replace("\\", "")
    assert not re.search(r"(?<!\\)<img", "".join([e.value for e in at.markdown] + [e.value for e in at.success]))
    assert len(at.get("vega_lite_chart")) == 1
    assert "Take back my post" in [b.label for b in at.button]
    assert "Remove this post" not in [b.label for b in at.button]  # not the teacher
    assert "Download the board (CSV)" not in [b.label for b in at.get("download_button")]


def test_a_student_cannot_remove_anothers_post_or_act_as_teacher(cookies):
    made = classes.start(database(), "class")
    ana, ben = a_lab(), a_lab()
    for who in (ana, ben):
        classes.join(database(), made.code, who.id)
    board.post(database(), made.code, ana.id, run_id=finished_run(ana.id, "anas"), nickname="ana",
               spec={"task": "emails", "family": "bow"}, metrics=METRICS)
    forged = made.key[:-2] + "zz"
    at = open_class(cookies, ben.key, c=made.code, t=forged)
    assert "That teacher key is not this class's" in errors(at)
    assert "t" not in at.query_params  # the key never stays in the address bar
    labels = [b.label for b in at.button]
    assert "Take back my post" not in labels and "Remove this post" not in labels
    assert "Manage this class (teacher)" not in [e.label for e in at.expander]
    assert not classes.is_teacher(database(), made.code, lab_id=ben.id)
    assert [p.nickname for p in board.posts(database(), made.code)] == ["ana"]


def test_the_teacher_link_makes_a_lab_the_teacher_who_removes_posts_and_downloads_csv(cookies):
    made = classes.start(database(), "class")
    student, teacher = a_lab(), a_lab()
    classes.join(database(), made.code, student.id)
    board.post(database(), made.code, student.id, run_id=finished_run(student.id), nickname="=HYPERLINK(1)",
               spec={"task": "emails", "family": "bow", "seed": 3}, metrics=METRICS, train_seconds=2.0)
    at = open_class(cookies, teacher.key, c=made.code, t=made.key)
    assert "t" not in at.query_params and classes.is_teacher(database(), made.code, lab_id=teacher.id)
    assert "Download the board (CSV)" in [b.label for b in at.get("download_button")]
    frame = pd.read_csv(io.BytesIO(board_csv(board_table(board.posts(database(), made.code)))))
    assert list(frame["nickname"]) == ["'=HYPERLINK(1)"] and list(frame["seed"]) == [3]
    assert list(frame["held-out accuracy"]) == [0.875] and list(frame["training seconds"]) == [2.0]
    at.button[[b.label for b in at.button].index("Remove this post")].click().run()
    assert not at.exception and board.posts(database(), made.code) == []


def test_use_this_model_adds_a_classmates_model_to_your_models(cookies):
    made = classes.start(database(), "class")
    poster, visitor = a_lab(), a_lab()
    classes.join(database(), made.code, poster.id)
    board.post(database(), made.code, poster.id, run_id=finished_run(poster.id, "shared bow"), nickname="ana",
               spec={"task": "emails", "family": "bow"}, metrics=METRICS,
               fingerprint=models.listed(database(), poster.id)[0].fingerprint)
    at = open_class(cookies, visitor.key, c=made.code)
    at.button(key="board-use").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert [m.name for m in models.listed(database(), visitor.id)] == ["shared bow"]
    assert "Your models (1)" in [e.label for e in at.sidebar.expander]


def test_a_students_train_form_is_filled_with_a_value_not_yet_covered(cookies):
    from seqviz.store.experiments import ready_made

    bottleneck = ready_made()["bottleneck"]
    made = classes.start(database(), "class", experiment=bottleneck)
    first, second = a_lab(), a_lab()
    classes.join(database(), made.code, first.id)
    at = open_class(cookies, second.key, c=made.code)
    assert "Your part: train with hidden **16**" in all_text(at).replace("\\", "")
    at.switch_page("app_pages/train.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.number_input(key="tr_hidden").value == 16 and at.selectbox(key="tr_family").value == "plain"
    assert at.selectbox(key="preset").value == bottleneck.preset


def test_the_store_unreachable_is_said_and_other_pages_work(cookies, monkeypatch):
    monkeypatch.setenv("SEQVIZ_DATABASE_URL", "postgresql+psycopg://seqviz:none@127.0.0.1:1/seqviz")
    at = open_class(cookies, c="ABCDEFGH")
    assert "The class board cannot be used now" in errors(at)
    at.switch_page("app_pages/attention.py").run()
    assert not at.exception and len(at.get("vega_lite_chart")) >= 2


HOSTILE_NICKNAMES = ["<script>alert(1)</script>", "**bold** [x](http://e.x)", "$\\frac{1}{2}$ :material/home:",
                     "\u202eevil\u202c\u200b", "a\x00b\x07c", "📦👨‍👩‍👧🇫🇷", "=cmd|' /C calc'!A0", "x" * 10_000]


@pytest.mark.parametrize("nickname", HOSTILE_NICKNAMES)
def test_hostile_nicknames_are_cut_and_shown_as_text(cookies, nickname):
    made = classes.start(database(), "class")
    student = a_lab()
    finished_run(student.id)
    at = open_class(cookies, student.key, c=made.code)
    at.text_input(key="class-nickname").set_value(nickname[:limits.CLASS_NICKNAME_CHARS]).run()
    at.button[[b.label for b in at.button].index("Post it")].click().run()
    assert not at.exception, [e.value for e in at.exception]
    (post,) = board.posts(database(), made.code)
    assert 0 < len(post.nickname) <= limits.CLASS_NICKNAME_CHARS
    assert not any(ch in post.nickname for ch in "\x00\x07\u202e\u202c\u200b")
    shown = "".join([e.value for e in at.markdown] + [e.value for e in at.success]) + at.table[0].value.to_string()
    for marker in ("<script", "**bold**", "[x](", "$\\frac", ":material/home:"):
        assert not re.search(r"(?<!\\)" + re.escape(marker), shown), marker


def test_a_translation_board_draws_exact_match_against_sentence_length(cookies):
    from seqviz.store.experiments import ready_made

    made = classes.start(database(), "class", experiment=ready_made()["attention"])
    for number, family in enumerate(("plain", "additive", "dot")):
        who = a_lab()
        classes.join(database(), made.code, who.id)
        fall = {"plain": 0.5, "additive": 0.1, "dot": 0.05}[family]
        metrics = {"exact_match_le30": 0.9 - fall, "exact_match_ge25": 0.8 - fall, "chapter_pairs_exact": 5,
                   "buckets": {f"{lo}-{lo + 4}": {"exact_match": max(0.0, 1 - fall * k), "token_accuracy": 0.9}
                               for k, lo in enumerate((5, 10, 15, 20, 25))}}
        board.post(database(), made.code, who.id, run_id=f"{number}" * 32, nickname=family, metrics=metrics,
                   spec={"task": "translation", "family": family, "embedding": 64, "hidden": 64, "steps": 600,
                         "lr": 0.003, "seed": 0, "heads": 4, "layers": 1, "batch_size": 64})
    at = open_class(cookies, c=made.code)
    assert at.selectbox(key="board-x").value == "length"
    (chart,) = at.get("vega_lite_chart")
    assert "source length" in chart.proto.spec
    assert "**dot**" in "".join(e.value for e in at.success)  # the best run by exact match (≤ 30 tokens)
    at.selectbox(key="board-x").set_value("family").run()
    assert not at.exception and len(at.get("vega_lite_chart")) == 1
