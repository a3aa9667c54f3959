"""A student on a phone, a student in the dark theme, and a share link made by moving a widget.

Every page is opened as a phone opens it (390 x 844, touch, a phone's user agent: Streamlit closes the sidebar
after a tap on a page's link only for a phone's user agent) and in the dark colour scheme; a screenshot of each
is saved under test-output/screenshots/ for a person to look at.
"""

from __future__ import annotations

import re
import shutil

import pytest
from browsing import FULL_SCREENSHOTS, SHOTS, assert_no_exception, full_page_screenshot, wait_for_app
from playwright.sync_api import expect

from seqviz.browser import PHONE, new_context, new_page
from seqviz.story import PAGES

LONG = "the charger arrived , but never the parcel that was supposed to have it ."

# What sticks out past the screen's right edge, unless a box that scrolls sideways holds it.
OVERFLOW = """() => {
  const width = window.innerWidth, out = [];
  for (const el of document.querySelectorAll('[data-testid=stMain] *')) {
    const box = el.getBoundingClientRect();
    if (box.width === 0 || box.right <= width + 1) continue;
    let held = false;
    for (let up = el.parentElement; up && up.dataset.testid !== 'stMain'; up = up.parentElement) {
      if (getComputedStyle(up).overflowX !== 'visible' && up.getBoundingClientRect().right <= width + 1) {
        held = true; break;
      }
    }
    if (!held && el.parentElement.getBoundingClientRect().right <= width + 1)
      out.push((el.dataset.testid || el.tagName) + ' reaches ' + Math.round(box.right) + ' px');
  }
  const main = document.querySelector('[data-testid=stMain]');
  if (main.scrollWidth > width + 1) out.push('the page scrolls sideways to ' + main.scrollWidth + ' px');
  return out;
}"""


# Each box that scrolls sideways: what it is, and the hint drawn where it starts.
SCROLL_HINTS = """() => [...document.querySelectorAll('[data-seqviz-overflows]')].map(
  box => [box.getAttribute('aria-label') || box.dataset.testid || box.className,
          getComputedStyle(box, '::before').content])"""


