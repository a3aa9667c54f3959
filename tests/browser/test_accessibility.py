"""Every page passes axe-core at WCAG 2.2 AA, light and dark, on a desktop's screen and a phone's; and on the
desktop, a keyboard-only visitor reaches every control by Tab (tests/browser/keyboard_walk.py).

axe-core (the engine browsers' own audits use) runs inside the page through axe-playwright-python, which bundles
its script: nothing is downloaded. One Chromium (the test run's), one context per screen, every page of the story
visited in turn by its address, on the shared server (tests/browser/conftest.py). Each page is audited in the
light theme, then in the dark one: the browser's colour scheme changes under the open page and Streamlit follows
it, as it does for a visitor whose system turns dark at sunset (the same theme a page opened dark gets), so each
page is loaded once per screen.
"""

from __future__ import annotations

import pytest
from axe_playwright_python.sync_playwright import Axe
from browsing import assert_no_exception, wait_for_app
from keyboard_walk import keyboard_problems

from seqviz.browser import DESKTOP, PHONE, new_context, new_page
from seqviz.story import PAGES

# WCAG 2.0, 2.1 and 2.2 at levels A and AA: the rules axe tags so; and two of axe's best practices the first audit
# reported (issue 27): headings that skip a level, and a table header with no text.
WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22a", "wcag22aa"]
ALSO = ("heading-order", "empty-table-header")
AXE_OPTIONS = {"runOnly": {"type": "tag", "values": WCAG_AA}, "rules": {rule: {"enabled": True} for rule in ALSO},
               "resultTypes": ["violations"]}

SCREENS = {"desktop": {**DESKTOP, "viewport": {"width": 1280, "height": 900}}, "phone": PHONE}
SCHEMES = {"light": "rgb(255, 255, 255)", "dark": "rgb(16, 20, 27)"}  # the app's background in each theme

_AXE = Axe()


def violations(pg) -> list[str]:
    """What axe finds on the page as it stands, one line per element: rule (impact) at target: summary."""
    found = _AXE.run(pg, options=AXE_OPTIONS).response["violations"]
    lines = []
    for rule in found:
        for node in rule["nodes"]:
            summary = (node.get("failureSummary") or rule["help"]).replace("\n", " ")
            lines.append(f"{rule['id']} ({rule['impact']}) at {node['target']}: {summary[:240]}")
    return lines


def in_scheme(pg, scheme: str) -> None:
    """The browser's colour scheme set to ``scheme`` under the open page, once the app has drawn itself in it."""
    pg.emulate_media(color_scheme=scheme)
    pg.wait_for_function("bg => getComputedStyle(document.querySelector('[data-testid=stApp]')).backgroundColor"
                         " === bg", arg=SCHEMES[scheme])
    wait_for_app(pg)


@pytest.mark.browser
@pytest.mark.timeout(1200)  # eleven pages, two themes (and the keyboard walk on a desktop): 2 to 4 minutes here
@pytest.mark.parametrize("screen", SCREENS)
def test_every_page_at_wcag_aa_light_and_dark(app_url, browser, screen):
    context = new_context(browser, SCREENS[screen], color_scheme="light")
    found, keyboard = {}, {}
    try:
        pg = new_page(context)
        for story_page in PAGES:
            name = story_page.url_path or "home"
            pg.emulate_media(color_scheme="light")
            pg.goto(f"{app_url}/{story_page.url_path}")
            wait_for_app(pg)
            assert_no_exception(pg)
            for scheme in SCHEMES:
                in_scheme(pg, scheme)
                lines = violations(pg)
                if lines:
                    found[f"/{name}, {scheme} theme"] = lines
            if screen == "desktop":
                lines = keyboard_problems(pg)
                if lines:
                    keyboard[f"/{name}"] = lines
    finally:
        context.close()

    def report(problems: dict[str, list[str]]) -> str:
        return "\n".join(f"{where}:\n  " + "\n  ".join(lines) for where, lines in problems.items())

    assert not found, f"axe at WCAG 2.2 AA, {screen}:\n{report(found)}"
    assert not keyboard, f"by keyboard alone, {screen}:\n{report(keyboard)}"
