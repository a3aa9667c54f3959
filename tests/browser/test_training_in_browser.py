"""A visitor trains a translator on /train, watches it learn, uses it on /attention, and a second visitor loads it;
a run is the browser's (its lab's, kept by the cookie seqviz_lab), not the tab's: a reload and a second tab show it
going on, its place in the queue while it waits, the note of a lost worker; another browser sees none of it.

Screenshots for a person to look at, in test-output/screenshots/: train-running, train-finished,
attention-trained-model, and train-lab-* (the run's panel queued, after a reload, with the note of a lost worker,
ended; the sidebar's status line; at desktop size and, in a phone-sized second tab, at phone size).
"""

import contextlib
import os
import re
import signal
import time

import psutil
import pytest
from browsing import (
    SHOTS,
    assert_no_exception,
    full_page_screenshot,
    go_to,
    new_visitor,
    set_number,
    show_on_attention,
    wait_for_app,
)
from playwright.sync_api import expect

from seqviz import browser as harness
from seqviz.limits import MAX_MODEL_NAME_CHARS

pytestmark = pytest.mark.browser

# A tiny run of the quick preset's dot-attention translator, made smaller (hidden 64 where the preset has 128):
# 300 steps of 32 pairs, about 15 s of training on a quiet core, 20 to 40 s on this shared 2-core machine while the
# browser and the server draw.
STEPS = 300
BATCH = 32
HIDDEN = 64
STEP_TEXT = re.compile(r"Step (\d+) of (\d+)")


def read_step(progress) -> tuple[int, int] | None:
    """(step, steps) from the run's progress text, or None when it is not on the page (redrawn, or ended)."""
    try:
        text = progress.first.text_content(timeout=2_000) or ""
    except Exception:  # the fragment replaced the element while we read it
        return None
    found = STEP_TEXT.search(text)
    return (int(found.group(1)), int(found.group(2))) if found else None


