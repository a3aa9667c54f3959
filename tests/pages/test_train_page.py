"""/train: a visitor trains a model beside the page, sees it learn, and finds it on the other pages."""

import time
from pathlib import Path

import pytest
from conftest import all_text
from streamlit.testing.v1 import AppTest

PAGE = "app_pages/train.py"
APP = str(Path(__file__).resolve().parents[2] / "app.py")


def open_train() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def settle(at: AppTest, until, timeout: float = 120.0) -> AppTest:
    """Rerun the page (as its timer would) until ``until(at)`` holds."""
    deadline = time.monotonic() + timeout
    while True:
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        if until(at) or time.monotonic() > deadline:
            return at
        time.sleep(0.5)


def tiny(at: AppTest, task: str = "memory", family: str = "gru", steps: int = 30) -> AppTest:
    at.selectbox(key="tr_task").set_value(task).run()
    at.selectbox(key="tr_family").set_value(family).run()
    for field, value in (("embedding", 8), ("hidden", 16), ("steps", steps), ("batch_size", 16)):
        widget = at.number_input(key=f"tr_{field}")
        if not widget.disabled:
            widget.set_value(value).run()
    assert not at.exception
    return at


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
    next(b for b in at.button if b.label == "Start training").click().run()
    assert not at.exception
    settle(at, lambda a: any("after" in s.value.lower() for s in a.success))
    text = all_text(at)
    assert "Watch it learn" in text
    assert [b.label for b in at.get("download_button")].count("Download checkpoint") >= 1
    assert any("shipped memory-gru" in column for column in at.table[0].value.columns)
    # the model joined this session's models, and the memory comparison offers it
    at.switch_page("app_pages/vanishing_gradients.py").run()
    assert not at.exception
    mine = [o for o in at.multiselect(key="memory").options if o.endswith("(yours)")]
    assert len(mine) == 1
    (model,) = list(at.session_state["_your_models"])
    assert model.origin == "trained here" and model.ref.label == mine[0]
    at.multiselect(key="memory").set_value([model.ref.label, "memory-gru"]).run()
    assert not at.exception
    assert "Your own models are drawn as they are now" in all_text(at)
    # another session does not see it
    other = AppTest.from_file(APP, default_timeout=120)
    other.run()
    other.switch_page("app_pages/vanishing_gradients.py").run()
    assert not any(o.endswith("(yours)") for o in other.multiselect(key="memory").options)


@pytest.mark.parametrize(("task", "family", "snapshot"), [
    ("emails", "lstm", "forget gate"),  # an LSTM: its gates
    ("emails", "transformer", "layer"),  # a transformer: its heads
    ("emails", "rnn", "probability of each team"),  # another classifier: its probabilities
    ("emails", "bow", None),  # counts in one pass: no steps, no snapshots of learning
    ("translation", "additive", "It writes"),  # a translator: its translation and alignment
])
def test_every_kind_of_model_trains_from_the_page(task, family, snapshot):
    at = tiny(open_train(), task=task, family=family, steps=10)
    next(b for b in at.button if b.label == "Start training").click().run()
    settle(at, lambda a: any("after" in s.value.lower() for s in a.success), timeout=180)
    assert not at.exception
    assert [b.label for b in at.main.get("download_button")].count("Download checkpoint") == 1
    (model,) = list(at.session_state["_your_models"])
    assert model.ref.family == family and model.ref.task == task
    if snapshot:
        text = all_text(at) + "\n".join(str(c.proto.spec) for c in at.get("vega_lite_chart"))
        assert snapshot in text


def test_a_second_run_waits_for_the_first_and_can_be_cancelled():
    first = tiny(open_train(), steps=3000)
    next(b for b in first.button if b.label == "Start training").click().run()
    settle(first, lambda a: any(b.label == "Stop training" for b in a.button))  # on its worker
    second = tiny(open_train(), steps=20)
    next(b for b in second.button if b.label == "Start training").click().run()
    assert not second.exception
    assert "place 1 in the queue" in all_text(second)
    next(b for b in second.button if b.label == "Cancel").click().run()
    assert "Cancelled" in all_text(second)
    next(b for b in first.button if b.label == "Stop training").click().run()
    settle(first, lambda a: any("stopped when you asked" in s.value.lower() for s in a.success))


def test_every_held_out_measure_is_named_in_words():
    """The table at the end of a run names each measure in words, the twins' two among them."""
    from seqviz.ui.training import measure_name

    assert measure_name("twins_same_prediction") == "twin pairs given the same team (a bag of words: all)"
    assert measure_name("twins_accuracy") == "accuracy on word-identical twins"
    assert measure_name("exact_match_le30") == "exact match, sources of ≤ 30 tokens"
    assert measure_name("accuracy_at_20") == "accuracy at distance 20"
