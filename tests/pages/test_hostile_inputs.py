"""Hostile input on every page: the sidebar sentence, typed and in the address.

Every page of the router gets the whole corpus below, typed in the sidebar's "Sentence" box (key "s") and opened
from an address (?s=...): no exception, the page still draws the charts it draws for a sentence (or for an empty
box), and nothing the visitor typed reaches a Markdown element unescaped (no HTML, links, icons, LaTeX, bold).
The smaller typed fields (/rnn-memory's inputs, /attention's words, /train's bounded numbers) and the address's
other parameters (?model=, a repeated ?s=): tests/pages/test_hostile_other_inputs.py, which takes the checks below
from here. This file keeps the corpus and its checks whole, importing nothing of its folder but the pages'
conftest: tests/load/test_hostile_in_browser.py loads it by path.

One AppTest per page runs the typed corpus (the sentence is changed between inputs, as a visitor would). The
address needs a new session per input: home takes every input from the address, the other pages the inputs
whose address differs from typing (SEQVIZ_HOSTILE_FULL=1: all of them, on every page).
"""

from __future__ import annotations

import os
import re
import types
from dataclasses import dataclass
from urllib import parse

import pytest
from conftest import APP
from streamlit.testing.v1 import AppTest, local_script_runner

from seqviz.limits import MAX_CHARS
from seqviz.story import PAGES
from seqviz.text import prepare
from seqviz.ui import DEFAULT_SENTENCE, SENTENCE_KEY

SCRIPTS = [page.script for page in PAGES]

# Characters that ui.escape_markdown puts a backslash before: in text that quotes the visitor whole (a notice,
# an unknown-word note) none of them may stand without one.
SPECIAL = r"\`*_{}[]<>()#+-.!|~$:&"


@dataclass(frozen=True)
class Hostile:
    id: str
    text: str | None  # typed in the sidebar box; None where AppTest cannot carry it (said where it is listed)
    markers: tuple[str, ...] = ()  # fragments that must never reach a Markdown element without a backslash
    query: str | None = None  # the raw address query string; by default s= and the text, percent-encoded

    @property
    def address(self) -> str:
        return self.query if self.query is not None else "s=" + parse.quote(self.text, safe="")


GRAMMAR = "where is my parcel ? "  # 5 tokens of the translators' grammar

