"""The app's models: the visitor's own beside the shipped ones, the pickers, and traces cached by fingerprint.

A page asks for a view ("alignment", "gates", ...; seqviz.views) with :func:`pick`, traces what comes back
with :func:`trace` and draws it with ``seqviz.ui.show``, whether the models are shipped or the visitor's. The
shipped models a view shows first are named once, in the story's page list (seqviz.story). Shipped models
load once per server and are shared read-only. A visitor's models live in their browser's lab, in the lab store
(seqviz.ui.yours, which also draws the sidebar's "Your models"): every tab of the browser sees the same ones, and
:func:`checkpoint` loads one through the same checks as an upload, once per fingerprint. Every cache of traces
and measurements is keyed by the checkpoint's fingerprint, so visitors' models never collide and never pose as
a shipped model.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable

import streamlit as st

from seqviz import families, registry, story, views
from seqviz.charts.colours import model_colour
from seqviz.limits import output_limit
from seqviz.registry import ModelRef
from seqviz.ui import yours


def _escape(text: str) -> str:
    from seqviz.ui import escape_markdown

    return escape_markdown(text)


# --- Shipped models: read once per server, shared read-only -----------------------------------------


@st.cache_resource(show_spinner=False)
def _shipped() -> tuple[dict[str, registry.Shipped], dict[str, registry.Broken]]:
    return registry.shipped()


@st.cache_resource(max_entries=32, show_spinner="Loading a trained model…")
def _load_shipped(name: str, fingerprint: str):
    """A zoo model in eval mode with gradients off; ``fingerprint`` keys the cache to the file's bytes."""
    from seqviz import checkpoints
    from seqviz.runtime import configure_torch

    configure_torch()
    return checkpoints.load(_shipped()[0][name].path)


def _fits(view: str, ref: ModelRef) -> bool:
    return views.fits(view, ref.family, ref.task)


def checkpoint(ref: ModelRef):
    """The loaded checkpoint behind a reference (shipped: the server's shared copy; yours: read from your lab once,
    then shared by fingerprint)."""
    if ref.shipped:
        return _load_shipped(ref.name, ref.fingerprint)
    return yours.load(ref)


def shipped_ref(name: str) -> ModelRef | None:
    found = _shipped()[0].get(name)
    return found.ref if found else None


def candidates(view: str) -> list[ModelRef]:
    """The models that fit ``view``: the visitor's own first, then the shipped ones in the zoo's order."""
    return [ref for ref in yours.usable() if _fits(view, ref)] + [s.ref for s in _shipped()[0].values()
                                                                 if _fits(view, s.ref)]


def fitting(refs: list[ModelRef], view: str) -> list[ModelRef]:
    """The models among ``refs`` that fit ``view``, in the order given."""
    return [ref for ref in refs if _fits(view, ref)]


def pick(view: str, *, multi: bool = False, label: str = "Model") -> list[ModelRef]:
    """A picker over the models that fit ``view``, bound to the address under the view's name
    (/lstm-gates?gates=additive); returns the chosen ones. Each view is on one page only, so a choice never
    leaks into another page's picker.

    The page list (seqviz.story) names the shipped model(s) the view shows first. A shipped default that is
    missing or damaged on disk is named with the command that rebuilds it; the page goes on with what it has.
    """
    defaults = list(story.models(view))
    _report_broken(defaults)
    options = candidates(view)
    if not options:
        st.warning(f"No model here fits this view ({views.get(view).fits_text}).", icon=":material/warning:")
        return []
    by_key = {ref.label: ref for ref in options}  # the label is also what the address holds
    keys = list(by_key)
    chosen_defaults = [k for k in defaults if k in by_key]
    help_text = (f"Fits this view: {views.get(view).fits_text}. Your own models (uploaded or trained in this "
                 "browser) come first; shipped ones stay in the address when you share the page.")

    if multi:
        chosen = st.multiselect(label, keys, default=chosen_defaults, key=view, bind="query-params", help=help_text)
    else:
        index = keys.index(chosen_defaults[0]) if chosen_defaults else 0
        one = st.selectbox(label, keys, index=index, key=view, bind="query-params", help=help_text)
        chosen = [one] if one is not None else []
    refs = [by_key[k] for k in chosen if k in by_key]
    if not refs:
        st.info("Pick at least one model above.", icon=":material/touch_app:")
    return refs


