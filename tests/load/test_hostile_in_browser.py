"""A sample of the hostile corpus (tests/pages/test_hostile_inputs.py) in a real browser: typed in the Sentence box
and opened from the address, with broken percent-escapes and a repeated `s`.

Every input: no exception, no dialog (alert), and nothing the visitor typed becomes markup: no <script>, no image
or link pointing where the input says, no bold, struck, heading, quote, coloured or LaTeX element carrying the
input's words. Afterwards the page still works with an ordinary sentence. AppTest runs the whole corpus through
every page; this is what Chromium itself draws of a sample.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from urllib import parse

import pytest
from browsing import ROOT, assert_no_exception, full_page_screenshot
from playwright.sync_api import expect

from seqviz.limits import MAX_CHARS

pytestmark = pytest.mark.browser


def _load(name: str, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _corpus_module():
    """tests/pages/test_hostile_inputs.py, loaded by path (it imports the pages' `conftest`, which is not ours)."""
    pages = ROOT / "tests" / "pages"
    ours = sys.modules.get("conftest")
    try:
        sys.modules["conftest"] = _load("seqviz_pages_conftest", pages / "conftest.py")
        return _load("seqviz_hostile_corpus", pages / "test_hostile_inputs.py")
    finally:
        if ours is not None:
            sys.modules["conftest"] = ours


CORPUS = _corpus_module()
HOSTILE = {h.id: h for h in CORPUS.HOSTILE}
TYPED = ["html-tags", "script-tag", "img-onerror", "markdown-bold", "markdown-link", "markdown-block", "latex",
         "10000-characters"]
IN_THE_ADDRESS = ["malformed-percent-encoding", "repeated-s", "lone-surrogate", "percent-nul",
                  "streamlit-directives"]

# Words of the corpus that only markup would put in an element of their own (plain text keeps them inside the
# whole sentence), with the elements that markup would make of them.
MARKUP_WORDS = {"bold": "b, strong", "also": "b, strong, em, i", "strike": "del, s", "link": "a",
                "heading": "h1, h2, h3, h4, h5, h6", "quote": "blockquote, blockquote p", "item": "li, li p",
                "alarm": "span", "wow": "span", "red": "div, span"}

_MARKUP = """(words) => {
  const root = document.querySelector('[data-testid=stApp]');
  const found = [];
  for (const el of root.querySelectorAll('script, iframe, object, embed')) found.push(el.tagName);
  for (const el of root.querySelectorAll('img')) {
    const src = el.getAttribute('src') || '';
    if (src === 'x' || src.startsWith('http://x')) found.push('img ' + src);
  }
  for (const el of root.querySelectorAll('a')) {
    const href = el.getAttribute('href') || '';
    if (href.startsWith('http://x') || href.startsWith('javascript:') || href.includes('evil.example'))
      found.push('a ' + href);
  }
  for (const el of root.querySelectorAll('[style*="color:red"], [style*="color: red"]')) found.push('styled');
  for (const el of root.querySelectorAll('.katex, mjx-container')) found.push('latex');
  for (const [word, selector] of Object.entries(words)) {
    for (const el of root.querySelectorAll(selector)) {
      if (el.textContent.trim() === word) found.push(el.tagName.toLowerCase() + ' "' + word + '"');
    }
  }
  return found;
}"""


def markup_made(visitor) -> list[str]:
    return visitor.page.evaluate(_MARKUP, MARKUP_WORDS)


def box_value(visitor) -> str:
    return visitor.page.get_by_role("textbox", name="Sentence", exact=True).input_value()


def paste_into_the_sentence_box(page, text: str) -> None:
    """Paste ``text`` into the emptied Sentence box as a browser does (a paste event carrying the clipboard's text;
    the box's own handling or the page's decides what it takes)."""
    box = page.get_by_role("textbox", name="Sentence", exact=True)
    box.fill("")
    box.focus()
    box.evaluate("""(box, text) => {
      const data = new DataTransfer();
      data.setData("text/plain", text);
      const event = new ClipboardEvent("paste", {clipboardData: data, bubbles: true, cancelable: true});
      if (box.dispatchEvent(event)) {  // nobody took it: the browser's own paste, as an input event
        box.setRangeText(text, box.selectionStart, box.selectionEnd, "end");
        box.dispatchEvent(new Event("input", {bubbles: true}));
      }
    }""", text)


@pytest.mark.timeout(180)
def test_hostile_sentences_typed_in_chromium(classroom, visitors):
    visitor = visitors("hostile typist")
    visitor.open(f"{classroom.url}/encoder-decoder")
    visitor.wait_painted()
    baseline = markup_made(visitor)
    assert not baseline, f"the page makes these before anything is typed: {baseline}"
    problems = []
    for name in TYPED:
        text = HOSTILE[name].text
        if len(text) > MAX_CHARS:
            # A paste longer than the box holds: the first MAX_CHARS characters are kept, and the page says so.
            paste_into_the_sentence_box(visitor.page, text)
            text = text[:MAX_CHARS]
            if box_value(visitor) != text:
                problems.append(f"{name}: the pasted box holds {len(box_value(visitor))} characters, "
                                f"not the first {MAX_CHARS} of {len(HOSTILE[name].text)}")
            visitor.typed, visitor.t0 = text, visitor.page.evaluate("performance.now()")  # Enter, as type() does
            visitor.page.get_by_role("textbox", name="Sentence", exact=True).press("Enter")
            visitor.wait_painted(60)
            left_out = len(HOSTILE[name].text) - MAX_CHARS
            said = visitor.page.get_by_test_id("stMain").get_by_text(
                f"Only the first {MAX_CHARS} characters of what you pasted were kept ({left_out} more were left out)")
            if not said.count():
                problems.append(f"{name}: the page does not say the paste was cut")
        else:
            visitor.type(text)
        try:
            visitor.wait_painted(60)
        except AssertionError as error:
            raise AssertionError(f"{name}: {error}; the page's script states: "
                                 f"{visitor.page.evaluate('window.__bx.states')}, seen {visitor.look()}") from error
        if visitor.page.get_by_test_id("stException").count():
            problems.append(f"{name}: an exception box")
        made = markup_made(visitor)
        if made:
            problems.append(f"{name}: the input became markup: {made}")
        box = box_value(visitor)
        if box not in (re.sub(r"\r?\n", " ", text), re.sub(r"\r?\n", "", text)):  # a one-line box's line breaks
            problems.append(f"{name}: the box holds {box[:60]!r}")
        if name == "html-tags":
            full_page_screenshot(visitor.page, "hostile-typed-html")
    assert not visitor.dialogs, f"a dialog opened: {visitor.dialogs}"
    assert not problems, "\n".join(problems)

    # The page works afterwards.
    visitor.type("where is my parcel ?")
    visitor.wait_painted(60)
    assert_no_exception(visitor.page)
    expect(visitor.page.get_by_test_id("stMain")).to_contain_text("où est mon colis")  # translated
    assert "where+is+my+parcel" in visitor.sidebar_text()


@pytest.mark.timeout(180)
def test_hostile_sentences_in_the_address_in_chromium(classroom, visitors):
    visitor = visitors("hostile link")
    problems = []
    for name in IN_THE_ADDRESS:
        hostile = HOSTILE[name]
        visitor.open(f"{classroom.url}/?{hostile.address}")
        visitor.wait_painted(60)
        expected = CORPUS.sentence_of(hostile.address)[:MAX_CHARS]
        try:  # the box takes the address's value as the app starts
            expect(visitor.page.get_by_role("textbox", name="Sentence", exact=True)).to_have_value(expected,
                                                                                                  timeout=10_000)
        except AssertionError:
            problems.append(f"{name}: the box holds {box_value(visitor)[:60]!r}, the address says {expected[:60]!r}")
        if visitor.page.get_by_test_id("stException").count():
            problems.append(f"{name}: an exception box")
        made = markup_made(visitor)
        if made:
            problems.append(f"{name}: the address's input became markup: {made}")
        shown = visitor.page.get_by_test_id("stText").all_inner_texts()
        if expected.strip() and [s.strip() for s in shown] != [expected.strip()]:
            problems.append(f"{name}: home shows {shown!r} as the sentence, not {expected.strip()[:60]!r}")
        if name == "repeated-s":
            full_page_screenshot(visitor.page, "hostile-address-repeated-s")
    assert not visitor.dialogs, f"a dialog opened: {visitor.dialogs}"
    assert not problems, "\n".join(problems)

    visitor.type("the charger never arrived .")  # the page works afterwards
    visitor.wait_painted(60)
    assert_no_exception(visitor.page)
    assert visitor.page.get_by_test_id("stText").inner_text().strip() == "the charger never arrived ."
    address = parse.urlsplit(visitor.page.url)
    assert parse.parse_qs(address.query).get("s") == ["the charger never arrived ."]
