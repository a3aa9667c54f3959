"""Run by benchmarks/browser_cold.py in a fresh process: does this page, run alone, import torch, and from which line
of the project first? ``python -m benchmarks.first_torch_import app_pages/home.py`` (from the repository's root)
prints ``RESULT {'torch': ..., 'chain': [...], 'exception': [...]}``: the chain is the stack, in the project's own
files, at the first import of torch."""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

ROOT = str(Path.cwd())
HERE = str(Path(__file__).resolve())


class Spy:
    """A finder that finds nothing: it notes the stack at the first search for torch."""

    def __init__(self) -> None:
        self.first: list[list[str]] = []

    def find_spec(self, name, path=None, target=None):
        if name == "torch" and not self.first:
            self.first.append([f"{Path(f.filename).relative_to(ROOT)}:{f.lineno}" for f in traceback.extract_stack()
                               if f.filename.startswith(ROOT) and "/.venv/" not in f.filename
                               and f.filename != HERE])
        return None


def main(script: str) -> None:
    spy = Spy()
    sys.meta_path.insert(0, spy)
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(ROOT) / "app.py"), default_timeout=300)  # a relative path: from this file
    at.run()
    at.switch_page(script).run()
    print("RESULT", {"torch": "torch" in sys.modules, "chain": spy.first[0] if spy.first else None,
                     "exception": [str(e.value) for e in at.exception]})


if __name__ == "__main__":
    main(sys.argv[1])
