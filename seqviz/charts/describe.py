"""A chart's text alternative, for a screen reader: what the chart shows and its main numbers, read from the same
table the chart draws (seqviz.ui gives it to the chart as its accessible name; the CSV beside the chart holds every
number)."""

from __future__ import annotations

import math

import pandas as pd

MAX_CHARS = 600  # a screen reader reads the whole name at once: a few sentences, not the table
MAX_NUMBERS = 3  # numeric columns summed up (their range, and where it is reached)
MAX_LABELS = 2  # text columns that name a row ("03 parcel", "additive")


def chart_title(spec: dict) -> str:
    """What the chart is: its description (a heatmap's, on a canvas) or its titles, top-level first, in order."""
    found: list[str] = []

    def text_of(title) -> str:
        if isinstance(title, dict):
            title = title.get("text", "")
        if isinstance(title, list):
            title = " ".join(str(line) for line in title)
        return str(title).strip() if isinstance(title, str) else ""

    def walk(node) -> None:
        if isinstance(node, dict):
            if any(key in node for key in ("mark", "layer", "concat", "hconcat", "vconcat", "facet", "spec")):
                title = text_of(node.get("title", ""))
                if title and not any(title in seen for seen in found):
                    found.append(title)
            for key, value in node.items():
                if key not in ("encoding", "data", "datasets", "config", "usermeta", "title"):
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    description = spec.get("description") if isinstance(spec, dict) else None
    if isinstance(description, str) and description.strip():
        found.append(description.strip())
    walk(spec)
    return "; ".join(found[:3])


def _number(value: float) -> str:
    return f"{value:.3g}"


LABEL_CHARS = 40  # of a row's name (a visitor's word may be long)


def _row_name(table: pd.DataFrame, labels: list[str], index) -> str:
    name = ", ".join(str(table.at[index, column]) for column in labels)
    return name if len(name) <= LABEL_CHARS else name[:LABEL_CHARS - 1].rstrip() + "…"


def summary(table: pd.DataFrame | None) -> str:
    """The table's size and, for its first numeric columns, the range of each and the rows where it is reached:
    "16 rows. weight from 0.01 (02 never, 01 où) to 0.93 (01 where, 01 où)."."""
    if table is None or len(table) == 0:
        return "It has no data."
    table = table.reset_index(drop=True)
    numeric = [c for c in table.columns if pd.api.types.is_numeric_dtype(table[c])
               and not pd.api.types.is_bool_dtype(table[c])]
    labels = [c for c in table.columns if c not in numeric][:MAX_LABELS]
    parts = [f"{len(table)} row{'s' if len(table) != 1 else ''}"]
    for column in numeric[:MAX_NUMBERS]:
        values = pd.to_numeric(table[column], errors="coerce")
        finite = values[values.map(lambda v: math.isfinite(v))]
        if finite.empty:
            parts.append(f"{column}: no value")
            continue
        low, high = finite.idxmin(), finite.idxmax()
        where = (lambda i: f" ({_row_name(table, labels, i)})") if labels else (lambda i: "")
        if finite[low] == finite[high]:
            parts.append(f"{column} {_number(finite[low])} throughout")
        else:
            parts.append(f"{column} from {_number(finite[low])}{where(low)} to {_number(finite[high])}{where(high)}")
    return ". ".join(parts) + "."


def _untitled(table: pd.DataFrame | None) -> str:
    """A chart with no title, named by what its table holds: "A chart of score, weight α by source word"."""
    if table is None or not len(table.columns):
        return "A chart"
    numeric = [str(c) for c in table.columns if pd.api.types.is_numeric_dtype(table[c])
               and not pd.api.types.is_bool_dtype(table[c])][:MAX_NUMBERS]
    labels = [str(c) for c in table.columns if c not in numeric][:MAX_LABELS]
    return f"A chart of {', '.join(numeric) or 'values'}" + (f" by {', '.join(labels)}" if labels else "")


def describe(spec: dict, table: pd.DataFrame | None) -> str:
    """The chart's text alternative: its title, then :func:`summary` of its table, cut to MAX_CHARS."""
    title = chart_title(spec) or _untitled(table)
    text = f"{title}{'' if title.endswith(('.', '?', '!')) else '.'} {summary(table)}"
    tail = " Every number is in the chart's CSV download."
    room = MAX_CHARS - len(tail)
    return (text if len(text) <= room else text[:room - 1].rstrip() + "…") + tail
