"""A visitor's own models: uploaded in the sidebar, picked on every page that fits them, kept in their browser's lab.

Every AppTest session is a browser of its own unless the test gives it a lab's cookie (the ``cookies`` fixture,
tests/pages/conftest.py); what the session tells the browser to keep is read from its cookie keeper (lab_cookie).
The lab store is the test run's own folder (tests/conftest.py). The cookie itself is tested in Chromium,
tests/browser/test_lab.py.
"""

import time
from pathlib import Path

import pytest
from checkpoint_files import hostile_files, rewrite_meta, tiny_checkpoint
from conftest import all_text, figures_shown, lab_cookie
from sqlalchemy import update
from streamlit.testing.v1 import AppTest

from seqviz import checkpoints, limits
from seqviz.store import database, labs
from seqviz.store import models as stored
from seqviz.store.schema import Model
from seqviz.ui import lab

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
        assert figures_shown(at) == ["gates", "unit-lines", "mean-forget", "units-like-this"]

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


def test_an_upload_is_invisible_to_another_browser(files):
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


# --- The lab: kept by the browser's cookie, in the store ---------------------------------------------------------


def expander_labels(at: AppTest) -> list[str]:
    return [e.label for e in at.sidebar.expander]


def test_a_session_with_the_labs_cookie_sees_its_models(files, cookies):
    mine = upload(fresh(), "tiny-lstm.safetensors", files["lstm-classifier"])
    kept = lab_cookie(mine)
    assert labs.valid_key(kept["key"]) and kept["write"] and kept["path"] == "/"
    assert kept["max_age"] == int(limits.LAB_KEEP_DAYS * 86400)

    cookies["seqviz_lab"] = kept["key"]  # a reload, or a second tab of the same browser
    again = fresh()
    assert "Your models (1)" in expander_labels(again)
    assert lab_cookie(again)["key"] == kept["key"]  # the same lab, its cookie refreshed once more
    assert lab_cookie(again)["write"] != kept["write"]
    on(again, "app_pages/order.py")
    assert again.multiselect(key="email-classifier").options[0] == LSTM

    # the key never travels in an address or a share link
    assert kept["key"] not in again.sidebar.code[0].value
    assert all(kept["key"] not in value for key in again.query_params for value in again.query_params[key])


@pytest.mark.parametrize("sent", ["A" * 22, "not a key", "<script>alert(1)</script>", "x" * 5000, "", "%00"])
def test_a_forged_or_unknown_cookie_opens_a_fresh_lab(files, cookies, sent):
    cookies["seqviz_lab"] = sent
    at = fresh()
    assert "Your models (0)" in expander_labels(at)
    kept = lab_cookie(at)
    assert kept["key"] != sent and labs.valid_key(kept["key"])
    assert not at.sidebar.error


def test_a_forgotten_labs_key_opens_nothing(files, cookies):
    mine = upload(fresh(), "tiny-lstm.safetensors", files["lstm-classifier"])
    old = lab_cookie(mine)["key"]
    mine.sidebar.button(key="lab-forget").click().run()
    assert "This cannot be undone" in messages(mine, "warning")[0]
    mine.sidebar.button(key="lab-forget-no").click().run()  # Keep it
    assert "Your models (1)" in expander_labels(mine) and not messages(mine, "warning")

    mine.sidebar.button(key="lab-forget").click().run()
    mine.sidebar.button(key="lab-forget-yes").click().run()
    assert not mine.exception
    assert "Your models (0)" in expander_labels(mine)
    assert "a new, empty lab" in messages(mine, "success")[0]
    new = lab_cookie(mine)
    assert new["key"] != old and new["write"]
    on(mine, "app_pages/order.py")
    assert LSTM not in mine.multiselect(key="email-classifier").options

    cookies["seqviz_lab"] = old  # the old key, from a tab that still had it
    assert "Your models (0)" in expander_labels(fresh())