def test_a_visitor_trains_a_translator(app_url, browser, page, tmp_path):
    started = time.monotonic()
    page.goto(f"{app_url}/train")
    wait_for_app(page)
    main = page.get_by_test_id("stMain")
    expect(main.get_by_role("combobox", name="Preset", exact=True)).to_have_value("Quick: attention translator")
    expect(main.get_by_role("combobox", name="Model family", exact=True)).to_have_value(re.compile("dot-product"))
    set_number(page, "Hidden", HIDDEN)
    set_number(page, "Steps", STEPS)
    set_number(page, "Batch size", BATCH)
    assert_no_exception(page)

    main.get_by_role("button", name="Start training", exact=True).click()
    progress = main.get_by_test_id("stProgress").filter(has_text=STEP_TEXT)
    expect(progress).to_contain_text(f"of {STEPS}", timeout=60_000)
    # How busy the server is follows the run out of the queue (drawn once, it said "1 waiting" all run long).
    expect(main.get_by_text(re.compile(r"Now: 1 training, 0 waiting"))).to_have_count(1, timeout=15_000)
    name = main.locator("h3").first.inner_text().strip()
    assert name == f"dot, hidden {HIDDEN}, {STEPS} steps"

    # The panel redraws itself (every 2 s, no click): the step moves at least twice, the chart with it.
    curves = main.get_by_test_id("stVegaLiteChart").first
    expect(curves.locator("svg text").filter(has_text=re.compile("^Training loss$"))).to_have_count(1, timeout=30_000)
    expect(curves.locator("svg text").filter(has_text=re.compile("^Held-out"))).to_have_count(1)
    steps_seen, pictures = [], set()
    deadline = time.monotonic() + 90
    while len(steps_seen) < 3 and time.monotonic() < deadline:
        step = read_step(progress)
        if step and (not steps_seen or step[0] != steps_seen[-1]):
            steps_seen.append(step[0])
            with contextlib.suppress(Exception):  # redrawn while we took it: the next step takes another
                pictures.add(curves.screenshot(timeout=5_000))
        page.wait_for_timeout(300)
    assert len(steps_seen) >= 3, f"the step text did not move twice while training: {steps_seen}"
    assert steps_seen == sorted(steps_seen) and steps_seen[-1] < STEPS
    assert len(pictures) >= 2, "the training chart was not drawn again with more data"
    full_page_screenshot(page, "train-running")

    # Away and back through the sidebar: the run is still this session's.
    go_to(page, "Attention", "attention")
    assert_no_exception(page)
    go_to(page, "Train your own", "train")
    expect(main.get_by_role("heading", name="Your runs")).to_be_visible()
    expect(main.locator("h3").filter(has_text=name)).to_have_count(1)

    # The end: the success box, the snapshots to replay, the table beside the shipped model.
    done = main.get_by_test_id("stAlert").filter(has_text=re.compile(r"(Finished|Stopped)[^.]* after \d+ steps"))
    expect(done).to_be_visible(timeout=150_000)
    wait_for_app(page)
    expect(main).to_contain_text("Watch it learn")
    expect(main.get_by_test_id("stSlider").filter(has_text="Snapshot after step")).to_be_visible()
    table = main.get_by_test_id("stTable")
    expect(table).to_contain_text("held-out measure")
    expect(table).to_contain_text("yours")
    expect(table).to_contain_text("shipped dot")
    assert_no_exception(page)
    full_page_screenshot(page, "train-finished")

    with page.expect_download() as event:
        main.get_by_role("button", name="Download checkpoint", exact=True).click()
    saved = tmp_path / event.value.suggested_filename
    event.value.save_as(saved)
    assert saved.suffix == ".safetensors" and saved.stat().st_size > 10_000

    # Pickers name a model by its run's name, whole (it is shorter than MAX_MODEL_NAME_CHARS).
    assert len(name) <= MAX_MODEL_NAME_CHARS
    short = name
    label = f"{name} (yours)"
    yours = page.get_by_test_id("stSidebar").get_by_test_id("stExpander").filter(has_text="Your models (1)")
    expect(yours).to_contain_text(short)
    written = show_on_attention(page, label)
    assert written
    full_page_screenshot(page, "attention-trained-model")

    # A new visitor (a new browser context: a session of its own) loads the file and sees the same translation.
    other, visitor = new_visitor(browser, accept_downloads=True)
    try:
        visitor.goto(app_url)
        wait_for_app(visitor)
        sidebar = visitor.get_by_test_id("stSidebar")
        expander = sidebar.get_by_test_id("stExpander").filter(has_text="Your models (0)")
        expander.get_by_text("Your models (0)").first.click()
        expander.get_by_test_id("stFileUploader").locator("input[type=file]").set_input_files(str(saved))
        # the file travels to the server before the rerun starts: wait for the rerun's message
        expect(sidebar.get_by_test_id("stAlert").filter(has_text=f"Added {label}")).to_be_visible(timeout=60_000)
        wait_for_app(visitor)
        assert show_on_attention(visitor, label) == written
    finally:
        other.close()
    print(f"trained and compared in {time.monotonic() - started:.0f} s; steps seen {steps_seen}; "
          f"it writes: {written}")


def test_the_form_keeps_its_settings_across_pages(app_url, page):
    page.goto(f"{app_url}/train")
    wait_for_app(page)
    set_number(page, "Steps", STEPS)
    set_number(page, "Batch size", BATCH)
    go_to(page, "Attention", "attention")
    go_to(page, "Train your own", "train")
    main = page.get_by_test_id("stMain")
    expect(main.get_by_role("spinbutton", name="Steps", exact=True)).to_have_value(str(STEPS))
    expect(main.get_by_role("spinbutton", name="Batch size", exact=True)).to_have_value(str(BATCH))


# --- A run is the browser's, not the tab's -------------------------------------------------------------------------

