"""/what-if through AppTest: the seven questions on the shipped translators, each setting doing what it says, every
setting in the share link, hostile sentences, and what the plain translator (no attention) is told."""

from urllib.parse import parse_qsl, urlsplit

import pyarrow as pa
import pytest
from conftest import APP, SENTENCES, all_text, figures_shown, set_sentence
from streamlit.testing.v1 import AppTest

PAGE = "app_pages/what_if.py"
SENTENCE = "my red phone never arrived ."
DECODING = ["next-words", "beam-tree"] + ["alignment"] * 6  # sections 1 to 5 of a translator with attention


def open_what_if(**query) -> AppTest:
    """A new session on /what-if from an address (the first open on a loaded machine loads torch and a model)."""
    at = AppTest.from_file(APP, default_timeout=180)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def tables(at: AppTest, figure: str) -> list:
    """The tables the page sent with its charts made by ``figure`` (pandas DataFrames)."""
    import json

    found = []
    for chart in at.get("vega_lite_chart"):
        if json.loads(chart.proto.spec).get("usermeta", {}).get("seqviz", {}).get("figure") == figure:
            found += [pa.ipc.open_stream(d.data.data).read_pandas() for d in chart.proto.datasets if d.name == "table"]
    return found


def move(at: AppTest, kind: str, key: str, value) -> AppTest:
    """Move a widget (its part of the page reruns alone), then rerun the whole page, as the next sentence would:
    AppTest's tree holds only the part that ran."""
    getattr(at, kind)(key=key).set_value(value).run()
    assert not at.exception, [e.value for e in at.exception]
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture(scope="module")
def page() -> AppTest:
    """One session on the default translator (additive) and SENTENCE, moved by the tests in turn."""
    return open_what_if(s=SENTENCE)


def test_the_page_answers_the_decoding_questions_at_once(page):
    assert figures_shown(page) == DECODING  # neighbours and the map wait until their section is opened
    text = all_text(page)
    assert "**It writes**: mon téléphone rouge n' est jamais arrivé ." in text
    assert "Beam search of width 4" in text
    assert "Forced there" in text and "With all the weight on" in text
    (final,) = [t for t in page.table if "translation" in t.value.columns]
    assert list(final.value["rank"]) == list(range(1, len(final.value) + 1))


def test_the_next_words_follow_k_step_temperature_and_seed(page):
    (bars,) = tables(page, "next-words")
    assert len(bars) == 5 and list(bars["status"][:1]) == ["greedy's pick"]
    move(page, "slider", "k", 3)
    (bars,) = tables(page, "next-words")
    assert len(bars) == 3
    move(page, "select_slider", "nstep", 1)
    assert "Step 2: greedy decoding takes “téléphone”" in all_text(page)
    greedy = all_text(page)
    move(page, "slider", "temp", 5.0)
    sampled = [line for line in all_text(page).splitlines() if line.startswith("**It writes**")]
    assert "Sampling wrote" in all_text(page)
    move(page, "number_input", "seed", 7)
    other = [line for line in all_text(page).splitlines() if line.startswith("**It writes**")]
    assert sampled != other, "another seed draws other words at temperature 5"
    move(page, "slider", "temp", 0.0)
    assert all_text(page) .count("Sampling wrote") == 0 and "Step 2" in greedy


def test_the_beam_follows_its_width_and_normalisation(page):
    (tree,) = tables(page, "beam-tree")
    assert set(tree["status"]) >= {"best translation", "pruned"}
    move(page, "slider", "beam", 1)
    (tree,) = tables(page, "beam-tree")
    assert "Beam search of width 1" in all_text(page) and "the same translation" in all_text(page)
    assert tree.groupby("step")["status"].apply(lambda s: (s != "pruned").sum()).max() == 1  # width 1: greedy
    move(page, "toggle", "norm", False)
    assert "(by log p)" in all_text(page)
    move(page, "slider", "beam", 8)
    (tree,) = tables(page, "beam-tree")
    assert tree.groupby("step")["status"].apply(lambda s: (s != "pruned").sum()).max() > 1


