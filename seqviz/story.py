"""The pages of the story, in the chapter's order: one source for the router, the home page's map and the
shipped models each page shows.

A page is listed here only once it is built. ``models`` names, once, what a page shows: under a view's name
(seqviz.views), the shipped models its picker offers first; under a role, the shipped model whose measured
figures the page's text quotes; under "watch", the views a run on /train is watched through, in order of
preference (the first that fits the model being trained; seqviz.watch).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class StoryPage:
    script: str  # path of the page script, relative to the repository root
    url_path: str  # the fixed address: "" for home, else "/rnn-memory" style without the slash
    title: str
    icon: str  # a Material icon, as Streamlit spells it
    summary: str  # one line for the home page's map
    models: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)  # view or role -> names


HOME = StoryPage("app_pages/home.py", "", "Home", ":material/home:",
                 "What this lab is, and the map of the story.")

STORY: tuple[StoryPage, ...] = (
    StoryPage("app_pages/order.py", "order", "Order matters", ":material/swap_horiz:",
              "Two support emails with the same words and different meanings: a bag-of-words model cannot "
              "tell them apart; models that read in order can.",
              {"email-classifier": ("bow", "rnn", "gru", "lstm", "transformer"), "bag of words": ("bow",)}),
    StoryPage("app_pages/rnn_memory.py", "rnn-memory", "RNN memory", ":material/replay:",
              "The chapter's tiniest RNN, live: watch a memory fade step by step, and the gradient "
              "vanish (or explode) as it travels back in time."),
    StoryPage("app_pages/vanishing_gradients.py", "vanishing-gradients", "Vanishing gradients",
              ":material/trending_down:",
              "Gradients through time measured on trained models: which words can still move the decision, "
              "how fast ∂h_T/∂h_k shrinks, and whether a model can learn twenty steps back.",
              {"saliency": ("rnn", "gru", "lstm", "transformer"), "recurrent": ("rnn", "gru", "lstm"),
               "memory": ("memory-rnn", "memory-gru", "memory-lstm")}),
    StoryPage("app_pages/lstm_gates.py", "lstm-gates", "LSTM gates", ":material/tune:",
              "The forget, input and output gates of a trained LSTM, word by word, on your sentence.",
              {"gates": ("lstm",)}),
    StoryPage("app_pages/encoder_decoder.py", "encoder-decoder", "Encoder-decoder", ":material/compress:",
              "Your sentence translated into French by four trained models, and why squeezing it into one "
              "vector fails on long sentences.",
              {"translator": ("plain", "additive", "dot", "transformer-translator"), "bottleneck": ("plain",),
               "attention": ("additive",)}),
    StoryPage("app_pages/attention.py", "attention", "Attention", ":material/center_focus_strong:",
              "The worked attention example by hand (score, softmax, mix), then the same three steps inside "
              "a trained translator, with its alignment of English and French words.",
              {"alignment": ("additive", "dot")}),
    StoryPage("app_pages/transformer.py", "transformer", "Transformer", ":material/hub:",
              "The chapter's code run live, attention in every layer and head, and measured speed: why the "
              "transformer dropped recurrence.",
              {"self-attention": ("transformer",), "cross-attention": ("transformer-translator",),
               "throughput": ("plain", "additive", "dot", "transformer-translator"),
               "recurrent translator": ("dot",), "transformer translator": ("transformer-translator",)}),
    StoryPage("app_pages/explain.py", "explain", "Attention as explanation", ":material/psychology_alt:",
              "Does the output depend on what attention shows? Attention beside gradient and leave-one-out "
              "importance, on your sentence and on held-out data, and the output with the weights replaced.",
              {"explain-translation": ("additive", "transformer-translator"),
               "explain-classifier": ("attention-lstm",), "pronoun": ("transformer",)}),
    StoryPage("app_pages/what_if.py", "what-if", "What if?", ":material/alt_route:",
              "Question a translator: the words it passed over, beam search's tree, a word forced, attention "
              "moved, one word changed, the nearest training sentences and a map of its states.",
              {"what-if": ("additive",)}),
    StoryPage("app_pages/train.py", "train", "Train your own", ":material/model_training:",
              "Train a translator, a classifier or a memory model here, watch it learn, and use it on every "
              "page; the chapter's experiments are presets.",
              {"watch": ("memory", "alignment", "translator", "gates", "self-attention", "email-classifier")}),
)

PAGES: tuple[StoryPage, ...] = (HOME, *STORY)


def models(key: str) -> tuple[str, ...]:
    """The shipped models the story shows under ``key`` (a view's name or a role); () when no page names any."""
    return next((page.models[key] for page in STORY if key in page.models), ())
