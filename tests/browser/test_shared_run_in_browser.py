"""A class asks for the same run in Chromium: two browsers pressing Start on the same settings follow one run (the
page says it trains once for both, and offers Stop following), each ends with the model in their own lab; a third
browser asking after it finished has the model at once and watches its training replayed, or skips to the end.

Screenshots for a person to look at (test-output/screenshots/): train-shared-following (a phone, dark theme),
train-shared-replay and train-shared-skipped (a desktop).
"""

import re

import pytest
from browsing import SHOTS, assert_no_exception, full_page_screenshot, go_to, new_visitor, set_number, wait_for_app
from playwright.sync_api import expect

from seqviz.browser import PHONE

pytestmark = pytest.mark.browser

# A small dot-attention translator with a seed no other test uses (identical runs are shared across the server).
SETTINGS = {"Hidden": 16, "Steps": 120, "Batch size": 16, "Seed": 4242}
ENDED = re.compile(r"Finished after \d+ steps")


def ask_for_the_run(page, app_url: str, settle: bool = True) -> None:
    page.goto(f"{app_url}/train")
    wait_for_app(page)
    for label, value in SETTINGS.items():
        set_number(page, label, value)
    page.get_by_test_id("stMain").get_by_role("button", name="Start training", exact=True).click()
    if settle:  # (a replay redraws the page every 2 s until it ends: the page is still only then)
        wait_for_app(page)
        assert_no_exception(page)


def your_models(page, count: int) -> None:
    # (attached, not visible: a phone's sidebar is folded away)
    expect(page.get_by_test_id("stSidebar").get_by_text(f"Your models ({count})")).to_be_attached(timeout=30_000)


def test_a_class_asking_for_one_run_trains_it_once_and_a_late_visitor_has_it_at_once(app_url, browser):
    first_context, first = new_visitor(browser)
    # A phone as the harness makes one (its browser names itself a phone, so the app draws its phone forms from the
    # first run, as on a real phone)
    phone_context, phone = new_visitor(browser, device=PHONE, color_scheme="dark")
    late_context, late = new_visitor(browser)
    try:
        ask_for_the_run(first, app_url)
        main = first.get_by_test_id("stMain")
        # Queued (the shared server's one worker may be busy with another test's run), training or even ended: its
        # panel is there, and the run is there for the next visitor to follow (or to take finished).
        expect(main.locator("h3").filter(has_text="dot, hidden 16, 120 steps")).to_be_visible(timeout=60_000)

        ask_for_the_run(phone, app_url)
        phone_main = phone.get_by_test_id("stMain")
        expect(phone_main.get_by_text(re.compile("Trained once for 2 visitors"))).to_be_visible(timeout=30_000)
        following = phone_main.get_by_role("button", name="Stop following", exact=True)
        phone_main.get_by_text(re.compile("Trained once for 2 visitors")).scroll_into_view_if_needed()
        if following.count():  # (a short run may have ended already: then it says it was trained once)
            following.scroll_into_view_if_needed()
            box = following.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, box  # on the phone's screen
        full_page_screenshot(phone, "train-shared-following")

        for page in (first, phone):  # one run, two models: each lab its own copy
            expect(page.get_by_test_id("stMain").get_by_test_id("stAlert").filter(has_text=ENDED)).to_be_visible(
                timeout=240_000)
            wait_for_app(page)
            your_models(page, 1)
        # The first visitor's panel may have ended before the phone asked (it took the model finished): the next look
        # at /train counts both.
        go_to(first, "Order matters", "order")
        go_to(first, "Train your own", "train")
        expect(main.get_by_text(re.compile("Trained once for 2 visitors"))).to_be_visible(timeout=30_000)

        ask_for_the_run(late, app_url, settle=False)
        late_main = late.get_by_test_id("stMain")
        replay = late_main.get_by_test_id("stProgress").filter(has_text="Replaying its training")
        expect(replay).to_be_visible(timeout=30_000)
        expect(late_main.get_by_text(re.compile("had been trained here already"))).to_be_visible()
        your_models(late, 1)  # in the sidebar at once, while the replay plays
        late_main.get_by_text(re.compile("had been trained here already")).scroll_into_view_if_needed()
        late.screenshot(path=str(SHOTS / "train-shared-replay.png"))
        late_main.get_by_role("button", name="Skip to the end", exact=True).click()
        wait_for_app(late)
        your_models(late, 1)
        expect(replay).to_have_count(0)
        expect(late_main.get_by_role("button", name="Replay its training", exact=True)).to_be_visible()
        expect(late_main.get_by_test_id("stAlert").filter(has_text=ENDED)).to_be_visible()
        assert_no_exception(late)
        full_page_screenshot(late, "train-shared-skipped")
    finally:
        for context in (first_context, phone_context, late_context):
            context.close()
