"""The only streamlit-aware module of seqviz: the shared sentence, charts with downloads, safe text.

Pages call these helpers and hold no model math and build no chart themselves.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import urlencode, urlsplit

import altair as alt
import pandas as pd
import streamlit as st

from seqviz.limits import MAX_CHARS

SENTENCE_KEY = "s"  # also the URL query parameter: /attention?s=where+is+my+parcel
DEFAULT_SENTENCE = "The parcel arrived, but never the charger that was supposed to be in it."

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+\-.!|~$:&])")


def escape_markdown(text: str) -> str:
    """Make visitor text print as itself inside st.markdown / st.warning (no links, HTML, icons, LaTeX)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def sentence_input() -> None:
    """The sidebar's one sentence, bound to ?s= so a copied address reopens the same view."""
    st.sidebar.text_input(
        "Sentence",
        value=DEFAULT_SENTENCE,
        key=SENTENCE_KEY,
        max_chars=MAX_CHARS,
        bind="query-params",
        help="Every page works on this sentence. It is kept in the address bar, so a copied link "
             "opens the same page with the same sentence.",
    )


def sentence() -> str:
    """The current sentence, bounded (empty when the visitor cleared the box)."""
    value = st.session_state.get(SENTENCE_KEY, DEFAULT_SENTENCE)
    return value[:MAX_CHARS] if isinstance(value, str) else DEFAULT_SENTENCE


def show_sentence(label: str = "Sentence") -> None:
    """Echo the sentence as plain text (never Markdown)."""
    st.caption(label)
    if sentence().strip():
        st.text(sentence())
    else:
        st.info("The sentence box is empty: type a sentence in the sidebar.", icon=":material/edit:")


def notice(message: str) -> None:
    """A warning whose text (which may quote the visitor) is shown literally."""
    st.warning(escape_markdown(message), icon=":material/info:")


def share_box(url_path: str) -> None:
    """The address of this page with the current sentence and settings, ready to copy."""
    address = f"{_app_base_url()}/{url_path}"
    params = {k: v for k, v in st.query_params.to_dict().items() if isinstance(v, str)}
    if sentence() != DEFAULT_SENTENCE:
        params[SENTENCE_KEY] = sentence()  # "" too: ?s= opens an empty box
    if params:
        address += "?" + urlencode(params)
    with st.sidebar:
        st.caption("Share this view: copy the address")
        st.code(address, language=None, wrap_lines=True)


def _app_base_url() -> str:
    """scheme://host[/base path] of the address the visitor opened (localhost when unknown, as in tests)."""
    parts = urlsplit(st.context.url or "")
    host = f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else "http://localhost:8501"
    base_path = (st.get_option("server.baseUrlPath") or "").strip("/")
    return f"{host}/{base_path}" if base_path else host


def chart(figure: alt.TopLevelMixin, data: pd.DataFrame, name: str) -> None:
    """Draw an altair chart and offer its data as CSV and its picture as PNG and SVG."""
    # Compound charts (concat, facet) keep the widths they were drawn with; single charts fill the column.
    compound = isinstance(figure, alt.VConcatChart | alt.HConcatChart | alt.ConcatChart | alt.FacetChart)
    st.altair_chart(figure, width="content" if compound else "stretch", height=_height_of(figure))
    row = st.container(horizontal=True)
    row.download_button("CSV", data=_csv_of(data), file_name=f"{name}.csv", mime="text/csv",
                        key=f"csv-{name}", icon=":material/download:", on_click="ignore")
    row.download_button("PNG", data=_lazy_image(figure, "png"), file_name=f"{name}.png", mime="image/png",
                        key=f"png-{name}", icon=":material/image:", on_click="ignore")
    row.download_button("SVG", data=_lazy_image(figure, "svg"), file_name=f"{name}.svg",
                        mime="image/svg+xml", key=f"svg-{name}", icon=":material/draw:", on_click="ignore")


def _height_of(figure: alt.TopLevelMixin) -> int | str:
    """The chart's own height plus room for its title, axes and legend; Streamlit's "content" squashes it."""
    height = getattr(figure, "height", alt.Undefined)
    return int(height) + 110 if isinstance(height, int | float) else "content"


def _csv_of(data: pd.DataFrame) -> Callable[[], bytes]:
    return lambda: data.to_csv(index=False).encode("utf-8")


def _lazy_image(figure: alt.TopLevelMixin, fmt: str) -> Callable[[], bytes]:
    """Rendered only when the visitor asks for it (vl-convert works offline)."""

    def render() -> bytes:
        import vl_convert as vlc

        spec = figure.to_json()
        if fmt == "png":
            return vlc.vegalite_to_png(spec, scale=2)
        return vlc.vegalite_to_svg(spec).encode("utf-8")

    return render


# --- The sentence as models read it ---------------------------------------------------------------


def sentence_tokens(hint: str = "Type a sentence in the sidebar.") -> tuple[str, ...] | None:
    """The sidebar sentence as tokens, bounded by seqviz.text.prepare (with a note when it was cut);
    None, with ``hint`` shown, when there is nothing to read."""
    from seqviz.text import prepare

    result = prepare(sentence())
    if result.message:
        notice(result.message)
    if not result.tokens:
        st.info(hint, icon=":material/edit:")
        return None
    return tuple(result.tokens)


def unknown_note(vocab, tokens, model_label: str) -> None:
    """Name the words a model has never seen; they are read as <unk>, never dropped."""
    tokens = list(tokens)
    unknown = vocab.unknown_words(tokens)
    if unknown:
        distinct = list(dict.fromkeys(unknown))
        st.caption(escape_markdown(
            f"Not in the vocabulary of {model_label.lower()}: {len(unknown)} of these {len(tokens)} tokens, "
            f"read as <unk>: {', '.join(distinct[:12])}{' …' if len(distinct) > 12 else ''}."))


