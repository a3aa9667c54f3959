"""A visitor trains a translator on /train, watches it learn, uses it on /attention, and a second visitor loads it."""

import contextlib
import re
import time

import pytest
from browsing import (
    assert_no_exception,
    full_page_screenshot,
    go_to,
    new_visitor,
    set_number,
    show_on_attention,
    wait_for_app,
)
from playwright.sync_api import expect

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
    name = main.locator("h4").first.inner_text().strip()
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
    expect(main.locator("h4").filter(has_text=name)).to_have_count(1)

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
