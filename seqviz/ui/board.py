"""A class's board on the class page: who is connected and training, the posted runs as a table, any held-out
measure against any setting (seqviz.charts.board), the class's best run, "Use this model", and posting.

The board is a fragment that looks again every CLASS_BOARD_REFRESH_S, so a post shows on every screen within a
few seconds, on any server of the lecture hall (it reads the store they share). Posting is its own fragment: the
visitor's finished runs appear in it as they end.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from seqviz import checkpoints, families, limits, ui
from seqviz.charts import board as charts
from seqviz.charts import make
from seqviz.store import StoreUnavailable, board, classes, runs
from seqviz.ui import lab
from seqviz.ui.classroom import say

NICKNAME_KEY = "class-nickname"
SUMMARY_SIZES = ("embedding", "hidden", "heads", "layers")


def _percent(value) -> str:
    return "–" if value is None or pd.isna(value) else f"{value:.1%}"


def _number(value) -> str:
    return "–" if value is None or pd.isna(value) else f"{value:g}"


def shown_table(frame: pd.DataFrame, measures: list[str]) -> pd.DataFrame:
    """The board's table as the page shows it: text cells (the nickname escaped by ui.table)."""
    rows = []
    for _, row in frame.iterrows():
        spec_family = families.get(row["family"])
        sizes = ", ".join(f"{field} {_number(row[field])}" for field in SUMMARY_SIZES if field in spec_family.sizes)
        cells = {"nickname": row["nickname"], "family": row["family"], "sizes": sizes or "–",
                 "steps": "–" if spec_family.counts else _number(row["steps"]),
                 "learning rate": "–" if spec_family.counts else _number(row["lr"]), "seed": _number(row["seed"])}
        cells.update({charts.measure_name(m): _percent(row.get(m)) for m in measures})
        seconds = row["training seconds"]
        cells["training time"] = "–" if pd.isna(seconds) else f"{seconds:.0f} s"
        rows.append(cells)
    return pd.DataFrame(rows)


def board_csv(frame: pd.DataFrame) -> bytes:
    """The whole board as CSV, every measure in its own column. A cell a spreadsheet would read as a formula (a
    nickname starting with =, +, - or @) is written with a ' before it."""
    safe = frame.drop(columns=["post"]).rename(columns={m: charts.measure_name(m) for m in charts.measures_of(frame)})
    safe["nickname"] = safe["nickname"].map(lambda s: f"'{s}" if str(s)[:1] in "=+-@\t\r" else s)
    return safe.to_csv(index=False).encode("utf-8")


def show(found, mine) -> None:
    """The live board of ``found`` (ClassInfo) for this lab's membership ``mine``."""
    if mine is not None and not mine.teacher:
        st.fragment(run_every=10.0)(_posting)(found)
    st.subheader("The board")
    st.fragment(run_every=limits.CLASS_BOARD_REFRESH_S)(_board)(found.code, bool(mine and mine.teacher))


