"""A student on a phone, a student in the dark theme, and a share link made by moving a widget.

Every page is opened as a phone opens it (390 x 844, touch, a phone's user agent: Streamlit closes the sidebar
after a tap on a page's link only for a phone's user agent) and in the dark colour scheme; a screenshot of each
is saved under test-output/screenshots/ for a person to look at.
"""

from __future__ import annotations

import json
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


# A heatmap is drawn on a canvas: every text Vega writes on one (its numbers, its labels) and its size, recorded
# as it is written, with the canvas it went to.
RECORD_TEXTS = """(() => {
  const texts = window.__seqvizTexts = [];
  const fill = CanvasRenderingContext2D.prototype.fillText;
  CanvasRenderingContext2D.prototype.fillText = function (text, x, y, ...rest) {
    const size = /([\\d.]+)px/.exec(this.font);
    const width = this.measureText(String(text)).width, align = this.textAlign;
    const left = align === 'center' ? x - width / 2 : (align === 'right' || align === 'end') ? x - width : x;
    const m = this.getTransform();  // where the text runs, in the canvas's own pixels
    const ends = [left, left + width].map(u => m.a * u + m.c * y + m.e);
    texts.push([this.canvas, String(text), size ? parseFloat(size[1]) : 0, Math.min(...ends), Math.max(...ends)]);
    return fill.call(this, text, x, y, ...rest);
  };
})()"""

# Each heatmap on the page (a chart named by one of ``names``): its box's width and what scrolls in it, where it
# ends against the screen's edge, its canvas's size against the size it is drawn at, and the sizes of the texts on
# the canvas it shows now.
HEATMAPS = """names => [...document.querySelectorAll('[data-testid=stVegaLiteChart]')]
  .filter(box => names.some(name => (box.getAttribute('aria-label') || '').includes(name)))
  .map(box => {
    const canvas = box.querySelector('canvas'), drawn = canvas.getBoundingClientRect();
    const sizes = window.__seqvizTexts.filter(([c]) => c === canvas);
    return {name: box.getAttribute('aria-label').slice(0, 60), box: box.clientWidth, scrolls: box.scrollWidth,
            right: box.getBoundingClientRect().right, screen: window.innerWidth,
            shrunk: Math.abs(drawn.width * devicePixelRatio - canvas.width) > 2,
            numbers: sizes.filter(([, t]) => /^-?\\d+\\.\\d+$/.test(t)).map(([, , s]) => s),
            smallest: Math.min(...sizes.map(([, , s]) => s)), texts: sizes.length,
            hint: box.dataset.seqvizOverflows !== undefined};
  })"""
