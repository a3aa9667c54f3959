"""/what-if: question a translator. Seven questions, each a part of the page that reruns alone."""

import time

import streamlit as st

from seqviz import limits, ui, views
from seqviz.analysis.decoding import NO_ATTENTION, forceable_words, replacement_words
from seqviz.charts.base import position_labels
from seqviz.ui import models
from seqviz.views.whatif import step_labels

VIEW = views.get("what-if")
NEXT, BEAM, FORCE, EDIT, CHANGE, NEIGHBOURS, MAP = (f"what-if-{part}" for part in (
    "next", "beam", "force", "edit", "change", "neighbours", "map"))

st.title("What if? Question the translator")
st.markdown(
    "Every page so far showed what a translator did with your sentence. Here you question the decision: what else "
    "did it consider at each word, would a wider search have found a better sentence, what happens if it is made "
    "to write another word or to look somewhere else, which training sentences put it in the same state, and what "
    "one changed word does. Tools such as Seq2Seq-Vis and LIT ask these questions of large models; here they run "
    "live on the lab's own translators, shipped or yours."
)


@models.cached_by_fingerprint(max_entries=256, show_spinner=False)
def _asked(ck, question: str, tokens: tuple[str, ...], settings: tuple):
    return VIEW.ask(ck.model, ck.vocabularies, question, tokens, **dict(settings))


def answer(ref, question: str, tokens, **settings):
    """The view's answer for this model and sentence (cached by fingerprint), or None with the reason shown."""
    try:
        return _asked(ref, question, tuple(tokens), tuple(sorted(settings.items())))
    except ValueError as error:
        ui.notice(str(error))
        return None


@st.cache_resource(show_spinner="Reading the 20,000 training sentences (once per server)…")
def _training_pairs():
    return VIEW.training_pairs()


@models.cached_by_fingerprint(resource=True, max_entries=limits.WHATIF_INDEX_MODELS,
                              show_spinner="Indexing the training sentences' states (once per model and server)…")
def _index(ck, side: str):
    pairs = _training_pairs()
    started = time.perf_counter()
    index = VIEW.neighbour_index(ck.model, ck.vocabularies, pairs, side)
    return index, time.perf_counter() - started


@models.cached_by_fingerprint(resource=True, max_entries=limits.WHATIF_INDEX_MODELS,
                              show_spinner="Fitting the map to held-out states (once per model and server)…")
def _state_map(ck):
    return VIEW.state_map(ck.model, ck.vocabularies)


def attends(ref) -> bool:
    return bool(models.fitting([ref], "alignment"))


def side_by_side(ref, pair: dict, name: str, **options) -> None:
    """Two decodes' alignments in two columns (stacked on a phone); the plain translator has none to draw."""
    if not attends(ref):
        st.caption("The plain translator has no attention, so there is no alignment to draw: compare the words.")
        return
    for column, (title, decoded) in zip(st.columns(2), pair.items(), strict=True):
        with column:
            marked = options.get("marked", {}).get(title)
            ui.show("what-if", {ref.label: decoded}, f"{name}-{ui.slug(title)}", figure="alignment", title=title,
                    marked=marked)


def within(key: str, options: list, default) -> None:
    """Before a picker whose options follow the sentence: a pick the new sentence no longer has (step 9 of a shorter
    translation) goes back to ``default``, as a fresh page would open it."""
    if key in st.session_state and st.session_state[key] not in options:
        st.session_state[key] = default


def from_address(key: str, takes, what: str) -> None:
    """Before a picker bound to the address: say so when the address asks for a setting it cannot take (``takes``,
    a test of the address's text); the picker then shows its usual choice."""
    for value in st.query_params.get_all(key):
        if not takes(value):
            ui.notice(f"The address asks for {what} “{value[:40]}”, which is not one to pick here: showing the usual "
                      "choice instead.")


def whole(low: int, high: int):
    return lambda text: text.isdigit() and low <= int(text) <= high


def one_of(options):
    return lambda text: text in options


def temperature_ok(text: str) -> bool:
    try:
        value = float(text)
    except ValueError:
        return False
    low, high = limits.WHATIF_TEMPERATURE_RANGE
    return value == 0 or low <= value <= high


def marked(tokens, differs) -> str:
    """A translation as Markdown, each word escaped, the words ``differs`` marks in bold with ≠."""
    return " ".join(f"**{ui.escape_markdown(w)}**≠" if d else ui.escape_markdown(w)
                    for w, d in zip(tokens, differs, strict=True)) or "(nothing)"


