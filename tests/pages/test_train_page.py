"""/train: a visitor trains a model beside the page, sees it learn, and finds it on the other pages.

A run belongs to the browser's lab (seqviz.ui.lab), not to a session: it is a record in the lab store that a Dask
worker trains. Every AppTest session is a browser of its own unless the test gives it a lab's cookie (the ``cookies``
fixture, tests/pages/conftest.py): a session with the same cookie is a reload or a second tab. The lab's models are
read from the store (seqviz.store.models.listed) and from the sidebar's Your models. The lab store is the test run's
own folder (tests/conftest.py). Every wait is bounded; nothing asserts on timings.
"""

import re
import time
from pathlib import Path

import pytest
from conftest import all_text, lab_cookie
from streamlit.testing.v1 import AppTest

from seqviz.store import database, labs, runs
from seqviz.store import models as stored

PAGE = "app_pages/train.py"
APP = str(Path(__file__).resolve().parents[2] / "app.py")
WAIT_S = 240.0  # the most a test waits for a run to start or end (a shared, slow machine)
LONG = 3000  # steps of a run that trains for as long as a test needs it to (then it is stopped)
STEP = re.compile(r"Step (\d+) of (\d+)")


def open_train() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def settle(at: AppTest, until, timeout: float = WAIT_S, what: str | None = None) -> AppTest:
    """Rerun the page (as its timer would) until ``until(at)`` holds; fail, saying what was awaited and what the
    page says, when it still does not after ``timeout`` seconds (a wait, not a timing: the bound is generous)."""
    deadline = time.monotonic() + timeout
    while True:
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        if until(at):
            return at
        if time.monotonic() > deadline:
            what = what or (until.__doc__ or until.__name__).strip()
            pytest.fail(f"waited {timeout:.0f} s for the page to show {what}, in vain; it says:\n"
                        f"{all_text(at)[-2000:]}")
        time.sleep(0.5)


def tiny(at: AppTest, task: str = "memory", family: str = "gru", steps: int = 30, seed: int | None = None) -> AppTest:
    at.selectbox(key="tr_task").set_value(task).run()
    at.selectbox(key="tr_family").set_value(family).run()
    for field, value in (("embedding", 8), ("hidden", 16), ("steps", steps), ("batch_size", 16), ("seed", seed)):
        widget = at.number_input(key=f"tr_{field}")
        if value is not None and not widget.disabled:
            widget.set_value(value).run()
    assert not at.exception
    return at


def press(at: AppTest, label: str) -> AppTest:
    next(b for b in at.button if b.label == label).click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def has_button(at: AppTest, label: str) -> bool:
    return any(b.label == label for b in at.button)


def ended(at: AppTest) -> bool:
    """The run's panel says it ended with a model ("Finished after ...", "Stopped when you asked after ...")."""
    return any(" after " in s.value for s in at.main.success)


def training(at: AppTest) -> bool:
    """a Stop training button (the run trains)"""
    return has_button(at, "Stop training")


def step(at: AppTest) -> int | None:
    """The step the run's progress bar says it is at (None while it has none)."""
    found = [STEP.search(p.text) for p in at.main.get("progress")]
    return next((int(m.group(1)) for m in found if m), None)


def lab_of(at: AppTest) -> str:
    """The session's lab id (seqviz.ui.lab keeps it in the session's state; never shown)."""
    found = at.session_state["_lab"].lab
    assert found is not None
    return found


def lab_models(at: AppTest) -> list:
    """The session's lab's models, as the store lists them."""
    return stored.listed(database(), lab_of(at))


def your_models(at: AppTest) -> str:
    """The sidebar's expander label: "Your models (n)"."""
    return next(e.label for e in at.sidebar.expander if e.label.startswith("Your models"))


def run_names(at: AppTest) -> list[str]:
    """The runs' headings in the panel (each run's name, an h3 under "Your runs")."""
    return [str(h.value).replace("\\", "") for h in at.main.subheader]