def test_a_forced_word_is_written_and_its_probability_said(page):
    move(page, "select_slider", "fstep", 1)
    move(page, "selectbox", "fword", "câble")
    text = all_text(page)
    assert "Forced there, “câble” had p = " in text
    assert "**Forced**: mon câble" in text
    alignments = tables(page, "alignment")
    assert any("02 câble" in set(t["row"]) for t in alignments)
    move(page, "selectbox", "fword", "<eos>")
    assert "**Forced**: mon" in all_text(page).replace("  \n", "\n")


def test_the_attention_edit_moves_the_weight(page):
    move(page, "select_slider", "estep", 2)
    move(page, "selectbox", "eword", 0)
    text = all_text(page)
    assert "At step 3 the model looked most at “phone”" in text or "At step 3 the model looked most at" in text
    assert "With all the weight on “my”" in text
    edited = [t for t in tables(page, "alignment") if "03" in "".join(t["row"])]
    assert any(((t["row"].str.startswith("03")) & (t["column"] == "01 my") & (t["weight"] > 0.999)).any()
               for t in edited), "the edited step's row puts all its weight on the word picked"


ROW = "the row of weights I type"  # the attention edit's last pick (app_pages/what_if.py)


def edit_summary(at: AppTest) -> str:
    (line,) = [line for line in all_text(at).splitlines() if line.startswith("At step ") and "it writes" in line]
    return line


def test_a_typed_row_of_weights_is_decoded_and_a_bad_one_explained():
    at = open_what_if(s=SENTENCE, estep="03 rouge", eword="03 phone")
    one_word = edit_summary(at)
    assert "With all the weight on “phone”" in one_word
    at = open_what_if(s=SENTENCE, estep="03 rouge", eword=ROW, erow="0, 0, 1, 0, 0, 0")
    assert edit_summary(at) == one_word, "a one-hot row is the same edit as all the weight on that word"
    # the model's own row, as the caption shows it (3 decimals), written back: the same translation
    (own,) = [c.value.replace("\\", "") for c in at.caption if c.value.startswith("Its own weights at step 3")]
    typed = own.split(": ", 1)[1].split(". Copy", 1)[0]
    assert len(typed.split(", ")) == 6
    move(at, "text_input", "erow", typed)
    assert edit_summary(at).endswith("(the same translation).")
    assert "With your row of weights (most on “red”" in edit_summary(at)
    edited = tables(at, "alignment")[3]  # forced: 0 and 1, edited: 2 (its own) and 3, changed: 4 and 5
    weights = edited[edited["row"] == "03 rouge"].sort_values("column")["weight"].to_numpy()
    assert abs(weights - [float(w) for w in typed.split(", ")]).max() < 2e-3
    for bad, said in (("1, 2", "has 6 source words and the row has 2 numbers"), ("1 x 0 0 0 0", "“x” is not a number"),
                      ("0 0 -1 0 0 0", "“-1” is not a weight"), ("0 0 0 0 0 0", "all 0")):
        move(at, "text_input", "erow", bad)
        assert said in " ".join(w.value for w in at.warning).replace("\\", ""), bad
        assert not any(line.startswith("At step ") and "it writes" in line for line in all_text(at).splitlines())


def test_one_word_changed_marks_the_differences(page):
    # by default the sentence's first noun turns into the grammar's next noun
    assert page.selectbox(key="cpos").value == 2 and page.selectbox(key="cword").value == "refund"
    move(page, "selectbox", "cword", "parcel")
    text = all_text(page)
    assert "“phone” → “parcel”" in text
    assert "**colis**≠" in text and "**téléphone**≠" in text
    rows = {row for t in tables(page, "alignment") for row in t["row"]}
    assert "02 colis ≠" in rows and "02 téléphone ≠" in rows
    move(page, "selectbox", "cpos", 5)  # "." replaced by "parcel"
    assert "“.” → “parcel”" in all_text(page)