def words_line(label: str, tokens) -> str:
    return f"**{label}**: " + ui.escape_markdown(" ".join(tokens) or "(nothing)")


@ui.part(NEXT)
def next_word(ref, tokens) -> None:
    st.header("1. The next word, step by step")
    st.markdown("At each step the decoder gives every French word a probability; greedy decoding writes the most "
                "likely one. The bars show the words it passed over (a log scale: the trained model is sure of "
                "most words). With a temperature above 0 the word is drawn at random from the probabilities "
                "raised to 1/temperature instead: below 1 sharper, above 1 flatter.")
    changed = ui.rerun_part(NEXT)
    left, middle, right = st.columns(3)
    from_address("k", whole(1, limits.WHATIF_MAX_TOP_K), "a number of words")
    from_address("temp", temperature_ok, "the temperature")
    from_address("seed", whole(0, limits.WHATIF_MAX_SEED), "the seed")
    k = left.slider("Words listed", 1, limits.WHATIF_MAX_TOP_K, 5, key="k", bind="query-params", on_change=changed)
    temperature = middle.slider("Temperature (0: greedy)", 0.0, limits.WHATIF_TEMPERATURE_RANGE[1], 0.0, step=0.1,
                                key="temp", bind="query-params", on_change=changed)
    seed = right.number_input("Seed", 0, limits.WHATIF_MAX_SEED, 0, key="seed", bind="query-params",
                              on_change=changed, help="The same seed draws the same words; it matters only when "
                                                      "the temperature is above 0.")
    decoded = answer(ref, "next", tokens, k=k, temperature=round(float(temperature), 1), seed=int(seed))
    if decoded is None:
        return
    st.markdown(words_line("It writes", decoded.tokens) + ("" if decoded.ended else " (stopped at the length limit)"))
    labels = step_labels(decoded)
    within("nstep", list(range(len(labels))), VIEW.least_sure(decoded))
    from_address("nstep", one_of(labels), "the output step")
    step = st.select_slider("Output step", options=list(range(len(labels))), format_func=labels.__getitem__,
                            value=VIEW.least_sure(decoded), key="nstep", bind="query-params", on_change=changed)
    step = min(step, len(labels) - 1)
    st.markdown(ui.escape_markdown(VIEW.next_summary(decoded, step, sampling=temperature > 0)))
    ui.show("what-if", {ref.label: decoded}, "what-if-next", figure="next-words", step=step, title="{label}")


@ui.part(BEAM)
def beam(ref, tokens) -> None:
    st.header("2. Beam search")
    st.markdown("Greedy decoding commits to one word at a time. Beam search keeps the *width* best partial "
                "translations by their log-probability, extends each by its best next words, and keeps the best "
                "again; a hypothesis ending in the end marker \\<eos\\> is finished. Width 1 is greedy. Length "
                "normalisation ranks by log p per word, so that a short translation is not preferred only for being "
                "short.")
    changed = ui.rerun_part(BEAM)
    left, right = st.columns(2, vertical_alignment="bottom")
    from_address("beam", whole(1, limits.WHATIF_MAX_BEAM), "the beam width")
    width = left.slider("Beam width", 1, limits.WHATIF_MAX_BEAM, 4, key="beam", bind="query-params",
                        on_change=changed)
    norm = right.toggle("Length normalisation", value=True, key="norm", bind="query-params", on_change=changed)
    search = answer(ref, "beam", tokens, width=width, length_norm=norm)
    if search is None:
        return
    st.markdown(ui.escape_markdown(VIEW.beam_summary(search)))
    ui.show("what-if", {ref.label: search}, "what-if-beam", figure="beam-tree", title="{label}")
    st.caption("Each word is written with the log-probability of its whole hypothesis, from \\<bos\\> to it. Grey: "
               "continuations the beam pruned (the best few of each step are drawn; the CSV holds them all).")
    st.markdown("**The final beam, ranked**" + (" (by log p per word)" if norm else " (by log p)"))
    ui.table(VIEW.final_beam(search), lambda v: f"{v:.4g}" if isinstance(v, float) else str(v),
             text_columns=("translation", "greedy's"))


