"""A visitor brings a model: upload a checkpoint in the sidebar, see it on /attention, download it back, share."""

import re
import sys
from pathlib import Path

import pytest
from browsing import (
    assert_no_exception,
    download,
    full_page_screenshot,
    show_on_attention,
    upload_checkpoint,
    wait_for_app,
)
from playwright.sync_api import expect

try:
    from checkpoint_files import tiny_checkpoint
except ImportError:  # tests/ is on sys.path through tests/conftest.py; this is the fallback
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from checkpoint_files import tiny_checkpoint

pytestmark = pytest.mark.browser















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

    assert show_on_attention(page, label)  # it writes something (it was trained 40 steps: not good French)

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
