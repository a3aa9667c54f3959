"""Run by benchmarks/browser_cold.py in a fresh process: a page's script alone (AppTest), timed per typed sentence.
``python -m benchmarks.page_script_seconds /attention '["a sentence", ...]'`` (from the repository's root) opens the
page, types each sentence in turn, and prints ``RESULT {"seconds": [...], "exception": [...]}``: the seconds of every
sentence's rerun but the first (the warm-up)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main(url_path: str, texts: list[str]) -> None:
    from streamlit.testing.v1 import AppTest

    from seqviz.story import PAGES

    script = next(p.script for p in PAGES if "/" + p.url_path == url_path)
    at = AppTest.from_file(str(Path.cwd() / "app.py"), default_timeout=300)  # a relative path: from this file
    at.run()
    at.switch_page(script).run()
    times = []
    for i, text in enumerate(texts):
        began = time.perf_counter()
        at.sidebar.text_input(key="s").set_value(text).run()
        if i:
            times.append(time.perf_counter() - began)
    print("RESULT", json.dumps({"seconds": times, "exception": [str(e.value) for e in at.exception]}))


if __name__ == "__main__":
    main(sys.argv[1], json.loads(sys.argv[2]))
