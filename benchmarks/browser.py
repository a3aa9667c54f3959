"""Speed a class feels (issue 9), measured from outside: the real server, Debian's Chromium, /proc.

Every figure here comes from ``streamlit run app.py --server.headless true`` on a free port, driven by Debian's
Chromium through Playwright (no browser is downloaded), and from the server's /proc entries. Nothing is asserted;
the machine may be shared and noisy, so its load average is sampled during every measure and reported beside it.

The server, Chromium, the recorder and what *painted* means are seqviz.browser's, the harness the browser tests, the
load tests and the smoke check share. The measuring is spread over files beside this one:

- benchmarks/browser_tab.py: one visitor's tab, timed (an action from the key or pointer press to the paint after
  the last change, once Streamlit's ``script_finished`` message of its run has arrived; what the websocket carried;
  the server's CPU seconds and memory from /proc), and the seeded sentences typed;
- benchmarks/browser_cold.py: cold start, and where the time goes on the slowest page (with its two scripts run in
  fresh processes, benchmarks/first_torch_import.py and benchmarks/page_script_seconds.py);
- here: typing, widgets, sessions at once, growth with the sentence's length, and :func:`measure`, which runs them;
- benchmarks/browser_report.py: the report's sections and the goals they are read against.

    python -m benchmarks.browser [--quick]   # these sections alone, printed (their figures in
                                             # test-output/benchmark-browser.json)
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from dataclasses import dataclass, field

from benchmarks.browser_cold import cold_start, where_time_goes, who_imports_torch
from benchmarks.browser_report import CLASS_CORES, GOALS, REFERENCE, SENTENCE_EVERY_S, markdown
from benchmarks.browser_tab import (
    LOGS,
    PAINTED,
    Sentences,
    Server,
    Tab,
    all_pages,
    page_label,
    page_title,
    running_server,
    sample_summary,
)
from benchmarks.report import LoadSampler, progress
from seqviz import browser as harness

# The widgets the issues name (page, kind, label, goal): a story page's widget is judged by its median move against
# /rnn-memory's typing median (1x); a /what-if question by its first move to a new value, which the page computes
# afresh (a new beam width, forced word or edited step), against twice it (the /what-if issue). A widget the page no
# longer has is reported, not fatal.
WIDGETS = (
    ("rnn-memory", "slider", "Recurrent weight w", 1),
    ("attention", "slider", "Output word", 1),
    ("lstm-gates", "selectbox", "Unit", 1),
    ("lstm-gates", "slider", "Units to show", 1),
    ("vanishing-gradients", "slider", "Sequence length T", 1),
    ("vanishing-gradients", "slider", "Scale the plain RNNs", 1),
    ("vanishing-gradients", "slider", "Training steps so far", 1),
    ("what-if", "slider", "Beam width", 2),
    ("what-if", "selectbox", "Word to write there (most likely first)", 2),
    ("what-if", "selectbox", "Put the step's weight on", 2),
)
GROWTH_PAGES = ("attention", "lstm-gates")
GROWTH_LENGTHS = (5, 20, 60)


# ---------------------------------------------------------------------------------------------------------
# The measures


def typing(browser, server: Server, sentences: Sentences, per_page: int, pages: list[str] | None = None) -> dict:
    """Typing to painted on every page: go there (its first run loads its models: the warm-up), then type
    ``per_page`` new sentences (one visitor; the server's CPU seconds per typed sentence recorded with it)."""
    rows = {}
    tab = Tab(browser, server)
    try:
        with LoadSampler() as load:
            for url_path in pages or all_pages():
                try:
                    opened = tab.visit(url_path)  # the page's first run loads its models: the warm-up
                    samples = []
                    for _ in range(per_page):
                        text = sentences.typical()
                        cpu = server.cpu_seconds()
                        sample = tab.measure(tab.type_sentence(text), cpu_before=cpu, full=True)
                        sample.update(tokens=len(text.split()), fresh=tab.fresh(text))
                        samples.append(sample)
                    rows[page_label(url_path)] = {"open_s": opened, **sample_summary(samples),
                                                  "fresh": all(s["fresh"] is not False for s in samples),
                                                  "charts": tab.page.get_by_test_id("stVegaLiteChart").count(),
                                                  "samples": samples}
                except Exception as error:  # one page failing keeps the others, in a new tab
                    rows[page_label(url_path)] = {"error": f"{type(error).__name__}: {error}"}
                    tab.close()
                    tab = Tab(browser, server)
    finally:
        tab.close()
    reference = rows.get(page_label(REFERENCE), {}).get("median_s")
    for row in rows.values():
        if reference and "median_s" in row:
            row["ratio"] = row["median_s"] / reference
    measured = [r for r in rows.values() if "ratio" in r]
    met = bool(measured) and len(measured) == len(rows) and all(r["ratio"] <= 2 for r in measured)
    worst = max(rows, key=lambda k: rows[k].get("median_s", -1))
    return {"pages": rows, "reference": page_label(REFERENCE), "reference_median_s": reference, "slowest": worst,
            "goal": {"goal": GOALS["typing"], "met": met,
                     "measured": ", ".join(f"{k} {r['ratio']:.1f}x" for k, r in rows.items() if "ratio" in r)
                     + "".join(f"; {k}: {r['error']}" for k, r in rows.items() if "error" in r)},
            **load.summary()}


def widgets(browser, server: Server, sentences: Sentences, moves: int, reference_s: float | None) -> dict:
    """Each named widget moved once to a new value, then ``moves`` times back and forth, to painted."""
    rows = []
    with LoadSampler() as load:
        by_page: dict[str, list[tuple[str, str, int]]] = {}
        for url_path, kind, label, times in WIDGETS:
            by_page.setdefault(url_path, []).append((kind, label, times))
        tab = Tab(browser, server)
        try:
            for url_path, found in by_page.items():
                try:
                    tab.visit(url_path)
                except Exception as error:  # the page did not open: its widgets say so, in a new tab
                    rows += [{"page": page_label(url_path), "widget": label, "kind": kind,
                              "error": f"{type(error).__name__}: {error}"} for kind, label, _ in found]
                    tab.close()
                    tab = Tab(browser, server)
                    continue
                for kind, label, times in found:
                    row = {"page": page_label(url_path), "widget": label, "kind": kind, "goal_times": times}
                    try:
                        moved = None
                        for _ in range(3):  # a page that came up without the widget is opened again (home, then
                            # the sidebar's link: its address alone brought it up without it again), and said so
                            if tab.widget(kind, label) is not None:
                                cpu = server.cpu_seconds()
                                moved = tab.move_widget(kind, label)
                                break
                            row["opened_without_it"] = row.get("opened_without_it", 0) + 1
                            tab.goto("")
                            tab.visit(url_path)
                        if moved is None:
                            raise LookupError("no such widget on the page")
                        first = tab.measure(moved[0], cpu_before=cpu)
                        row.update(first_move_s=first["seconds"], first_move=first)
                        ahead, back = moved[1], moved[2]
                        samples = []
                        for i in range(moves):  # back and forth between two values, both seen once already
                            cpu = server.cpu_seconds()
                            moved = tab.move_widget(kind, label, back if i % 2 == 0 else ahead)
                            if moved is None:
                                raise LookupError("the widget went away")
                            sample = tab.measure(moved[0], cpu_before=cpu)
                            sample["value"] = moved[1]
                            samples.append(sample)
                        row.update(sample_summary(samples), samples=samples)
                        if reference_s:
                            row["ratio_to_reference_typing"] = row["median_s"] / reference_s
                    except Exception as error:
                        row["error"] = f"{type(error).__name__}: {error}"
                    rows.append(row)
        finally:
            tab.close()
    measured = [r for r in rows if "median_s" in r]
    met = reference_s is not None and len(measured) == len(rows) and all(
        (r["median_s"] if r["goal_times"] == 1 else r["first_move_s"]) <= r["goal_times"] * reference_s
        for r in measured)
    text = ", ".join(f"{r['page']} {r['widget']} {r['median_s']:.2f} s" if r["goal_times"] == 1 else
                     f"{r['page']} {r['widget']} first move {r['first_move_s']:.2f} s" for r in measured)
    missing = [f"{r['page']} {r['widget']}: {r['error']}" for r in rows if "error" in r]
    return {"widgets": rows, "reference_typing_s": reference_s,
            "goal": {"goal": GOALS["widgets"], "met": met,
                     "measured": (f"/rnn-memory typing {reference_s:.2f} s; " if reference_s else "")
                     + text + ("; " + "; ".join(missing) if missing else "")},
            **load.summary()}


def sessions(browser, server: Server, sentences: Sentences, rounds: int, pages: list[str],
             memory: dict, counts: tuple[int, ...] = (5, 10)) -> dict:
    """Sessions at once: ``counts[0]`` opened on the first page (memory read), then more up to each next count
    (memory read); then per page, every tab goes there (the sidebar's link; not when already there) and types a
    new sentence, all at once, ``rounds`` times: the server's CPU seconds per typed sentence, per page switch
    and per session opened."""
    tabs: list[Tab] = []
    waves = []
    navigations = []
    try:
        with LoadSampler() as load:
            for count in counts:
                new = [Tab(browser, server) for _ in range(count - len(tabs))]
                cpu = server.cpu_seconds()
                began = time.perf_counter()
                for tab in new:
                    tab.start_goto(pages[0])
                for tab in new:
                    tab.wait_painted(None)
                tabs += new
                navigations.append({"page": page_label(pages[0]), "views": len(new), "opened": True,
                                    "cpu_s": server.cpu_seconds() - cpu, "wall_s": time.perf_counter() - began})
                memory[f"{count} sessions"] = server.memory_mb()
            for _ in range(rounds):
                for url_path in pages:
                    cpu = server.cpu_seconds()
                    began = time.perf_counter()
                    starts = []
                    moving = [tab for tab in tabs if tab.at != url_path]
                    for tab in moving:
                        starts.append(tab.arm())
                        harness.sidebar_link(tab.page, page_title(url_path)).click()
                        tab.at = url_path
                    for tab, n0 in zip(moving, starts, strict=True):
                        tab.wait_painted(n0, full=True)
                    if moving:
                        navigations.append({"page": page_label(url_path), "views": len(moving), "opened": False,
                                            "cpu_s": server.cpu_seconds() - cpu,
                                            "wall_s": time.perf_counter() - began})
                    cpu = server.cpu_seconds()
                    began = time.perf_counter()
                    starts = [tab.type_sentence(sentences.typical()) for tab in tabs]
                    samples = [tab.measure(n0, full=True) for tab, n0 in zip(tabs, starts, strict=True)]
                    waves.append({"page": page_label(url_path), "views": len(tabs), "cpu_s": server.cpu_seconds() - cpu,
                                  "wall_s": time.perf_counter() - began,
                                  "median_s": statistics.median(s["seconds"] for s in samples),
                                  "max_s": max(s["seconds"] for s in samples)})
            memory[f"{len(tabs)} sessions, after typing"] = server.memory_mb()
    finally:
        for tab in tabs:
            tab.close()
    views = sum(w["views"] for w in waves)
    cpu = sum(w["cpu_s"] for w in waves)
    per_page = {}
    for w in waves:
        row = per_page.setdefault(w["page"], {"views": 0, "cpu_s": 0.0, "medians": []})
        row["views"] += w["views"]
        row["cpu_s"] += w["cpu_s"]
        row["medians"].append(w["median_s"])
    for row in per_page.values():
        row["cpu_per_view_s"] = row["cpu_s"] / row["views"]
        row["median_typing_s"] = statistics.median(row.pop("medians"))
    nav_views = sum(n["views"] for n in navigations if not n["opened"])
    nav_cpu = sum(n["cpu_s"] for n in navigations if not n["opened"])
    open_views = sum(n["views"] for n in navigations if n["opened"])
    open_cpu = sum(n["cpu_s"] for n in navigations if n["opened"])
    return {"sessions": len(tabs), "views": views, "cpu_s": cpu, "cpu_per_view_s": cpu / views if views else None,
            "wall_s": sum(w["wall_s"] for w in waves), "per_page": per_page, "waves": waves,
            "navigations": navigations, "navigation_cpu_per_view_s": nav_cpu / nav_views if nav_views else None,
            "opening_cpu_per_session_s": open_cpu / open_views if open_views else None,
            **load.summary()}


def _class_size(cpu_per_view: float | None) -> float | None:
    return None if not cpu_per_view else CLASS_CORES * SENTENCE_EVERY_S / cpu_per_view


def cpu_per_view(typed: dict, many: dict) -> dict:
    """One session's figure from the typing measure (every typed sentence, its CPU seconds); many sessions' from
    their waves."""
    samples = [s for row in typed["pages"].values() for s in row.get("samples", []) if "server_cpu_s" in s]
    one = sum(s["server_cpu_s"] for s in samples) / len(samples) if samples else None
    per_page = {page: row["median_server_cpu_s"] for page, row in typed["pages"].items()
                if "median_server_cpu_s" in row}
    figure = many.get("cpu_per_view_s")
    n = many.get("sessions", 0)
    met = figure is not None and figure <= 0.15
    return {"one_session": {"views": len(samples), "cpu_per_view_s": one, "median_per_page_s": per_page,
                            "class_size": _class_size(one)},
            "many_sessions": many | {"class_size": _class_size(figure)},
            "goal": {"goal": GOALS["cpu"], "met": met,
                     "measured": (f"{figure:.3f} CPU-s per view with {n} sessions" if figure else "not measured")
                     + (f", {one:.3f} with one" if one else "")
                     + (f" (a quick run: {n} sessions, not 10)" if n and n != 10 else "")}}


def growth(browser, server: Server, sentences: Sentences, per_length: int) -> dict:
    """Typing to painted against the sentence's length, on /attention and /lstm-gates."""
    rows = {}
    with LoadSampler() as load:
        tab = Tab(browser, server)
        for url_path in GROWTH_PAGES:
            try:
                tab.visit(url_path)
                row = {}
                for n in GROWTH_LENGTHS:
                    samples = []
                    for _ in range(per_length):
                        text = sentences.new(n)
                        cpu = server.cpu_seconds()
                        sample = tab.measure(tab.type_sentence(text), cpu_before=cpu, full=True)
                        sample["fresh"] = tab.fresh(text)
                        samples.append(sample)
                    row[str(n)] = {**sample_summary(samples), "fresh": all(s["fresh"] is not False for s in samples)}
                rows[page_label(url_path)] = row
            except Exception as error:
                rows[page_label(url_path)] = {"error": f"{type(error).__name__}: {error}"}
                tab.close()
                tab = Tab(browser, server)
        tab.close()
    return {"pages": rows, **load.summary()}


# ---------------------------------------------------------------------------------------------------------
# Everything at once


@dataclass
class Plan:
    per_page: int = 12  # typed sentences per page after the page's first run (medians of 6 moved by 0.05 s run to run)
    moves: int = 10  # moves per widget after its first move
    rounds: int = 1  # rounds over the pages with every session
    per_length: int = 3  # sentences per length in the growth measure
    script_runs: int = 5  # AppTest runs of the slowest page
    ten_pages: list[str] = field(default_factory=list)  # empty: every page
    session_counts: tuple[int, ...] = (5, 10)  # sessions open at once, memory read at each
    quick: bool = False  # cold start on the measuring server, no AppTest subprocesses

    @classmethod
    def quick_plan(cls) -> Plan:
        return cls(per_page=2, moves=1, rounds=1, per_length=1, script_runs=0, ten_pages=["attention"],
                   session_counts=(3,), quick=True)


def measure(plan: Plan, parts: tuple[str, ...] = ("typing", "widgets", "cpu", "growth", "cold")) -> dict:
    """Run the parts asked for (cold start first: it needs a quiet, fresh server)."""
    figures: dict = {"plan": plan.__dict__, "painted_signal": PAINTED}
    sentences = Sentences()
    began = time.perf_counter()
    with harness.chromium() as browser:
        figures["browser_version"] = browser.version
        if "cold" in parts and not plan.quick:
            figures["cold_start"] = _guard(cold_start, browser)
            figures["cold_start"]["apptest"] = _guard(who_imports_torch)
            progress(f"cold start done, {time.perf_counter() - began:.0f} s")
        if {"typing", "widgets", "cpu", "growth"} & set(parts) or ("cold" in parts and plan.quick):
            with running_server() as server:
                memory = {"just started": server.memory_mb()}
                figures["memory_mb"] = memory
                if "cold" in parts and plan.quick:  # on this server, just started: no second server
                    figures["cold_start"] = _guard(cold_start, browser, server)
                    progress(f"cold start done, {time.perf_counter() - began:.0f} s")
                typed = None
                if "typing" in parts or "cpu" in parts or "widgets" in parts:
                    typed = typing(browser, server, sentences, plan.per_page)
                    figures["typing"] = typed
                    memory["1 session, every page"] = server.memory_mb()
                    progress(f"typing done, {time.perf_counter() - began:.0f} s")
                    slowest = typed["slowest"]
                    if "median_s" in typed["pages"].get(slowest, {}):
                        figures["where_time_goes"] = _guard(where_time_goes, slowest, typed, sentences,
                                                            plan.script_runs)
                if "widgets" in parts:
                    figures["widgets"] = widgets(browser, server, sentences, plan.moves,
                                                 typed and typed.get("reference_median_s"))
                    progress(f"widgets done, {time.perf_counter() - began:.0f} s")
                if "growth" in parts:
                    figures["growth"] = growth(browser, server, sentences, plan.per_length)
                    progress(f"growth done, {time.perf_counter() - began:.0f} s")
                if "cpu" in parts:
                    ten = _guard(sessions, browser, server, sentences, plan.rounds, plan.ten_pages or all_pages(),
                                 memory, plan.session_counts)
                    figures["cpu_per_view"] = cpu_per_view(typed, ten) if "error" not in ten else ten
                    progress(f"sessions at once done, {time.perf_counter() - began:.0f} s")
                memory["end"] = server.memory_mb()
    figures["seconds"] = time.perf_counter() - began
    return figures


def _guard(fn, *args) -> dict:
    try:
        return fn(*args)
    except Exception as error:  # keep the rest of the report
        return {"error": f"{type(error).__name__}: {error}"}


if __name__ == "__main__":  # python -m benchmarks.browser [--quick]: these sections alone, printed
    plan = Plan.quick_plan() if "--quick" in sys.argv else Plan()
    result = measure(plan)
    print(markdown(result))
    (LOGS / "benchmark-browser.json").write_text(json.dumps(result, indent=1, ensure_ascii=False, default=str))
