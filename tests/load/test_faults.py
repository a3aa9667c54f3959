"""Faults a classroom brings: a tab closed while its run trains, a websocket dropped while a page computes, a
visitor who clicks every button twice. The server keeps serving the others, the orphaned run stops and its model
is freed, nothing raises, no run is started twice.

The test server reaps a closed tab's runs after 4 s of silence (SEQVIZ_TRAIN_ORPHAN_TIMEOUT_S, conftest) instead
of the app's minute; the rule is the same: silent, and Streamlit no longer has the tab connected. Whether the run
stopped is read from outside, in /proc: seqviz.jobs names its training thread `seqviz-run`, and the thread ends
when the run does. Memory is measured twice: the server's resident memory before, during and after (recorded,
never asserted: the allocator keeps some), and, in this process, weak references to the model and its
parameters, which must all be dead once the run is reaped.
"""

from __future__ import annotations

import gc
import re
import sys
import threading
import time
import weakref
from pathlib import Path

import pytest
from conftest import (
    TRAIN_THREAD,
    Sampler,
    assert_no_exception,
    full_page_screenshot,
    go_to,
    record,
    tracebacks_since,
    upload_checkpoint,
    wait_for_app,
)
from playwright.sync_api import expect

from seqviz.checkpoints import fingerprint

try:
    from checkpoint_files import tiny_checkpoint
except ImportError:  # tests/ is on sys.path through tests/conftest.py; this is the fallback
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from checkpoint_files import tiny_checkpoint

from test_classroom_load import choose, set_number

STEP_TEXT = re.compile(r"Step (\d+) of (\d+)")
BIG_PRESET = "Bottleneck: plain encoder-decoder, hidden 128"  # 570,057 numbers to learn, the largest preset
QUICK_PRESET = "Quick: LSTM email classifier"