# A run that trains until the test stops it: the quick translator at hidden 64, 5000 steps of 32 pairs (the time
# limit, TRAIN_MAX_SECONDS of training, ends it at the latest).
LONG_STEPS = 5000
NOTE = re.compile(r"went on from its last saved point|before a point was saved")


def long_run(page, hidden: int = HIDDEN) -> None:
    set_number(page, "Hidden", hidden)
    set_number(page, "Steps", LONG_STEPS)
    set_number(page, "Batch size", BATCH)
    page.get_by_test_id("stMain").get_by_role("button", name="Start training", exact=True).click()


def steps_going_on(page, count: int = 2, timeout_s: float = 120) -> list[int]:
    """The step the run's progress bar shows, read until it has moved ``count`` times (or ``timeout_s`` passed)."""
    progress = page.get_by_test_id("stMain").get_by_test_id("stProgress").filter(has_text=STEP_TEXT)
    seen: list[int] = []
    deadline = time.monotonic() + timeout_s
    while len(seen) < count + 1 and time.monotonic() < deadline:
        step = read_step(progress)
        if step and (not seen or step[0] != seen[-1]):
            seen.append(step[0])
        page.wait_for_timeout(300)
    return seen


def lab_runs(store: str, context) -> list:
    """The runs of the lab whose key the browser ``context`` keeps, as the server's store has them (RunState)."""
    from sqlalchemy import select

    from seqviz.store import database, labs, runs
    from seqviz.store.schema import LabKey

    (key,) = [c["value"] for c in context.cookies() if c["name"] == "seqviz_lab"]
    db = database(store)
    with db.transaction(reading=True) as session:
        lab_id = session.scalar(select(LabKey.lab_id).where(LabKey.key_hash == labs.digest(key)))
    return runs.states(db, lab_id, snapshots=False)


def run_row(store: str, run_id: str) -> dict:
    """What the store has of a run that a page does not show (its saved point, its worker, its attempts)."""
    from seqviz.store import database
    from seqviz.store.schema import Run

    with database(store).transaction(reading=True) as session:
        run = session.get(Run, run_id)
        return {name: getattr(run, name) for name in ("status", "step", "saved_step", "worker_pid", "attempts",
                                                      "phase", "note")}


