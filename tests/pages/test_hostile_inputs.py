"""Hostile input on every page: the sidebar sentence typed and in the address, the other typed fields, the address.

Every page of the router gets the whole corpus below, typed in the sidebar's "Sentence" box (key "s") and opened
from an address (?s=...): no exception, the page still draws the charts it draws for a sentence (or for an empty
box), and nothing the visitor typed reaches a Markdown element unescaped (no HTML, links, icons, LaTeX, bold).
Then the smaller typed fields (/rnn-memory's inputs, /attention's words, /train's bounded numbers) and the
address's other parameters (?model=, a repeated ?s=).

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

from seqviz.limits import MAX_CHARS, MAX_WORD_CHARS, TINY_RNN_MAX_INPUT_CHARS
from seqviz.story import PAGES
from seqviz.text import prepare
from seqviz.ui import DEFAULT_SENTENCE, SENTENCE_KEY, escape_markdown

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


# --- /rnn-memory's typed inputs -----------------------------------------------------------------------------

RNN_INPUTS = [
    ("words", "one, two, three"),
    ("hex", "0x10 0b1"),
    ("huge", "1e308, 1e309, -1e400"),
    ("just-out-of-range", "10.000001"),
    ("nan", "nan"),
    ("NaN-mixed", "1, NaN, 0"),
    ("inf", "inf, -inf, Infinity"),
    ("underscores", "1_000"),
    ("arabic-indic-digits", "١, ٠, ٠"),
    ("fullwidth-digits", "１, ０"),
    ("separators-only", ",,, ;; \t\n"),
    ("empty", ""),
    ("10000-characters", "1" * 10_000),
    ("too-many-inputs", "1, 0, " * 2000),
    ("html", "<script>alert(1)</script>"),
    ("markdown", "**1** [1](http://x) :red[1] $1$"),
    ("emoji", "📦, 1"),
    ("nul", "1\x00, 0"),
    ("tiny", "1e-400, -0, 0.0000001"),
]


def test_rnn_memory_typed_inputs():
    at = open_at("app_pages/rnn_memory.py")
    failures = []
    for name, typed in RNN_INPUTS:
        at.text_input(key="x").set_value(typed).run()
        if at.exception:
            failures.append(f"{name}: exception {[e.value for e in at.exception]}")
            continue
        if charts(at) != 2:
            failures.append(f"{name}: {charts(at)} charts, not 2")
        if list(at.table[0].value.columns) != [str(t) for t in range(1, 7)]:
            failures.append(f"{name}: the table lost its 6 steps")
        if len(at.text_input(key="x").value) > TINY_RNN_MAX_INPUT_CHARS:
            failures.append(f"{name}: the field holds more than {TINY_RNN_MAX_INPUT_CHARS} characters")
        for warning in at.warning:  # a notice quotes the visitor: escaped whole
            if any(c in SPECIAL for c in unescaped(warning.value)):
                failures.append(f"{name}: an unescaped notice {warning.value!r}")
        failures += [f"{name}: {p}" for p in escape_problems(at, Hostile(name, typed, ("<script", "**1**", "](")))]
    assert not failures, "\n".join(failures)


# --- /attention's word fields -------------------------------------------------------------------------------

WORDS = [
    ("html", "<script>alert(1)</script>", ("<script",)),
    ("img", "<img src=x onerror=alert(1)>", ("<img",)),
    ("markdown", "**[x](http://e)**", ("**[x]", "](http")),
    ("directives", ":red[x] :material/home:", (":red[", ":material/home:")),
    ("latex", "$x^2$", ("$x^2$",)),
    ("emoji", "📦👨‍👩‍👧🇫🇷", ()),
    ("very-long", "w" * 10_000, ()),
    ("empty", "", ()),
    ("spaces", "   ", ()),
    ("rtl", "\u202eabc\u202c", ()),
    ("nul", "a\x00b", ()),
]


def test_attention_word_fields():
    """Each input in one of the three fields in turn (w1, w2, w3, w1, ...), the other two left as they were."""
    at = open_at("app_pages/attention.py")
    drawn = charts(at)
    failures = []
    for i, (name, typed, markers) in enumerate(WORDS):
        j = i % 3 + 1
        at.text_input(key=f"w{j}").set_value(typed).run()  # reruns the worked example's part only
        if not at.exception:
            at.run()  # the whole page, as the browser shows it
        if at.exception:
            failures.append(f"{name} in w{j}: exception {[e.value for e in at.exception]}")
            continue
        if charts(at) != drawn:
            failures.append(f"{name} in w{j}: {charts(at)} charts, not {drawn}")
        word = list(at.table[0].value["word"])[j - 1]
        expected = escape_markdown(typed[:MAX_WORD_CHARS].strip() or f"word {j}")  # a Markdown cell
        if word != expected:
            failures.append(f"{name} in w{j}: the table names it {word!r:.60}, not {expected!r:.60}")
        failures += [f"{name} in w{j}: {p}" for p in escape_problems(at, Hostile(name, typed, markers))]
    assert not failures, "\n".join(failures)


# --- /train's bounded numbers -------------------------------------------------------------------------------

NUMBERS = ("embedding", "hidden", "heads", "layers", "steps", "lr", "batch_size", "seed")


@pytest.mark.parametrize("family", ["dot", "transformer-seq2seq"])  # the default; one with heads and layers
def test_train_form_numbers_at_their_bounds(family):
    at = open_at("app_pages/train.py")
    at.selectbox(key="tr_family").set_value(family).run()
    failures = []

    def check(what: str) -> None:
        if at.exception:
            failures.append(f"{what}: exception {[e.value for e in at.exception]}")
            return
        start = next(b for b in at.button if b.label == "Start training")
        refused = any("cannot be trained here" in e.value for e in at.error)
        if refused != start.disabled:
            failures.append(f"{what}: refused={refused} but the button disabled={start.disabled}")

    for end in ("min", "max"):
        for field in NUMBERS:
            widget = at.number_input(key=f"tr_{field}")
            if widget.disabled:
                continue
            widget.set_value(getattr(widget, end)).run()
            check(f"{field} at its {end}")
        check(f"every number at its {end}")
    assert not failures, "\n".join(failures)


# --- The address's other parameters -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def fresh_page():
    """Each page as a new session opens it, with no address: what the tests below compare with (opened once)."""
    opened: dict[str, AppTest] = {}

    def get(script: str) -> AppTest:
        if script not in opened:
            opened[script] = open_at(script)
            assert not opened[script].exception, [e.value for e in opened[script].exception]
        return opened[script]

    return get


TRANSLATORS = ["plain", "additive", "dot", "transformer-translator"]
CLASSIFIERS = ["bow", "rnn", "gru", "lstm", "transformer"]

# (page, the picker's label, its values in the address, what it must hold). The address names a picker by its
# key (read from the page, not assumed): junk, markup, a broken escape, shipped models that do not fit the page.
MODEL_ADDRESSES = [
    ("app_pages/lstm_gates.py", "Model with an LSTM", ["junk"], "lstm"),
    ("app_pages/lstm_gates.py", "Model with an LSTM", ["%3Cscript%3Ealert(1)%3C/script%3E"], "lstm"),
    ("app_pages/lstm_gates.py", "Model with an LSTM", ["%E0%A4%A"], "lstm"),
    ("app_pages/lstm_gates.py", "Model with an LSTM", ["transformer"], "lstm"),  # shipped, no LSTM inside
    ("app_pages/lstm_gates.py", "Model with an LSTM", ["plain"], "plain"),  # shipped and fits: taken
    ("app_pages/encoder_decoder.py", "Translators", ["%%"], TRANSLATORS),
    ("app_pages/encoder_decoder.py", "Translators", ["lstm"], TRANSLATORS),  # shipped, not a translator
    ("app_pages/encoder_decoder.py", "Translators", ["bow", "memory-gru"], TRANSLATORS),
    ("app_pages/encoder_decoder.py", "Translators", ["bow", "dot", "dot"], ["dot"]),  # the one that fits is kept
    ("app_pages/attention.py", "Translators with attention", ["plain"], ["additive", "dot"]),  # no attention
    ("app_pages/transformer.py", "Transformer classifier", ["lstm"], "transformer"),
    ("app_pages/transformer.py", "Transformer translator", ["plain"], "transformer-translator"),
    ("app_pages/order.py", "Email classifiers", ["plain"], CLASSIFIERS),
    ("app_pages/vanishing_gradients.py", "Email classifiers", ["memory-rnn"], ["rnn", "gru", "lstm", "transformer"]),
]


def picker(at: AppTest, label: str):
    return next(w for w in [*at.multiselect, *at.selectbox] if w.label == label)


@pytest.mark.parametrize(("script", "label", "values", "expected"), MODEL_ADDRESSES,
                         ids=[f"{s.split('/')[1][:-3]}-{label}={'&'.join(v)}" for s, label, v, _ in MODEL_ADDRESSES])
def test_a_model_in_the_address_that_does_not_fit_falls_back(script, label, values, expected, fresh_page,
                                                              raw_addresses):
    plain = fresh_page(script)
    key = picker(plain, label).key
    at = open_at(script, "&".join(f"{key}={value}" for value in values))
    assert not at.exception, [e.value for e in at.exception]
    assert picker(at, label).value == expected
    assert charts(at) == charts(plain)
    assert not escape_problems(at, Hostile(key, None, ("<script",)))


@pytest.mark.parametrize(("script", "label", "expected"), [
    ("app_pages/lstm_gates.py", "Model with an LSTM", "lstm"),
    ("app_pages/encoder_decoder.py", "Translators", TRANSLATORS),
])
@pytest.mark.parametrize("query", ["model=junk", "model=%3Cb%3E&model=%E0%A4%A&model=bow"])
def test_model_junk_in_the_address(script, label, expected, query, fresh_page, raw_addresses):
    """?model= as a visitor might write it: junk, or a shipped model the page cannot show; the default stays."""
    plain = charts(fresh_page(script))
    at = open_at(script, query)
    assert not at.exception, [e.value for e in at.exception]
    assert picker(at, label).value == expected
    assert charts(at) == plain


def test_walking_the_story_in_one_session_keeps_each_page_s_picks(fresh_page):
    """A pick is bound to its page: the pickers of one page never take another page's value (a list, a name)."""
    at = open_at(SCRIPTS[0])
    expected = {}
    for script in SCRIPTS:
        fresh = fresh_page(script)
        expected[script] = ({w.label: w.value for w in [*fresh.multiselect, *fresh.selectbox]}, charts(fresh))
    for script in SCRIPTS:
        at.query_params = {}
        at.switch_page(script).run()
        at.run()  # a rerun, as the next click or sentence would make
        assert not at.exception, [e.value for e in at.exception]
        picks = {w.label: w.value for w in [*at.multiselect, *at.selectbox]}
        assert (picks, charts(at)) == expected[script], script


