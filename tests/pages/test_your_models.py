"""A visitor's own models: uploaded in the sidebar, picked on every page that fits them, in that session only."""

from pathlib import Path

import pytest
from checkpoint_files import hostile_files, tiny_checkpoint
from conftest import all_text
from streamlit.testing.v1 import AppTest

from seqviz import checkpoints

APP = str(Path(__file__).resolve().parents[2] / "app.py")


# The pickers' values for the uploaded models: their names and "(yours)".
DOT, LSTM = "tiny-dot (yours)", "tiny-lstm (yours)"


def fresh() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def upload(at: AppTest, name: str, data: bytes) -> AppTest:
    at.sidebar.file_uploader[0].upload(name, data).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def on(at: AppTest, script: str) -> AppTest:
    at.switch_page(script).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def messages(at: AppTest, kind: str) -> list[str]:
    return [e.value.replace("\\", "") for e in getattr(at.sidebar, kind)]


def charts(at: AppTest) -> int:
    return len(at.get("vega_lite_chart"))


@pytest.fixture(scope="module")
def files():
    return {kind: tiny_checkpoint(kind) for kind in ("dot-translator", "lstm-classifier")}


def test_uploaded_models_on_every_page_that_fits(files):
    dot, lstm = files["dot-translator"], files["lstm-classifier"]
    at = upload(upload(fresh(), "tiny-dot.safetensors", dot), "tiny-lstm.safetensors", lstm)
    assert "Added tiny-lstm (yours)" in messages(at, "success")[0]
    assert "Your models (2)" in [e.label for e in at.sidebar.expander]
    assert [b.label for b in at.sidebar.get("download_button")].count("Download checkpoint") == 2

    # /order: the LSTM classifier beside the bag of words, its twins accuracy measured here
    on(at, "app_pages/order.py")
    picker = at.multiselect(key="email-classifier")
    assert "tiny-lstm (yours)" in picker.options and "tiny-dot (yours)" not in picker.options
    assert picker.options[0] == "tiny-lstm (yours)"  # the visitor's own come first
    picker.set_value([LSTM, "bow"]).run()
    assert not at.exception
    assert charts(at) >= 5
    assert "tiny-lstm (yours): twins" in all_text(at)

    # /lstm-gates: both have an LSTM (the translator's encoder)
    on(at, "app_pages/lstm_gates.py")
    for name in ("tiny-lstm", "tiny-dot"):
        at.selectbox(key="gates").set_value(f"{name} (yours)").run()
        assert not at.exception
        assert f"{name} (yours)" in all_text(at)
        assert charts(at) == 3

    # /vanishing-gradients: saliency and ‖∂h_T/∂h_k‖ of the LSTM classifier
    on(at, "app_pages/vanishing_gradients.py")
    at.multiselect(key="saliency").set_value([LSTM, "rnn"]).run()
    at.multiselect(key="recurrent").set_value([LSTM, "rnn"]).run()
    assert not at.exception
    assert charts(at) >= 3
    assert "tiny-dot (yours)" not in at.multiselect(key="recurrent").options

    # /encoder-decoder: the translator in the table of chapter pairs and in the length chart
    on(at, "app_pages/encoder_decoder.py")
    at.multiselect(key="translator").set_value([DOT, "plain"]).run()
    assert not at.exception
    assert "tiny-dot (yours)" in at.table[0].value.columns
    assert "measured here with the same evaluation code" in all_text(at)
    assert charts(at) == 1

    # /attention: its alignment and one step read like the worked example
    on(at, "app_pages/attention.py")
    at.multiselect(key="alignment").set_value([DOT, "additive"]).run()
    assert not at.exception
    assert "tiny-dot (yours)** writes" in all_text(at)
    assert charts(at) == 5  # two worked-example charts, two alignments, one step

    # (the share box leaving the visitor's model out is checked in Chromium, tests/browser/test_bring_a_model.py:
    # AppTest does not copy a picker's bound value into st.query_params)
    assert "yours" not in at.sidebar.code[0].value

    # /transformer: neither fits; the shipped transformers are still shown
    on(at, "app_pages/transformer.py")
    assert "tiny-dot (yours)" not in at.selectbox(key="cross-attention").options


def test_an_upload_is_invisible_to_another_session(files):
    mine = upload(fresh(), "tiny-dot.safetensors", files["dot-translator"])
    theirs = on(fresh(), "app_pages/attention.py")
    on(mine, "app_pages/attention.py")
    assert "tiny-dot (yours)" in mine.multiselect(key="alignment").options
    assert "tiny-dot (yours)" not in theirs.multiselect(key="alignment").options
    assert "Your models (0)" in [e.label for e in theirs.sidebar.expander]


def test_the_same_file_twice_and_remove(files):
    at = upload(fresh(), "a.safetensors", files["lstm-classifier"])
    at = upload(at, "b.safetensors", files["lstm-classifier"])
    assert "already here" in messages(at, "success")[0]
    assert "Your models (1)" in [e.label for e in at.sidebar.expander]
    at.sidebar.button(key=f"rm-{checkpoints.fingerprint(files['lstm-classifier'])[:12]}").click().run()
    assert not at.exception
    assert "Your models (0)" in [e.label for e in at.sidebar.expander]
    at = upload(at, "a.safetensors", files["lstm-classifier"])  # the same file again, after Remove
    assert "Your models (1)" in [e.label for e in at.sidebar.expander]
    at.sidebar.button(key=f"rm-{checkpoints.fingerprint(files['lstm-classifier'])[:12]}").click().run()
    on(at, "app_pages/order.py")
    assert "tiny-lstm (yours)" not in at.multiselect(key="email-classifier").options


def test_hostile_uploads_get_a_message_and_nothing_runs(files, tmp_path):
    marker = tmp_path / "created-by-a-pickle"
    at = on(fresh(), "app_pages/attention.py")
    for name, data in hostile_files(files["lstm-classifier"], marker).items():
        upload(at, name, data)
        errors = messages(at, "error")
        assert errors and "was not loaded" in errors[0], (name, errors)
        assert "Your models (0)" in [e.label for e in at.sidebar.expander], name
        assert charts(at) >= 4, name  # the page still works
    assert not marker.exists()
