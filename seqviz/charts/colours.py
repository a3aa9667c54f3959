"""Colours: the palette every chart draws with, and which colour a model is drawn in."""

from __future__ import annotations

import altair as alt

# Colours that stay apart for colour-blind readers (Okabe–Ito).
BLUE, ORANGE, GREEN, VERMILLION, PURPLE, GREY = "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#777777"

SKY, YELLOW, BLACK = "#56B4E9", "#F0E442", "#000000"
# Numbers written beside bars: a mid grey that reads on the light and the dark theme alike (contrast about
# 4.3:1 on white and on the dark background). Streamlit themes a chart's axes and legends, not its text marks,
# whose default is black.
LABEL_GREY = "#7A7A7A"

# A shipped model's colour is its family's (one shipped model per family and task); a visitor's own model takes
# YOUR_COLOURS by its place in the session's list, so it keeps one colour on every chart of every page. None of
# them is the family colours, and all read on the light and the dark theme.
FAMILY_COLOURS = {"bow": GREY, "rnn": VERMILLION, "gru": GREEN, "lstm": BLUE, "transformer": PURPLE,
                  "plain": VERMILLION, "additive": BLUE, "dot": GREEN, "transformer-seq2seq": PURPLE}
YOUR_COLOURS = (ORANGE, SKY, "#CC6677", "#999933", "#DDCC77", "#44AA99")


def model_colour(family: str, yours: int | None = None) -> str:
    """A shipped model's colour (its family's), or the colour of the visitor's ``yours``-th model."""
    if yours is not None:
        return YOUR_COLOURS[yours % len(YOUR_COLOURS)]
    return FAMILY_COLOURS.get(family, GREY)


def model_colours(colours: dict[str, str]) -> alt.Scale:
    """A colour scale for {model label: colour} (see model_colour), in the order given."""
    return alt.Scale(domain=list(colours), range=list(colours.values()))
