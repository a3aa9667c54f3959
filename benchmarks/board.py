"""The class board's refresh, measured: how long from a student's post to it showing on a board someone watches.
Measured, never asserted in tests.

A real `streamlit run app.py` on a PostgreSQL store (a server from Debian's archive, started as the tests start
it: tests/databases.py), the board of a class with the bottleneck experiment open in Debian's Chromium (the
teacher's page, never reloaded). ``--students`` labs (30) join the class, each with a finished run in its lab, and
post it at a random moment within ``--spread`` seconds (10), each from a thread of its own, through the store call
the page's **Post it** button makes (seqviz.store.board.post). In the page, a MutationObserver notes the wall-clock
time each nickname first appears in a cell of the board's table; the latency is that time less the post's commit time.

The board looks for new posts every seqviz.limits.CLASS_BOARD_REFRESH_S (3 s) and then draws its table and chart,
so a latency is up to one period of waiting plus the rerun and the drawing.

    python -m benchmarks.board                     # 30 posts in ~10 s
    python -m benchmarks.board --students 30 --spread 10 --out benchmarks/board.json
    python -m benchmarks.board --screenshot docs/screenshots/class-board.png   # the README's picture too

The posted runs are seeded, not trained: each lab's run is a bottleneck run of the hidden size the class handed it,
its held-out figures shaped after the hidden-128 preset's measured ones (README, Presets) and scaled down for
smaller sizes: the picture of a filled board, not a measurement of the models.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLAIN = ROOT / "assets" / "models" / "plain.safetensors"
NICKNAMES = ("ada", "bo", "chidi", "dee", "eli", "fran", "gus", "hana", "ike", "jo", "kai", "lou", "mo", "nia", "oz",
             "pia", "quin", "ray", "sol", "tess", "uma", "vic", "wen", "xan", "yas", "zed", "amir", "bea", "cy", "dot")
H128 = {"3-9": 1.0, "10-14": 0.87, "15-19": 0.61, "20-24": 0.41, "25-30": 0.11}  # README, Presets: hidden 128

WATCH_JS = """(names) => {
  window.__seen = {};
  const look = () => {
    const table = document.querySelector('[data-testid=stMain] [data-testid=stTable]');
    if (!table) return;
    const cells = new Set([...table.querySelectorAll('td, th')].map((c) => c.innerText.trim()));
    for (const n of names) if (!(n in window.__seen) && cells.has(n)) window.__seen[n] = Date.now() / 1000;
  };
  new MutationObserver(look).observe(document, {subtree: true, childList: true, characterData: true});
  look();
}"""


def quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _metrics(hidden: int, rnd: random.Random) -> dict:
    share = min(1.0, (hidden / 128) ** 1.3)
    buckets = {label: {"n": 100, "exact_match": max(0.0, min(1.0, v * share + rnd.uniform(-0.03, 0.03))),
                       "token_accuracy": min(1.0, 0.2 + 0.75 * share)} for label, v in H128.items()}
    return {"exact_match_le30": 0.6 * share, "token_accuracy_le30": 0.2 + 0.7 * share,
            "exact_match_ge25": 0.03 * share, "chapter_pairs_exact": int(5 * share), "buckets": buckets}


def seed_class(db, students: int, rnd: random.Random):
    """A class with the bottleneck experiment, its teacher's lab, and ``students`` labs in it, each with a finished
    run (and its model) of the value it was handed: (class, teacher lab, [(lab id, run id, spec, metrics)])."""
    sys.path.insert(0, str(ROOT / "tests"))
    from checkpoint_files import rewrite_meta

    from seqviz.runs import RunSpec
    from seqviz.store import classes, labs, models, runs
    from seqviz.store.experiments import ready_made

    teacher = labs.open_lab(db, None)
    made = classes.start(db, "A simulated class", teacher.id, experiment=ready_made()["bottleneck"])
    plain = PLAIN.read_bytes()
    members = []
    for number in range(students):
        lab = labs.open_lab(db, None)
        _, member = classes.join(db, made.code, lab.id)
        spec = RunSpec(task="translation", family="plain", embedding=64, hidden=member.value, steps=600, lr=3e-3,
                       batch_size=64, seed=number, name=f"plain h{member.value}")
        model, _ = models.add(db, lab.id, rewrite_meta(plain, lambda doc, n=number: doc.update(name=f"plain {n}")),
                              origin="trained here")
        metrics = _metrics(member.value, rnd)
        run_id = runs.create(db, lab.id, spec)
        runs.end(db, run_id, "finished", metrics=metrics, train_seconds=10.0,
                 model_id=models.model_id(db, lab.id, model.fingerprint))
        members.append((lab.id, run_id, spec, metrics, model.fingerprint))
    return made, teacher, members


def measure(students: int = 30, spread: float = 10.0, seed: int = 0, screenshot: Path | None = None) -> dict:
    sys.path.insert(0, str(ROOT / "tests"))
    from databases import postgres_server  # the tests' own PostgreSQL server

    from seqviz import browser as harness
    from seqviz import limits
    from seqviz.store import Database, board

    rnd = random.Random(seed)
    with tempfile.TemporaryDirectory() as folder, postgres_server(ROOT) as server:
        db = Database(server.url)
        made, teacher, members = seed_class(db, students, rnd)
        names = [NICKNAMES[n % len(NICKNAMES)] + ("" if n < len(NICKNAMES) else f"-{n}") for n in range(students)]
        log = Path(folder) / "server.log"
        with harness.streamlit_server(log, {"SEQVIZ_DATABASE_URL": server.url}) as app, harness.chromium() as chrome:
            context = harness.new_context(chrome)
            context.add_cookies([{"name": "seqviz_lab", "value": teacher.key, "url": app.url}])
            page = harness.new_page(context)
            page.goto(f"{app.url}/class?c={made.code}")
            harness.wait_painted(page, timeout_ms=180_000)
            page.evaluate(WATCH_JS, names)
            posted: dict[str, float] = {}
            failures: list[str] = []
            moments = sorted(rnd.uniform(0, spread) for _ in members)
            started = time.time()

            def post(name, member, at):
                time.sleep(max(0.0, started + at - time.time()))
                lab_id, run_id, spec, metrics, fingerprint = member
                try:
                    board.post(db, made.code, lab_id, run_id=run_id, nickname=name, spec=spec.to_dict(),
                               metrics=metrics, train_seconds=10.0, fingerprint=fingerprint)
                    posted[name] = time.time()  # committed
                except Exception as error:  # a lost post is a figure
                    failures.append(f"{name}: {error}")

            threads = [threading.Thread(target=post, args=(n, m, at)) for n, m, at in zip(names, members, moments,
                                                                                             strict=True)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            deadline = time.time() + 60
            while time.time() < deadline:
                seen = page.evaluate("() => window.__seen")
                if len(seen) >= len(posted):
                    break
                page.wait_for_timeout(200)
            seen = page.evaluate("() => window.__seen")
            kept = len(board.posts(db, made.code))
            if screenshot is not None:  # the board the simulated class filled, its chart at the top of the screen
                harness.wait_painted(page, timeout_ms=60_000)
                page.get_by_role("heading", name="The board").evaluate("e => e.scrollIntoView({block: 'start'})")
                page.wait_for_timeout(500)
                screenshot.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(screenshot))
            context.close()
        db.dispose()
    latencies = [seen[n] - posted[n] for n in posted if n in seen]
    load = os.getloadavg()
    return {
        "students": students, "spread_s": spread, "posted": len(posted), "on_the_board": kept,
        "failures": failures, "shown": len(latencies), "refresh_s": limits.CLASS_BOARD_REFRESH_S,
        "p50_s": round(quantile(latencies, 0.5), 2) if latencies else None,
        "p95_s": round(quantile(latencies, 0.95), 2) if latencies else None,
        "max_s": round(max(latencies), 2) if latencies else None,
        "mean_s": round(statistics.fmean(latencies), 2) if latencies else None,
        "posting_s": round(max(posted.values()) - min(posted.values()), 1) if posted else None,
        "load_average": [round(x, 1) for x in load], "cpus": os.cpu_count(),
        "measured": time.strftime("%Y-%m-%d %H:%M"),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--spread", type=float, default=10.0, help="seconds over which the posts are made")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="write the figures as JSON here too")
    parser.add_argument("--screenshot", type=Path, help="save the watched board, filled, as a PNG here (the README's "
                                                          "docs/screenshots/class-board.png)")
    args = parser.parse_args(argv)
    figures = measure(args.students, args.spread, args.seed, args.screenshot)
    text = json.dumps(figures, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