def _report_broken(names: list[str]) -> None:
    broken = _shipped()[1]
    for name in names:
        if name in broken:
            st.error(broken[name].advice, icon=":material/error:")


def download_buttons(refs: list[ModelRef], key: str) -> None:
    """A "Download checkpoint" button for each model shown: the one file that the upload accepts back."""
    if not refs:
        return
    with st.expander("Download checkpoint" + ("s" if len(refs) > 1 else ""), icon=":material/download:"):
        for ref in refs:
            row = st.container(horizontal=True, vertical_alignment="center")
            row.download_button("Download checkpoint", data=_file_bytes(ref), file_name=yours.file_name(ref),
                                mime="application/octet-stream", key=f"dl-{key}-{ref.fingerprint[:12]}",
                                icon=":material/download:", on_click="ignore")
            row.markdown(_escape(ref.label))


def _file_bytes(ref: ModelRef):
    if ref.shipped:
        path = _shipped()[0][ref.name].path
        return lambda: path.read_bytes()
    return yours.file_bytes(ref.fingerprint)


def family_label(ref: ModelRef) -> str:
    return families.get(ref.family).label


def colours(refs: list[ModelRef]) -> dict[str, str]:
    """label -> colour, in the order given: a shipped model in its family's colour, a visitor's own in the colour
    of its place among their models, the same on every chart (seqviz.charts.model_colour)."""
    mine = [ref.fingerprint for ref in yours.usable()]

    def place(ref: ModelRef) -> int | None:
        if ref.shipped:
            return None
        return mine.index(ref.fingerprint) if ref.fingerprint in mine else 0

    return {ref.label: model_colour(ref.family, place(ref)) for ref in refs}


# --- Traces and measurements: cached per model fingerprint ------------------------------------------


def cached_by_fingerprint(*, resource: bool = False, **options) -> Callable[[Callable], Callable]:
    """A decorator: ``f(checkpoint, *args)`` computed once per model and arguments on this server and shared by
    every visitor; call the result with a ModelRef or a loaded checkpoint in the checkpoint's place.

    The cache (st.cache_data, or st.cache_resource for objects shared as they are) is keyed by the checkpoint's
    fingerprint (sha256 of its bytes) and the other arguments: Streamlit never hashes the model, and a visitor's
    model never collides with another's or poses as a shipped one. ``options`` are the cache's (max_entries,
    show_spinner)."""
    cache = st.cache_resource if resource else st.cache_data

    def decorate(f: Callable) -> Callable:
        def keyed(fingerprint: str, args: tuple, _checkpoint):  # (a leading underscore: Streamlit hashes it not)
            return f(_checkpoint, *args)

        # Streamlit keys a cache by its function's module and qualified name: each decorated function its own.
        keyed.__module__, keyed.__qualname__, keyed.__name__ = f.__module__, f.__qualname__, f.__name__
        cached = cache(**options)(keyed)

        @functools.wraps(f)
        def call(model, *args):
            loaded = checkpoint(model) if isinstance(model, ModelRef) else model
            return cached(loaded.fingerprint, args, loaded)

        call.clear = cached.clear
        return call

    return decorate


@cached_by_fingerprint(max_entries=512, show_spinner=False)
def _trace(ck, trace_kind: str, tokens: tuple[str, ...]):
    view = next(v for v in views.VIEWS.values() if v.trace_kind == trace_kind)  # the views of a kind trace alike
    return view.trace(ck.model, ck.vocabularies, list(tokens))


