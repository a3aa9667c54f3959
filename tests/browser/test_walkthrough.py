"""A person's path through every built page, in Chromium."""

import re
from pathlib import Path

import pytest
from browsing import assert_no_exception, full_page_screenshot, go_to, type_sentence, wait_for_app
from playwright.sync_api import expect

from seqviz.story import STORY

pytestmark = pytest.mark.browser


def test_walk_every_page_with_a_typed_sentence(app_url, page):
    page.goto(app_url)
    wait_for_app(page)
    assert "Sequences and the road to attention" in page.get_by_test_id("stMain").locator("h1").first.inner_text()
    type_sentence(page, "The charger arrived, but never the parcel that was supposed to have it.")
    assert_no_exception(page)
    full_page_screenshot(page, "home")
    for story_page in STORY:
        page.get_by_test_id("stSidebarNav").get_by_text(story_page.title, exact=True).click()
        page.wait_for_url(f"**/{story_page.url_path}**")
        wait_for_app(page)
        # the typed sentence travels with the visitor from page to page
        expect(page.get_by_role("textbox", name="Sentence", exact=True)).to_have_value(
            re.compile("^The charger arrived"))
        if story_page.url_path != "train":  # /train draws its charts once a run starts
            page.locator("[data-testid=stVegaLiteChart]").first.wait_for()
        wait_for_app(page)
        assert_no_exception(page)
        full_page_screenshot(page, story_page.url_path)


def test_rnn_memory_shows_the_chapter_row(app_url, page):
    page.goto(f"{app_url}/rnn-memory")
    wait_for_app(page)
    table = page.get_by_test_id("stTable").first
    table.wait_for()
    memory = table.get_by_role("row").filter(has_text="memory")  # the chapter's row, as the table shows it
    assert memory.get_by_role("cell").all_inner_texts()[-6:] == ["0.762", "0.363", "0.180", "0.090", "0.045",
                                                                  "0.022"]
    body = page.locator("[data-testid=stMain]").inner_text()
    assert "3.0e-09" in body
    # The same numbers in the CSV download of the memory chart.
    with page.expect_download() as download:
        page.get_by_role("button", name="CSV", exact=True).first.click()
    csv = Path(download.value.path()).read_text(encoding="utf-8")
    rows = [line.split(",") for line in csv.strip().splitlines()[1:]]
    assert [f"{float(r[2]):.3f}" for r in rows] == ["0.762", "0.363", "0.180", "0.090", "0.045", "0.022"]


def test_rnn_memory_explodes_when_asked(app_url, page):
    page.goto(f"{app_url}/rnn-memory?w=1.5&f=identity&n=30")
    wait_for_app(page)
    assert "exploding" in page.locator("[data-testid=stMain]").inner_text()
    assert_no_exception(page)
    full_page_screenshot(page, "rnn-memory-exploding")


def test_attention_deep_link_and_numbers(app_url, page):
    page.goto(f"{app_url}/attention?s=where+is+my+parcel")
    wait_for_app(page)
    # the box takes the address's value as the app starts: wait for it rather than read it at once
    expect(page.get_by_role("textbox", name="Sentence", exact=True)).to_have_value("where is my parcel",
                                                                                   timeout=30_000)
    body = page.locator("[data-testid=stMain]").inner_text()
    for number in ("0.474", "0.174", "0.351", "(0.720, 0.420)"):
        assert number in body
    share = page.get_by_test_id("stSidebar").get_by_test_id("stCode").inner_text()
    assert "/attention?s=where+is+my+parcel" in share.replace("\n", "")
    # the chart can be downloaded as a picture
    with page.expect_download() as download:
        page.get_by_role("button", name="SVG", exact=True).first.click()
    assert Path(download.value.path()).read_text(encoding="utf-8").lstrip().startswith("<svg")


def test_hostile_sentence_is_shown_as_text(app_url, page):
    page.goto(app_url)
    wait_for_app(page)
    type_sentence(page, "<img src=x onerror=alert(1)> **bold** [link](http://x.example)")
    assert_no_exception(page)
    main = page.locator("[data-testid=stMain]")
    assert "<img src=x onerror=alert(1)> **bold**" in main.inner_text()
    assert main.locator("img[src=x]").count() == 0
    assert main.locator("a[href='http://x.example']").count() == 0


def test_a_pick_on_one_page_never_empties_another_pages_picker(app_url, page):
    page.goto(f"{app_url}/order")
    wait_for_app(page)
    picker = page.get_by_test_id("stMultiSelect").filter(has_text="Email classifiers")
    picker.get_by_role("button", name="Remove bow").click()
    wait_for_app(page)
    assert "email-classifier=" in page.url
    go_to(page, "Encoder-decoder", "encoder-decoder")
    translators = page.get_by_test_id("stMultiSelect").filter(has_text="Translators")
    for name in ("plain", "additive", "dot", "transformer-translator"):
        expect(translators).to_contain_text(name)
    assert "email-classifier" not in page.url and "model=" not in page.url
    assert "Pick at least one model" not in page.get_by_test_id("stMain").inner_text()
    assert_no_exception(page)