@ui.part(FORCE)
def force(ref, tokens, ranked) -> None:
    st.header("3. Force a word")
    st.markdown("Put another word at one step and let the decoder go on from there: does it recover, or does one "
                "word send the rest of the sentence elsewhere? The end marker \\<eos\\> ends the sentence there.")
    changed = ui.rerun_part(FORCE)
    labels = step_labels(ranked)
    within("fstep", list(range(len(labels))), VIEW.least_sure(ranked))
    from_address("fstep", one_of(labels), "the output step")
    left, right = st.columns(2)
    with left:
        step = st.select_slider("Step", options=list(range(len(labels))), format_func=labels.__getitem__,
                                value=VIEW.least_sure(ranked), key="fstep", bind="query-params", on_change=changed)
    step = min(step, len(labels) - 1)
    writable = set(forceable_words(models.checkpoint(ref).vocabularies))
    choices = [w for w in ranked.steps[step].top_tokens if w in writable]  # the most likely first
    within("fword", choices, choices[min(1, len(choices) - 1)])
    from_address("fword", one_of(choices), "the forced word")
    word = right.selectbox("Word to write there (most likely first)", choices,
                           index=min(1, len(choices) - 1), key="fword", bind="query-params", on_change=changed)
    forced = answer(ref, "force", tokens, step=step, word=word)
    if forced is None:
        return
    st.markdown(ui.escape_markdown(VIEW.force_summary(forced)))
    st.markdown(words_line("Greedy", forced.original.tokens) + "  \n" + words_line("Forced", forced.forced.tokens))
    side_by_side(ref, {"Greedy": forced.original, "With the word forced": forced.forced}, "what-if-force")


@ui.part(EDIT)
def edit(ref, tokens, ranked) -> None:
    st.header("4. Edit the attention")
    st.markdown("At one step, put all the attention on a source word you pick: the step's context vector and its "
                "word are recomputed, and the rest of the sentence is decoded again (Seq2Seq-Vis's attention "
                "correction). For the transformer, the last layer's cross-attention of that step, in every head.")
    if not attends(ref):
        st.info(NO_ATTENTION, icon=":material/block:")
        return
    changed = ui.rerun_part(EDIT)
    labels, sources = step_labels(ranked), position_labels(ranked.src_tokens)
    within("estep", list(range(len(labels))), 0)
    within("eword", list(range(len(sources))), VIEW.least_looked(ranked, 0))
    from_address("estep", one_of(labels), "the output step")
    from_address("eword", one_of(sources), "the source word")
    left, right = st.columns(2)
    with left:
        step = st.select_slider("Step", options=list(range(len(labels))), format_func=labels.__getitem__,
                                key="estep", bind="query-params", on_change=changed)
    step = min(step, len(labels) - 1)
    position = right.selectbox("Source word to look at", list(range(len(sources))), format_func=sources.__getitem__,
                               index=VIEW.least_looked(ranked, step), key="eword", bind="query-params",
                               on_change=changed)
    edited = answer(ref, "edit", tokens, step=step, source_position=position)
    if edited is None:
        return
    st.markdown(ui.escape_markdown(VIEW.edit_summary(edited)))
    side_by_side(ref, {"Its own attention": edited.original, "With the step's attention edited": edited.edited},
                 "what-if-edit")


@ui.part(CHANGE)
def change(ref, tokens, ranked) -> None:
    st.header("5. One word changed")
    st.markdown("Replace one word of your sentence and compare the two translations; words that are not matched in "
                "the other translation are marked.")
    changed = ui.rerun_part(CHANGE)
    sources = position_labels(ranked.src_tokens)
    words = sorted(replacement_words(models.checkpoint(ref).vocabularies))
    position, word = VIEW.default_change(ranked.src_tokens, words)
    within("cpos", list(range(len(sources))), position)
    within("cword", words, word)
    from_address("cpos", one_of(sources), "the word to replace")
    from_address("cword", one_of(words), "the new word")
    left, right = st.columns(2)
    position = left.selectbox("Word to replace", list(range(len(sources))), format_func=sources.__getitem__,
                              index=position, key="cpos", bind="query-params", on_change=changed)
    word = right.selectbox("Put this word there", words, index=words.index(word), key="cword", bind="query-params",
                           on_change=changed)
    result = answer(ref, "change", tokens, position=position, word=word)
    if result is None:
        return
    st.markdown(ui.escape_markdown(VIEW.change_summary(result)))
    st.markdown("**Before**: " + marked(result.before.tokens, result.differs_before)
                + "  \n**After**: " + marked(result.after.tokens, result.differs_after))
    side_by_side(ref, {"Your sentence": result.before, "With one word changed": result.after}, "what-if-change",
                 marked={"Your sentence": result.differs_before, "With one word changed": result.differs_after})