def _posting(found) -> None:
    """Post one of this lab's finished runs with a nickname; take one of your posts back."""
    lab_id = lab.lab_id()
    try:
        states = [s for s in runs.states(lab.db(), lab_id, snapshots=False)
                  if s.ended and s.metrics and s.status in ("finished", "stopped")]
        done = board.posted_runs(lab.db(), found.code, lab_id)
        current = classes.find(lab.db(), found.code)
        if current is not None and current.auto_post and board.auto_post(lab.db(), found.code, lab_id, states):
            done = board.posted_runs(lab.db(), found.code, lab_id)
    except StoreUnavailable as error:
        st.error(f"Your runs cannot be read now: {ui.escape_markdown(str(error))}", icon=":material/cloud_off:")
        return
    with st.container(border=True):
        st.markdown("**Post a run to the board**")
        waiting = [s for s in states if s.id not in done]
        if NICKNAME_KEY not in st.session_state:
            member = classes.membership(lab.db(), found.id, lab_id)
            st.session_state[NICKNAME_KEY] = (member.nickname if member else None) or ""
        st.text_input("Your nickname on the board", key=NICKNAME_KEY, max_chars=limits.CLASS_NICKNAME_CHARS,
                      help="Classmates see it beside your runs. Pick one you are happy to show on the projector.")
        if not waiting:
            st.caption("Your finished runs appear here as they end (train one on /train).")
            return
        by_id = {s.id: s for s in waiting}
        chosen = st.selectbox("Your finished run", list(by_id), key="class-post-run",
                              format_func=lambda i: f"{by_id[i].name} ({by_id[i].status})")
        if st.button("Post it", type="primary", icon=":material/publish:", disabled=found.closed):
            state = by_id[chosen]
            try:
                board.post(lab.db(), found.code, lab_id, run_id=state.id, nickname=st.session_state[NICKNAME_KEY],
                           spec=state.spec.to_dict(), metrics=state.metrics, train_seconds=state.train_seconds,
                           fingerprint=state.fingerprint)
                say("success", f"Posted {state.name}: the whole class sees it on the board.")
            except (board.PostRefused, classes.ClassNotFound) as refused:
                say("error", str(refused))
            except StoreUnavailable as error:
                say("error", f"Not posted: {error}")
            st.rerun()


def _board(code: str, teacher: bool) -> None:
    lab.seen()  # a student watching the board is connected
    try:
        classes.seen(lab.db(), code)  # and a class whose board is looked at is in use (not purged)
        posts = board.posts(lab.db(), code)
        now = board.activity(lab.db(), code)
    except classes.ClassNotFound as gone:
        st.error(str(gone), icon=":material/search_off:")
        return
    except StoreUnavailable as error:
        st.error(f"The board cannot be read now: {ui.escape_markdown(str(error))}. It tries again in a few seconds.",
                 icon=":material/cloud_off:")
        return
    st.caption(f"{now['students']} student{'s' if now['students'] != 1 else ''} in this class: {now['connected']} "
               f"connected now, {now['training']} training. {now['posts']} run{'s' if now['posts'] != 1 else ''} "
               f"posted. The board looks for new posts every {limits.CLASS_BOARD_REFRESH_S:g} s.")
    if not posts:
        st.info("Nothing posted yet. A student's finished run appears here as soon as they post it.",
                icon=":material/hourglass_empty:")
        return
    frame = charts.board_table(posts)
    tasks = [t for t in ("translation", "emails", "memory") if (frame["task"] == t).any()]
    task = tasks[0] if len(tasks) == 1 else st.radio("Task", tasks, horizontal=True, key="board-task")
    part = frame[frame["task"] == task].reset_index(drop=True)
    measures = charts.measures_of(part)
    summary = [m for m in measures if "@" not in m]
    # The chart first, then the best run and the table: a class of thirty makes a long table, and the curve is what
    # the projector shows.
    _best(part, _chart(part, measures, code))
    shown = shown_table(part, summary)
    ui.table(shown, "{}", text_columns=tuple(shown.columns))
    _models(posts, part, teacher, code)
    if teacher:
        st.download_button("Download the board (CSV)", data=board_csv(frame), file_name=f"class-{code}.csv",
                           mime="text/csv", key="board-csv", icon=":material/download:", on_click="ignore")


