"""Faults on pages (tests/load/test_faults.py says how): a websocket dropped while a page computes (a browser closed
mid-run, a tab offline for 3 s) leaves the others served and the tab that was offline working; every button clicked
twice makes one run, one stop, one download, one removal.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import pytest
from browsing import assert_no_exception, full_page_screenshot, go_to, upload_checkpoint, wait_for_app
from load_support import (
    QUICK_PRESET,
    STEP_TEXT,
    TRAIN_THREAD,
    Sampler,
    choose,
    expect_runs_on_page,
    no_run_going,
    record,
    runs_on_page,
    set_number,
    tracebacks_since,
)
from playwright.sync_api import expect
from polling import wait_until

from seqviz.checkpoints import fingerprint

try:
    from checkpoint_files import tiny_checkpoint
except ImportError:  # tests/ is on sys.path through tests/conftest.py; this is the fallback
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from checkpoint_files import tiny_checkpoint


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
        # One browser is closed while its script runs; another loses its network (offline) in the middle of a run.
        closer, offline = heavy
        closer.type("the parcel that i ordered last week never arrived and the charger is broken .")
        running = wait_until(lambda: closer.look()["state"] == "running", 15, every_s=0.02)
        if not running and not closer.look()["ran"]:  # the Enter reached no rerun (a busy machine): type it again
            closer.type_again()
            running = wait_until(lambda: closer.look()["state"] == "running", 15, every_s=0.02)
        assert running, f"the rerun never started: {closer.diagnosis()}"
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


def twice(locator) -> None:
    """Two clicks as fast as a hand can: a double click."""
    locator.dblclick()


@pytest.mark.browser
@pytest.mark.timeout(300)
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
    assert no_run_going(classroom), "a run is queued or training before this test starts one"

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
    lab = classroom.lab_of(visitor)
    assert [row["name"] for row in classroom.runs(lab)] == ["lstm emails, hidden 32, 3000 steps"]
    assert_no_exception(page)

    # A second run of the same lab is refused (one run per lab: seqviz.limits.TRAIN_MAX_ACTIVE_PER_OWNER counts a
    # lab's queued and training runs), from this tab and from a second tab of the same browser alike.
    set_number(page, "Steps", 2000)
    main.get_by_role("button", name="Start training", exact=True).click()
    expect(main.get_by_text("You already have a run queued or training")).to_be_visible(timeout=30_000)
    second_tab = visitor.context.new_page()
    second_tab.goto(f"{classroom.url}/train")
    wait_for_app(second_tab)
    choose(second_tab, "Preset", QUICK_PRESET)
    set_number(second_tab, "Seed", 7)
    second_tab.get_by_test_id("stMain").get_by_role("button", name="Start training", exact=True).click()
    expect(second_tab.get_by_test_id("stMain").get_by_text("You already have a run queued or training")
           ).to_be_visible(timeout=30_000)
    expect_runs_on_page(second_tab, ["lstm emails, hidden 32, 3000 steps"])  # the lab's run, in every tab
    assert_no_exception(second_tab)
    second_tab.close()
    assert len(classroom.runs(lab)) == 1
    # Another visitor's run waits behind it (the test server has one training worker); Cancel twice.
    other = visitors("queued visitor")
    other.open(f"{classroom.url}/train")
    other.wait_painted()
    choose(other.page, "Preset", QUICK_PRESET)
    # A seed of its own: the preset's own run may have finished on this server (test_a_tab_reloaded_...), and an
    # identical run is never trained twice (seqviz.jobs): it would take that run's model at once, never waiting.
    set_number(other.page, "Seed", 11)
    wait_for_app(other.page)
    other_main = other.page.get_by_test_id("stMain")
    other_main.get_by_role("button", name="Start training", exact=True).click()
    expect(other_main.get_by_text("place 1 in the queue")).to_be_visible(timeout=30_000)
    twice(other_main.get_by_role("button", name="Cancel", exact=True))
    expect(other_main.get_by_text("Cancelled before it started.")).to_be_visible(timeout=30_000)
    assert [row["status"] for row in classroom.runs(classroom.lab_of(other))] == ["cancelled"]
    assert_no_exception(other.page)
    assert_no_exception(page)

    # Stop twice: the first run stops, is kept, and joins Your models.
    twice(main.get_by_role("button", name="Stop training", exact=True))
    expect(main.get_by_test_id("stAlert").filter(has_text=re.compile(r"Stopped when you asked after \d+ steps"))
           ).to_be_visible(timeout=60_000)
    expect(sidebar.get_by_test_id("stExpander").filter(has_text="Your models (1)")).to_have_count(1, timeout=30_000)
    wait_for_app(page)
    assert runs_on_page(page) == ["lstm emails, hidden 32, 3000 steps"]
    assert [(row["status"], row["stop_reason"]) for row in classroom.runs(lab)] == [("stopped", "asked")]
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
    expect_runs_on_page(page, ["lstm emails, hidden 32, 3000 steps"])
    assert not classroom.threads(TRAIN_THREAD)
    assert not tracebacks_since(classroom, log_offset), tracebacks_since(classroom, log_offset)[:20]