def stop_and_end(at: AppTest) -> AppTest:
    """Stop this lab's run (Cancel a queued one) and wait until it has ended: no run left for the next test."""
    if training(at):
        press(at, "Stop training")
    elif has_button(at, "Cancel"):
        press(at, "Cancel")
    return settle(at, lambda a: not training(a) and not has_button(a, "Cancel"), what="no run training or queued")


def test_the_form_starts_on_the_quick_attention_translator():
    at = open_train()
    assert at.selectbox(key="preset").value.startswith("Quick: ")
    assert at.selectbox(key="tr_family").value == "dot"
    assert [b.label for b in at.button].count("Start training") == 1
    at.selectbox(key="tr_task").set_value("emails").run()
    assert at.selectbox(key="tr_family").value == "rnn"  # the first family that can learn emails
    at.number_input(key="tr_embedding").set_value(256).run()
    at.number_input(key="tr_hidden").set_value(256).run()
    at.selectbox(key="tr_family").set_value("transformer").run()
    at.number_input(key="tr_layers").set_value(4).run()
    assert "cannot be trained here" in "\n".join(e.value for e in at.error)  # too many numbers to learn
    assert not at.exception


def test_the_form_keeps_its_settings_while_the_visitor_is_elsewhere():
    at = open_train()
    at.number_input(key="tr_steps").set_value(123).run()
    at.switch_page("app_pages/attention.py").run()
    at.switch_page(PAGE).run()
    assert not at.exception
    assert at.number_input(key="tr_steps").value == 123
    assert at.selectbox(key="preset").value.startswith("Quick: ")


def test_a_tiny_run_ends_and_its_model_is_on_other_pages():
    at = tiny(open_train())
    press(at, "Start training")
    settle(at, ended)
    assert ended(at), all_text(at)
    text = all_text(at)
    assert "Watch it learn" in text
    assert [b.label for b in at.get("download_button")].count("Download checkpoint") >= 1
    assert any("shipped memory-gru" in column for column in at.table[0].value.columns)
    # the model is in the lab's models (the store, the sidebar), and the memory comparison offers it
    (model,) = lab_models(at)
    assert model.origin == "trained here" and (model.family, model.task) == ("gru", "memory")
    at.switch_page("app_pages/vanishing_gradients.py").run()
    assert not at.exception
    assert your_models(at) == "Your models (1)"
    mine = [o for o in at.multiselect(key="memory").options if o.endswith("(yours)")]
    assert mine == [f"{model.name} (yours)"]
    at.multiselect(key="memory").set_value([mine[0], "memory-gru"]).run()
    assert not at.exception
    assert "Your own models are drawn as they are now" in all_text(at)
    # another browser (another session, no cookie: a lab of its own) does not see it
    other = AppTest.from_file(APP, default_timeout=120)
    other.run()
    other.switch_page("app_pages/vanishing_gradients.py").run()
    assert lab_of(other) != lab_of(at) and not lab_models(other)
    assert not any(o.endswith("(yours)") for o in other.multiselect(key="memory").options)
    assert your_models(other) == "Your models (0)"