def wait_until(condition, timeout_s: float, every_s: float = 0.2):
    """condition()'s first truthy value, or None after timeout_s (it sleeps: Playwright's events wait meanwhile)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every_s)
    return None


def step_shown(page) -> int | None:
    try:
        found = STEP_TEXT.search(page.get_by_test_id("stMain").inner_text(timeout=5_000))
    except Exception:  # redrawn while read
        return None
    return int(found.group(1)) if found else None


# --- (a) a browser closed in the middle of a training run --------------------------------------------------


@pytest.mark.browser
@pytest.mark.timeout(240)
def test_a_tab_closed_while_training_loses_its_run_and_others_are_served(classroom, visitors):
    log_offset = len(classroom.log_text())
    began = time.monotonic()
    other = visitors("other")
    other.open(f"{classroom.url}/attention?s=where+is+my+parcel+?")
    other.wait_painted()
    closer = visitors("closer")
    closer.open(f"{classroom.url}/train")
    closer.wait_painted()
    choose(closer.page, "Preset", BIG_PRESET)  # builds the translation data, which the server keeps for everyone
    wait_for_app(closer.page)
    assert not classroom.threads(TRAIN_THREAD), "a run is training before this test starts one"
    before = classroom.memory_mb()

    with Sampler(classroom) as sampler:
        closer.page.get_by_test_id("stMain").get_by_role("button", name="Start training", exact=True).click()
        clicked = time.monotonic()
        assert wait_until(lambda: (step_shown(closer.page) or 0) >= 3, 90), "the run did not start training"
        training_seen = time.monotonic()
        (tid,) = classroom.threads(TRAIN_THREAD)
        during = classroom.memory_mb()
        closer.close()  # the tab goes, its websocket with it; nobody will ever poll this run again
        closed_at = time.monotonic()

        # Another visitor is served while the orphan is being found.
        other.type("the charger never arrived .")
        served_s = other.wait_painted(60)
        assert_no_exception(other.page)
        assert "the+charger+never+arrived" in other.sidebar_text()

        stopped = wait_until(lambda: tid not in classroom.threads(TRAIN_THREAD), 60, every_s=0.1)
        stop_s = time.monotonic() - closed_at
        assert stopped, f"the closed tab's run was still training {stop_s:.0f} s after the tab closed"
        time.sleep(1)
        after = classroom.memory_mb()
        idle_cpu = _cpu_rate(classroom, 2.0)

    assert not sampler.failures, sampler.failures[:5]
    assert not tracebacks_since(classroom, log_offset), tracebacks_since(classroom, log_offset)[:20]
    assert not classroom.threads(TRAIN_THREAD)
    record("fault_closed_tab", {
        "run": f"{BIG_PRESET} (570,057 numbers to learn)",
        "seconds_from_close_to_run_stopped": round(stop_s, 1),
        "seconds_open_and_preset": round(clicked - began, 1),
        "seconds_from_start_to_step_3_seen": round(training_seen - clicked, 1),
        "orphan_timeout_s_on_this_server": 4, "orphan_timeout_s_by_default": 60,
        "other_visitor_view_s_meanwhile": round(served_s, 2),
        "server_rss_mb_before_run": before["rss_mb"], "server_rss_mb_training": during["rss_mb"],
        "server_rss_mb_after_reaped": after["rss_mb"],
        "server_rss_mb_freed": round(during["rss_mb"] - after["rss_mb"], 1),
        "server_cpu_cores_busy_after_reaped": round(idle_cpu, 2),
        **sampler.figures(),
    })


def _cpu_rate(server, seconds: float) -> float:
    began = server.cpu_seconds()
    time.sleep(seconds)
    return (server.cpu_seconds() - began) / seconds


def test_an_orphaned_run_s_model_is_garbage_collected():
    """In this process: a run whose owner has gone is stopped, and its model and parameters are collected."""
    from seqviz.jobs import RunManager
    from seqviz.runs import RunSpec

    connected = {"closed-tab": True}
    manager = RunManager(max_running=1, orphan_timeout_s=0.3, reaper_interval_s=0.05,
                         still_there=lambda owner: connected[owner])
    refs: list[weakref.ref] = []
    seen = threading.Event()

    def snapshot(model):
        if not refs:
            refs.extend(weakref.ref(x) for x in (model, *model.parameters()))
            seen.set()

    try:
        spec = RunSpec(task="emails", family="lstm", embedding=16, hidden=32, steps=5000, batch_size=32)
        run = manager.submit("closed-tab", spec, snapshot_fn=snapshot, snapshot_every_s=1e-6)
        assert seen.wait(60), "the run never reached its first snapshot"
        assert all(ref() is not None for ref in refs)
        time.sleep(0.5)  # silent for longer than the timeout, but still connected: it trains on
        assert run.status == "running"
        connected["closed-tab"] = False  # the tab closes
        assert run.wait(30), "the orphaned run did not stop"
        state = run.state()
        assert state.status == "stopped" and state.stop_reason == "session gone" and state.step < 5000
        assert manager.runs_of("other") == [] and manager.load()["running"] == 0
        del state, run
        gc.collect()
        alive = [ref for ref in refs if ref() is not None]
        assert not alive, f"{len(alive)} of the model's {len(refs)} objects (model, parameters) are still alive"
    finally:
        manager.close()


# --- (b) a websocket dropped while a page computes ----------------------------------------------------------


@pytest.mark.browser
@pytest.mark.timeout(180)
def test_a_websocket_dropped_while_a_page_computes(classroom, visitors):
    log_offset = len(classroom.log_text())
    steady = visitors("steady")
    steady.open(f"{classroom.url}/?s=where+is+my+parcel+?")
    steady.wait_painted()
    heavy = [visitors(f"dropper {n}") for n in range(2)]
    for visitor, path in zip(heavy, ("transformer", "attention"), strict=True):
        visitor.open(f"{classroom.url}/{path}")
        visitor.wait_painted()

    with Sampler(classroom) as sampler:
        # One tab is closed while its script runs; another loses its network (offline) in the middle of a run.
        closer, offline = heavy
        closer.type("the parcel that i ordered last week never arrived and the charger is broken .")
        assert wait_until(lambda: closer.look()["state"] == "running", 15, every_s=0.02), "the rerun never started"
        closer.close()
        offline.type("my red phone never arrived and nobody answers my emails .")
        wait_until(lambda: offline.look()["state"] == "running", 15, every_s=0.02)
        offline.context.set_offline(True)
        time.sleep(3)
        offline.context.set_offline(False)

        # The others are served.
        steady.type("the charger never arrived .")
        steady_s = steady.wait_painted(60)
        assert_no_exception(steady.page)
        assert "the+charger+never+arrived" in steady.sidebar_text()
        # The tab that was offline comes back and works.
        reconnected = wait_until(lambda: offline.look()["state"] == "notRunning", 60)
        assert reconnected, "the tab that went offline did not come back"
        offline.type("where is the parcel ?")
        offline_s = offline.wait_painted(60)
        assert_no_exception(offline.page)
        assert "where+is+the+parcel" in offline.sidebar_text()

    assert not sampler.failures, sampler.failures[:5]
    assert not tracebacks_since(classroom, log_offset), tracebacks_since(classroom, log_offset)[:20]
    record("fault_dropped_websocket", {"steady_visitor_view_s": round(steady_s, 2),
                                       "offline_visitor_view_after_reconnect_s": round(offline_s, 2),
                                       **sampler.figures()})


# --- (c) every button twice ---------------------------------------------------------------------------------


def runs_on_page(page) -> list[str]:
    return [h.strip() for h in page.get_by_test_id("stMain").locator("h4").all_inner_texts()]


def twice(locator) -> None:
    """Two clicks as fast as a hand can: a double click."""
    locator.dblclick()


@pytest.mark.browser
@pytest.mark.timeout(240)
def test_every_button_clicked_twice(classroom, visitors, tmp_path):
    log_offset = len(classroom.log_text())
    visitor = visitors("double-clicker")
    page = visitor.page
    main, sidebar = page.get_by_test_id("stMain"), page.get_by_test_id("stSidebar")
    visitor.open(f"{classroom.url}/train")
    visitor.wait_painted()
    choose(page, "Preset", QUICK_PRESET)
    set_number(page, "Steps", 3000)
    wait_for_app(page)

    # Start training, twice: one run. Then once more a second later, as someone does when a busy server seems
    # not to have heard: still one run, and a note says why.
    start = main.get_by_role("button", name="Start training", exact=True)
    twice(start)
    page.wait_for_timeout(1_000)
    start.click()
    expect(main.get_by_test_id("stProgress").filter(has_text=STEP_TEXT)).to_have_count(1, timeout=60_000)
    expect(main.get_by_text("These settings are already training")).to_be_visible(timeout=30_000)
    page.wait_for_timeout(1_500)  # every click has reached the server
    wait_for_app(page)
    assert runs_on_page(page) == ["lstm emails, hidden 32, 3000 steps"], runs_on_page(page)
    assert_no_exception(page)

    # A second run, queued behind the first; Cancel twice.
    set_number(page, "Steps", 2000)
    main.get_by_role("button", name="Start training", exact=True).click()
    expect(main.get_by_text("place 1 in the queue")).to_be_visible(timeout=30_000)
    twice(main.get_by_role("button", name="Cancel", exact=True))
    expect(main.get_by_text("Cancelled before it started.")).to_be_visible(timeout=30_000)
    assert_no_exception(page)

    # Stop twice: the first run stops, is kept, and joins Your models.
    twice(main.get_by_role("button", name="Stop training", exact=True))
    expect(main.get_by_test_id("stAlert").filter(has_text=re.compile(r"Stopped when you asked after \d+ steps"))
           ).to_be_visible(timeout=60_000)
    expect(sidebar.get_by_test_id("stExpander").filter(has_text="Your models (1)")).to_have_count(1, timeout=30_000)
    wait_for_app(page)
    assert sorted(runs_on_page(page)) == ["lstm emails, hidden 32, 2000 steps", "lstm emails, hidden 32, 3000 steps"]
    assert_no_exception(page)

    # Download checkpoint twice: two identical files.
    files = []
    page.on("download", lambda d: files.append(d))  # (handed over while the test calls Playwright: no sleep)
    with page.expect_download():
        twice(main.get_by_role("button", name="Download checkpoint", exact=True))
    page.wait_for_timeout(1_500)  # the second one, if the browser asks for it
    contents = {Path(d.path()).read_bytes() for d in files}
    assert len(contents) == 1 and len(next(iter(contents))) > 1_000
    assert_no_exception(page)
    full_page_screenshot(page, "faults-train-every-button-twice")

    # Upload, then Remove twice: the upload goes, the trained model stays.
    path = tmp_path / "tiny-dot.safetensors"
    path.write_bytes(tiny_checkpoint("dot-translator"))
    upload_checkpoint(page, path, models_before=1)
    data = path.read_bytes()
    remove = sidebar.locator(f".st-key-rm-{fingerprint(data)[:12]}").get_by_role("button", name="Remove")
    twice(remove)
    expect(sidebar.get_by_test_id("stExpander").filter(has_text="Your models (1)")).to_have_count(1, timeout=30_000)
    wait_for_app(page)
    expect(sidebar.get_by_test_id("stExpander").filter(has_text="Your models (1)")).to_contain_text(
        "lstm emails, hidden 32, 3000 steps")
    assert "tiny-dot" not in sidebar.get_by_test_id("stExpander").filter(has_text="Your models (1)").inner_text()
    assert_no_exception(page)

    # A page link twice, then the Measure-again style buttons of a page: still one session, no exception.
    twice(page.get_by_test_id("stSidebarNav").get_by_text("Attention", exact=True))
    page.wait_for_url("**/attention**")
    wait_for_app(page)
    assert_no_exception(page)
    expect(sidebar.get_by_test_id("stExpander").filter(has_text="Your models (1)")).to_have_count(1)
    go_to(page, "Train your own", "train")
    assert sorted(runs_on_page(page)) == ["lstm emails, hidden 32, 2000 steps", "lstm emails, hidden 32, 3000 steps"]
    assert not classroom.threads(TRAIN_THREAD)
    assert not tracebacks_since(classroom, log_offset), tracebacks_since(classroom, log_offset)[:20]
