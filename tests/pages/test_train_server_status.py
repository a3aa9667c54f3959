"""/train tells every visitor how busy training is, and when training cannot be had, why (the run machinery is
seqviz.jobs on a Dask cluster; these pages run through AppTest with the app's own cached manager)."""

import re
import socket
import time
from pathlib import Path

import pytest
from conftest import all_text
from streamlit.testing.v1 import AppTest

from seqviz.cluster import SCHEDULER_ENV

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
    deadline = time.monotonic() + 90
    while not any(b.label == "Stop training" for b in trainer.button) and time.monotonic() < deadline:
        time.sleep(0.5)
        trainer.run()
    assert any(b.label == "Stop training" for b in trainer.button), all_text(trainer)
    visitor = open_page()  # another session, no run of its own
    busy = re.search(r"Now: (\d+) training, (\d+) waiting", all_text(visitor))
    assert busy and int(busy.group(1)) >= 1, all_text(visitor)
    assert "a run started now would begin in about" in all_text(visitor)
    next(b for b in trainer.button if b.label == "Stop training").click().run()


def test_an_unreachable_scheduler_makes_train_say_why_and_other_pages_work(fresh_manager, monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once closed
    monkeypatch.setenv(SCHEDULER_ENV, f"tcp://127.0.0.1:{port}")
    began = time.monotonic()
    at = open_page()
    assert time.monotonic() - began < 30
    shown = "\n".join(e.value for e in at.error)
    assert "Training is unavailable" in shown and f"127.0.0.1:{port}" in shown and SCHEDULER_ENV in shown
    other = open_page("app_pages/attention.py")
    assert not other.error and not other.exception