def test_neighbours_and_the_map_open_with_their_sections_and_take_their_settings():
    at = open_what_if(s=SENTENCE, neighbours="true", statemap="true")
    assert figures_shown(at) == [*DECODING, "state-map"]
    (found,) = [t.value for t in at.table if "cosine" in t.value.columns]
    assert len(found) == 5 and all("⟦" in english for english in found["English"])
    assert list(found["cosine"]) == sorted(found["cosine"], reverse=True)
    move(at, "selectbox", "nwhich", 1)  # "red"
    (found,) = [t.value for t in at.table if "cosine" in t.value.columns]
    assert set(found["word"]) == {"red"}  # the trained encoder's state of "red" is nearest other "red"s
    move(at, "radio", "nside", "decoder")
    move(at, "slider", "nk", 3)
    (found,) = [t.value for t in at.table if "cosine" in t.value.columns]
    assert len(found) == 3 and all("⟦" in french for french in found["French"])
    (points,) = tables(at, "state-map")
    path = points[points["kind"] == "your sentence"]
    assert list(path["word"]) == SENTENCE.split()
    assert set(points["part"]) >= {"noun", "verb", "determiner"}
    move(at, "radio", "mcolour", "position")
    assert figures_shown(at)[-1] == "state-map"


SETTINGS = {"what-if": "transformer-translator", "k": "3", "temp": "1.5", "seed": "11", "nstep": "03 rouge",
            "beam": "6", "norm": "false", "fstep": "02 téléphone", "fword": "câble", "estep": "04 n'",
            "eword": "01 my", "cpos": "05 arrived", "cword": "delivered", "neighbours": "true",
            "nside": "an output step's decoder state",
            "nwhich": "02 téléphone", "nk": "7", "statemap": "true", "mcolour": "position in the sentence"}


def _settings(at: AppTest) -> dict:
    def shown(widget):
        return str(widget.format_func(widget.value)) if hasattr(widget, "format_func") else widget.value

    return {"what-if": at.selectbox(key="what-if").value, "k": at.slider(key="k").value,
            "temp": at.slider(key="temp").value, "seed": at.number_input(key="seed").value,
            "nstep": shown(at.select_slider(key="nstep")), "beam": at.slider(key="beam").value,
            "norm": at.toggle(key="norm").value, "fstep": shown(at.select_slider(key="fstep")),
            "fword": at.selectbox(key="fword").value, "estep": shown(at.select_slider(key="estep")),
            "eword": shown(at.selectbox(key="eword")), "cpos": shown(at.selectbox(key="cpos")),
            "cword": at.selectbox(key="cword").value, "nside": at.radio(key="nside").value,
            "nwhich": shown(at.selectbox(key="nwhich")), "nk": at.slider(key="nk").value,
            "mcolour": at.radio(key="mcolour").value}


def test_the_share_link_carries_every_setting():
    at = open_what_if(s=SENTENCE, **SETTINGS)
    expected = {"what-if": "transformer-translator", "k": 3, "temp": 1.5, "seed": 11, "nstep": "03 rouge", "beam": 6,
                "norm": False, "fstep": "02 téléphone", "fword": "câble", "estep": "04 n'", "eword": "01 my",
                "cpos": "05 arrived", "cword": "delivered", "nside": "decoder", "nwhich": "02 téléphone", "nk": 7,
                "mcolour": "position"}
    assert _settings(at) == expected
    assert figures_shown(at)[-1] == "state-map"  # both sections opened from the address
    shared = urlsplit([c.value for c in at.sidebar.code][-1])
    assert shared.path.endswith("/what-if")
    linked = dict(parse_qsl(shared.query))
    assert {key: linked.get(key) for key in SETTINGS} == SETTINGS
    opened = open_what_if(**dict(parse_qsl(shared.query)))
    assert _settings(opened) == expected and opened.sidebar.text_input(key="s").value == SENTENCE


