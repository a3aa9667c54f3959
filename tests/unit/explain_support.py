"""The chapter's sentences and their vocabularies, shared by tests/unit/test_explain_analysis.py (the translators)
and tests/unit/test_explain_classifiers.py (which uses its <unk> id, UNK_ID)."""

from seqviz.data.translation import CHAPTER_PAIRS
from seqviz.text import UNK, Vocab

SOURCES = [english.split() for english, _ in CHAPTER_PAIRS]  # 16, 15, 6, 11, 5 and 6 words
TARGETS = [french.split() for _, french in CHAPTER_PAIRS]
VOCABULARIES = {"src": Vocab.build(SOURCES), "tgt": Vocab.build(TARGETS)}
UNK_ID = VOCABULARIES["src"].stoi[UNK]