def test_a_reload_or_a_second_tab_shows_the_labs_run_and_another_browser_none_of_it(cookies):
    first = tiny(open_train(), steps=LONG)
    press(first, "Start training")
    name = run_names(first)[0]
    key = lab_cookie(first)["key"]

    cookies["seqviz_lab"] = key  # a reload, or a second tab of the same browser: the same cookie
    again = open_train()
    assert lab_of(again) == lab_of(first)
    assert "Your runs" in [h.value for h in again.header] and run_names(again) == [name]
    assert training(again) or has_button(again, "Cancel"), all_text(again)  # in progress: training or queued
    settle(again, lambda a: (step(a) or 0) > 0, what="a step of the run")
    seen = step(again)
    assert seen, all_text(again)
    settle(again, lambda a: (step(a) or 0) > seen, what=f"a step past {seen}")  # its progress goes on in this tab too
    assert step(again) > seen
    # the sidebar of every page says the lab trains
    again.switch_page("app_pages/attention.py").run()
    assert any(f"Training {name}" in p.text for p in again.sidebar.get("progress")), all_text(again)
    again.switch_page(PAGE).run()

    # another browser (another lab's cookie) sees none of it
    cookies["seqviz_lab"] = labs.open_lab(database(), None).key
    other = open_train()
    assert lab_of(other) != lab_of(first)
    assert "Your runs" not in [h.value for h in other.header] and not run_names(other)
    assert not has_button(other, "Stop training") and not other.sidebar.get("progress")

    # Stop in the second tab: the run stops, keeping what it learned, and both tabs show its model
    press(again, "Stop training")
    settle(first, ended)
    assert any("Stopped when you asked after" in s.value for s in first.main.success), all_text(first)
    settle(again, ended)
    (model,) = lab_models(first)
    assert model.name == name and model.origin == "trained here"
    for tab in (first, again):
        assert your_models(tab) == "Your models (1)"
        assert [b.label for b in tab.main.get("download_button")].count("Download checkpoint") == 1
    other.run()
    assert your_models(other) == "Your models (0)" and not lab_models(other) and not run_names(other)


def test_one_lab_has_one_run_at_a_time(cookies):
    first = tiny(open_train(), steps=LONG, seed=1)
    press(first, "Start training")
    assert training(first) or has_button(first, "Cancel"), all_text(first)
    # the same settings again (a second click): nothing new starts, and it says so
    press(first, "Start training")
    assert "already training" in "\n".join(i.value for i in first.main.info)
    # other settings: refused, in words, while the first is queued or training
    tiny(first, steps=LONG, seed=2)
    press(first, "Start training")
    refused = "\n".join(e.value for e in first.main.error)
    assert "You already have a run queued or training" in refused and "stop it or wait" in refused, refused
    # a second tab of the same browser is the same lab: refused too
    cookies["seqviz_lab"] = lab_cookie(first)["key"]
    second = tiny(open_train(), steps=LONG, seed=3)
    press(second, "Start training")
    assert "You already have a run queued or training" in "\n".join(e.value for e in second.main.error)
    mine = runs.counts(database(), lab_of(first))
    assert mine["queued"] + mine["running"] == 1, mine
    assert len(run_names(second)) == 1
    stop_and_end(first)
    # the run ended: the lab may start another
    first.run()
    assert not first.main.error


def test_a_run_that_ends_while_the_page_runs_is_in_your_models_at_once(monkeypatch):
    """The sidebar lists Your models before the page reads the runs: a run that ends in between (its model kept)
    must not leave the page saying it ended while Your models lacks its model (the sidebar's status line runs
    the page whole again). The first full run after Start, as a quick run's end often falls in it."""
    from seqviz.ui import yours

    at = tiny(open_train(), steps=LONG)
    press(at, "Start training")
    lab_id, db = lab_of(at), database()
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:  # training, as the store says (no page run in between)
        (state,) = runs.states(db, lab_id, snapshots=False)
        if state.status == "running" and state.step > 0:
            break
        time.sleep(0.3)
    assert state.status == "running" and state.step > 0, state

    listing = yours.sidebar

    def listed_then_the_run_ends() -> None:
        listing()  # Your models listed: then the run is stopped and ends, keeping what it learned
        runs.request_stop(db, lab_id, state.id)
        until = time.monotonic() + WAIT_S
        while not runs.states(db, lab_id, snapshots=False)[0].ended and time.monotonic() < until:
            time.sleep(0.2)

    monkeypatch.setattr(yours, "sidebar", listed_then_the_run_ends)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Stopped when you asked after" in s.value for s in at.main.success), all_text(at)
    assert len(lab_models(at)) == 1
    assert your_models(at) == "Your models (1)"


