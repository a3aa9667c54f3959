"""/what-if in Chromium, on a desktop in the light theme and on a 390 px phone in the dark: the page opens with its
charts drawn, a wider beam and a forced word are answered, a typed row of attention weights is decoded with,
nothing but a chart's own box is wider than the phone.

Screenshots for a person to look at (test-output/screenshots/): what-if-desktop and what-if-phone-dark (the
neighbours, the map of states and a typed row of weights opened from the address), what-if-edit-row-phone-dark
(the typed row and its answer), what-if-map-desktop and what-if-map-phone-dark (the path's labels should not
overlap).
"""

import re
import time

import pytest
from browsing import SHOTS, assert_no_exception, full_page_screenshot, wait_for_app
from playwright.sync_api import expect
from test_phone_and_themes import OVERFLOW

from seqviz.browser import DESKTOP, PHONE, new_context, new_page

pytestmark = pytest.mark.browser

ADDRESS = "/what-if?s=my+red+phone+never+arrived+."
WORD_PICKER = "Word to write there (most likely first)"


def question(page) -> None:
    """Widen the beam by one (the slider's keys, as a keyboard or a screen reader moves it) and force "câble"."""
    main = page.get_by_test_id("stMain")
    expect(main.get_by_text("Beam search of width 4", exact=False)).to_be_visible()
    thumb = main.get_by_test_id("stSlider").filter(has_text="Beam width").get_by_role("slider")
    thumb.focus()
    thumb.press("ArrowRight")
    expect(main.get_by_text(re.compile("Beam search of width 5 ranks first"))).to_be_visible(timeout=60_000)
    wait_for_app(page)
    box = main.get_by_role("combobox", name=WORD_PICKER, exact=True)
    box.scroll_into_view_if_needed()
    box.click()
    box.press_sequentially("câble")
    page.get_by_role("option", name="câble", exact=True).click()
    expect(main.get_by_text(re.compile("Forced there, “câble” had p = "))).to_be_visible(timeout=60_000)
    wait_for_app(page)
    assert_no_exception(page)
    drawn = main.locator("[data-testid=stVegaLiteChart]").evaluate_all(
        "charts => charts.map(c => c.querySelectorAll('canvas, svg').length)")
    assert drawn and all(n > 0 for n in drawn), f"a chart drew nothing: {drawn}"


def look_at(page, locator, name: str) -> None:
    """A screenshot of the screen with ``locator`` scrolled into it (test-output/screenshots/``name``.png)."""
    locator.scroll_into_view_if_needed()
    wait_for_app(page)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def the_map(page):
    """The map of states: the page's last chart."""
    return page.get_by_test_id("stMain").locator("[data-testid=stVegaLiteChart]").last


def test_what_if_on_a_desktop_in_the_light_theme(app_url, browser):
    context = new_context(browser, DESKTOP, color_scheme="light")
    page = new_page(context)
    try:
        started = time.perf_counter()
        page.goto(app_url + ADDRESS + "&statemap=true")
        wait_for_app(page)
        print(f"/what-if opened and painted in {time.perf_counter() - started:.1f} s")  # measured, never asserted
        assert_no_exception(page)
        main = page.get_by_test_id("stMain")
        expect(main.get_by_text("It writes: mon téléphone rouge n' est jamais arrivé .")).to_be_visible()
        question(page)
        full_page_screenshot(page, "what-if-desktop")
        look_at(page, the_map(page), "what-if-map-desktop")
    finally:
        context.close()


def test_what_if_on_a_phone_in_the_dark(app_url, browser):
    context = new_context(browser, PHONE, color_scheme="dark")
    page = new_page(context)
    try:
        page.goto(app_url + ADDRESS + "&neighbours=true&statemap=true&estep=03+rouge"
                  "&eword=the+row+of+weights+I+type&erow=0+0.5+0.5+0+0+0")
        wait_for_app(page)
        assert_no_exception(page)
        main = page.get_by_test_id("stMain")
        expect(main.get_by_test_id("stTable").filter(has_text="cosine")).to_be_visible(timeout=120_000)
        expect(main.get_by_text(re.compile(r"With your row of weights \(most on “red”, 0\.50\)"))).to_be_visible()
        question(page)
        too_wide = page.evaluate(OVERFLOW)
        assert not too_wide, f"wider than a 390 px screen: {too_wide}"
        full_page_screenshot(page, "what-if-phone-dark")
        look_at(page, main.get_by_text(re.compile("With your row of weights")), "what-if-edit-row-phone-dark")
        look_at(page, the_map(page), "what-if-map-phone-dark")
    finally:
        context.close()
