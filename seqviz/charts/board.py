"""A class's board: the table of its posted runs, any held-out measure against any setting coloured by family, and
exact match against source length with a line per run (the chapter's bottleneck curve, drawn by the class).

``board_table`` turns the posts (seqviz.store.board.Post) into one row per run; the charts are templates (they
draw ``charts.TABLE``), so the board's refresh every few seconds sends only a new table.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from seqviz import families
from seqviz.charts.base import table
from seqviz.charts.figure import Figure, drawn, figure

# The settings a run has, as the board's table and pickers name them (seqviz.runs.RunSpec's fields).
SETTINGS = {"family": "family", "hidden": "hidden size", "embedding": "embedding size", "layers": "layers",
            "heads": "heads", "steps": "steps", "lr": "learning rate", "batch_size": "batch size", "seed": "seed"}
LENGTH = "length"  # seqviz.store.experiments.LENGTH: the x axis of source length
_FIXED = {"exact_match_le30": "exact match, sources of ≤ 30 tokens",
          "token_accuracy_le30": "token accuracy, sources of ≤ 30 tokens",
          "exact_match_ge25": "exact match, sources of ≥ 25 tokens",
          "token_accuracy_ge25": "token accuracy, sources of ≥ 25 tokens",
          "chapter_pairs": "the chapter's six pairs exactly right", "test_accuracy": "held-out accuracy",
          "twins_accuracy": "accuracy on word-identical twins",
          "twins_same_prediction": "twin pairs given the same team"}


def measure_name(key: str) -> str:
    """A board measure in words: "exact_match@25-30" -> "exact match, sources of 25-30 tokens"."""
    if key in _FIXED:
        return _FIXED[key]
    if "@" in key:
        head, _, bucket = key.partition("@")
        return f"{head.replace('_', ' ')}, sources of {bucket} tokens"
    if key.startswith("accuracy_at_"):
        return f"accuracy at distance {key.removeprefix('accuracy_at_')}"
    return key.replace("_", " ")


def _bucket_low(key: str) -> int:
    try:
        return int(key.partition("@")[2].split("-")[0])
    except ValueError:
        return 10**6


def board_table(posts) -> pd.DataFrame:
    """One row per post: its id, nickname, task, family, sizes and budget, training time and every held-out
    measure (a column per measure, empty where the run's task has none). Oldest post first."""
    rows = []
    for p in posts:
        spec = p.spec
        row = {"post": p.id, "nickname": p.nickname, "task": spec.get("task"), "family": spec.get("family")}
        row.update({field: spec.get(field) for field in SETTINGS if field != "family"})
        row["training seconds"] = p.train_seconds
        row.update(p.measures)
        rows.append(row)
    columns = ["post", "nickname", "task", "family", *[f for f in SETTINGS if f != "family"], "training seconds"]
    frame = pd.DataFrame(rows, columns=columns + sorted({k for r in rows for k in r} - set(columns),
                                                        key=lambda k: ("@" in k, _bucket_low(k), k)))
    return frame


def measures_of(frame: pd.DataFrame) -> list[str]:
    """The measure columns a board table has values in, summary measures before per-length ones."""
    fixed = {"post", "nickname", "task", "family", "training seconds", *SETTINGS}
    return [c for c in frame.columns if c not in fixed and frame[c].notna().any()]


def _legend(title: str) -> alt.Legend:
    """One entry a line under the chart, each cut to fit a phone's column (a family's label is long: at 390 px the
    chart is about 340 px wide)."""
    return alt.Legend(orient="bottom", title=title, labelLimit=260, columns=1)


def family_colours(names) -> dict[str, str]:
    """{family label: its colour} for the families on the board, in the pickers' order."""
    present = set(names)
    return {f.label: f.colour for f in families.FAMILIES.values() if f.name in present}


def points_data(frame: pd.DataFrame, measure: str, setting: str) -> pd.DataFrame:
    """The chart's table: each run's ``setting`` (x) and ``measure`` (y), with who posted it and its family."""
    if frame.empty or measure not in frame.columns or setting not in SETTINGS:
        return pd.DataFrame(columns=["nickname", "family", "x", "y"])
    kept = frame[frame[measure].notna()]
    x = kept["family"].map(lambda f: families.get(f).label) if setting == "family" else kept[setting]
    return pd.DataFrame({"nickname": kept["nickname"].astype(str), "family": kept["family"].map(
        lambda f: families.get(f).label), "x": x, "y": kept[measure].astype(float)}).reset_index(drop=True)


def board_chart(measure_title: str, setting: str, colours: tuple[tuple[str, str], ...]) -> alt.LayerChart:
    """Each run as a point at (its ``setting``, its measure), coloured by family, with a line through each family's
    mean at each value: the class's curve. A family along x is drawn as categories, a size or budget as numbers."""
    colour = alt.Color("family:N", scale=alt.Scale(domain=[c for c, _ in colours], range=[c for _, c in colours]),
                       legend=_legend("family"))
    x = (alt.X("x:N", title=SETTINGS[setting], sort=[c for c, _ in colours]) if setting == "family" else
         alt.X("x:Q", title=SETTINGS[setting], scale=alt.Scale(type="log" if setting in ("lr",) else "linear",
                                                                 zero=False)))
    y = alt.Y("y:Q", title=measure_title, scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%"))
    base = alt.Chart().encode(x=x, color=colour)
    runs = base.mark_point(filled=True, size=70, opacity=0.8).encode(
        y=y, tooltip=[alt.Tooltip("nickname:N"), alt.Tooltip("family:N"), alt.Tooltip("x:N", title=SETTINGS[setting]),
                      alt.Tooltip("y:Q", title=measure_title, format=".1%")])
    means = base.mark_line(strokeWidth=2).encode(y=alt.Y("mean(y):Q", title=measure_title))
    # No chart title: the pickers above it and the axes name what it draws, and a title of two lines (a long
    # measure, a phone's column) was cut off at the top of the chart's frame.
    return alt.layer(means, runs, data=table()).properties(width=460, height=280)


def length_data(frame: pd.DataFrame, metric: str = "exact_match") -> pd.DataFrame:
    """One row per run and source-length bucket: its ``metric`` on held-out sources of that length (translators),
    with the run's settings (a line may be coloured by one)."""
    rows = []
    kept = [field for field in SETTINGS if field not in ("family", "hidden") and field in frame.columns]
    for _, row in frame.iterrows():
        for column in frame.columns:
            if column.startswith(f"{metric}@") and pd.notna(row[column]):
                low, _, high = column.partition("@")[2].partition("-")
                rows.append({"run": f"{row['nickname']} (#{row['post']})", "family": families.get(row["family"]).label,
                             "hidden": row["hidden"], "sources": column.partition("@")[2],
                             "length": (int(low) + int(high)) / 2, "y": float(row[column]),
                             **{field: row[field] for field in kept}})
    return pd.DataFrame(rows, columns=["run", "family", "hidden", "sources", "length", "y", *kept])


def ramp(count: int, low: str = "#E69F00", high: str = "#0072B2") -> list[str]:
    """``count`` colours from orange to blue through mid-tones (each reads on the light and the dark theme)."""
    a, b = (tuple(int(c[i:i + 2], 16) for i in (1, 3, 5)) for c in (low, high))
    steps = [k / max(1, count - 1) for k in range(count)]
    return ["#" + "".join(f"{round(x + (y - x) * t):02x}" for x, y in zip(a, b, strict=True)) for t in steps]


def length_chart(colours: tuple[tuple[str, str], ...], metric_title: str = "exact match", by: str = "family",
                 levels: tuple = ()) -> alt.Chart:
    """A line per run: its held-out ``metric_title`` against the source's length (each bucket at its middle).
    Coloured by family, or (``by`` "hidden", say, when the class varies one size of one family) by that setting's
    ``levels``, small to large, orange to blue: a plain translator's line falls as sentences grow, later the larger
    its hidden size; attention holds it up."""
    if by == "family" or not levels:
        colour = alt.Color("family:N", scale=alt.Scale(domain=[c for c, _ in colours],
                                                         range=[c for _, c in colours]), legend=_legend("family"))
    else:
        colour = alt.Color(f"{by}:O", scale=alt.Scale(domain=list(levels), range=ramp(len(levels))),
                           legend=alt.Legend(orient="bottom", title=SETTINGS.get(by, by), direction="horizontal"))
    return alt.Chart(table()).mark_line(point=True, opacity=0.8).encode(
        x=alt.X("length:Q", title="source length (tokens, middle of each bucket)"),
        y=alt.Y("y:Q", title=metric_title, scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%")),
        color=colour, detail="run:N",
        tooltip=[alt.Tooltip("run:N"), alt.Tooltip("family:N"), alt.Tooltip("hidden:Q", title="hidden size"),
                 alt.Tooltip("sources:N", title="sources of (tokens)"), alt.Tooltip("y:Q", title=metric_title,
                                                                                   format=".1%")],
    ).properties(width=460, height=280)  # no title: see board_chart


@figure("board-points")
def board_points(frame: pd.DataFrame, measure: str, setting: str, colours: tuple[tuple[str, str], ...]) -> Figure:
    """The class's runs: each at (its ``setting``, its ``measure``), coloured by family."""
    return drawn(board_chart, points_data(frame, measure, setting), measure_name(measure), setting, colours)


@figure("board-by-length")
def board_by_length(frame: pd.DataFrame, metric: str, colours: tuple[tuple[str, str], ...], by: str = "family",
                    levels: tuple = ()) -> Figure:
    """The class's translators: each run's held-out ``metric`` against the source's length."""
    return drawn(length_chart, length_data(frame, metric), colours, metric.replace("_", " "), by, levels)