HOSTILE: list[Hostile] = [
    Hostile("empty", ""),
    Hostile("spaces-only", "      "),
    Hostile("unicode-spaces-only", "\u00a0\u2003\u3000\u2009"),
    Hostile("one-character", "a"),
    Hostile("one-punctuation-mark", "?"),
    Hostile("10000-characters", (GRAMMAR * 500)[:10_000]),
    Hostile("60-tokens", (GRAMMAR * 12).strip()),
    Hostile("61-tokens", (GRAMMAR * 12) + "now"),
    Hostile("one-word-500-times", " ".join(["parcel"] * 500)),
    Hostile("punctuation-only", "?!.,;:()[]{}<>\"'`~@#$%^&*-_=+|\\/"),
    Hostile("digits-only", "0123456789 42 3.14 -7 1e308 ٣ ١٢"),
    Hostile("unknown-words-only", "zzz qqq xyzzy blorp frobnicate"),
    Hostile("mixed-case", "WhErE iS mY PaRcEl ? THE CHARGER"),
    Hostile("accents", "Où est mon colis ? Ça m'énerve, déjà reçu. e\u0301te\u0301 (decomposed)"),
    Hostile("emoji", "📦 where is my 📦 ? 👍🏽 👨‍👩‍👧 🇫🇷"),
    Hostile("arabic", "أين طردي؟ لم يصل الشاحن"),
    Hostile("hebrew", "איפה החבילה שלי? המטען לא הגיע"),
    Hostile("rtl-override", "where is \u202emy parcel\u202c ? \u2067x\u2069"),
    Hostile("zero-width", "where\u200bis\u200cmy\u200dparcel\ufeff ?\u2060"),
    Hostile("control-characters", "where\x01is\x07my\x1bparcel\x7f\x9b?\x08"),
    Hostile("nul", "where is\x00 my parcel\x00"),
    Hostile("tabs-and-newlines", "where\tis\nmy\r\nparcel\v?\f\t"),
    Hostile("html-tags", "<b>bold</b> <i>x</i> <div style='color:red'>red</div>", ("<b>", "<div")),
    Hostile("script-tag", "<script>alert(1)</script>", ("<script", "</script")),
    Hostile("img-onerror", '<img src=x onerror="alert(1)">', ("<img",)),
    Hostile("html-entities", "&lt;script&gt; &amp; &#60;b&#62;", ("&lt;", "&#60;")),
    Hostile("markdown-bold", "**bold** __also__ ~~strike~~", ("**bold**", "__also__", "~~strike~~")),
    Hostile("markdown-link", "[link](http://x) ![img](http://x/i.png) <http://x>", ("[link]", "](http", "<http")),
    Hostile("markdown-heading", "# heading", ("# heading",)),
    Hostile("markdown-block", "# heading\n> quote\n- item\n| a | b |\n|---|---|", ("# heading", "> quote")),
    Hostile("backticks", "`code` ```block```", ("`code`", "```")),
    Hostile("latex", "$x^2$ and $$\\int_0^1 x\\,dx$$", ("$x^2$", "$$\\int")),
    Hostile("streamlit-directives", ":material/home: :red[alarm] :blue-background[x] :rainbow[wow]",
            (":material/home:", ":red[", ":blue-background[", ":rainbow[")),
    Hostile("url", "https://evil.example/path?a=1&b=<2>#frag javascript:alert(1)", ("<2>",)),
    Hostile("french", "Le colis n'est jamais arrivé, l'étiquette était déchirée."),
    Hostile("chinese", "我的包裹在哪里？充电器从未到达。"),
    Hostile("russian", "Где моя посылка? Зарядка так и не пришла."),
    Hostile("very-long-single-token", "supercalifragilistic" * 25),
    Hostile("10000-character-token", "x" * 10_000),
    Hostile("sql", "'; DROP TABLE users; -- \" OR 1=1 /* */"),
    Hostile("json", '{"s": [1, 2, null], "__proto__": {"x": true}}'),
    Hostile("template-syntax", "{{7*7}} ${7*7} {0} %s %(x)s"),
    Hostile("backslashes", "\\*not bold\\* \\\\ \\[x\\](y) \\", ("\\*not bold",)),
    Hostile("special-tokens", "<unk> <pad> <bos> <eos> <unk>", ("<unk>", "<eos>")),
    Hostile("zalgo", "Z̸̢͉̈́a̵̡͎͋l̶g̷o̴ parcel"),
    # Percent signs: typed they are plain text; in the address they are a broken escape, decoded as a browser
    # sends them (the raw query string reaches Streamlit unchanged).
    Hostile("malformed-percent-encoding", "%E0%A4%A", query="s=%E0%A4%A"),
    Hostile("double-percent", "%%", query="s=%%"),
    Hostile("percent-nul", "%00", query="s=where%00is%00my%00parcel"),
    # A lone surrogate cannot be typed through AppTest (its protobuf encoding refuses one, as a browser's
    # UTF-8 would) so it is tried only in the address, as the bytes a surrogate would be: they decode as U+FFFD.
    Hostile("lone-surrogate", None, query="s=%ED%A0%80parcel%ED%B0%80"),
    Hostile("repeated-s", None, query="s=where+is&s=my+parcel&s=%3Cscript%3E", markers=("<script",)),
    Hostile("s-and-other-junk", None, query="s=where+is+my+parcel&junk=%3Cb%3E&=x&s2&&"),
]


# --- What every page must hold, whatever the sentence -----------------------------------------------------

MARKDOWN_TYPES = {"markdown", "caption", "latex", "info", "warning", "error", "success", "toast", "title",
                  "header", "subheader"}


def nodes(at: AppTest):
    yield from at.main
    yield from at.sidebar


