"""A visitor brings a model: upload a checkpoint in the sidebar, see it on /attention, download it back, share."""

import re
import sys
from pathlib import Path

import pytest
from conftest import assert_no_exception, full_page_screenshot, wait_for_app
from playwright.sync_api import expect

try:
    from checkpoint_files import tiny_checkpoint
except ImportError:  # tests/ is on sys.path through tests/conftest.py; this is the fallback
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from checkpoint_files import tiny_checkpoint

pytestmark = pytest.mark.browser

PICKER = "Translators with attention"


def go_to(page, title: str, url_path: str) -> None:
    """Follow the sidebar's link (same session: a reload or page.goto would forget the visitor's models)."""
    page.get_by_test_id("stSidebarNav").get_by_text(title, exact=True).click()
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
    """The vega chart whose title starts with ``label`` (Streamlit draws these small charts as SVG)."""
    title = page.locator("svg text").filter(has_text=re.compile("^" + re.escape(label)))
    return page.get_by_test_id("stVegaLiteChart").filter(has=title)


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


def test_a_visitor_brings_a_model(app_url, page, tmp_path):
    data = tiny_checkpoint("dot-translator")
    path = tmp_path / "tiny-dot.safetensors"
    path.write_bytes(data)
    label = "tiny-dot (yours)"

    page.goto(app_url)
    wait_for_app(page)
    sidebar = page.get_by_test_id("stSidebar")
    upload_checkpoint(page, path, models_before=0)
    expect(sidebar.get_by_test_id("stAlert").filter(has_text=f"Added {label}")).to_be_visible(timeout=30_000)
    expect(sidebar.get_by_test_id("stExpander").filter(has_text="Your models (1)")).to_have_count(1)
    assert_no_exception(page)

    go_to(page, "Attention", "attention")
    pick_option(page, PICKER, label)
    expect(page.get_by_test_id("stMultiSelect").filter(has_text=PICKER)).to_contain_text(label)
    chart = alignment_chart(page, label)
    expect(chart).to_have_count(1, timeout=60_000)
    expect(chart.locator("svg")).to_be_visible()
    wait_for_app(page)
    assert_no_exception(page)
    assert translation_line(page, label)  # it writes something (it was trained 40 steps: not good French)

    # Download it back, from the picker's expander and from the sidebar row: the same bytes as uploaded.
    main = page.get_by_test_id("stMain")
    downloads = main.get_by_test_id("stExpander").filter(has_text="Download checkpoint")
    downloads.get_by_text(re.compile("^Download checkpoints?$")).first.click()
    button = downloads.get_by_test_id("stHorizontalBlock").filter(has_text=label).get_by_role(
        "button", name="Download checkpoint", exact=True)
    expect(button).to_have_count(1)
    expect(button).to_be_visible()
    assert download(page, button) == data
    row_button = sidebar.get_by_test_id("stExpander").filter(has_text="Your models (1)").get_by_role(
        "button", name="Download checkpoint", exact=True)
    expect(row_button).to_have_count(1)
    assert download(page, row_button) == data

    full_page_screenshot(page, "attention-your-model")

    # The share box leaves the visitor's model out of the link (in any spelling: key or label) and says so.
    share = sidebar.get_by_test_id("stCode").inner_text().replace("\n", "")
    assert "/attention" in share
    assert "yours-" not in share
    assert "yours" not in share.lower(), f"the share box names the visitor's model: {share}"
    expect(sidebar).to_contain_text("Your own models are not in this link")
    assert_no_exception(page)