def _chart(part: pd.DataFrame, measures: list[str], code: str) -> str:
    """The chart, with pickers for its axes; returns the summary measure the board ranks runs by."""
    found = classes.find(lab.db(), code)
    experiment = found.experiment if found is not None else None
    colours = tuple(charts.family_colours(part["family"]).items())
    settings = list(charts.SETTINGS) + ([charts.LENGTH] if any("@" in m for m in measures) else [])
    default_x = experiment.x if experiment is not None and experiment.x in settings else "hidden"
    # A translator's size varied (the bottleneck): its summary measures sit near 0% for every size on long
    # sentences, a flat line; exact match against source length, a line per run coloured by that size, is the
    # chapter's curve (each line falls as sentences grow, later the larger the size).
    by = "family"
    if experiment is not None and experiment.setting not in ("family", "seed") and part["family"].nunique() == 1:
        by = experiment.setting
        if charts.LENGTH in settings and experiment.task == "translation":
            default_x = charts.LENGTH
    columns = st.columns(2)
    x = columns[0].selectbox("Along x", settings, index=settings.index(default_x), key="board-x",
                             format_func=lambda s: "source length" if s == charts.LENGTH else charts.SETTINGS[s])
    summary = [m for m in measures if "@" not in m] or measures
    default_y = experiment.measure if experiment is not None and experiment.measure in summary else summary[0]
    if x == charts.LENGTH:
        metric = columns[1].selectbox("Up", ["exact_match", "token_accuracy"], key="board-length-measure",
                                      format_func=lambda m: m.replace("_", " "))
        levels = ()  # the setting's values, small to large: the experiment's, and any a student trained instead
        if by != "family":
            found = {*experiment.values, *(v.item() if hasattr(v, "item") else v for v in part[by].dropna())}
            levels = tuple(sorted(found, key=lambda v: (not isinstance(v, int | float), v)))
        ui.draw(make("board-by-length", part, metric, colours, by, levels), f"board-length-{code}")
        return default_y
    y = columns[1].selectbox("Up", summary, index=summary.index(default_y), key="board-y",
                             format_func=charts.measure_name)
    ui.draw(make("board-points", part, y, x, colours), f"board-{code}")
    return y


def _best(part: pd.DataFrame, measure: str) -> None:
    ranked = part[part[measure].notna()].sort_values([measure, "post"], ascending=[False, True])
    if ranked.empty:
        return
    best = ranked.iloc[0]
    st.success(f"The class's best run by {charts.measure_name(measure)}: **{ui.escape_markdown(str(best['nickname']))}"
               f"**'s {ui.escape_markdown(families.get(best['family']).label)}, {_percent(best[measure])}.",
               icon=":material/emoji_events:")


def _models(posts, part: pd.DataFrame, teacher: bool, code: str) -> None:
    """Use a post's model here (it joins Your models, checked as an upload); take back your own; the teacher removes
    any post."""
    lab_id = lab.lab_id()
    shown = {p.id: p for p in posts if p.id in set(part["post"])}
    label = {i: f"#{i} {p.nickname}: {families.get(p.spec.get('family')).label}" for i, p in shown.items()}
    chosen = st.selectbox("A post", list(shown), format_func=label.get, key="board-post")
    row = st.container(horizontal=True)
    if row.button("Use this model", icon=":material/add_circle:", key="board-use",
                  disabled=chosen is None or not shown[chosen].has_model,
                  help="Adds it to Your models: pick it on every page it fits, beside your own and the shipped ones."):
        _use(code, shown[chosen])
    if chosen is not None and shown[chosen].lab_id == lab_id and row.button("Take back my post", key="board-take"):
        board.take_back(lab.db(), code, lab_id, chosen)
        say("success", "Your post is off the board.")
        st.rerun()
    if teacher and chosen is not None and row.button("Remove this post", key="board-remove",
                                                     icon=":material/delete:"):
        try:
            classes.remove_post(lab.db(), code, chosen, lab_id=lab_id)
            say("success", "The post is removed.")
        except classes.NotTeacher as refused:
            say("error", str(refused))
        st.rerun()
    if chosen is not None and not shown[chosen].has_model:
        st.caption("Its model is no longer in its poster's lab (removed, or their lab was forgotten).")


def _use(code: str, post) -> None:
    from seqviz.ui import yours

    try:
        data = board.model_data(lab.db(), code, post.id)
        if data is None:
            say("error", "That model is no longer in its poster's lab.")
        else:
            ref, new = yours.add_model(data, f"{post.nickname} {post.spec.get('family')}", origin="class board")
            say("success", f"{ref.label} is in Your models: pick it on any page it fits." if new else
                f"{ref.label} is in Your models already.")
    except checkpoints.CheckpointError as error:
        say("error", f"That model was not added: {error}")
    except StoreUnavailable as error:
        lab.failed(error)
        say("error", f"That model was not added: {error}")
    st.rerun()