@ui.part(NEIGHBOURS)
def neighbours(ref, tokens, ranked) -> None:
    st.header("6. Neighbours in the training data")
    box = st.expander("Nearest training sentences (builds an index of the training states the first time)",
                      icon=":material/travel_explore:", key="neighbours", bind="query-params",
                      on_change=ui.rerun_part(NEIGHBOURS))
    with box:
        if not box.open:
            return
        changed = ui.rerun_part(NEIGHBOURS)
        sides = {"encoder": "a source word's encoder state", "decoder": "an output step's decoder state"}
        side = st.radio("Look up", list(sides), format_func=sides.__getitem__, horizontal=True, key="nside",
                        bind="query-params", on_change=changed)
        labels = position_labels(ranked.src_tokens) if side == "encoder" else step_labels(ranked)
        within("nwhich", list(range(len(labels))), 0)
        from_address("nwhich", one_of(labels), "the word or step")
        from_address("nk", whole(1, limits.WHATIF_MAX_NEIGHBOURS), "a number of neighbours")
        left, right = st.columns(2)
        which = left.selectbox("Source word" if side == "encoder" else "Output step", list(range(len(labels))),
                               format_func=labels.__getitem__, key="nwhich", bind="query-params", on_change=changed)
        k = right.slider("Neighbours", 1, limits.WHATIF_MAX_NEIGHBOURS, 5, key="nk", bind="query-params",
                         on_change=changed)
        index, seconds = _index(ref, side)
        where = {"position": min(which, len(labels) - 1)} if side == "encoder" else {"step": min(which,
                                                                                             len(labels) - 1)}
        try:
            found = VIEW.ask(models.checkpoint(ref).model, models.checkpoint(ref).vocabularies, "neighbours",
                             tokens, index=index, k=k, **where)
        except ValueError as error:
            ui.notice(str(error))
            return
        ui.table(VIEW.neighbour_table(found), "{:.3f}", text_columns=("word", "English", "French"))
        st.caption(f"Cosine similarity with the {len(index):,} states of {len(index.pairs):,} training sentences "
                   f"({index.nbytes / 2**20:.1f} MB, built in {seconds:.1f} s once per model on this server); "
                   "the word whose state it is is marked ⟦so⟧.")


@ui.part(MAP)
def state_map(ref, tokens) -> None:
    st.header("7. A map of states")
    box = st.expander("Encoder states of held-out sentences, and your sentence as a path (fits a map the first "
                      "time)", icon=":material/scatter_plot:", key="statemap", bind="query-params",
                      on_change=ui.rerun_part(MAP))
    with box:
        if not box.open:
            return
        colour_by = st.radio("Colour by", ["part", "position"], format_func={
            "part": "the grammar's part", "position": "position in the sentence"}.__getitem__, horizontal=True,
            key="mcolour", bind="query-params", on_change=ui.rerun_part(MAP))
        fitted = _state_map(ref)
        ck = models.checkpoint(ref)
        path = VIEW.ask(ck.model, ck.vocabularies, "map", tokens, state_map=fitted)
        st.markdown(ui.escape_markdown(VIEW.map_summary(fitted, path)))
        ui.show("what-if", {ref.label: (fitted, path)}, "what-if-map", figure="state-map", colour_by=colour_by,
                title="{label}: encoder states (PCA)")
        st.caption("Each dot is one word of a held-out sentence as the encoder holds it, projected on the two "
                   "directions in which these states vary most (scikit-learn's PCA). Words that play the same part "
                   "tend to gather: the encoder's state says what a word is doing in its sentence.")


picked = models.pick("what-if", label="Translator")
models.download_buttons(picked, "what-if")
tokens = ui.sentence_tokens("Type an English sentence in the sidebar, for example “where is my order ?”.") \
    if picked else None
if tokens:
    ref = picked[0]
    models.unknown_notes(picked, tokens)
    if not attends(ref):
        st.info("The plain translator reads your sentence only through the encoder's final memory: it has no "
                "attention, so sections 3 and 5 show its words without an alignment, and section 4 has nothing to "
                "edit.", icon=":material/info:")
    ranked = answer(ref, "ranked", tokens)
    next_word(ref, tokens)
    beam(ref, tokens)
    if ranked is not None:
        force(ref, tokens, ranked)
        edit(ref, tokens, ranked)
        change(ref, tokens, ranked)
        neighbours(ref, tokens, ranked)
    state_map(ref, tokens)

ui.share_box("what-if")
