"""A browser's lab in Chromium: kept by the cookie seqviz_lab, so a reload and a second tab find the same models and
another browser (another context) never does; taken to another device by a one-time code; forgotten on request.

Screenshots of the sidebar's Your models, at desktop and phone size, go to test-output/screenshots/lab-*.png.
"""

import time
from pathlib import Path

import pytest
from browsing import SHOTS, assert_no_exception, go_to, new_visitor, upload_checkpoint, wait_for_app
from playwright.sync_api import expect

from seqviz import browser as harness
from seqviz import limits
from seqviz.ui.yours import WATCH_EVERY_S

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
LSTM_FILE = ROOT / "assets" / "models" / "lstm.safetensors"
GRU_FILE = ROOT / "assets" / "models" / "gru.safetensors"
LSTM = "lstm (2) (yours)"  # the shipped name is taken: the upload gets a number
PICKER = "Email classifiers"  # /order's picker


def lab_cookie(context) -> dict | None:
    found = [c for c in context.cookies() if c["name"] == "seqviz_lab"]
    assert len(found) <= 1, found
    return found[0] if found else None


def cookie_becomes(context, test, timeout_s: float = 30) -> str:
    """The lab cookie's value once ``test(value)`` holds (the page writes it after a round trip)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = (lab_cookie(context) or {}).get("value")
        if test(value) or time.monotonic() > deadline:
            assert test(value), f"the lab cookie stayed {value!r}"
            return value
        time.sleep(0.2)


def your_models(page, count: int, timeout: float = 30_000) -> None:
    """The sidebar's expander reads "Your models (count)"."""
    expander = page.get_by_test_id("stSidebar").get_by_test_id("stExpander")
    expect(expander.filter(has_text=f"Your models ({count})")).to_have_count(1, timeout=timeout)


def open_your_models(page) -> None:
    """Open the sidebar (a phone starts with it closed) and the Your models expander."""
    sidebar = page.get_by_test_id("stSidebar")
    opener = page.get_by_test_id("stExpandSidebarButton")
    if opener.is_visible():
        opener.click()
        expect(sidebar.get_by_role("textbox", name="Sentence", exact=True)).to_be_in_viewport()
    uploader = sidebar.get_by_test_id("stFileUploader")
    if not uploader.is_visible():
        sidebar.get_by_test_id("stExpander").get_by_text("Your models").first.click()
    expect(uploader).to_be_visible()


def picker_options(page) -> list[str]:
    """The options /order's picker offers (its list opened, read, and closed again)."""
    box = page.get_by_role("combobox", name=PICKER, exact=True)
    box.click()
    box.press_sequentially("l")
    options = page.get_by_role("listbox", name=PICKER).get_by_role("option")
    expect(options.first).to_be_visible()
    found = options.all_inner_texts()
    page.keyboard.press("Escape")
    return found


def sidebar_shot(page, name: str, show=None) -> None:
    """The screen with the sidebar scrolled to ``show`` (a locator; else Your models), for a person to look at."""
    (show or page.get_by_test_id("stSidebar").get_by_test_id("stExpander").first).scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def test_the_lab_outlives_a_reload_and_is_this_browsers_only(app_url, page, browser):
    page.goto(app_url)
    wait_for_app(page)
    cookie = lab_cookie(page.context)
    assert cookie is not None, "the app did not keep the lab's cookie"
    assert cookie["path"] == "/" and cookie["sameSite"] == "Lax" and not cookie["secure"]
    days = (cookie["expires"] - time.time()) / 86400
    assert limits.LAB_KEEP_DAYS - 1 < days <= limits.LAB_KEEP_DAYS, days
    key = cookie["value"]

    # The cookie keeper takes no room: the sidebar's title sits where it always did, under the page links.
    keeper = page.locator(".st-key-_lab_cookie")
    expect(keeper).to_have_count(1)
    assert keeper.bounding_box() is None  # not displayed at all

    upload_checkpoint(page, LSTM_FILE, models_before=0)
    assert lab_cookie(page.context)["value"] == key
    sidebar_shot(page, "lab-desktop")
    assert key not in page.url and key not in page.get_by_test_id("stSidebar").get_by_test_id("stCode").inner_text()

    page.reload()
    wait_for_app(page)
    your_models(page, 1)
    go_to(page, "Order matters", "order")
    assert LSTM in picker_options(page)
    assert key not in page.url
    assert_no_exception(page)

    second = page.context.new_page()  # a second tab of the same browser
    second.goto(f"{app_url}/order")
    wait_for_app(second)
    your_models(second, 1)
    assert LSTM in picker_options(second)
    second.close()

    context, other = new_visitor(browser)  # another browser
    try:
        other.goto(f"{app_url}/order")
        wait_for_app(other)
        your_models(other, 0)
        assert LSTM not in picker_options(other)
        assert lab_cookie(context)["value"] != key
    finally:
        context.close()