def markdown_strings(at: AppTest) -> list[str]:
    """Every string on the page that Streamlit renders as Markdown: bodies, labels, help texts, radio options."""
    found = []
    for node in nodes(at):
        if getattr(node, "type", None) in MARKDOWN_TYPES:
            found.append(str(node.value))
        for attribute in ("label", "help", "placeholder"):
            value = getattr(node, attribute, None)
            if isinstance(value, str) and value:
                found.append(value)
        if getattr(node, "type", None) == "radio":
            found += [str(o) for o in node.options]
        if getattr(node, "type", None) == "table":  # st.table's cells are Markdown too
            found += [cell for cell in node.value.to_numpy().ravel() if isinstance(cell, str)]
    return found


def unescaped(text: str) -> str:
    """``text`` without its backslash-escaped characters."""
    return re.sub(r"\\.", "", text, flags=re.DOTALL)


def escape_problems(at: AppTest, hostile: Hostile) -> list[str]:
    problems = []
    for node in nodes(at):
        if getattr(node, "type", None) == "html":
            problems.append("an st.html element is on the page")
        if getattr(node, "type", None) in MARKDOWN_TYPES and getattr(node.proto, "allow_html", False):
            problems.append(f"a Markdown element allows HTML: {str(node.value)[:80]!r}")
    for text in markdown_strings(at):
        for marker in hostile.markers:
            if re.search(r"(?<!\\)" + re.escape(marker), text):
                problems.append(f"{marker!r} reaches Markdown unescaped: {text[:160]!r}")
        # Text that quotes the visitor whole is escaped whole: a notice, a note of unknown words.
        if text.startswith("Not in the vocabulary") or text.startswith("Only the first") \
                or text.startswith("The models read at most"):
            left = [c for c in unescaped(text) if c in SPECIAL]
            if left:
                problems.append(f"unescaped {''.join(sorted(set(left)))!r} in {text[:160]!r}")
        # /attention's step: "context ≈ 0.52 × h(03 word) + ...", each word a source token of the visitor's.
        if text.startswith("③ The context for"):
            for word in re.findall(r"h\(((?:\\.|[^\\)])*)\)", text):
                if any(c in SPECIAL for c in unescaped(word)):
                    problems.append(f"a source word unescaped in the step: {word!r}")
    return problems


def charts(at: AppTest) -> int:
    return len(at.get("vega_lite_chart"))


def share_address_sentence(at: AppTest) -> str | None:
    """The sentence the sidebar's share box would reopen (None: the default, left out of the address)."""
    (address,) = [c.value for c in at.sidebar.code if c.value.startswith("http")]
    values = parse.parse_qs(parse.urlsplit(address).query, keep_blank_values=True).get(SENTENCE_KEY)
    return values[-1] if values else None


@dataclass
class Baseline:
    """Charts a page draws for the default sentence and for an empty box."""

    with_tokens: int
    without_tokens: int


# Pages whose charts for a sentence depend on what a model writes (a translator that writes nothing at once
# draws no alignment): for them the count lies between the empty box's and the default sentence's.
MODEL_DEPENDENT = {"app_pages/attention.py", "app_pages/transformer.py"}


def page_problems(at: AppTest, script: str, sentence: str, hostile: Hostile, base: Baseline) -> list[str]:
    if at.exception:
        return [f"exception: {[e.value for e in at.exception]}"]
    problems = []
    if not at.title:
        problems.append("the page has no title: it stopped early")
    bounded = sentence[:MAX_CHARS]
    has_tokens = bool(prepare(sentence).tokens)
    expected = base.with_tokens if has_tokens else base.without_tokens
    drawn = charts(at)
    if script in MODEL_DEPENDENT and has_tokens:
        if not base.without_tokens < drawn <= base.with_tokens:
            problems.append(f"{drawn} charts, expected {base.without_tokens + 1} to {base.with_tokens}")
    elif drawn != expected:
        problems.append(f"{drawn} charts, expected {expected} (as for {'a' if has_tokens else 'no'} sentence)")
    if script == "app_pages/home.py":
        shown = [t.value for t in at.text]  # st.text strips the ends, as Streamlit does for every text
        if bounded.strip() and shown != [bounded.strip()]:
            problems.append(f"home shows {shown!r} as plain text, not the sentence")
    if script == "app_pages/train.py" and not any(b.label == "Start training" for b in at.button):
        problems.append("the training form is gone")
    reopened = share_address_sentence(at)
    if reopened != (None if bounded == DEFAULT_SENTENCE else bounded):
        problems.append(f"the share box's address reopens {reopened!r:.80}, not the sentence")
    return problems + escape_problems(at, hostile)