def test_picks_past_the_end_of_a_shorter_sentence_go_back_to_their_defaults():
    at = open_what_if(s="the small box was delivered and the black watch arrived .", neighbours="true")
    for kind, key in (("select_slider", "nstep"), ("select_slider", "fstep"), ("select_slider", "estep"),
                      ("selectbox", "eword"), ("selectbox", "cpos"), ("selectbox", "nwhich")):
        last = len(getattr(at, kind)(key=key).options) - (2 if key == "eword" else 1)  # eword's last pick: ROW
        move(at, kind, key, last)  # the last step or word (ints)
        assert getattr(at, kind)(key=key).value > 5, key
    set_sentence(at, "")  # the pickers leave the page, their picks stay in the session
    set_sentence(at, "Hello")
    assert figures_shown(at) == DECODING
    assert at.select_slider(key="fstep").value < len(at.select_slider(key="fstep").options)


def test_hostile_sentences_and_settings_give_plain_messages():
    at = open_what_if()
    for sentence in SENTENCES:
        set_sentence(at, sentence)
        assert at.title and not at.exception
    for query in ({"k": "99", "beam": "0", "temp": "-3", "nstep": "99 x", "fword": "<script>", "eword": "junk"},
                  {"fword": "<unk>", "cword": "<pad>", "cpos": "-1", "nk": "1000", "seed": "-5", "norm": "maybe",
                   "neighbours": "true"}):
        at = open_what_if(s=SENTENCE, **query)
        assert figures_shown(at) == DECODING, query  # every question still answered, on settings it can take
        assert 1 <= at.slider(key="k").value <= 10 and 1 <= at.slider(key="beam").value <= 8
        assert at.selectbox(key="fword").value in at.selectbox(key="fword").options
        assert at.selectbox(key="cword").value not in ("<pad>", "<unk>")
        said = " ".join(w.value for w in at.warning).replace("\\", "")
        for key, value in query.items():
            if key not in ("norm", "neighbours"):  # switches: anything but true or false leaves them as they are
                assert f"“{value}”" in said, f"nothing says the address's {key}={value} was not taken"


def test_the_plain_translator_is_told_what_needs_attention():
    at = open_what_if(**{"s": SENTENCE, "what-if": "plain"})
    assert figures_shown(at) == ["next-words", "beam-tree"]  # no alignment to draw
    text = all_text(at)
    assert "The plain translator has no attention to edit" in text
    assert "no alignment to draw" in text
    assert "Forced there" in text and "“phone” → “refund”" in text  # the other questions still answered


def test_every_chart_with_every_section_open_is_valid_vega_lite():
    """tests/pages/test_chart_specs.py checks the page as it opens; the map of states is drawn once its section is."""
    import json

    from altair.utils.schemapi import validate_jsonschema
    from altair.vegalite.v6.schema.core import load_schema

    at = open_what_if(s=SENTENCE, neighbours="true", statemap="true", beam="8", temp="2.0")
    specs = [json.loads(chart.proto.spec) for chart in at.get("vega_lite_chart")]
    assert [s["usermeta"]["seqviz"]["figure"] for s in specs] == [*DECODING, "state-map"]
    for spec in specs:
        validate_jsonschema(spec, load_schema())


@pytest.mark.parametrize(("kind", "key", "value", "figure"), [
    ("slider", "beam", 6, "beam-tree"), ("select_slider", "nstep", 0, "next-words"),
    ("selectbox", "fword", "câble", "alignment")])
def test_moving_a_setting_sends_new_tables_and_the_same_charts(kind, key, value, figure):
    """A setting reruns its part alone and changes a table, never a chart's spec: the browser swaps the data in the
    chart it has (titles name the model, not the setting)."""
    import json

    def sent(at):
        return [(chart.proto.spec, [d.data.data for d in chart.proto.datasets]) for chart in at.get("vega_lite_chart")
                if json.loads(chart.proto.spec)["usermeta"]["seqviz"]["figure"] == figure]

    at = open_what_if(s=SENTENCE)
    before = sent(at)
    getattr(at, kind)(key=key).set_value(value).run()
    assert not at.exception, [e.value for e in at.exception]
    after = sent(at)
    assert after and {spec for spec, _ in after} <= {spec for spec, _ in before}
    assert any(tables not in [old for _, old in before] for _, tables in after), "no table changed"