def _luminance(css_rgb: str) -> float:
    r, g, b = (int(x) / 255 for x in css_rgb[css_rgb.index("(") + 1:css_rgb.index(")")].split(",")[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


@pytest.fixture
def phone(browser):
    context = new_context(browser, PHONE)
    page = new_page(context)
    yield page
    context.close()


@pytest.fixture
def dark(browser):
    context = new_context(browser, color_scheme="dark")
    page = new_page(context)
    yield page
    context.close()


@pytest.mark.browser
def test_every_page_fits_a_phone(app_url, phone):
    too_wide = {}
    for story_page in PAGES:
        phone.goto(f"{app_url}/{story_page.url_path}?s={LONG.replace(' ', '+')}")
        wait_for_app(phone)
        assert_no_exception(phone)
        found = phone.evaluate(OVERFLOW)
        name = story_page.url_path or "home"
        if name == "lstm-gates":  # the gates' formulas and heatmaps are wider than a phone: they say they scroll
            phone.wait_for_function("() => document.querySelector('.katex-display[data-seqviz-overflows]') && "
                                    "document.querySelector('[data-testid=stVegaLiteChart][data-seqviz-overflows]')",
                                    timeout=10_000)
        unhinted = [label for label, hint in phone.evaluate(SCROLL_HINTS) if "scroll sideways" not in hint]
        if unhinted:
            found = [*found, *(f"{label}: no scroll hint" for label in unhinted)]
        if found:
            too_wide[name] = found
        charts = phone.locator("[data-testid=stVegaLiteChart]")
        if charts.count():  # what a phone's screen shows around the page's first chart
            charts.first.scroll_into_view_if_needed()
        view = SHOTS / f"phone-view-{name}.png"
        phone.screenshot(path=str(view))
        if FULL_SCREENSHOTS:
            full_page_screenshot(phone, f"phone-{name}")
        else:  # the screen as the visitor sees it: the picture just taken (a 2x phone's screenshot is not free)
            shutil.copyfile(view, SHOTS / f"phone-{name}.png")
    assert not too_wide, f"wider than a 390 px screen: {too_wide}"


@pytest.mark.browser
def test_the_sidebar_closes_after_a_tap_on_a_page(app_url, phone):
    phone.goto(f"{app_url}/order")
    wait_for_app(phone)
    sidebar = phone.get_by_test_id("stSidebar")
    assert sidebar.bounding_box()["width"] == 0, "the sidebar should start closed on a phone"
    phone.get_by_test_id("stExpandSidebarButton").tap()
    expect(sidebar.get_by_role("textbox", name="Sentence", exact=True)).to_be_in_viewport()
    phone.get_by_test_id("stSidebarNav").get_by_text("Attention", exact=True).tap()
    phone.wait_for_url("**/attention**")
    wait_for_app(phone)
    expect(sidebar.get_by_role("textbox", name="Sentence", exact=True)).not_to_be_in_viewport()


@pytest.mark.browser
def test_enter_in_the_sentence_box_shows_the_page_on_a_phone(app_url, phone):
    """The sidebar covers a phone's page: Enter applies the sentence and closes it, and while typing, the box's
    "Press Enter to apply · 66/400" sits under the typed text, not over it."""
    phone.goto(f"{app_url}/attention")
    wait_for_app(phone)
    phone.get_by_test_id("stExpandSidebarButton").tap()
    box = phone.get_by_test_id("stSidebar").get_by_role("textbox", name="Sentence", exact=True)
    box.tap()
    box.fill(LONG)
    instructions = phone.locator(".st-key-s [data-testid=InputInstructions]")
    expect(instructions).to_contain_text(f"{len(LONG)}/400")
    # the typed line's letters end a font size below the box's content top; the count's line starts below them
    text_bottom = box.evaluate("el => { const s = getComputedStyle(el); return el.getBoundingClientRect().top"
                               " + parseFloat(s.borderTopWidth) + parseFloat(s.paddingTop) + parseFloat(s.fontSize); }")
    count_top = instructions.locator("span").last.bounding_box()["y"]
    assert count_top >= text_bottom, f"the character count (from {count_top} px) covers the typed text ({text_bottom})"
    box.press("Enter")
    phone.wait_for_url("**/attention?s=the+charger**")
    wait_for_app(phone)
    expect(box).not_to_be_in_viewport()
    assert phone.get_by_test_id("stSidebar").bounding_box()["width"] == 0, "the sidebar still covers the page"


@pytest.mark.browser
def test_every_page_in_the_dark_theme(app_url, dark):
    for story_page in PAGES:
        dark.goto(f"{app_url}/{story_page.url_path}?s={LONG.replace(' ', '+')}")
        wait_for_app(dark)
        assert_no_exception(dark)
        background = dark.evaluate("() => getComputedStyle(document.querySelector('[data-testid=stApp]'))"
                                   ".backgroundColor")
        assert _luminance(background) < 0.15, f"/{story_page.url_path}: background {background} is not dark"
        full_page_screenshot(dark, f"dark-{story_page.url_path or 'home'}")


@pytest.mark.browser
def test_renaming_a_word_keeps_the_bars_in_order(app_url, page):
    """The worked example's bars follow the words' positions, whatever a word is renamed to."""
    page.goto(f"{app_url}/attention")
    wait_for_app(page)
    box = page.get_by_role("textbox", name="Word 1", exact=True)
    box.fill("zebra")
    box.press("Enter")
    wait_for_app(page)
    weights = page.locator("[data-testid=stVegaLiteChart]").filter(has_text="Weights after softmax")
    labels = weights.locator("svg text").filter(has_text=re.compile(r"^\d\d \w"))  # "01 zebra", the y axis
    expect(labels).to_have_count(3)
    by_height = sorted((labels.nth(i).bounding_box()["y"], labels.nth(i).text_content()) for i in range(3))
    assert [text for _, text in by_height] == ["01 zebra", "02 never", "03 arrived"]


@pytest.mark.browser
def test_a_moved_widget_travels_in_the_share_link(app_url, browser, page):
    """Pick the dot translator in /attention's "One step": the share box's address opens it for someone else."""
    page.goto(f"{app_url}/attention?s=where+is+my+parcel+%3F")
    wait_for_app(page)
    step = page.get_by_test_id("stRadio").filter(has_text="Translator")
    step.get_by_text("dot", exact=True).click()
    wait_for_app(page)
    address = page.get_by_test_id("stSidebar").get_by_test_id("stCode").inner_text().strip()
    assert "stepmodel=dot" in address, address
    other = new_context(browser)
    try:
        student = new_page(other)
        student.goto(address)
        wait_for_app(student)
        expect(student.get_by_test_id("stRadio").filter(has_text="Translator").get_by_role(
            "radio", name="dot")).to_be_checked()
        assert "Writing" in student.get_by_test_id("stMain").inner_text()
    finally:
        other.close()


@pytest.mark.browser
def test_the_viewer_switches_to_dark_and_back(app_url, page):
    """A light browser gets the light theme; the app menu's Dark and Light switch it for this viewer."""
    page.goto(f"{app_url}/order")
    wait_for_app(page)

    def background() -> float:
        return _luminance(page.evaluate(
            "() => getComputedStyle(document.querySelector('[data-testid=stApp]')).backgroundColor"))

    assert background() > 0.9
    for choice, dark in (("Dark", True), ("Light", False)):
        page.get_by_test_id("stMainMenu").click()
        page.get_by_role("menuitemradio", name=choice, exact=True).click()
        page.keyboard.press("Escape")
        page.wait_for_function(
            "dark => { const c = getComputedStyle(document.querySelector('[data-testid=stApp]')).backgroundColor;"
            " const [r, g, b] = c.match(/\\d+/g).map(Number); return ((r + g + b) / 3 < 80) === dark; }", arg=dark)
        assert (background() < 0.15) if dark else (background() > 0.9)


@pytest.mark.browser
def test_a_run_on_a_phone_stays_on_the_screen(app_url, phone):
    """/train's curves (the held-out chart each preset tells you to watch) and snapshots, on a phone, after a
    run of the quick LSTM classifier (seconds of training)."""
    phone.goto(f"{app_url}/train")
    wait_for_app(phone)
    main = phone.get_by_test_id("stMain")
    main.get_by_role("combobox", name="Preset", exact=True).tap()
    phone.get_by_role("option", name="Quick: LSTM email classifier", exact=True).tap()
    wait_for_app(phone)
    expect(main.get_by_role("combobox", name="Preset", exact=True)).to_have_value("Quick: LSTM email classifier")
    main.get_by_role("button", name="Start training", exact=True).tap()
    done = main.get_by_test_id("stAlert").filter(has_text=re.compile(r"(Finished|Stopped)[^.]* after \d+ steps"))
    expect(done).to_have_count(1, timeout=180_000)
    wait_for_app(phone)
    curves = main.get_by_test_id("stVegaLiteChart").first
    expect(curves.locator("svg text").filter(has_text=re.compile("^Held-out"))).to_have_count(1)
    assert phone.evaluate(OVERFLOW) == []
    curves.scroll_into_view_if_needed()
    phone.screenshot(path=str(SHOTS / "phone-view-train-run.png"))


@pytest.mark.browser
def test_a_slider_works_by_touch(app_url, phone):
    """On /rnn-memory, a tap on the steps slider's track moves it, and the share box follows."""
    phone.goto(f"{app_url}/rnn-memory")
    wait_for_app(phone)
    slider = phone.get_by_test_id("stSlider").filter(has_text="Number of steps")
    value = slider.locator("input[type=range]")
    before = int(value.input_value())
    track = slider.locator("[data-orientation=horizontal][style*=touch-action]").first  # the bar the thumb runs on
    box = track.bounding_box()
    phone.touchscreen.tap(box["x"] + box["width"] * 0.9, box["y"] + box["height"] / 2)
    expect(slider.get_by_test_id("stSliderThumbValue")).not_to_have_text(str(before))
    wait_for_app(phone)
    after = int(value.input_value())
    assert after > before, (before, after)
    phone.get_by_test_id("stExpandSidebarButton").tap()
    expect(phone.get_by_test_id("stSidebar").get_by_test_id("stCode")).to_contain_text(f"n={after}")