def open_at(script: str, query: str = "") -> AppTest:
    """A new session (a new tab) on ``script``, opened from an address with this raw query string."""
    at = AppTest.from_file(APP, default_timeout=120)
    if query:
        at.query_params = RawQuery(query)
    at.run()
    if script != "app_pages/home.py":
        at.switch_page(script).run()
    return at


def baseline(at: AppTest) -> Baseline:
    at.sidebar.text_input(key=SENTENCE_KEY).set_value(DEFAULT_SENTENCE).run()
    with_tokens = charts(at)
    at.sidebar.text_input(key=SENTENCE_KEY).set_value("").run()
    assert not at.exception, [e.value for e in at.exception]
    return Baseline(with_tokens, charts(at))


# --- The address, raw: AppTest percent-encodes its query_params, a browser sends what is in its address bar ---


class RawQuery(dict):
    """A query string sent as it is, as a browser would send ?s=%E0%A4%A (AppTest alone would encode the %)."""

    def __init__(self, raw: str):
        super().__init__(parse.parse_qs(raw, keep_blank_values=True))
        self.raw = raw


@pytest.fixture
def raw_addresses(monkeypatch):
    def urlencode(query, doseq=False, **kwargs):
        return query.raw if isinstance(query, RawQuery) else parse.urlencode(query, doseq=doseq, **kwargs)

    monkeypatch.setattr(local_script_runner, "parse", types.SimpleNamespace(urlencode=urlencode))


def sentence_of(raw: str) -> str:
    """The sentence a raw address opens, as Streamlit reads it: the last ?s=, percent-decoded; else the default."""
    values = parse.parse_qs(raw, keep_blank_values=True).get(SENTENCE_KEY)
    return values[-1] if values else DEFAULT_SENTENCE


# --- The sentence, typed and in the address, on every page -------------------------------------------------

TYPED = [h for h in HOSTILE if h.text is not None]


def test_the_corpus_is_large_and_named():
    assert len(HOSTILE) >= 40
    assert len({h.id for h in HOSTILE}) == len(HOSTILE)


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_hostile_sentence_typed(script):
    at = open_at(script)
    assert not at.exception, [e.value for e in at.exception]
    base = baseline(at)
    failures = []
    for hostile in TYPED:
        at.sidebar.text_input(key=SENTENCE_KEY).set_value(hostile.text).run()
        failures += [f"{hostile.id}: {p}" for p in page_problems(at, script, hostile.text, hostile, base)]
    assert not failures, "\n".join(failures)


# In the address, a page reads the same session value as when it is typed (the box checks it is the same):
# home takes the whole corpus; every other page the inputs whose address is more than the typed text (broken
# escapes, a repeated ?s=, a surrogate's bytes, 10,000 characters for the box's max_chars).
# SEQVIZ_HOSTILE_FULL=1 runs the whole corpus on every page (about 2.5 more minutes).
FULL = os.environ.get("SEQVIZ_HOSTILE_FULL") == "1"
ADDRESS_SPECIFIC = [h for h in HOSTILE if h.text is None or h.query is not None or h.id == "10000-characters"]


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_hostile_sentence_in_the_address(script, raw_addresses):
    """Each input opens the page in a new session, as a shared link does (?s=... in the address)."""
    base = baseline(open_at(script))
    failures = []
    for hostile in HOSTILE if FULL or script == "app_pages/home.py" else ADDRESS_SPECIFIC:
        at = open_at(script, hostile.address)
        sentence = sentence_of(hostile.address)[:MAX_CHARS]  # the box's max_chars holds for an address too
        box = at.sidebar.text_input(key=SENTENCE_KEY).value
        if box != sentence:
            failures.append(f"{hostile.id}: the box holds {box!r:.80}, the address says {sentence!r:.80}")
        failures += [f"{hostile.id}: {p}" for p in page_problems(at, script, box, hostile, base)]
    assert not failures, "\n".join(failures)