WIDGET_ADDRESSES = [
    ("app_pages/rnn_memory.py", "w=99&n=1000&f=%3Cb%3E&x=nan"),
    ("app_pages/rnn_memory.py", "w=nan&n=-5&x=" + "1," * 400),
    ("app_pages/rnn_memory.py", "w=&n=&f=&x=%E0%A4%A"),
    ("app_pages/attention.py", "q1=nan&q2=1e309&k1a=abc&k3b=-inf&w1=%3Cscript%3E&step=999"),
    ("app_pages/attention.py", "q1=&step=-1&stepmodel=junk&w2=" + "w" * 500),
    ("app_pages/lstm_gates.py", "units=3&unit=999&units=abc"),
    ("app_pages/vanishing_gradients.py", "T=7&scale=abc&steps=-1"),
    ("app_pages/vanishing_gradients.py", "T=1e9&scale=nan&steps=999999"),
    ("app_pages/encoder_decoder.py", "metric=junk"),
]


@pytest.mark.parametrize(("script", "query"), WIDGET_ADDRESSES,
                         ids=[f"{s.split('/')[1][:-3]}?{q[:40]}" for s, q in WIDGET_ADDRESSES])
def test_other_widgets_in_the_address(script, query, fresh_page, raw_addresses):
    plain = charts(fresh_page(script))
    at = open_at(script, query)
    assert not at.exception, [e.value for e in at.exception]
    assert charts(at) == plain
    assert not escape_problems(at, Hostile(query, None, ("<script", "<b>")))


def test_a_repeated_sentence_in_the_address_takes_the_last(raw_addresses):
    at = open_at("app_pages/encoder_decoder.py", "s=where+is+my+parcel+%3F&s=my+red+phone+never+arrived+.")
    assert not at.exception, [e.value for e in at.exception]
    assert at.sidebar.text_input(key=SENTENCE_KEY).value == "my red phone never arrived ."