def trace(ref: ModelRef, view: str, tokens):
    """The model's trace of the tokens for ``view`` (seqviz.views), computed once per model, sentence and kind of
    trace, and shared by every visitor (keyed by the checkpoint's fingerprint)."""
    return _trace(ref, views.get(view).trace_kind, tuple(tokens))


def traces(refs: list[ModelRef], view: str, tokens) -> dict[str, object]:
    """label -> the model's trace of the tokens for ``view``, in the order given."""
    return {ref.label: trace(ref, view, tokens) for ref in refs}


@st.cache_data(max_entries=64, show_spinner="Translating the chapter's sentences…")
def _chapter_table(labelled_fingerprints: tuple[tuple[str, str], ...], _translators) -> list[dict]:
    from seqviz.analysis.translation_check import chapter_table as table

    return table(_translators)


def chapter_table(refs: list[ModelRef]) -> list[dict]:
    """The chapter's sentence pairs against each translator's greedy output (one batch per model, cached)."""
    return _chapter_table(tuple((ref.label, ref.fingerprint) for ref in refs),
                          [(ref.label, checkpoint(ref)) for ref in refs])


@cached_by_fingerprint(resource=True, max_entries=16, show_spinner="Building the untrained twin of a model…")
def _untrained(_ck):
    """The model as it was before training: same family, config and seed, fresh weights."""
    import torch

    from seqviz.models import build

    with torch.random.fork_rng(devices=[]):  # leave the process's random state alone
        torch.manual_seed(int(_ck.meta.get("seed") or 0))
        model = build(_ck.family, _ck.config)
    return model.eval().requires_grad_(False)


@cached_by_fingerprint(max_entries=96, show_spinner="Measuring ‖∂h_T/∂h_k‖ on random sequences…")
def _jacobian(ck, trained: bool, length: int, scale: float):
    from seqviz.analysis.gradients import jacobian_curve

    model = ck.model if trained else _untrained(ck)
    return jacobian_curve(model, length=length, samples=3, scale=scale)


def jacobian(ref: ModelRef, trained: bool, length: int, scale: float = 1.0):
    return _jacobian(ref, trained, int(length), float(scale))


SENTENCE_ENDS = frozenset({".", "?", "!"})


def unknown_notes(refs: list[ModelRef], tokens) -> None:
    """Name the words the models have never seen; they are read as <unk>, never dropped. Models that miss the
    same words share one line (the shipped translators share a vocabulary), a warning when they miss most of the
    sentence (another language, say). Translators are told apart from a text of several sentences: they learned
    from one sentence at a time."""
    tokens = list(tokens)
    missing: dict[tuple[str, ...], list[str]] = {}
    for ref in refs:
        unknown = checkpoint(ref).input_vocab.unknown_words(tokens)
        if unknown:
            missing.setdefault(tuple(unknown), []).append(ref.label)
    for unknown, labels in missing.items():
        distinct = list(dict.fromkeys(unknown))
        note = (f"Not in the vocabulary of {', '.join(labels)}: {len(unknown)} of these {len(tokens)} tokens, read as "
                f"<unk>: {', '.join(distinct[:12])}{' …' if len(distinct) > 12 else ''}.")
        if 2 * len(unknown) > len(tokens):
            st.warning(_escape(note + " Most of this text is unknown to it, so what it shows rests on the few words "
                                      "it knows: expect it to guess."), icon=":material/help:")
        else:
            st.caption(_escape(note))
    sentences = 1 + sum(token in SENTENCE_ENDS for token in tokens[:-1])
    if sentences > 1 and any(families.get(ref.family).translates for ref in refs):
        st.caption(f"Your text has {sentences} sentences. These translators learned from one sentence at a time: "
                   "they read it as one long sentence and usually stop after the first, so type one sentence at a "
                   "time to see each translated.")


