"""The colours seqviz draws with: Okabe–Ito's, which stay apart for colour-blind readers and read on the light
and the dark theme. Families take theirs from here (seqviz.families), charts the rest (seqviz.charts.colours)."""

BLUE, ORANGE, GREEN, VERMILLION, PURPLE, GREY = "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#777777"
SKY, YELLOW, BLACK = "#56B4E9", "#F0E442", "#000000"