def store_until(store: str, run_id: str, test, timeout_s: float) -> dict:
    """The run's row once ``test(row)`` holds (or after ``timeout_s``)."""
    deadline = time.monotonic() + timeout_s
    while not test(row := run_row(store, run_id)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return row


def shot(page, name: str, show=None) -> None:
    """The screen as the visitor sees it, ``show`` (a locator) scrolled into view first."""
    if show is not None:
        with contextlib.suppress(Exception):  # redrawn meanwhile: the screen as it is
            show.first.scroll_into_view_if_needed(timeout=5_000)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def open_sidebar(page) -> None:
    opener = page.get_by_test_id("stExpandSidebarButton")
    if opener.is_visible():
        opener.click()
    expect(page.get_by_test_id("stSidebar").get_by_role("textbox", name="Sentence", exact=True)).to_be_in_viewport()


def close_sidebar(page) -> None:
    closer = page.get_by_test_id("stSidebarCollapseButton")
    if closer.count() and page.get_by_test_id("stSidebar").get_by_role("textbox", name="Sentence").is_visible():
        page.get_by_test_id("stSidebar").hover()
        closer.first.click()
    expect(page.get_by_test_id("stExpandSidebarButton")).to_be_visible()


def your_models(page, count: int, timeout: float = 60_000):
    expander = page.get_by_test_id("stSidebar").get_by_test_id("stExpander").filter(has_text=f"Your models ({count})")
    expect(expander).to_have_count(1, timeout=timeout)
    return expander


def test_a_run_is_the_browsers_in_every_tab_and_no_other_browsers(app_server, browser):
    """On the shared server (tests/browser/conftest.py): one training worker, so a second run waits in the queue,
    whatever the machine; a lab store of its own, so no other server's run manager hands its runs to another
    cluster."""
    started = time.monotonic()
    url = app_server.url

    # Another browser takes the one training worker.
    blocker_context, blocker = new_visitor(browser)
    # This browser: one desktop tab, later a second, phone-sized tab. Yet another browser only looks.
    context, page = new_visitor(browser)
    other_context, other = new_visitor(browser)
    try:
        blocker.goto(f"{url}/train")
        wait_for_app(blocker)
        long_run(blocker, hidden=48)  # a run of its own name
        blocker_main = blocker.get_by_test_id("stMain")
        blocker_progress = blocker_main.get_by_test_id("stProgress").filter(has_text=STEP_TEXT)
        expect(blocker_progress).to_be_visible(timeout=240_000)  # training: it has learned something to keep

        # Queued: its place, at once again after a reload, and in a second tab.
        page.goto(f"{url}/train")
        wait_for_app(page)
        long_run(page)
        main = page.get_by_test_id("stMain")
        queued = main.get_by_test_id("stAlert").filter(has_text="place 1 in the queue")
        expect(queued).to_be_visible(timeout=60_000)
        name = main.locator("h3").first.inner_text().strip()
        assert name == f"dot, hidden {HIDDEN}, {LONG_STEPS} steps"
        wait_for_app(page)
        shot(page, "train-lab-queued-desktop", queued)
        page.reload()
        wait_for_app(page)
        expect(main.locator("h3").filter(has_text=name)).to_have_count(1, timeout=5_000)
        expect(queued).to_be_visible(timeout=5_000)
        expect(main.get_by_role("button", name="Cancel")).to_be_visible()

        tab = harness.new_page(context)
        tab.set_viewport_size(harness.PHONE["viewport"])
        tab.goto(f"{url}/train")
        wait_for_app(tab)
        tab_main = tab.get_by_test_id("stMain")
        tab_queued = tab_main.get_by_test_id("stAlert").filter(has_text="place 1 in the queue")
        expect(tab_queued).to_be_visible(timeout=5_000)
        shot(tab, "train-lab-queued-phone", tab_queued)

        # The other browser stops its run: it keeps what it learned, and ours leaves the queue for the worker.
        blocker_main.get_by_role("button", name="Stop training").click()
        expect(blocker_main.get_by_test_id("stAlert").filter(has_text=re.compile(r"Stopped when you asked after")))\
            .to_be_visible(timeout=120_000)
        your_models(blocker, 1)

        page.bring_to_front()
        before = steps_going_on(page, timeout_s=240)
        assert len(before) >= 3 and before == sorted(before), f"the step did not go on: {before}"
        wait_for_app(page)
        page.reload()
        wait_for_app(page)
        progress = main.get_by_test_id("stProgress").filter(has_text=STEP_TEXT)
        expect(progress).to_have_count(1, timeout=5_000)  # at once: the page's first run draws it
        after = steps_going_on(page)
        assert len(after) >= 3 and after == sorted(after) and after[0] >= before[-1], (before, after)
        shot(page, "train-lab-after-reload-desktop", progress)

        tab.bring_to_front()
        in_tab = steps_going_on(tab)
        assert len(in_tab) >= 3 and in_tab == sorted(in_tab), f"the second tab's step did not go on: {in_tab}"
        expect(tab_main.locator("h3").filter(has_text=name)).to_have_count(1)
        open_sidebar(tab)
        status = tab.get_by_test_id("stSidebar").get_by_test_id("stProgress").filter(has_text=f"Training {name}")
        expect(status).to_contain_text(STEP_TEXT)
        shot(tab, "train-lab-sidebar-status-phone", status)
        close_sidebar(tab)

        page.bring_to_front()
        go_to(page, "Attention", "attention")  # every page's sidebar says the lab trains
        status = page.get_by_test_id("stSidebar").get_by_test_id("stProgress").filter(has_text=f"Training {name}")
        expect(status).to_contain_text(STEP_TEXT, timeout=10_000)
        shot(page, "train-lab-sidebar-status-desktop", status)
        go_to(page, "Train your own", "train")

        # The worker is lost (killed): the run goes on from its last saved point on another, and says so.
        (run,) = [state for state in lab_runs(app_server.store, context) if state.status == "running"]
        row = store_until(app_server.store, run.id, lambda r: r["saved_step"] > 0, 120)
        assert row["saved_step"] > 0 and row["status"] == "running", f"no saved point to go on from: {row}"
        pid = row["worker_pid"]
        assert app_server.pid in [p.pid for p in psutil.Process(pid).parents()]  # the server's own worker
        os.kill(pid, signal.SIGKILL)
        row = store_until(app_server.store, run.id, lambda r: r["attempts"] > 1 or r["status"] != "running", 300)
        assert row["attempts"] == 2 and row["worker_pid"] != pid and row["note"], f"it did not go on: {row}"
        note = main.get_by_test_id("stCaptionContainer").filter(has_text=NOTE)
        expect(note).to_have_count(1, timeout=30_000)
        resumed = steps_going_on(page)
        assert len(resumed) >= 3 and resumed == sorted(resumed), f"the step did not go on after the note: {resumed}"
        wait_for_app(page)
        shot(page, "train-lab-note-desktop", note)
        tab.bring_to_front()
        expect(tab_main.get_by_test_id("stCaptionContainer").filter(has_text=NOTE)).to_have_count(1, timeout=30_000)
        shot(tab, "train-lab-note-phone", tab_main.get_by_test_id("stCaptionContainer").filter(has_text=NOTE))

        # Stopped from the second tab: both tabs show its end, and its model in Your models.
        stop = tab_main.get_by_role("button", name="Stop training")
        if stop.count():  # (the time limit may have ended it first)
            stop.click()
        ended = re.compile(r"(Finished|Stopped)[^.]* after \d+ steps")
        for each in (tab, page):
            each.bring_to_front()
            expect(each.get_by_test_id("stMain").get_by_test_id("stAlert").filter(has_text=ended))\
                .to_be_visible(timeout=180_000)
            wait_for_app(each)
            expect(your_models(each, 1)).to_contain_text(name)
            assert_no_exception(each)
        shot(tab, "train-lab-ended-phone", tab_main.get_by_test_id("stAlert").filter(has_text=ended))
        shot(page, "train-lab-ended-desktop", main.get_by_test_id("stAlert").filter(has_text=ended))
        open_sidebar(tab)
        shot(tab, "train-lab-your-models-phone", your_models(tab, 1))

        # Another browser sees none of it; the one whose run it stopped sees its own model only.
        other.goto(f"{url}/train")
        wait_for_app(other)
        other_main = other.get_by_test_id("stMain")
        expect(other_main.get_by_text(re.compile(r"Now: \d+ training, \d+ waiting"))).to_have_count(1)
        expect(other_main.get_by_role("heading", name="Your runs")).to_have_count(0)
        expect(other_main.locator("h3")).to_have_count(0)
        expect(other.get_by_test_id("stSidebar").get_by_test_id("stProgress")).to_have_count(0)
        your_models(other, 0)
        assert_no_exception(other)
        shot(other, "train-lab-other-browser-desktop")
        blocker.reload()
        wait_for_app(blocker)
        expect(your_models(blocker, 1)).not_to_contain_text(name)
        expect(blocker.get_by_test_id("stMain").locator("h3").filter(has_text=name)).to_have_count(0)
    finally:
        for each in (blocker_context, context, other_context):
            each.close()
    print(f"a run across tabs, a reload and a lost worker in {time.monotonic() - started:.0f} s; steps before the "
          f"reload {before}, after {after}, in the second tab {in_tab}, after the note {resumed}")