SIXTEEN = "the charger arrived , but never the parcel that was supposed to have it at last ."  # 17 words
HEATMAP_NAMES = {"attention": ["output word (row)"], "lstm-gates": ["Heatmaps of the forget"],
                 "transformer": ["Attention weights of every layer and head"]}


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
        if name == "lstm-gates":  # the gates' formulas are wider than a phone: they say they scroll (its heatmaps
            # wrap their words instead: test_heatmaps_wrap_their_words_on_a_phone)
            phone.wait_for_function("() => document.querySelector('.katex-display[data-seqviz-overflows]')",
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


def _open_with_a_long_sentence(phone, app_url: str, name: str) -> None:
    phone.goto(f"{app_url}/{name}?s={SIXTEEN.replace(' ', '+')}")
    wait_for_app(phone)
    assert_no_exception(phone)


def _assert_in_the_column(chart: dict, where: str) -> None:
    """A chart's box (HEATMAPS', PANEL_BOXES') neither scrolls sideways nor runs off the screen."""
    assert chart["scrolls"] <= chart["box"] + 1 and not chart["hint"], f"{where} scrolls: {chart}"
    assert chart["right"] <= chart["screen"] + 1, f"{where} runs off the screen: {chart}"


@pytest.mark.browser
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_heatmaps_wrap_their_words_on_a_phone(app_url, browser, scheme):
    """Issue 27: on a phone, a heatmap of a long sentence wraps its words into blocks one above the other, each with
    its row labels and the colour scale on top: nothing scrolls sideways, and its numbers and labels are 11 px or
    more (75% of a phone's 14 px body text), drawn at their own size (the canvas is not shrunk to fit)."""
    context = new_context(browser, PHONE, color_scheme=scheme)
    context.add_init_script(RECORD_TEXTS)
    phone = new_page(context)
    try:
        for name, names in HEATMAP_NAMES.items():
            _open_with_a_long_sentence(phone, app_url, name)
            heatmaps = phone.evaluate(HEATMAPS, names)
            assert heatmaps, f"/{name}: no heatmap"
            for heatmap in heatmaps:
                where = f"/{name}, {heatmap.pop('name')}"
                heatmap["numbers"] = len(heatmap["numbers"])
                _assert_in_the_column(heatmap, where)
                assert not heatmap["shrunk"], f"{where} is drawn smaller than its size"
                assert heatmap["texts"] and heatmap["smallest"] >= 11, f"{where}: text under 11 px: {heatmap}"
            if name == "attention":  # its numbers: one in every cell, and two alignments of 17 source words
                assert all(h["numbers"] >= 17 * 10 for h in heatmaps), heatmaps
            chart = phone.locator(f"[data-testid=stVegaLiteChart][aria-label*={json.dumps(names[0])}]")
            chart.first.evaluate("box => box.scrollIntoView({block: 'start'})")  # its colour scale at the top
            phone.screenshot(path=str(SHOTS / f"phone-heatmap-{name}-{scheme}.png"))
    finally:
        context.close()


# Charts of bars beside a sentence's words (SVG, or a canvas: RECORD_TEXTS): their aria-label's start, per page.
WORD_PANELS = {"attention": ["A chart of score"],
               "explain": ["A chart of attention α", "What the decision", "Held out: how well attention"]}
PANEL_BOXES = """starts => [...document.querySelectorAll('[data-testid=stVegaLiteChart]')]
  .filter(box => starts.some(start => (box.getAttribute('aria-label') || '').startsWith(start)))
  .map(box => ({name: box.getAttribute('aria-label').slice(0, 50), box: box.clientWidth, scrolls: box.scrollWidth,
                right: box.getBoundingClientRect().right, screen: window.innerWidth,
                hint: box.dataset.seqvizOverflows !== undefined,
                texts: [...[...box.querySelectorAll('svg text')].filter(t => t.textContent.trim())
                          .map(t => parseFloat(getComputedStyle(t).fontSize)),
                        ...window.__seqvizTexts.filter(([c]) => c === box.querySelector('canvas')).map(([, , s]) => s)],
                // texts cut at their chart's edge: an SVG text's box past its svg (a glyph's box reaches 0.5 px past
                // its anchor), a canvas text past its canvas (in the canvas's own pixels)
                cut: [...[...box.querySelectorAll('svg text')].filter(t => t.textContent.trim()).filter(t => {
                        const r = t.getBoundingClientRect(), svg = t.ownerSVGElement.getBoundingClientRect();
                        return r.left < svg.left - 0.75 || r.right > svg.right + 0.75; }).map(t => t.textContent),
                      ...window.__seqvizTexts.filter(([c, t, , l, r]) => c === box.querySelector('canvas') &&
                        t.trim() && (l < -0.5 || r > c.width + 0.5)).map(([, t]) => t)]
}))"""


@pytest.mark.browser
def test_bars_beside_the_words_fit_a_phone(app_url, browser):
    """Issue 27: /attention's one step (scores, weights) and /explain's measures and held-out τ histograms are drawn
    in a phone's form: narrower panels, the rest under them, nothing that scrolls sideways, text 11 px or more, and
    none cut at the chart's edge (an axis's last label, centred on the plot's end, was)."""
    context = new_context(browser, PHONE)
    context.add_init_script(RECORD_TEXTS)
    phone = new_page(context)
    try:
        for name, starts in WORD_PANELS.items():
            _open_with_a_long_sentence(phone, app_url, name)
            charts = phone.evaluate(PANEL_BOXES, starts)
            shown = {start for start in starts if any(chart["name"].startswith(start) for chart in charts)}
            assert shown == set(starts), charts
            for chart in charts:
                where = f"/{name}, {chart['name']}"
                _assert_in_the_column(chart, where)
                assert chart["texts"] and min(chart["texts"]) >= 11, f"{where}: text under 11 px: {chart}"
                assert not chart["cut"], f"{where}: text cut at the chart's edge: {chart['cut']}"
            label = json.dumps(starts[0], ensure_ascii=False)  # (CSS reads "α", not JSON's "\\u03b1")
            first = phone.locator(f"[data-testid=stVegaLiteChart][aria-label^={label}]").first
            first.evaluate("box => box.scrollIntoView({block: 'start'})")
            phone.screenshot(path=str(SHOTS / f"phone-bars-{name}.png"))
    finally:
        context.close()


@pytest.mark.browser
def test_a_window_says_when_it_turns_narrow(app_url, browser):
    """A desktop's browser (no "Mobile" in its name) in a window 390 px wide says so once, and gets the heatmaps in
    blocks; widened again, the desktop's. At 1280 px it never says a word about its width (no rerun for it)."""
    context = new_context(browser, viewport={"width": 1280, "height": 900})
    page = new_page(context)
    said = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda payload: said.append(b"narrow" in bytes(
        payload if isinstance(payload, bytes) else payload.encode()))))
    alignments = "[data-testid=stVegaLiteChart][aria-label*='output word (row)'] canvas"
    widths = f"() => [...document.querySelectorAll({json.dumps(alignments)})].map(c => c.getBoundingClientRect().width)"
    try:
        page.goto(f"{app_url}/attention?s={SIXTEEN.replace(' ', '+')}")
        wait_for_app(page)
        assert min(page.evaluate(widths)) > 400  # the desktop's: 17 columns of 26 px
        assert said and not any(said), "a wide window told the server its width"
        page.set_viewport_size({"width": 390, "height": 844})
        page.wait_for_function(f"() => ({widths})().length && Math.max(...({widths})()) <= 358", timeout=60_000)
        wait_for_app(page)
        assert sum(said) == 1, said
        page.set_viewport_size({"width": 1280, "height": 900})
        page.wait_for_function(f"() => ({widths})().length && Math.min(...({widths})()) > 400", timeout=60_000)
        assert sum(said) == 2, said
    finally:
        context.close()


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
