"""The pages of the story, in the chapter's order: one source for the router and the home page's map.

A page is listed here only once it is built; there are no placeholder pages.
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
    StoryPage("app_pages/rnn_memory.py", "rnn-memory", "RNN memory", ":material/replay:",
              "The chapter's tiniest RNN, live: watch a memory fade step by step, and the gradient "
              "vanish (or explode) as it travels back in time."),
    StoryPage("app_pages/attention.py", "attention", "Attention", ":material/center_focus_strong:",
              "The worked attention example by hand: score with dot products, softmax, and mix the "
              "words into one context vector. Change any vector and follow the numbers."),
)

PAGES: tuple[StoryPage, ...] = (HOME, *STORY)
