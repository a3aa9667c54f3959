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

The modules, by concern (every public name is also here, as ``charts.alignment_chart``):

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

from seqviz.charts.attention import score_title, step_chart, step_data
from seqviz.charts.base import (
    LEGEND_ROW_PX,
    LOG_FLOOR,
    MODEL_LABEL_PX,
    TABLE,
    TITLE_LINE_CHARS,
    draws_table,
    legend_rows,
    model_legend,
    position_labels,
    table,
    wrap_titles,
)
from seqviz.charts.classifiers import bag_chart, bag_data, probabilities_chart, probabilities_data
from seqviz.charts.colours import (
    BLACK,
    BLUE,
    GREEN,
    GREY,
    LABEL_GREY,
    ORANGE,
    PURPLE,
    SKY,
    VERMILLION,
    YELLOW,
    YOUR_COLOURS,
    model_colour,
    model_colours,
)
from seqviz.charts.explain import (
    ABLATION_NAMES,
    GRADIENT,
    LEAVE_ONE_OUT,
    ablation_chart,
    ablation_data,
    importance_chart,
    importance_data,
    pronoun_chart,
    pronoun_data,
    tau_chart,
    tau_data,
)
from seqviz.charts.gates import (
    GATE_FIELDS,
    gate_column_px,
    gates_chart,
    gates_data,
    mean_forget_chart,
    mean_forget_data,
    unit_lines_chart,
    unit_lines_data,
)
from seqviz.charts.gradients import jacobian_chart, jacobian_data, saliency_chart, saliency_data
from seqviz.charts.heatmaps import (
    ANNOTATED_CELLS,
    alignment_annotated,
    alignment_chart,
    alignment_data,
    attention_heads_chart,
    attention_heads_data,
    heads_cell_px,
    heatmap,
    heatmap_data,
)
from seqviz.charts.metrics import (
    memory_accuracy_chart,
    memory_curve,
    memory_data,
    throughput_chart,
    throughput_data,
    timing_chart,
    timing_data,
    translation_by_length_chart,
    translation_by_length_data,
    twins_chart,
    twins_data,
)
from seqviz.charts.training import MAX_CURVE_POINTS, training_chart, training_data
from seqviz.charts.worked import (
    GRADIENT_SERIES,
    attention_steps_data,
    attention_weights_chart,
    context_mix_chart,
    context_mix_data,
    gradient_chart,
    gradient_data,
    memory_chart,
    tiny_rnn_data,
)

# Every name callers use, as before the package (pages, seqviz.ui, seqviz.watch, tests, benchmarks).
__all__ = [
    "ABLATION_NAMES",
    "ANNOTATED_CELLS",
    "BLACK",
    "BLUE",
    "GATE_FIELDS",
    "GRADIENT",
    "GRADIENT_SERIES",
    "GREEN",
    "GREY",
    "LABEL_GREY",
    "LEAVE_ONE_OUT",
    "LEGEND_ROW_PX",
    "LOG_FLOOR",
    "MAX_CURVE_POINTS",
    "MODEL_LABEL_PX",
    "ORANGE",
    "PURPLE",
    "SKY",
    "TABLE",
    "TITLE_LINE_CHARS",
    "VERMILLION",
    "YELLOW",
    "YOUR_COLOURS",
    "ablation_chart",
    "ablation_data",
    "alignment_annotated",
    "alignment_chart",
    "alignment_data",
    "attention_heads_chart",
    "attention_heads_data",
    "attention_steps_data",
    "attention_weights_chart",
    "bag_chart",
    "bag_data",
    "context_mix_chart",
    "context_mix_data",
    "draws_table",
    "gate_column_px",
    "gates_chart",
    "gates_data",
    "gradient_chart",
    "gradient_data",
    "heads_cell_px",
    "heatmap",
    "heatmap_data",
    "importance_chart",
    "importance_data",
    "jacobian_chart",
    "jacobian_data",
    "legend_rows",
    "mean_forget_chart",
    "mean_forget_data",
    "memory_accuracy_chart",
    "memory_chart",
    "memory_curve",
    "memory_data",
    "model_colour",
    "model_colours",
    "model_legend",
    "position_labels",
    "probabilities_chart",
    "probabilities_data",
    "pronoun_chart",
    "pronoun_data",
    "saliency_chart",
    "saliency_data",
    "score_title",
    "step_chart",
    "step_data",
    "table",
    "tau_chart",
    "tau_data",
    "throughput_chart",
    "throughput_data",
    "timing_chart",
    "timing_data",
    "tiny_rnn_data",
    "training_chart",
    "training_data",
    "translation_by_length_chart",
    "translation_by_length_data",
    "twins_chart",
    "twins_data",
    "unit_lines_chart",
    "unit_lines_data",
    "wrap_titles"
]
