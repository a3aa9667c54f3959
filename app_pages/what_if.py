"""/what-if: question a translator. Seven questions, each a part of the page that reruns alone."""

import time

import streamlit as st

from seqviz import limits, ui, views
from seqviz.analysis.decoding import NO_ATTENTION, forceable_words, replacement_words
from seqviz.charts.base import position_labels
from seqviz.ui import address, models
from seqviz.views.whatif import step_labels

VIEW = views.get("what-if")
ROW, ROW_LABEL = "row", "the row of weights I type"  # the attention edit's last pick
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
    k = address.slider(left, "Words listed", 1, limits.WHATIF_MAX_TOP_K, 5, key="k", what="a number of words",
                       on_change=changed)
    temperature = address.slider(middle, "Temperature (0: greedy)", 0.0, limits.WHATIF_TEMPERATURE_RANGE[1], 0.0,
                                 step=0.1, key="temp", what="the temperature", on_change=changed)
    seed = address.number_input(right, "Seed", 0, limits.WHATIF_MAX_SEED, 0, key="seed", what="the seed",
                                on_change=changed, help="The same seed draws the same words; it matters only when "
                                                      "the temperature is above 0.")
    decoded = answer(ref, "next", tokens, k=k, temperature=round(float(temperature), 1), seed=int(seed))
    if decoded is None:
        return
    st.markdown(words_line("It writes", decoded.tokens) + ("" if decoded.ended else " (stopped at the length limit)"))
    labels = step_labels(decoded)
    step = address.select_slider(None, "Output step", range(len(labels)), VIEW.least_sure(decoded), key="nstep",
                                 what="the output step", format_func=labels.__getitem__, on_change=changed)
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
    width = address.slider(left, "Beam width", 1, limits.WHATIF_MAX_BEAM, 4, key="beam", what="the beam width",
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
    left, right = st.columns(2)
    step = address.select_slider(left, "Step", range(len(labels)), VIEW.least_sure(ranked), key="fstep",
                                 what="the output step", format_func=labels.__getitem__, on_change=changed)
    step = min(step, len(labels) - 1)
    writable = set(forceable_words(models.checkpoint(ref).vocabularies))
    choices = [w for w in ranked.steps[step].top_tokens if w in writable]  # the most likely first
    word = address.selectbox(right, "Word to write there (most likely first)", choices,
                             choices[min(1, len(choices) - 1)], key="fword", what="the forced word",
                             on_change=changed)
    forced = answer(ref, "force", tokens, step=step, word=word)
    if forced is None:
        return
    st.markdown(ui.escape_markdown(VIEW.force_summary(forced)))
    st.markdown(words_line("Greedy", forced.original.tokens) + "  \n" + words_line("Forced", forced.forced.tokens))
    side_by_side(ref, {"Greedy": forced.original, "With the word forced": forced.forced}, "what-if-force")


@ui.part(EDIT)
def edit(ref, tokens, ranked) -> None:
    st.header("4. Edit the attention")
    st.markdown("At one step, put all the attention on a source word you pick, or type a whole row of weights: "
                "the step's context vector and its word are recomputed, and the rest of the sentence is decoded "
                "again (Seq2Seq-Vis's attention correction). For the transformer, the last layer's cross-attention "
                "of that step, in every head.")
    if not attends(ref):
        st.info(NO_ATTENTION, icon=":material/block:")
        return
    changed = ui.rerun_part(EDIT)
    labels, sources = step_labels(ranked), position_labels(ranked.src_tokens)
    left, right = st.columns(2)
    step = address.select_slider(left, "Step", range(len(labels)), 0, key="estep", what="the output step",
                                 format_func=labels.__getitem__, on_change=changed)
    step = min(step, len(labels) - 1)
    picks = [*range(len(sources)), ROW]
    position = address.selectbox(right, "Put the step's weight on", picks, VIEW.least_looked(ranked, step), key="eword",
                                 what="the source word", format_func=lambda p: ROW_LABEL if p == ROW else sources[p],
                                 on_change=changed)
    if position == ROW:
        own = VIEW.row_text(ranked.weights[step])
        typed = st.text_input("Weights, one per source word (divided by their sum)", key="erow", placeholder=own,
                              max_chars=limits.MAX_TOKENS * 12, bind="query-params", on_change=changed,
                              help="Numbers of 0 or more, separated by spaces or commas, in the order of the "
                                   "sentence's words.")
        heads = (" (averaged over its heads; a row you type goes to every head)"
                 if getattr(models.checkpoint(ref).model, "attention_heads", None) else "")
        st.caption(ui.escape_markdown(f"Its own weights at step {step + 1}{heads}, one per word of "
                                      f"“{' '.join(ranked.src_tokens)}”: {own}. Copy them and change a few."))
        if not typed.strip():
            return
        try:
            row = VIEW.typed_row(typed, len(sources))
        except ValueError as error:
            ui.notice(str(error))
            return
        edited = answer(ref, "edit", tokens, step=step, weights=tuple(float(w) for w in row))
    else:
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
    left, right = st.columns(2)
    position = address.selectbox(left, "Word to replace", range(len(sources)), position, key="cpos",
                                 what="the word to replace", format_func=sources.__getitem__, on_change=changed)
    word = address.selectbox(right, "Put this word there", words, word, key="cword", what="the new word",
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
        side = address.radio(None, "Look up", sides, "encoder", key="nside", what="what to look up",
                             format_func=sides.__getitem__, horizontal=True, on_change=changed)
        labels = position_labels(ranked.src_tokens) if side == "encoder" else step_labels(ranked)
        left, right = st.columns(2)
        which = address.selectbox(left, "Source word" if side == "encoder" else "Output step", range(len(labels)), 0,
                                  key="nwhich", what="the word or step", format_func=labels.__getitem__,
                                  on_change=changed)
        k = address.slider(right, "Neighbours", 1, limits.WHATIF_MAX_NEIGHBOURS, 5, key="nk",
                           what="a number of neighbours", on_change=changed)
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
        colours = {"part": "the grammar's part", "position": "position in the sentence"}
        colour_by = address.radio(None, "Colour by", colours, "part", key="mcolour", what="the colouring",
                                  format_func=colours.__getitem__, horizontal=True, on_change=ui.rerun_part(MAP))
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
