"""``python -m benchmarks.classroom --typing``: typing to painted on a page, on a quiet server and while visitors train
on it. Measured, never asserted in tests."""

from __future__ import annotations

import os


def typing_while_training(per_page: int = 12, runs: int = 2, page: str = "attention") -> dict:
    """Typing to painted on ``page`` (benchmarks/browser.py's measure) on a quiet server, then while ``runs``
    visitors train the quick translator on that server's ``runs`` local workers. Each visitor after the first sets
    a seed of its own (the n-th visitor seed n): identical runs are trained once, and the same preset and seed for
    all would train one run, not ``runs``."""
    import re

    from benchmarks.browser import typing
    from benchmarks.browser_tab import Sentences, Tab, running_server
    from seqviz import browser as harness

    os.environ["SEQVIZ_TRAIN_WORKERS"] = str(runs)  # the server started below reads it
    sentences = Sentences()
    step = re.compile(r"Step \d+ of \d+")
    with running_server("benchmark-classroom-streamlit.log") as server, harness.chromium() as chrome:
        quiet = typing(chrome, server, sentences, per_page, pages=[page])["pages"][f"/{page}"]
        trainers = []
        for n in range(runs):
            tab = Tab(chrome, server)
            tab.page.goto(f"{server.url}/train")
            main = tab.page.get_by_test_id("stMain")
            start = main.get_by_role("button", name="Start training", exact=True)
            start.wait_for(timeout=120_000)
            if n:
                seed = main.get_by_label("Seed", exact=True)
                seed.fill(str(n))
                seed.press("Enter")
                main.get_by_text(f", seed {n}.").first.wait_for(timeout=60_000)  # the form took it
            start.click(timeout=120_000)
            trainers.append(tab)
        for tab in trainers:  # all past their first step before typing begins
            tab.page.get_by_test_id("stMain").get_by_text(step).first.wait_for(timeout=180_000)
        busy = typing(chrome, server, sentences, per_page, pages=[page])["pages"][f"/{page}"]
        still = [bool(tab.page.get_by_test_id("stMain").get_by_text(step).count()) for tab in trainers]
        for tab in trainers:
            tab.close()
    return {"page": f"/{page}", "sentences_each": per_page, "runs_training": runs,
            "quiet_median_s": round(quiet["median_s"], 3), "training_median_s": round(busy["median_s"], 3),
            "ratio": round(busy["median_s"] / quiet["median_s"], 2), "quiet_max_s": round(quiet["max_s"], 3),
            "training_max_s": round(busy["max_s"], 3), "runs_still_training_at_the_end": still,
            "load_average_at_end": os.getloadavg()}
