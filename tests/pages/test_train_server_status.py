"""/train tells every visitor how busy training is, and when training cannot be had, why: the training cluster
cannot be reached, or the lab store, where every lab's runs are kept, cannot be used (the run machinery is
seqviz.jobs on a Dask cluster over seqviz.store; these pages run through AppTest with the app's own cached manager,
each session a browser with a lab of its own)."""

import re
import socket
import time
from pathlib import Path

import pytest
from conftest import all_text
from streamlit.testing.v1 import AppTest

from seqviz.cluster import SCHEDULER_ENV
from seqviz.store import StoreUnavailable
from seqviz.ui import lab

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def open_page(path: str = "app_pages/train.py") -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page(path).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture
def fresh_manager():
    """The app's cached run manager, made anew for the test and closed after it (the next page makes its own)."""
    from seqviz.ui import training

    def drop() -> None:
        try:
            training.manager().close()
        finally:
            training.manager.clear()

    drop()
    yield
    drop()


def test_a_visitor_without_a_run_sees_how_busy_training_is():
    trainer = open_page()
    trainer.selectbox(key="tr_task").set_value("emails").run()
    trainer.selectbox(key="tr_family").set_value("lstm").run()
    for field, value in (("embedding", 8), ("hidden", 8), ("steps", 5000), ("batch_size", 8)):
        trainer.number_input(key=f"tr_{field}").set_value(value).run()
    next(b for b in trainer.button if b.label == "Start training").click().run()
    try:
        deadline = time.monotonic() + 240  # a wait's bound (a shared, slow machine), not a timing
        while not any(b.label == "Stop training" for b in trainer.button) and time.monotonic() < deadline:
            time.sleep(0.5)
            trainer.run()
        assert any(b.label == "Stop training" for b in trainer.button), all_text(trainer)
        visitor = open_page()  # another browser (a lab of its own), no run of its own
        busy = re.search(r"Now: (\d+) training, (\d+) waiting", all_text(visitor))
        assert busy and int(busy.group(1)) >= 1, all_text(visitor)
        # when a run started now would begin: said when every worker trains (one on a 2-core machine; with
        # SEQVIZ_TRAIN_WORKERS=3, this one run leaves two free)
        at_once = re.search(r"trains (\d+|one) runs? at a time", all_text(visitor))
        assert at_once, all_text(visitor)
        slots = 1 if at_once.group(1) == "one" else int(at_once.group(1))
        begins = "a run started now would begin in about" in all_text(visitor)
        assert begins == (int(busy.group(1)) >= slots), all_text(visitor)
        assert "Your runs" not in [h.value for h in visitor.header]  # how busy, but nothing of the other lab's run
        assert not any(b.label == "Stop training" for b in visitor.button)
    finally:  # the 5000-step run is stopped, whatever failed above: it ends (keeping what it learned) before the next
        trainer.run()
        stop = next((b for b in trainer.button if b.label in ("Stop training", "Cancel")), None)
        if stop is not None:
            stop.click().run()
        deadline = time.monotonic() + 240
        while any(b.label in ("Stop training", "Cancel") for b in trainer.button) and time.monotonic() < deadline:
            time.sleep(0.5)
            trainer.run()
    assert not any(b.label in ("Stop training", "Cancel") for b in trainer.button), all_text(trainer)
    assert any("stopped when you asked" in s.value.lower() for s in trainer.main.success), all_text(trainer)


