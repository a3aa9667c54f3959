"""The pages of the story, in the chapter's order: one source for the router and the home page's map.

A page is listed here only once it is built.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StoryPage:
    script: str  # path of the page script, relative to the repository root
    url_path: str  # the fixed address: "" for home, else "/rnn-memory" style without the slash
    title: str
    icon: str  # a Material icon, as Streamlit spells it
    summary: str  # one line for the home page's map


HOME = StoryPage("app_pages/home.py", "", "Home", ":material/home:",
                 "What this lab is, and the map of the story.")

STORY: tuple[StoryPage, ...] = (
    StoryPage("app_pages/order.py", "order", "Order matters", ":material/swap_horiz:",
              "Two support emails with the same words and different meanings: a bag-of-words model cannot "
              "tell them apart; models that read in order can."),
    StoryPage("app_pages/rnn_memory.py", "rnn-memory", "RNN memory", ":material/replay:",
              "The chapter's tiniest RNN, live: watch a memory fade step by step, and the gradient "
              "vanish (or explode) as it travels back in time."),
    StoryPage("app_pages/vanishing_gradients.py", "vanishing-gradients", "Vanishing gradients",
              ":material/trending_down:",
              "Gradients through time measured on trained models: which words can still move the decision, "
              "how fast ∂h_T/∂h_k shrinks, and whether a model can learn twenty steps back."),
    StoryPage("app_pages/lstm_gates.py", "lstm-gates", "LSTM gates", ":material/tune:",
              "The forget, input and output gates of a trained LSTM, word by word, on your sentence."),
    StoryPage("app_pages/encoder_decoder.py", "encoder-decoder", "Encoder-decoder", ":material/compress:",
              "Your sentence translated into French by four trained models, and why squeezing it into one "
              "vector fails on long sentences."),
    StoryPage("app_pages/attention.py", "attention", "Attention", ":material/center_focus_strong:",
              "The worked attention example by hand (score, softmax, mix), then the same three steps inside "
              "a trained translator, with its alignment of English and French words."),
    StoryPage("app_pages/transformer.py", "transformer", "Transformer", ":material/hub:",
              "The chapter's code run live, attention in every layer and head, and measured speed: why the "
              "transformer dropped recurrence."),
    StoryPage("app_pages/train.py", "train", "Train your own", ":material/model_training:",
              "Train a translator, a classifier or a memory model here, watch it learn, and use it on every "
              "page; the chapter's experiments are presets."),
)

PAGES: tuple[StoryPage, ...] = (HOME, *STORY)
