"""python -m benchmarks: page latency (cold and warm), peak memory, training throughput.

Pages run through Streamlit's AppTest in this process, so "cold" includes loading torch and the models
the page needs, and "warm" is a rerun with everything cached. Timings are medians on this machine, which
may be shared and noisy: read them as rough costs. The report goes to benchmarks/report.md.
"""

from __future__ import annotations

import argparse
import platform
import resource
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "benchmarks" / "report.md"


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports kB


def page_latency(repeats: int) -> list[dict]:
    from streamlit.testing.v1 import AppTest

    from seqviz.story import PAGES

    rows = []
    for page in PAGES:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
        at.run()
        start = time.perf_counter()
        at.switch_page(page.script).run()
        cold = time.perf_counter() - start
        if at.exception:
            raise RuntimeError(f"{page.script} raised: {[e.value for e in at.exception]}")
        warm = []
        for _ in range(repeats):
            start = time.perf_counter()
            at.run()
            warm.append(time.perf_counter() - start)
        rows.append({"page": f"/{page.url_path}", "cold s": cold, "warm s": statistics.median(warm),
                     "peak RSS MB": _peak_rss_mb()})
    return rows


def training_throughput(steps: int) -> list[dict]:
    import torch

    from seqviz import zoo
    from seqviz.train import TrainConfig, train

    torch.set_num_threads(1)
    rows = []
    for name in ("lstm", "transformer", "memory-lstm", "plain", "additive", "dot", "transformer-translator"):
        task = zoo.make_task(name)
        model = zoo.build(name, task)
        config = TrainConfig(**{**zoo.entry(name).train, "steps": steps, "warmup": 0})
        result = train(model, task, config)
        batch = config.batch_size
        rows.append({"model": name, "steps": result.steps, "seconds": result.seconds,
                     "examples per second": result.steps * batch / result.seconds})
    return rows


def _table(rows: list[dict]) -> str:
    keys = list(rows[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for row in rows:
        lines.append("| " + " | ".join(f"{v:.2f}" if isinstance(v, float) else str(v) for v in row.values()) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--repeats", type=int, default=3, help="warm reruns per page")
    parser.add_argument("--train-steps", type=int, default=30, help="training steps per model (0: skip)")
    args = parser.parse_args()

    started = time.strftime("%Y-%m-%d %H:%M")
    pages = page_latency(args.repeats)
    sections = [
        "# seqviz benchmarks",
        f"Measured {started} on {platform.machine()}, {platform.python_version()}, "
        f"{__import__('os').cpu_count()} CPUs. Written by `python -m benchmarks`; never asserted in tests.",
        "## Pages (AppTest, in one process)",
        "cold: the page's first run in this process (the first page to need torch pays for loading it; "
        "models and traces cached by earlier pages stay cached, as on a server shared by many visitors); "
        "warm: a rerun with caches filled; peak RSS: the process's peak memory so far.",
        _table(pages),
    ]
    if args.train_steps:
        sections += ["## Training throughput (one thread, the zoo's batch sizes)", _table(
            training_throughput(args.train_steps))]
    REPORT.write_text("\n\n".join(sections) + "\n", encoding="utf-8")
    print(REPORT.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
