"""Colours: the palette every chart draws with, and which colour a model is drawn in."""

from __future__ import annotations

import altair as alt

from seqviz import families
from seqviz.palette import BLACK, BLUE, GREEN, GREY, ORANGE, PURPLE, SKY, VERMILLION, YELLOW

__all__ = ["BLACK", "BLUE", "GREEN", "GREY", "LABEL_GREY", "ORANGE", "PURPLE", "SKY", "VERMILLION", "YELLOW",
           "YOUR_COLOURS", "model_colour", "model_colours"]  # the palette (seqviz.palette) is drawn from here too

# Numbers written beside bars: a mid grey that reads on the light and the dark theme alike (contrast about
# 4.3:1 on white and on the dark background). Streamlit themes a chart's axes and legends, not its text marks,
# whose default is black.
LABEL_GREY = "#7A7A7A"

# A shipped model's colour is its family's (seqviz.families; one shipped model per family and task); a visitor's
# own model takes YOUR_COLOURS by its place in the session's list, so it keeps one colour on every chart of every
# page. None of them is a family's colour, and all read on the light and the dark theme.
YOUR_COLOURS = (ORANGE, SKY, "#CC6677", "#999933", "#DDCC77", "#44AA99")


def model_colour(family: str, yours: int | None = None) -> str:
    """A shipped model's colour (its family's), or the colour of the visitor's ``yours``-th model."""
    if yours is not None:
        return YOUR_COLOURS[yours % len(YOUR_COLOURS)]
    return families.get(family).colour


def model_colours(colours: dict[str, str]) -> alt.Scale:
    """A colour scale for {model label: colour} (see model_colour), in the order given."""
    return alt.Scale(domain=list(colours), range=list(colours.values()))