def test_an_idle_tab_shows_a_model_added_in_another(app_url, page):
    page.goto(app_url)
    wait_for_app(page)
    idle = page.context.new_page()
    idle.goto(app_url)
    wait_for_app(idle)
    your_models(idle, 0)

    page.bring_to_front()
    upload_checkpoint(page, GRU_FILE, models_before=0)
    # Nothing is done in the idle tab: its watch looks every WATCH_EVERY_S and reruns the page.
    your_models(idle, 1, timeout=(3 * WATCH_EVERY_S + 20) * 1000)
    assert_no_exception(idle)
    idle.close()


def test_a_code_takes_the_lab_to_a_phone_and_forgetting_ends_it(app_url, page, browser):
    page.goto(app_url)
    wait_for_app(page)
    upload_checkpoint(page, LSTM_FILE, models_before=0)
    key = lab_cookie(page.context)["value"]
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_role("button", name="Show a one-time code").click()
    shown = sidebar.get_by_test_id("stExpander").get_by_test_id("stCode")
    expect(shown).to_have_count(1)
    wait_for_app(page)
    code = shown.inner_text().strip()
    assert len(code) == limits.LAB_TRANSFER_CHARS and key not in code
    sidebar_shot(page, "lab-code-desktop", shown)

    phone_context, phone = new_visitor(browser, device=harness.PHONE)
    try:
        phone.goto(app_url)
        wait_for_app(phone)
        phone_key = lab_cookie(phone_context)["value"]  # kept with the sidebar closed, as a phone starts
        open_your_models(phone)
        your_models(phone, 0)
        phone_bar = phone.get_by_test_id("stSidebar")
        phone_bar.get_by_role("textbox", name="Join a lab with a code").fill(code.lower())
        phone_bar.get_by_role("button", name="Join", exact=True).click()
        wait_for_app(phone)
        your_models(phone, 1)
        expect(phone_bar.get_by_test_id("stAlert").filter(has_text="Joined")).to_be_visible()
        joined_key = lab_cookie(phone_context)["value"]
        assert joined_key not in (phone_key, key)  # a key of its own, for the same lab
        sidebar_shot(phone, "lab-joined-phone", phone_bar.get_by_test_id("stAlert").filter(has_text="Joined"))
        phone.reload()  # the phone's cookie now opens the joined lab
        wait_for_app(phone)
        your_models(phone, 1)

        # Forget the lab in one tab of the first browser; its other tab and the phone find out by themselves.
        idle = page.context.new_page()
        idle.goto(app_url)
        wait_for_app(idle)
        your_models(idle, 1)
        page.bring_to_front()
        sidebar.get_by_role("button", name="Forget this lab").click()
        wait_for_app(page)
        warning = sidebar.get_by_test_id("stAlert").filter(has_text="This cannot be undone")
        expect(warning).to_be_visible()
        sidebar_shot(page, "lab-forget-desktop", sidebar.get_by_role("button", name="Keep it"))
        sidebar.get_by_role("button", name="Yes, forget it").click()
        wait_for_app(page)
        your_models(page, 0)
        expect(sidebar.get_by_test_id("stAlert").filter(has_text="a new, empty lab")).to_be_visible()
        new_key = lab_cookie(page.context)["value"]
        assert new_key != key
        assert_no_exception(page)

        watch_s = (3 * WATCH_EVERY_S + 20) * 1000
        your_models(idle, 0, timeout=watch_s)  # its lab went: it asked the browser and opened the new one
        assert lab_cookie(page.context)["value"] == new_key  # and wrote nothing over it
        your_models(phone, 0, timeout=watch_s)  # its key opens nothing now: a lab of its own
        cookie_becomes(phone_context, lambda value: value not in (None, joined_key, new_key), timeout_s=watch_s / 1000)
        idle.close()

        page.reload()
        wait_for_app(page)
        your_models(page, 0)
        assert lab_cookie(page.context)["value"] == new_key
        phone.reload()
        wait_for_app(phone)
        open_your_models(phone)
        phone.screenshot(path=str(SHOTS / "lab-phone.png"))
    finally:
        phone_context.close()


def test_under_a_base_path_the_cookie_is_scoped_to_it(hosted, browser):
    """A server at /seqviz (the container's start command, scripts/serve, with SEQVIZ_BASE_PATH=seqviz: its
    server.baseUrlPath, as behind a proxy; tests/browser/conftest.py's ``hosted``) keeps the cookie on /seqviz only,
    and reads it back there: a reload opens the same lab."""
    context, page = new_visitor(browser)
    try:
        assert hosted.endswith("/seqviz")
        page.goto(f"{hosted}/")
        wait_for_app(page)
        cookie = lab_cookie(context)
        assert cookie["path"] == "/seqviz" and cookie["sameSite"] == "Lax" and not cookie["secure"]
        upload_checkpoint(page, LSTM_FILE, models_before=0)
        page.reload()
        wait_for_app(page)
        your_models(page, 1)
        assert lab_cookie(context)["value"] == cookie["value"]
        assert_no_exception(page)
    finally:
        context.close()
