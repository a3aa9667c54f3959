"""Pure functions from traces and analyses to altair charts (no streamlit, no torch).

Each ``*_data`` function returns the tidy table behind a chart (what a page offers
as CSV), and each chart function draws that table. Words on an axis are labelled
by position and text, "03 parcel", so repeated words stay apart and in order.
Every mark has a tooltip. Layers that draw one table share a base chart without data and get the table once,
from ``alt.layer(..., data=data)``: layers that each carry the same frame make altair hash it through its text
form, tens of milliseconds per layer.

Charts of the sentence are *templates*: built from display options only, they draw the table named
``TABLE``, which ``seqviz.ui.chart`` sends beside the spec. A new sentence then changes only the table: the
server builds no chart, and the browser swaps the data in the chart it already has instead of compiling a
new one. Their axes sort words by their position labels (``sort="ascending"``: "01 the" before "02 cat"): with
``sort=None`` the browser, swapping one table for the next, kept labels it already had and put a renamed word
last. Their sizes are steps per word.

Every chart is made by a *figure factory* registered by name (seqviz.charts.figure): ``charts.make("alignment",
src_tokens, out_tokens, weights)`` returns a :class:`Figure`, the template and its table together. Views and the
chapter's figures (seqviz.story) call factories; pages draw what they get. A new chart is one factory in one
module here, found by name: nothing to list. The modules, by concern (import a helper from its module):

- ``base``: the table a template draws, heatmaps on a canvas, position labels, legends, titles that fit a phone;
- ``colours``: the palette, each family's colour and the visitor's models' colours;
- ``worked``: the chapter's worked figures (the tiny RNN's memory and gradient, the worked attention example);
- ``heatmaps``: the heatmap template, a translator's alignment, a transformer's heads;
- ``gates``: an LSTM's gates (heatmaps of every unit, one unit's lines, the mean forget gate);
- ``attention``: one decoder step of attention (scores, then weights), titled with the attention part's own score;
- ``gradients``: saliency per word and the Jacobian's norm against distance;
- ``classifiers``: the email classifiers' probabilities and what a bag of words sees;
- ``metrics``: measured results (held-out comparisons from the zoo's metadata, throughput, forward time);
- ``training``: a run's curves on /train;
- ``explain``: attention beside gradient and leave-one-out importance, their τ on held-out data, attention replaced.
"""


import importlib
import pkgutil

from seqviz.charts.figure import FIGURES, Figure, make

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["FIGURES", "Figure", "make"]
