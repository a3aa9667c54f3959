"""Inside a trained model, in Chromium: /transformer's neuron view (one head's q, k, products, scores and softmax) and
/lstm-gates' "units like this" (units on across a phrase, searched in held-out sentences), at a desktop in the light
theme and on a 390 x 844 phone in the dark one.

Screenshots for a person to look at (test-output/screenshots/): neurons-desktop-light, neurons-phone-dark,
units-like-this-desktop-light, units-like-this-phone-dark (each scrolled to its section; the whole page with
SEQVIZ_FULL_SCREENSHOTS=1).
"""

from __future__ import annotations

import re

import pytest
from browsing import assert_no_exception, full_page_screenshot, wait_for_app
from playwright.sync_api import expect
from test_phone_and_themes import OVERFLOW

from seqviz.browser import DESKTOP, PHONE, new_context, new_page

pytestmark = pytest.mark.browser

SENTENCE = "the+parcel+arrived+%2C+but+never+the+charger+that+was+supposed+to+be+in+it+."
LOOKS = {"desktop-light": (DESKTOP, "light"), "phone-dark": (PHONE, "dark")}


@pytest.fixture(params=list(LOOKS))
def look(request, browser):
    device, scheme = LOOKS[request.param]
    context = new_context(browser, device, color_scheme=scheme)
    yield request.param, new_page(context), device["viewport"]["width"]
    context.close()


def _charts_on_screen(page, charts, width: int) -> None:
    """Each chart drawn (a canvas or an SVG with marks) and starting on the screen; none wider than the screen
    unless its own box scrolls (the page's rule), and nothing sticking out of the page."""
    for chart in charts:
        chart.scroll_into_view_if_needed()
        expect(chart.locator("canvas, svg .mark-rect, svg .mark-line").first).to_be_attached()
        box = chart.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] < width - 100 and box["height"] > 100, box
    assert not page.evaluate(OVERFLOW)


def test_the_neuron_view(app_url, look):
    name, page, width = look
    page.goto(f"{app_url}/transformer?s={SENTENCE}&nlayer=layer+2&nhead=head+3")
    wait_for_app(page)
    assert_no_exception(page)
    main = page.get_by_test_id("stMain")
    section = main.get_by_text("3. Inside one head", exact=False)
    expect(section).to_be_visible()
    charts = main.locator("[data-testid=stVegaLiteChart]")
    # attention-heads, then the neuron view's three: q/k/products, then q·k, ÷√d_k and softmax, then the mix
    vectors, scores, mix = charts.nth(1), charts.nth(2), charts.nth(3)
    expect(vectors).to_have_attribute("aria-label", re.compile("^Heatmaps of the query vector"))  # on a canvas
    expect(scores).to_contain_text("softmax α_j")
    expect(mix).to_have_attribute("aria-label", re.compile("^Heatmaps of every value vector"))
    expect(scores).to_contain_text("08 charger")
    expect(main.get_by_text("asks with q of 16 numbers")).to_be_visible()
    _charts_on_screen(page, [vectors, scores, mix], width)
    section.scroll_into_view_if_needed()
    full_page_screenshot(page, f"neurons-{name}")


def test_units_like_this(app_url, look):
    name, page, width = look
    page.goto(f"{app_url}/lstm-gates?s={SENTENCE}&search=true")
    wait_for_app(page)
    assert_no_exception(page)
    main = page.get_by_test_id("stMain")
    expect(main.get_by_text("keep their cell state above 0.3 at every word of “the parcel”")).to_be_visible()
    chart = main.locator("[data-testid=stVegaLiteChart]").filter(has_text="These units' cell state c")
    expect(chart).to_have_count(1)
    expect(main.get_by_text("held-out sentences searched have a span of 2 or more words")).to_be_visible()
    table = main.get_by_test_id("stTable")
    expect(table.last).to_contain_text("⟦")
    _charts_on_screen(page, [chart], width)
    main.get_by_text("4. Units like this").scroll_into_view_if_needed()
    full_page_screenshot(page, f"units-like-this-{name}")