def test_a_code_takes_the_lab_to_another_device(files):
    mine = upload(fresh(), "tiny-lstm.safetensors", files["lstm-classifier"])
    mine.sidebar.button(key="lab-code").click().run()
    code = mine.sidebar.code[0].value
    assert len(code) == limits.LAB_TRANSFER_CHARS
    assert "It works once" in " ".join(c.value for c in mine.sidebar.caption)

    theirs = upload(fresh(), "tiny-dot.safetensors", files["dot-translator"])
    before = lab_cookie(theirs)["key"]
    for typed, said in (("WRONG-CODE", "A code is 10 letters and digits"), ("ZZZZZ-ZZZZZ", "That code opens no lab"),
                        ("<b>**x**</b>", "A code is 10 letters and digits")):
        theirs.sidebar.text_input(key="lab-join-code").input(typed)
        theirs.sidebar.button(key="FormSubmitter:lab-join-Join").click().run()
        assert said in messages(theirs, "error")[0]
        assert "Your models (1)" in expander_labels(theirs)

    theirs.sidebar.text_input(key="lab-join-code").input(code.lower())
    theirs.sidebar.button(key="FormSubmitter:lab-join-Join").click().run()
    assert not theirs.exception
    assert "Joined" in messages(theirs, "success")[-1]
    assert "Your models (2)" in expander_labels(theirs)  # its own model moved into the lab it joined
    after = lab_cookie(theirs)
    assert after["key"] not in (before, lab_cookie(mine)["key"]) and after["write"]  # a key of its own

    on(mine, "app_pages/attention.py")  # the first device sees the model the second brought
    assert DOT in mine.multiselect(key="alignment").options

    theirs.sidebar.text_input(key="lab-join-code").input(code)  # a code works once
    theirs.sidebar.button(key="FormSubmitter:lab-join-Join").click().run()
    assert "That code opens no lab" in messages(theirs, "error")[0]


def test_a_damaged_file_in_the_store_is_named_and_the_page_goes_on(files, cookies):
    db = database()
    opened = labs.open_lab(db, None)
    good = rewrite_meta(files["lstm-classifier"], lambda doc: doc.update(name="soon-damaged"))
    kept, _ = stored.add(db, opened.id, good, "soon-damaged.safetensors")
    stored.add(db, opened.id, files["dot-translator"], "tiny-dot.safetensors")
    damaged = good[: len(good) // 2]  # the bytes the store holds are cut, their fingerprint with them
    with db.transaction() as session:
        session.execute(update(Model).where(Model.lab_id == opened.id, Model.fingerprint == kept.fingerprint)
                        .values(data=damaged, fingerprint=checkpoints.fingerprint(damaged)))

    cookies["seqviz_lab"] = opened.key
    at = on(fresh(), "app_pages/order.py")
    assert "Your models (2)" in expander_labels(at)
    assert any("soon-damaged cannot be used" in text for text in messages(at, "error"))
    assert "soon-damaged (yours)" not in at.multiselect(key="email-classifier").options
    assert charts(at) >= 4  # the page still works
    on(at, "app_pages/attention.py")
    assert DOT in at.multiselect(key="alignment").options


def test_without_the_store_pages_work_and_your_models_says_why(files, monkeypatch):
    monkeypatch.setattr(lab, "RETRY_EVERY_S", 0.0)
    monkeypatch.setenv("SEQVIZ_DATABASE_URL", "postgresql+psycopg://seqviz:none@127.0.0.1:1/seqviz")
    at = on(fresh(), "app_pages/order.py")
    assert "Your models (not available now)" in expander_labels(at)
    said = " ".join(messages(at, "error"))
    assert "cannot be kept or read now" in said and "127.0.0.1:1" in said and "none@" not in said
    assert at.sidebar.file_uploader[0].proto.disabled
    assert at.multiselect(key="email-classifier").options[0] == "bow"  # the shipped models work
    assert charts(at) >= 4
    for page in ("app_pages/attention.py", "app_pages/lstm_gates.py"):
        on(at, page)

    monkeypatch.delenv("SEQVIZ_DATABASE_URL")  # the store is back: the next run finds it
    at.run()
    assert "Your models (0)" in expander_labels(at)
    assert labs.valid_key(lab_cookie(at)["key"])
    upload(at, "tiny-lstm.safetensors", files["lstm-classifier"])
    assert "Your models (1)" in expander_labels(at)


def test_a_lab_idle_longer_than_it_is_kept_is_deleted(files, cookies, monkeypatch):
    db = database()
    idle = labs.open_lab(db, None, now=time.time() - (limits.LAB_KEEP_DAYS + 1) * 86400)
    stored.add(db, idle.id, files["lstm-classifier"], "tiny-lstm.safetensors")
    monkeypatch.setitem(lab._purged, "at", None)  # as if this server had just started
    cookies["seqviz_lab"] = idle.key
    at = fresh()
    assert "Your models (0)" in expander_labels(at)
    assert lab_cookie(at)["key"] != idle.key
    assert not labs.exists(db, idle.id)