def runaway_note(ref: ModelRef, trace, tokens) -> None:
    """Say so when a translator stopped at the length limit without writing its end marker, and why, from the task
    it was trained on: a source that task's data knows (the model lost its place), or one unlike its data."""
    from seqviz.tasks import TASKS

    if len(trace.out_tokens) < output_limit(len(tokens)):
        return
    task = TASKS.get(ref.task)
    known = task is not None and hasattr(task, "reference") and task.reference(tokens) is not None
    why = (f"this sentence is one of its task's own ({task.label}), so the model simply lost its place in it"
           if known else "as translators do on sentences unlike anything they were trained on")
    st.caption(f"Stopped at {len(trace.out_tokens)} words without an end-of-sentence marker: the model was "
               f"repeating itself; {why}.")


# --- Held-out measurements: shipped ones from their checkpoints, a visitor's measured on demand ---------


@st.cache_resource(max_entries=4, show_spinner=False)
def _task(task: str, vocabulary_key: str, _vocabularies):
    """A task with these vocabularies (its data generated once per server for each vocabulary)."""
    from seqviz.tasks import make_task

    return make_task(task, vocabularies=_vocabularies)


def _task_of(ck):
    """The task the model was trained on, with the model's own vocabularies."""
    words = "\n".join(f"{name}:{' '.join(vocab.itos)}" for name, vocab in sorted(ck.vocabularies.items()))
    return _task(ck.task, hashlib.sha256(words.encode()).hexdigest(), ck.vocabularies)


@cached_by_fingerprint(max_entries=64, show_spinner=False)
def _measure(ck) -> dict:
    return _task_of(ck).evaluate(ck.model)


@cached_by_fingerprint(max_entries=64, show_spinner=False)
def _held_out_study(ck, view: str) -> dict:
    from seqviz.runtime import give_memory_back

    try:
        return views.get(view).held_out(ck.model, _task_of(ck))
    finally:
        give_memory_back()  # the batched passes' freed memory, back to the OS


@st.cache_resource(max_entries=32, show_spinner=False)
def _shipped_studies(name: str, fingerprint: str) -> dict:
    from seqviz import studies

    return studies.read(_shipped()[0][name].path, fingerprint)


def held_out_study(ref: ModelRef, view: str) -> dict:
    """What the view ``view`` measures of the model on held-out data (its ``held_out``): a shipped model's as it
    was shipped (seqviz.studies), a visitor's measured once per model and server, keyed by fingerprint, bounded by
    seqviz.limits, with a spinner while it runs."""
    shipped = _shipped_studies(ref.name, ref.fingerprint).get(view) if ref.shipped else None
    if shipped is not None:
        return shipped
    with st.spinner(f"Measuring {ref.label} on held-out data (once, then kept)…"):
        return _held_out_study(ref, view)


def held_out(ref: ModelRef) -> dict:
    """The model's held-out metrics, from the same evaluation code on the same held-out data for every model.

    Shipped models carry theirs, measured when they were trained; a visitor's model is measured here, once
    (then cached by fingerprint), with a spinner while it runs.
    """
    if ref.shipped:
        return _shipped()[0][ref.name].meta.get("metrics") or {}
    with st.spinner(f"Measuring {ref.label} on the held-out data (once, then kept)…"):
        return _measure(ref)


def measured(refs: list[ModelRef]) -> dict[str, dict]:
    """label -> {"metrics": ...}, the shape the comparison charts read."""
    return {ref.label: {"metrics": held_out(ref)} for ref in refs}


def quoted(role: str) -> dict | None:
    """The JSON document of the shipped model the story quotes in ``role`` ("bottleneck": the plain encoder-
    decoder; seqviz.story), or None if it is missing."""
    return shipped_meta(story.models(role)[0])


def shipped_meta(name: str) -> dict | None:
    """A shipped model's whole JSON document (training seconds, steps, learning curve...), or None if missing."""
    found = _shipped()[0].get(name)
    return found.meta if found else None
