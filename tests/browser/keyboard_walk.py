"""A keyboard-only visitor's walk through a page (issue 27): pressing Tab from the top must reach every control a
mouse can use (the sentence box, pickers, sliders, number boxes, buttons, downloads, links), in the sidebar and on
the page, and never put the focus on something that cannot be seen (a chart's toolbar button hidden until hovered).

tests/browser/test_accessibility.py walks every page so, on a desktop, on the same visit as its axe audit.
"""

from __future__ import annotations

from browsing import wait_for_app

MAX_TABS = 400  # presses per page before the walk gives up (the longest page has about a hundred stops)

# Every control a mouse can use, visible and enabled, numbered in data-kb; returns how many.
MARK_CONTROLS = """() => {
  const SELECTOR = 'input:not([type=hidden]), textarea, select, button, a[href], [role=slider], [role=combobox], '
                 + '[role=checkbox], [role=radio], [role=switch], [role=tab], summary';
  const seen = (el) => {
    const box = el.getBoundingClientRect();
    if (box.width < 2 || box.height < 2) return false;
    for (let up = el; up; up = up.parentElement) {
      const style = getComputedStyle(up);
      if (style.visibility === 'hidden' || style.display === 'none' || parseFloat(style.opacity) < 0.05) return false;
    }
    return true;
  };
  let n = 0;
  for (const el of document.querySelectorAll(SELECTOR)) {
    if (!el.closest('[data-testid=stMain], [data-testid=stSidebar]')) continue;
    if (el.disabled || el.getAttribute('aria-disabled') === 'true' || !seen(el)) continue;
    // Streamlit takes some controls out of the Tab order on purpose, for keys of the control they belong to: a
    // number box's step buttons (↑ and ↓ in the box), a picker's "Open" arrow (the picker's own box opens it).
    if (el.tabIndex < 0) continue;
    if (el.closest('[data-kb]') && el.closest('[data-kb]') !== el) continue;  // a control inside a control
    el.dataset.kb = String(n++);
  }
  window.__kbSeen = seen;
  return n;
}"""

# The focused element: its data-kb (or the nearest ancestor's), whether it can be seen, and what it is.
FOCUSED = """() => {
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  const marked = el.closest('[data-kb]');
  const again = window.__kbFirst === el;  // the walk has come round to where it started
  if (!window.__kbFirst) window.__kbFirst = el;
  const what = (el.getAttribute('aria-label') || el.innerText || el.getAttribute('title') || el.tagName)
                 .trim().slice(0, 60);
  return {kb: marked ? marked.dataset.kb : null, visible: window.__kbSeen(el), what: el.tagName + ' ' + what,
          again};
}"""

DESCRIBE = """(kb) => { const el = document.querySelector(`[data-kb="${kb}"]`);
  return el.tagName + ' ' + (el.getAttribute('aria-label') || el.innerText || el.getAttribute('title') || '')
    .trim().slice(0, 60); }"""


def open_every_expander(pg) -> None:
    """Open each closed expander as a keyboard user does (focus its title, Enter): what it holds is then on the
    walk (a closed one's controls are rightly out of the Tab order)."""
    titles = pg.locator("[data-testid=stMain] details:not([open]) > summary, "
                        "[data-testid=stSidebar] details:not([open]) > summary")
    for _ in range(titles.count()):
        title = titles.first
        title.focus()
        pg.keyboard.press("Enter")
        wait_for_app(pg)


def walk(pg) -> tuple[set[str], list[str], int]:
    """Tab through the page from its start: the controls reached, what took the focus unseen, the presses."""
    reached, unseen = set(), []
    pg.evaluate("() => { window.__kbFirst = null; }")
    for presses in range(1, MAX_TABS + 1):
        pg.keyboard.press("Tab")
        focused = pg.evaluate(FOCUSED)
        if focused is None:
            continue
        if focused["again"]:
            return reached, unseen, presses
        if focused["kb"] is not None:
            reached.add(focused["kb"])
        if not focused["visible"]:
            unseen.append(focused["what"])
    return reached, unseen, MAX_TABS


def keyboard_problems(pg) -> list[str]:
    """Walk the page as it stands by Tab alone (its expanders opened first, as a keyboard user opens them): each
    control a mouse can use that Tab never reached, and each thing that took the focus while it cannot be seen."""
    open_every_expander(pg)
    controls = pg.evaluate(MARK_CONTROLS)
    if controls < 2:
        return [f"{controls} controls found (the sentence box at least)"]
    pg.locator("body").focus()
    reached, unseen, presses = walk(pg)
    missed = [pg.evaluate(DESCRIBE, kb) for kb in map(str, range(controls)) if kb not in reached]
    found = [f"not reached by Tab: {what}" for what in missed]
    found += [f"focused while it cannot be seen: {what}" for what in dict.fromkeys(unseen)]
    if presses == MAX_TABS:
        found.append(f"no end after {MAX_TABS} presses of Tab")
    return found
