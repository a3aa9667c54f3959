"""Cold start, and where the time goes on the slowest page: benchmarks/browser.py's measures that start servers and
page scripts of their own. The two scripts run in fresh processes are files beside this one:
benchmarks/first_torch_import.py and benchmarks/page_script_seconds.py."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from contextlib import nullcontext

from benchmarks.browser_report import GOALS, REFERENCE
from benchmarks.browser_tab import ROOT, Sentences, Server, Tab, page_label, running_server
from benchmarks.report import LoadSampler


def _open_attention(tab: Tab, out: dict, since: float) -> None:
    """Open /attention; the seconds from ``since`` (perf_counter) to its first chart drawn and to painted."""
    tab.frames, tab.marks = [], []
    tab.page.goto(f"{tab.server.url}/attention", wait_until="commit")
    drawn = "[data-testid=stVegaLiteChart] svg, [data-testid=stVegaLiteChart] canvas"
    tab.page.locator(drawn).first.wait_for(state="visible", timeout=180_000)
    out["first_chart_s"] = time.perf_counter() - since
    tab.wait_painted(None, 180)
    out["painted_s"] = time.perf_counter() - since - tab.painted_ago()
    out["memory_mb"] = tab.server.memory_mb()


def cold_start(browser, server: Server | None = None) -> dict:
    """Cold start. Full (no ``server``): a fresh server to healthy, then /attention opened at once: its first
    chart drawn and the page painted, from the `streamlit run` command; then another fresh server opening /,
    /rnn-memory and /attention in turn, torch looked for in its memory map after each. Quick: ``server``, just
    started, does the second part, and /attention's figures are its healthy time plus /attention's own opening
    (after the pages without models)."""
    quick = server is not None
    out: dict = {"how": "quick: healthy + opening /attention after / and /rnn-memory" if quick else
                 "full: /attention opened first on a fresh server"}
    with LoadSampler() as load:
        if not quick:
            with running_server("benchmark-browser-cold.log") as fresh:
                out["healthy_s"] = fresh.healthy_s
                tab = Tab(browser, fresh)
                try:
                    _open_attention(tab, out, fresh.started)
                finally:
                    tab.close()
        with nullcontext(server) if quick else running_server("benchmark-browser-torch.log") as server:
            out.setdefault("healthy_s", server.healthy_s)
            out["torch_after"] = {"start": server.has_torch()}
            tab = Tab(browser, server)
            try:
                for url_path in ("", REFERENCE):
                    tab.goto(url_path)
                    out["torch_after"][page_label(url_path)] = server.has_torch()
                if quick:
                    opened: dict = {}
                    _open_attention(tab, opened, time.perf_counter())
                    out.update(first_chart_s=server.healthy_s + opened["first_chart_s"],
                               painted_s=server.healthy_s + opened["painted_s"], memory_mb=opened["memory_mb"])
                else:
                    tab.goto("attention")
                out["torch_after"]["/attention"] = server.has_torch()
            finally:
                tab.close()
    no_torch = not any(v for k, v in out["torch_after"].items() if k != "/attention")
    out["goals"] = [
        {"goal": GOALS["healthy"], "met": out["healthy_s"] <= 2, "measured": f"{out['healthy_s']:.2f} s"},
        {"goal": GOALS["first_chart"], "met": out["first_chart_s"] <= 5,
         "measured": f"first chart {out['first_chart_s']:.2f} s, page painted {out['painted_s']:.2f} s"},
        {"goal": GOALS["no_torch"], "met": no_torch,
         "measured": "libtorch in the server's memory map after: " + ", ".join(
             f"{k} {'yes' if v else 'no'}" for k, v in out["torch_after"].items())},
    ]
    out.update(load.summary())
    return out


def who_imports_torch(scripts=("app_pages/home.py", "app_pages/rnn_memory.py")) -> dict:
    """Each page run alone in a fresh process (AppTest): does it import torch, and from which line first."""
    import ast

    out = {}
    for script in scripts:
        done = subprocess.run([sys.executable, "-m", "benchmarks.first_torch_import", script], cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
        line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
        out[script] = ast.literal_eval(line[7:]) if line else {"error": done.stderr[-500:]}
    return out


def where_time_goes(page: str, typed: dict, sentences: Sentences, runs: int) -> dict:
    """The slowest page: the browser's figures from the typing measure, and the script's own time (AppTest in a
    subprocess, the page after one warm-up sentence, then ``runs`` new sentences)."""
    row = typed["pages"][page]
    samples = row.get("samples", [])
    kinds: dict[str, list[int]] = {}
    for s in samples:
        for kind, size in s["bytes_by_kind"].items():
            kinds.setdefault(kind, []).append(size)
    bytes_by_kind = dict(sorted(((k, statistics.median(v)) for k, v in kinds.items()), key=lambda kv: -kv[1]))
    texts = [sentences.typical() for _ in range(runs + 1)]
    script = _script_seconds(page, texts) if runs else {"error": "not measured in a quick run"}
    out = {"page": page, "typing_median_s": row.get("median_s"), "browser": {
        k: row.get(f"median_{k}") for k in ("first_message_s", "script_finished_s", "drawing_after_finish_s",
                                            "long_tasks_s", "bytes", "messages", "chart_spec_bytes",
                                            "chart_data_bytes", "server_cpu_s")},
           "median_bytes_by_kind": bytes_by_kind, "apptest": script}
    return out


def _script_seconds(page: str, texts: list[str]) -> dict:
    done = subprocess.run([sys.executable, "-m", "benchmarks.page_script_seconds", page, json.dumps(texts)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    if not line:
        return {"error": done.stderr[-800:]}
    result = json.loads(line[7:])
    result["median_s"] = statistics.median(result["seconds"]) if result["seconds"] else None
    return result

