"""A page compiles while a garbage-collection callback raises.

Dask's scheduler hooks a GC-diagnosis callback into `gc.callbacks`; it raises an AssertionError now and then when a
cluster starts or stops in another thread. Python reports it as "Exception ignored" and goes on, unless the reporting
hook itself calls ast.parse (pytest's unraisable-exception plugin does, by formatting the traceback in Python): then
the ast.parse the collection interrupted, Streamlit compiling a page, fails with "AST constructor recursion depth
mismatch" (stop 33's CI). pyproject.toml turns that plugin off; this test fails if it is on again.
"""

import gc
from pathlib import Path

from streamlit.runtime.scriptrunner import magic

PAGE = Path(__file__).resolve().parents[2] / "app_pages" / "attention.py"


def test_a_page_compiles_while_a_gc_callback_raises(capfd):
    def raising(phase: str, _info: dict) -> None:
        if phase == "stop":
            raise AssertionError("a GC callback failed (as distributed.gc's does when a cluster starts)")

    body = PAGE.read_text()
    threshold = gc.get_threshold()
    gc.callbacks.append(raising)
    gc.set_threshold(50, 1, 1)  # collections of every generation while the page's tree is built
    try:
        for _ in range(5):
            magic.add_magic(body, str(PAGE))
    finally:
        gc.callbacks.remove(raising)
        gc.set_threshold(*threshold)
    assert "a GC callback failed" in capfd.readouterr().err  # the callback did raise, and was reported