def test_an_unreachable_scheduler_makes_train_say_why_and_other_pages_work(fresh_manager, monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once closed
    monkeypatch.setenv(SCHEDULER_ENV, f"tcp://127.0.0.1:{port}")
    began = time.monotonic()
    at = open_page()
    # A promise to the visitor, not a speed: /train says an unreachable scheduler is unreachable after the cluster's
    # CONNECT_TIMEOUT_S (4 s) instead of hanging. 90 s is generous slack for a loaded machine running AppTest.
    took = time.monotonic() - began
    assert took < 90, f"/train took {took:.0f} s to say the scheduler is unreachable: it waited instead of saying so"
    shown = "\n".join(e.value for e in at.error)
    assert "Training is unavailable" in shown and f"127.0.0.1:{port}" in shown and SCHEDULER_ENV in shown
    other = open_page("app_pages/attention.py")
    assert not other.error and not other.exception


def shown(at: AppTest) -> str:
    return "\n".join(e.value for e in at.main.error).replace("\\", "")


def test_without_the_lab_store_train_says_why_and_nothing_raises(monkeypatch):
    monkeypatch.setattr(lab, "RETRY_EVERY_S", 0.0)
    monkeypatch.setenv("SEQVIZ_DATABASE_URL", "postgresql+psycopg://seqviz:none@127.0.0.1:1/seqviz")
    at = open_page()
    said = shown(at)
    assert "Training is not available now" in said and "lab store" in said, said
    assert "127.0.0.1:1" in said and "none@" not in said  # where, never the password
    assert "Every other page works" in said
    start = next(b for b in at.button if b.label == "Start training")
    assert start.disabled  # nothing to start a run in
    assert "Your runs" not in [h.value for h in at.header]
    at.number_input(key="tr_steps").set_value(40).run()  # the form still works
    assert not at.exception and at.number_input(key="tr_steps").value == 40
    for page in ("app_pages/attention.py", "app_pages/train.py"):
        at.switch_page(page).run()
        assert not at.exception, [e.value for e in at.exception]

    monkeypatch.delenv("SEQVIZ_DATABASE_URL")  # the store is back: the next run finds it
    at.run()
    assert not at.exception and not at.main.error, shown(at)
    assert not next(b for b in at.button if b.label == "Start training").disabled
    assert re.search(r"Now: \d+ training, \d+ waiting", all_text(at)), all_text(at)


def test_the_store_failing_under_an_open_page_is_said_and_nothing_raises(monkeypatch):
    """The store goes while a visitor's /train is open (the lab was found as the session began): the status line
    and the runs' panel say so, the page goes on."""
    from seqviz.jobs import RunManager
    from seqviz.store import runs

    at = open_page()
    assert not at.main.error

    def down(*_args, **_kwargs):
        raise StoreUnavailable("the SQLite file /tmp/x.db cannot be used now: disk I/O error")

    monkeypatch.setattr(RunManager, "load", down)
    monkeypatch.setattr(runs, "states", down)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    said = shown(at)
    assert "Training is unavailable now: the lab store, which keeps every run, cannot be used" in said, said
    assert "Your runs cannot be read now" in said and "disk I/O error" in said


def test_a_training_worker_does_not_run_the_app():
    """The app's own cluster's workers are spawned processes: none of them may run app.py (each would open a lab in
    the store, run the home page, and start a run manager that tries to start a cluster of its own every 15 s,
    setting every queued run's phase to "starting the training workers" each time)."""
    import sys

    from seqviz.ui import training

    open_page()  # a script run: as any page of the server does, it leaves the app as sys.modules["__main__"]
    client = training.manager().cluster.client()  # (starts the app's cluster if no run has yet)

    def app_ran_here() -> bool:  # (in each worker) the app's body ran as this process's main module
        return "pages" in vars(sys.modules.get("__mp_main__", sys))

    ran = client.run(app_ran_here)
    assert ran and not any(ran.values()), ran


def test_a_second_server_on_the_same_store_leaves_a_live_run_alone(monkeypatch):
    """Two app servers on one machine (two ports, or the test suite's browser server beside these pages) share the
    default lab store, each with a local cluster of its own: a run training on the first must not be started again
    on the second's workers (its record would say a worker stopped, and two workers would write it)."""
    from seqviz.cluster import Cluster
    from seqviz.jobs import RunManager
    from seqviz.store import database, runs
    from seqviz.ui import training

    trainer = open_page()
    trainer.selectbox(key="tr_task").set_value("memory").run()
    trainer.selectbox(key="tr_family").set_value("gru").run()
    for field, value in (("embedding", 8), ("hidden", 16), ("steps", 5000), ("batch_size", 16)):
        trainer.number_input(key=f"tr_{field}").set_value(value).run()
    next(b for b in trainer.button if b.label == "Start training").click().run()
    db, lab_id = database(), trainer.session_state["_lab"].lab
    deadline = time.monotonic() + 180
    while runs.states(db, lab_id, snapshots=False)[0].status != "running" and time.monotonic() < deadline:
        time.sleep(0.5)
    from seqviz import jobs

    monkeypatch.setattr(jobs, "RECOVER_EVERY_S", 1.0)  # (a look every second, not every 5 s)
    second = RunManager(db, cluster=Cluster(workers=1))  # another server's: its own workers, the same store
    try:
        deadline = time.monotonic() + 40  # its cluster started, and rounds of recovery past the run's heartbeat
        while time.monotonic() < deadline:
            (state,) = runs.states(db, lab_id, snapshots=False)
            if state.attempts > 1 or state.ended:
                break
            time.sleep(1)
        assert state.attempts == 1 and state.note is None, (state.attempts, state.note)
    finally:
        second.close()
        second.cluster.close()
        training.manager().stop(lab_id, state.id)
        deadline = time.monotonic() + 120
        while not runs.states(db, lab_id, snapshots=False)[0].ended and time.monotonic() < deadline:
            time.sleep(0.5)
