"""Hostile input in the smaller typed fields and in the address's other parameters: /rnn-memory's inputs,
/attention's words, /train's numbers at their bounds, a model or a widget's value in the address that does not fit
(?model=, junk, markup, broken escapes), the story walked in one session, a repeated ?s=.

The checks (no exception, the page's charts, nothing typed reaching a Markdown element unescaped) and the pages
opened as from an address are tests/pages/test_hostile_inputs.py's, imported from it.
"""

from __future__ import annotations

import pytest
import test_hostile_inputs as corpus
from streamlit.testing.v1 import AppTest
from test_hostile_inputs import SCRIPTS, SPECIAL, Hostile, charts, escape_problems, open_at, unescaped

from seqviz.limits import MAX_WORD_CHARS, TINY_RNN_MAX_INPUT_CHARS
from seqviz.ui import SENTENCE_KEY, escape_markdown

raw_addresses = corpus.raw_addresses  # its fixture: the address's query string sent as it is


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

