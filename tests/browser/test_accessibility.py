"""Every page passes axe-core at WCAG 2.2 AA: light and dark, a desktop's screen and a phone's.

axe-core (the engine browsers' own audits use) runs inside the page through axe-playwright-python, which bundles
its script: nothing is downloaded. One Chromium (the test run's), one context per combination, every page of the
story visited in turn by its address, on the shared server (tests/browser/conftest.py).
"""

from __future__ import annotations

import pytest
from axe_playwright_python.sync_playwright import Axe
from browsing import assert_no_exception, wait_for_app

from seqviz.browser import DESKTOP, PHONE, new_context, new_page
from seqviz.story import PAGES

# WCAG 2.0, 2.1 and 2.2 at levels A and AA: the rules axe tags so; and two of axe's best practices the first audit
# reported (issue 27): headings that skip a level, and a table header with no text.
WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22a", "wcag22aa"]
ALSO = ("heading-order", "empty-table-header")
AXE_OPTIONS = {"runOnly": {"type": "tag", "values": WCAG_AA}, "rules": {rule: {"enabled": True} for rule in ALSO},
               "resultTypes": ["violations"]}

SCREENS = {"desktop": {**DESKTOP, "viewport": {"width": 1280, "height": 900}}, "phone": PHONE}
COMBINATIONS = [(scheme, screen) for scheme in ("light", "dark") for screen in SCREENS]

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


@pytest.mark.browser
@pytest.mark.timeout(900)  # twelve pages: 1 to 1.5 minutes on this 2-core machine, 10 beside a full suite
@pytest.mark.parametrize(("scheme", "screen"), COMBINATIONS, ids=[f"{s}-{d}" for s, d in COMBINATIONS])
def test_no_axe_violation_on_any_page(app_url, browser, scheme, screen):
    context = new_context(browser, SCREENS[screen], color_scheme=scheme)
    try:
        pg = new_page(context)
        found = {}
        for story_page in PAGES:
            pg.goto(f"{app_url}/{story_page.url_path}")
            wait_for_app(pg)
            assert_no_exception(pg)
            lines = violations(pg)
            if lines:
                found[story_page.url_path or "home"] = lines
    finally:
        context.close()
    report = "\n".join(f"/{name}:\n  " + "\n  ".join(lines) for name, lines in found.items())
    assert not found, f"axe at WCAG 2.2 AA, {scheme} theme, {screen}:\n{report}"