@pytest.mark.parametrize(("task", "family", "snapshot"), [
    ("emails", "lstm", "forget gate"),  # an LSTM: its gates
    ("emails", "transformer", "layer"),  # a transformer: its heads
    ("emails", "rnn", "probability of each team"),  # another classifier: its probabilities
    ("emails", "bow", None),  # counts in one pass: no steps, no snapshots of learning
    ("translation", "additive", "It writes"),  # a translator: its translation and alignment
])
def test_every_kind_of_model_trains_from_the_page(task, family, snapshot):
    at = tiny(open_train(), task=task, family=family, steps=10)
    press(at, "Start training")
    settle(at, ended)
    assert ended(at), all_text(at)
    assert [b.label for b in at.main.get("download_button")].count("Download checkpoint") == 1
    (model,) = lab_models(at)
    assert (model.family, model.task, model.origin) == (family, task, "trained here")
    assert your_models(at) == "Your models (1)"
    if snapshot:
        text = all_text(at) + "\n".join(str(c.proto.spec) for c in at.get("vega_lite_chart"))
        assert snapshot in text, text[-3000:]


def test_a_second_run_waits_for_the_first_and_can_be_cancelled(cookies):
    from seqviz.cluster import local_worker_count
    from seqviz.ui.training import manager

    # Every training worker busy, each with a run of a lab of its own: as many as this server's cluster will have
    # (one on a 2-core machine, SEQVIZ_TRAIN_WORKERS where set), so the next run queues on any machine. Not the
    # manager's "max_running": it counts the workers up now, 1 before the cluster has started (a random order ran
    # this test first with 3 workers: one blocker, and the second run trained at once on a free worker).
    cluster = manager().cluster
    assert not cluster.external, "this test needs the app's own cluster"
    busy, second = [], None
    try:
        for number in range(cluster.workers or local_worker_count()):
            blocker = tiny(open_train(), steps=LONG, seed=100 + number)  # a seed each: identical runs train once
            press(blocker, "Start training")
            busy.append(blocker)
            settle(blocker, training)
        first = busy[0]
        second = tiny(open_train(), steps=20)
        press(second, "Start training")
        assert "place 1 in the queue" in all_text(second), all_text(second)
        # its place shows in a second tab of its browser too
        cookies["seqviz_lab"] = lab_cookie(second)["key"]
        second_tab = open_train()
        assert "place 1 in the queue" in all_text(second_tab) and has_button(second_tab, "Cancel")
        press(second, "Cancel")
        assert "Cancelled" in all_text(second)
        second_tab.run()
        assert "Cancelled" in all_text(second_tab) and not has_button(second_tab, "Cancel")
        # Stop keeps what was learned: the stopped run's model is in its lab; the cancelled one left none

        def stopped_when_asked(a):
            """a "Stopped when you asked" message"""
            return any("stopped when you asked" in s.value.lower() for s in a.main.success)

        # (after its first step: a run stopped before it keeps no model, which a loaded machine made happen here)
        settle(first, lambda a: (step(a) or 0) > 0, what="a step of the first run")
        press(first, "Stop training")
        settle(first, stopped_when_asked)
        (model,) = lab_models(first)
        assert model.origin == "trained here" and your_models(first) == "Your models (1)"
        assert not lab_models(second) and your_models(second) == "Your models (0)"
    finally:  # no run left training for the next test, whatever failed above
        for tab in [*busy, *([second] if second is not None else [])]:
            stop_and_end(tab)


def test_every_held_out_measure_is_named_in_words():
    """The table at the end of a run names each measure in words, the twins' two among them."""
    from seqviz.ui.training import measure_name

    assert measure_name("twins_same_prediction") == "twin pairs given the same team (a bag of words: all)"
    assert measure_name("twins_accuracy") == "accuracy on word-identical twins"
    assert measure_name("exact_match_le30") == "exact match, sources of ≤ 30 tokens"
    assert measure_name("accuracy_at_20") == "accuracy at distance 20"
