"""The browser sections of benchmarks/report.md ("Speed a class feels"), from benchmarks/browser.py's figures, and
the goals they are read against."""

from __future__ import annotations

from benchmarks.report import goal_line

REFERENCE = "rnn-memory"  # the page every other page is compared with
CLASS_CORES = 2  # the host the issue sizes a class for
SENTENCE_EVERY_S = 10  # one sentence per student every 10 s
GOALS = {
    "typing": "every page's typing-to-painted median within 2x of /rnn-memory's",
    "widgets": "moving a widget to painted no slower than /rnn-memory's typing median; a /what-if question's first "
               "move (a new beam width, forced word or edited step) within 2x of it",
    "cpu": "at most 0.15 CPU-seconds of the server per view, 10 sessions at once",
    "healthy": "`streamlit run app.py` to a healthy server in at most 2 s",
    "first_chart": "a fresh server to the first chart painted on /attention in at most 5 s",
    "no_torch": "pages that need no model (/, /rnn-memory) never import torch",
}


def _s(value, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _kb(value) -> str:
    return "–" if value is None else f"{value / 1024:.0f}"


def _exception_note(counts: dict) -> str:
    bad = {k: v for k, v in counts.items() if v}
    if not bad:
        return ""
    return (" The app sent an exception box (a bug) on: " + ", ".join(f"{k} ({v} time{'s' * (v > 1)})"
                                                                     for k, v in bad.items()) + ".")


def _load(r: dict) -> str:
    if "load_min" not in r:
        return ""
    return f"load average {r['load_min']:.1f}-{r['load_max']:.1f} (mean {r['load_mean']:.1f})"


def markdown(figures: dict, previous: dict | None = None) -> str:
    """The browser sections of benchmarks/report.md; ``previous``: the last report's browser figures, whose
    typing medians and CPU per view are shown beside these (what the changes between the two runs bought)."""
    previous = previous or {}
    before = {p: r.get("median_s") for p, r in previous.get("typing", {}).get("pages", {}).items()}
    parts = ["## Speed a class feels (Chromium against the real server)",
             f"`streamlit run app.py` on a free port, Debian's Chromium {figures.get('browser_version', '')} through "
             "Playwright, the server's CPU and memory from /proc. The painted signal: "
             + figures.get("painted_signal", "") + f" Measured in {figures.get('seconds', 0):.0f} s."]
    typed = figures.get("typing")
    if typed:
        rows = ["| page | median s | max s | ratio to /rnn-memory | first message s | script finished s | "
                "drawing after s | long tasks s | KB sent | server CPU s | charts | open s | last report's median s |",
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for page, r in typed["pages"].items():
            if "error" in r:
                rows.append(f"| {page} | {r['error']} |" + " |" * 12)
                continue
            rows.append(f"| {page} | {r['median_s']:.2f} | {r['max_s']:.2f} | {_s(r.get('ratio'), 1)} | "
                        f"{_s(r.get('median_first_message_s'))} | {_s(r.get('median_script_finished_s'))} | "
                        f"{_s(r.get('median_drawing_after_finish_s'))} | {_s(r.get('median_long_tasks_s'))} | "
                        f"{_kb(r.get('median_bytes'))} | {_s(r.get('median_server_cpu_s'))} | {r['charts']} | "
                        f"{r['open_s']:.1f} | {_s(before.get(page))} |")
        n = max((r.get("n", 0) for r in typed["pages"].values()), default=0)
        stale = [p for p, r in typed["pages"].items() if r.get("fresh") is False]
        parts += ["### Typing to painted",
                  "One visitor, one tab, page after page (by the sidebar's link; the page's first run, which loads "
                  f"its models, is the warm-up; open s: link to painted), then {n} new sentences of 6 to 12 "
                  "tokens, each filled into the Sentence box and sent with Enter; median and max of key press to "
                  "painted. Breakdown (medians, from the key press): the first websocket message back, the "
                  "`script_finished` message, drawing after it until painted; long tasks: the page's main thread "
                  "busy in stretches of 50 ms or more; KB sent: websocket payload the page received for the "
                  "rerun; server CPU: the server's CPU seconds for the rerun. " + _load(typed) + ".",
                  "\n".join(rows),
                  ("Every typed sentence was in the share box's address when painted." if not stale else
                   f"The share box did NOT show the new sentence on {', '.join(stale)}.")
                  + _exception_note({p: r.get("exceptions", 0) for p, r in typed["pages"].items()}),
                  goal_line(typed["goal"])]
    where = figures.get("where_time_goes")
    if where and "error" not in where:
        b = where["browser"]
        kinds = ", ".join(f"{k} {v / 1024:.1f} KB" for k, v in list(where["median_bytes_by_kind"].items())[:8])
        script = where["apptest"]
        script_text = (f"{script['median_s']:.2f} s (median of {len(script['seconds'])} new sentences)"
                       if script.get("median_s") is not None else f"not measured ({script.get('error', '')[-200:]})")
        parts += [f"### Where the time goes on the slowest page, {where['page']}",
                  f"Typing to painted {_s(where['typing_median_s'])} s (median). Script alone (AppTest, in a "
                  f"process of its own, after one sentence): {script_text}. In the browser: the first "
                  f"message back after {_s(b['first_message_s'])} s, `script_finished` at "
                  f"{_s(b['script_finished_s'])} s, "
                  f"then {_s(b['drawing_after_finish_s'])} s of drawing until painted; the main thread was busy "
                  f"{_s(b['long_tasks_s'])} s in long tasks. The server spent {_s(b['server_cpu_s'])} CPU-s per "
                  "rerun.",
                  f"Sent per rerun (median): {_kb(b['bytes'])} KB in {b['messages'] or 0:.0f} messages; chart specs "
                  f"{_kb(b['chart_spec_bytes'])} KB of JSON (inline data included) and {_kb(b['chart_data_bytes'])} KB "
                  f"of Arrow datasets. By message: {kinds}."]
    elif where:
        parts.append(f"### Where the time goes\n\nNot measured: {where['error']}")
    wid = figures.get("widgets")
    if wid:
        rows = ["| page | widget | median s | max s | ratio to /rnn-memory typing | first move s | script finished s |"
                " KB sent | server CPU s |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        for r in wid["widgets"]:
            if "error" in r:
                rows.append(f"| {r['page']} | {r['widget']} | {r['error']} | | | | | | |")
                continue
            rows.append(f"| {r['page']} | {r['widget']} | {r['median_s']:.2f} | {r['max_s']:.2f} | "
                        f"{_s(r.get('ratio_to_reference_typing'), 1)} | {_s(r.get('first_move_s'))} | "
                        f"{_s(r.get('median_script_finished_s'))} | {_kb(r.get('median_bytes'))} | "
                        f"{_s(r.get('median_server_cpu_s'))} |")
        n = max((r.get("n", 0) for r in wid["widgets"]), default=0)
        parts += ["### Moving a widget to painted",
                  "Each widget on its page (one tab, after the page's first run): one first move to a value not shown "
                  "yet (first move s: what a class's first student waits), then "
                  f"{n} move{'s' * (n != 1)} back and forth between "
                  "the two values (both computed once already: what the rerun itself costs), an arrow key on a "
                  "slider's thumb or a click on another option of a select box, key or pointer press to painted; "
                  "median and max of those. " + _load(wid) + "."
                  + _exception_note({f"{r['page']} {r['widget']}": r.get("exceptions", 0)
                                     + r.get("first_move", {}).get("exceptions", 0) for r in wid["widgets"]})
                  + "".join(f" {r['page']} came up without its {r['widget']} {r['opened_without_it']} time(s) "
                            "(a bug of the page: it was opened again, through the home page and the sidebar's "
                            "link)." for r in wid["widgets"]
                            if r.get("opened_without_it")),
                  "\n".join(rows), goal_line(wid["goal"])]
    cpu = figures.get("cpu_per_view")
    if cpu and "error" in cpu:
        parts.append(f"### Server CPU per view\n\nNot measured: {cpu['error']}")
    elif cpu:
        one, many = cpu["one_session"], cpu["many_sessions"]
        n = many.get("sessions", 0)
        rows = [f"| page | CPU-s per view, 1 session (median) | CPU-s per view, {n} sessions | typing median s, {n} "
                "sessions at once |", "|---|---:|---:|---:|"]
        for page in one["median_per_page_s"] | many.get("per_page", {}):
            t = many.get("per_page", {}).get(page, {})
            rows.append(f"| {page} | {_s(one['median_per_page_s'].get(page), 3)} | {_s(t.get('cpu_per_view_s'), 3)} |"
                        f" {_s(t.get('median_typing_s'))} |")
        parts += ["### Server CPU per view",
                  "A view: a new sentence typed on a page and painted. The server's CPU seconds (utime + stime of "
                  "every thread, of reaped and live children, /proc/PID/stat) over the views served, on a warmed "
                  f"server. One session: every sentence of the typing measure ({one['views']} views, "
                  f"{_s(one['cpu_per_view_s'], 3)} CPU-s each). {n} sessions: {n} browser contexts in one "
                  "Chromium, all on the same page (through the sidebar's link), each typing a new sentence at "
                  f"once, page after page: {many.get('views', 0)} views, {_s(many.get('cpu_per_view_s'), 3)} CPU-s "
                  f"each, {_s(many.get('wall_s'), 1)} s of waves. Beside the views: going to a page by the sidebar's "
                  f"link cost {_s(many.get('navigation_cpu_per_view_s'), 3)} CPU-s per tab, opening a session (the "
                  f"app loaded in a new tab) {_s(many.get('opening_cpu_per_session_s'), 3)} CPU-s. Chromium's tabs "
                  "draw on the same 2 cores as the server. " + _load(many) + ".",
                  "\n".join(rows),
                  f"Class size a {CLASS_CORES}-core host holds at one sentence per student every {SENTENCE_EVERY_S} s "
                  f"({CLASS_CORES} × {SENTENCE_EVERY_S} s / CPU-s per view): {_s(many.get('class_size'), 0)} students "
                  f"(from the {n}-session figure), {_s(one.get('class_size'), 0)} (from one session's).",
                  goal_line(cpu["goal"])]
        last = previous.get("cpu_per_view", {})
        if last.get("many_sessions", {}).get("cpu_per_view_s") is not None:
            parts.append(f"The last report: {last['many_sessions']['cpu_per_view_s']:.3f} CPU-s per view with "
                         f"{last['many_sessions'].get('sessions')} sessions, "
                         f"{_s(last.get('one_session', {}).get('cpu_per_view_s'), 3)} with one.")
    memory = figures.get("memory_mb")
    if memory:
        parts += ["### Server memory against visitors",
                  "VmRSS / VmHWM (peak) of the server from /proc/PID/status, MB: "
                  + "; ".join(f"{k}: {_s(v['VmRSS'], 0)} / {_s(v['VmHWM'], 0)}" for k, v in memory.items()) + "."]
    grow = figures.get("growth")
    if grow:
        rows = ["| page | tokens | median s | max s | script finished s | KB sent | server CPU s |",
                "|---|---:|---:|---:|---:|---:|---:|"]
        for page, r in grow["pages"].items():
            if "error" in r:
                rows.append(f"| {page} | {r['error']} | | | | | |")
                continue
            for n, x in r.items():
                rows.append(f"| {page} | {n} | {x['median_s']:.2f} | {x['max_s']:.2f} | "
                            f"{_s(x.get('median_script_finished_s'))} | {_kb(x.get('median_bytes'))} | "
                            f"{_s(x.get('median_server_cpu_s'))} |")
        per = max((x.get("n", 0) for r in grow["pages"].values() if "error" not in r for x in r.values()), default=0)
        parts += ["### Growth with the sentence's length",
                  f"{per} new sentence(s) of each length (the project's grammar; 60 tokens: two sentences) typed on "
                  "each page, key press to painted. " + _load(grow) + ".", "\n".join(rows)]
    cold = figures.get("cold_start")
    if cold and "error" in cold:
        parts.append(f"### Cold start\n\nNot measured: {cold['error']}")
    elif cold:
        chains = cold.get("apptest")
        if chains is None:
            chain_text = "not run (quick)"
        elif "error" in chains:
            chain_text = chains["error"]
        else:
            chain_text = "; ".join(
                f"{script}: {'imports torch' if r.get('torch') else 'no torch'}"
                + (f" (first from {' → '.join(r['chain'][-4:])})" if r.get("chain") else "")
                for script, r in chains.items())
        if cold["how"].startswith("full"):
            opened = ("/attention opened at once in Chromium (already running): its first chart drawn "
                      f"{_s(cold.get('first_chart_s'))} s after the command, the page painted after "
                      f"{_s(cold.get('painted_s'))} s")
        else:
            opened = ("/attention opened after / and /rnn-memory (quick: one server): healthy time plus "
                      f"/attention's own opening, first chart {_s(cold.get('first_chart_s'))} s, painted "
                      f"{_s(cold.get('painted_s'))} s")
        parts += ["### Cold start",
                  f"A fresh `streamlit run app.py`: healthy (`/_stcore/health` answers, polled every 50 ms) after "
                  f"{_s(cold['healthy_s'])} s; {opened} (memory then {_s(cold.get('memory_mb', {}).get('VmRSS'), 0)} "
                  "MB). Torch, seen from outside (libtorch in the server's /proc/PID/maps) on a fresh server "
                  "opening /, /rnn-memory then /attention: "
                  + ", ".join(f"{k} {'loaded' if v else 'not loaded'}" for k, v in cold["torch_after"].items())
                  + f". Each page alone in a fresh process (AppTest, the first import of torch traced): {chain_text}. "
                  + _load(cold) + ".",
                  "\n".join(goal_line(g) for g in cold["goals"])]
    return "\n\n".join(parts)

