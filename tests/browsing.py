"""A visitor's moves in the browser, shared by the browser tests (tests/browser) and the load tests (tests/load).

"Painted" and the Chromium they drive are seqviz.browser's (the harness the smoke check and the benchmark use too);
here are the moves a test makes on a page: wait for the app, type a sentence, follow a link, upload, pick, download.
Screenshots go to test-output/screenshots/ for a person to look at.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from seqviz import browser as harness

ROOT = harness.ROOT
SHOTS = ROOT / "test-output" / "screenshots"


def launch(playwright):
    """Debian's Chromium from the test run's one Playwright (tests/conftest.py); the test fails when it is missing."""
    try:
        return harness.launch(playwright)
    except harness.MissingChromium as error:
        pytest.fail(str(error))


# Host names the test run's Chromium finds at 127.0.0.1 (tests/browser/test_nginx.py's proxy and
# tests/browser/test_lecture_hall.py's balancer, reached under a host name with a port).
RESOLVED = ("seqviz.test", "hall.test")
_RUN_BROWSER: dict = {}  # id(playwright) -> the test run's Chromium


def run_browser(playwright):
    """The test run's one Chromium, shared by the browser and the load tests (each visitor is a context of its own):
    launched at the first call from the run's one Playwright (tests/conftest.py), finding RESOLVED at 127.0.0.1 as
    the smoke check's --resolve does, and every other name as any Chromium does. It is closed when that Playwright
    stops, at the run's end (so no fixture closes it)."""
    found = _RUN_BROWSER.get(id(playwright))
    if found is None or not found.is_connected():
        try:
            found = harness.launch(playwright, resolve={host: "127.0.0.1" for host in RESOLVED})
        except harness.MissingChromium as error:
            pytest.fail(str(error))
        _RUN_BROWSER[id(playwright)] = found
    return found


def browser_resolving(playwright, host: str):
    """Chromium that finds ``host`` at 127.0.0.1, as the smoke check's --resolve does (a proxy or balancer reached
    under a host name with a port)."""
    return harness.launch(playwright, resolve={host: "127.0.0.1"})


def new_visitor(browser, **options):
    """A visitor of their own (a new browser context: its own cookies and session): (context, page)."""
    return harness.new_visitor(browser, **options)


def wait_for_app(pg) -> None:
    """Wait until the page is painted: the script has finished running, every element's code has loaded, every
    chart has drawn and the page has gone still (seqviz.browser)."""
    harness.wait_painted(pg, timeout_ms=120_000)


def assert_no_exception(pg) -> None:
    assert pg.locator("[data-testid=stException]").count() == 0, "a Streamlit exception box is on the page"


FULL_SCREENSHOTS = os.environ.get("SEQVIZ_FULL_SCREENSHOTS") == "1"  # scripts/refresh-screenshots sets it


def full_page_screenshot(pg, name: str) -> Path:
    """A screenshot of the page for people to look at (test-output/screenshots/): the whole page when
    SEQVIZ_FULL_SCREENSHOTS=1 (scripts/refresh-screenshots), else the screen as the visitor sees it. Streamlit
    scrolls inside its main container, so a whole page means growing the viewport to the content's height and
    letting every chart redraw at that size: seconds per page, a minute or more of the suite."""
    path = SHOTS / f"{name}.png"
    if not FULL_SCREENSHOTS:
        pg.screenshot(path=str(path))
        return path
    height = pg.evaluate(
        "() => Math.max(...[...document.querySelectorAll('[data-testid=stMain], [data-testid=stSidebar] > div')]"
        ".map(e => e.scrollHeight), document.body.scrollHeight)")
    size = pg.viewport_size
    pg.set_viewport_size({"width": size["width"], "height": min(int(height) + 40, 12_000)})
    pg.wait_for_timeout(500)
    wait_for_app(pg)
    pg.screenshot(path=str(path), full_page=True)
    pg.set_viewport_size(size)
    return path


def set_number(page, label: str, value: int) -> None:
    """Type a number into the main column's number box ``label`` and wait until the page has taken it."""
    box = harness.set_number(page, label, value, timeout_ms=120_000)
    expect(box).to_have_value(str(value))


def type_sentence(pg, text: str) -> None:
    box = harness.sentence_box(pg)
    box.fill(text)
    box.press("Enter")
    wait_for_app(pg)


# --- A visitor's moves, shared by the browser tests -----------------------------------------------


def go_to(page, title: str, url_path: str) -> None:
    """Follow the sidebar's link (same session: a reload or page.goto would forget the visitor's models)."""
    harness.sidebar_link(page, title).click()
    page.wait_for_url(f"**/{url_path}**")
    wait_for_app(page)


def upload_checkpoint(page, path: Path, models_before: int) -> None:
    """Open the sidebar's "Your models (n)" and give it the file through its file chooser."""
    sidebar = page.get_by_test_id("stSidebar")
    expander = sidebar.get_by_test_id("stExpander").filter(has_text=f"Your models ({models_before})")
    expect(expander).to_have_count(1)
    uploader = expander.get_by_test_id("stFileUploader")
    if not uploader.is_visible():
        expander.get_by_text(f"Your models ({models_before})").first.click()
    expect(uploader).to_be_visible()
    uploader.locator("input[type=file]").set_input_files(str(path))
    # The file travels to the server before the rerun starts: wait for the rerun's message, then for the app.
    expect(sidebar.get_by_test_id("stExpander").filter(has_text=f"Your models ({models_before + 1})")).to_have_count(
        1, timeout=60_000)
    wait_for_app(page)


def pick_option(page, picker_label: str, option) -> None:
    """Add an option to a Streamlit multiselect: type into its box to filter the list, click the option, close it.

    (A click on the box focuses it without opening the list; typing opens it.)"""
    box = page.get_by_role("combobox", name=picker_label, exact=True)
    box.click()
    box.press_sequentially(option[:12])
    page.get_by_role("listbox", name=picker_label).get_by_role("option", name=option, exact=True).click()
    page.keyboard.press("Escape")
    wait_for_app(page)


def alignment_chart(page, label: str):
    """The heatmap whose accessible name starts with ``label`` (drawn on a canvas, it is named by the chart's
    description, which starts with its title)."""
    return page.locator(f"[data-testid=stVegaLiteChart][aria-label^={json.dumps(label + ':')}]")


def translation_line(page, label: str) -> str:
    """What the page says a translator writes: the text after "**<label>** writes: "."""
    body = page.get_by_test_id("stMain").inner_text()
    found = re.search(re.escape(label) + r" writes: (.*)", body)
    assert found, f"no line '{label} writes: ...' on the page"
    return found.group(1).strip()


def download(page, button) -> bytes:
    with page.expect_download() as event:
        button.click()
    return Path(event.value.path()).read_bytes()


ALIGNMENT_PICKER = "Translators with attention"  # /attention's picker


def show_on_attention(page, label: str) -> str:
    """On /attention, add ``label`` to the translators shown; check its heatmap; return what it writes."""
    go_to(page, "Attention", "attention")
    pick_option(page, ALIGNMENT_PICKER, label)
    expect(page.get_by_test_id("stMultiSelect").filter(has_text=ALIGNMENT_PICKER)).to_contain_text(label)
    chart = alignment_chart(page, label)
    expect(chart).to_have_count(1, timeout=60_000)
    expect(chart.locator("canvas")).to_be_visible()
    wait_for_app(page)
    assert_no_exception(page)
    return translation_line(page, label)