# --- Shipped models: cached, read-only, shared by every session ------------------------------------


@st.cache_resource(max_entries=16, show_spinner="Loading a trained model…")
def checkpoint(name: str):
    """A zoo model in eval mode with gradients off, shared read-only by all sessions (seqviz.zoo.load)."""
    import torch

    from seqviz import zoo

    # Small models, many visitors: one thread per computation beats threads fighting over few cores.
    torch.set_num_threads(1)
    return zoo.load(name)


@st.cache_data(max_entries=4, show_spinner=False)
def zoo_metadata() -> dict[str, dict]:
    """name -> the JSON of every shipped model (no torch needed)."""
    from seqviz import zoo

    return zoo.all_metadata()


def models_ready(names: list[str]) -> bool:
    """True when every model in ``names`` is shipped; otherwise say which are missing and how to rebuild them."""
    from seqviz import zoo

    have = set(zoo.available())
    missing = [n for n in names if n not in have]
    if missing:
        st.error(f"These trained models are not shipped in assets/models/: {', '.join(missing)}. "
                 "Rebuild them with `python -m seqviz train --all`.")
    return not missing


# --- Traces: cached per (model, sentence) ---------------------------------------------------------
# Arguments are plain strings and tuples so Streamlit can hash them; results are dataclasses of numpy.

TRACE_CACHE = dict(max_entries=512, show_spinner=False)


@st.cache_data(**TRACE_CACHE)
def classifier_trace(name: str, tokens: tuple[str, ...]):
    ck = checkpoint(name)
    return ck.model.trace(list(tokens), ck.vocabularies["tokens"])


@st.cache_data(**TRACE_CACHE)
def lstm_gates(name: str, tokens: tuple[str, ...]):
    """Gate trace of the lstm classifier, or of a translator's encoder (its forward direction)."""
    import torch

    from seqviz.models.classifiers import lstm_gate_trace

    ck = checkpoint(name)
    if hasattr(ck.model, "gate_trace"):
        return ck.model.gate_trace(list(tokens), ck.vocabularies["tokens"])
    vocab = ck.vocabularies["src"]
    ids = vocab.encode(list(tokens))
    with torch.inference_mode():
        emb = ck.model.encoder.embed(torch.tensor([ids]))[0]  # (T, E)
    return lstm_gate_trace(ck.model.encoder.lstm, emb, vocab.decode(ids))


@st.cache_data(**TRACE_CACHE)
def self_attention(name: str, tokens: tuple[str, ...]):
    ck = checkpoint(name)
    return ck.model.attention_trace(list(tokens), ck.vocabularies["tokens"])


def output_limit(tokens) -> int:
    """Longest translation decoded for a source of this length (the grammar's French is under 1.5x + 5)."""
    return 2 * len(tokens) + 5


@st.cache_data(**TRACE_CACHE)
def translation(name: str, tokens: tuple[str, ...]):
    ck = checkpoint(name)
    src, tgt = ck.vocabularies["src"], ck.vocabularies["tgt"]
    return ck.model.trace(src.encode(list(tokens)), src, tgt, max_len=output_limit(tokens))


def runaway_note(trace, tokens) -> None:
    """Say so when a translator stopped at the length limit without writing its end marker."""
    if len(trace.out_tokens) >= output_limit(tokens):
        st.caption(f"Stopped at {len(trace.out_tokens)} words without an end-of-sentence marker: the model was "
                   "repeating itself, as translators do on sentences unlike anything they were trained on.")


@st.cache_data(**TRACE_CACHE)
def saliency(name: str, tokens: tuple[str, ...]):
    from seqviz.analysis.gradients import saliency as compute

    ck = checkpoint(name)
    return compute(ck.model, list(tokens), ck.vocabularies["tokens"])


@st.cache_resource(max_entries=8, show_spinner="Building the untrained twin of a model…")
def initial_model(name: str):
    """The zoo model ``name`` as it was before training: same config and seed, fresh weights."""
    import torch

    from seqviz import zoo
    from seqviz.models import build

    ck = checkpoint(name)
    with torch.random.fork_rng():  # leave the process's random state alone
        torch.manual_seed(zoo.entry(name).seed)
        model = build(ck.family, ck.config)
    return model.eval().requires_grad_(False)


@st.cache_data(max_entries=64, show_spinner="Measuring ‖∂h_T/∂h_k‖ on random sequences…")
def jacobian_curve(name: str, trained: bool, length: int, scale: float = 1.0):
    from seqviz.analysis.gradients import jacobian_curve as compute

    model = checkpoint(name).model if trained else initial_model(name)
    return compute(model, length=length, samples=3, scale=scale)


def marked_tokens(checked) -> str:
    """Markdown of a translation with the words that differ from the reference in red (text escaped)."""
    words = []
    for word, ok in zip(checked.output, checked.matches, strict=True):
        safe = escape_markdown(word)
        words.append(safe if ok else f":red[**{safe}**]")
    return " ".join(words) if words else "*(nothing)*"


@st.cache_data(max_entries=2, show_spinner="Running the chapter's code…")
def chapter_shapes():
    from seqviz.analysis.timing import chapter_shapes as compute

    return compute()


@st.cache_data(max_entries=1, show_spinner="Timing an LSTM layer against a self-attention layer…")
def forward_times():
    """Measured once per server; the page's "Measure again" clears this cache."""
    from seqviz.analysis.timing import forward_times as compute

    checkpoint("transformer")  # sets torch to one thread, as for every model here
    return compute()
