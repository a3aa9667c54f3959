"""Command line: ``python -m seqviz train --all | train NAME [NAME ...] | evaluate [--json] [NAME ...]``.

``train`` rebuilds shipped checkpoints in assets/models/ with the one training loop (deterministic:
training again gives the same weights) and rewrites assets/models/README.md from the checkpoints'
headers. ``evaluate`` loads every shipped model and measures it again on held-out data
(``--stored`` prints the numbers saved at training time instead, without loading any model).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path

from seqviz import zoo


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _describe(meta: dict) -> str:
    """One line of held-out metrics, worded by the model's task."""
    from seqviz.tasks import TASKS

    task = TASKS.get(meta.get("task") or "")
    return task.describe(meta.get("metrics") or {}) if task is not None else ""


def write_readme(directory: Path) -> Path:
    """assets/models/README.md: the table of shipped models, written from their checkpoints' headers."""
    rows = []
    total = 0
    for name in zoo.available(directory):
        meta = zoo.metadata(name, directory)
        size = zoo.path(name, directory).stat().st_size
        total += size
        rows.append(
            f"| {name} | {meta['family']} | {meta.get('task')} | {meta.get('params', 0):,} | "
            f"{size / 1024:.0f} KB | {meta.get('steps')} | {meta.get('train_seconds', 0):.0f} | "
            f"{_describe(meta)} |"
        )
    missing = [name for name in zoo.NAMES if name not in zoo.available(directory)]
    lines = [
        "# Shipped models",
        "",
        "Written by `python -m seqviz train` (do not edit by hand). Every number below was measured on",
        "held-out data by the training command; `python -m seqviz evaluate --json` measures them again.",
        "",
        "| name | family | task | params | size | steps | train s | held-out metrics |",
        "|---|---|---|---:|---:|---:|---:|---|",
        *rows,
        "",
        f"Total size: {total / 2**20:.2f} MB." + (f" Not trained yet: {', '.join(missing)}." if missing else ""),
        "",
        "Training seconds are wall-clock time on the project's 2-core machine with `torch.set_num_threads(1)`,",
        "often two trainings at a time and other work running beside them: read them as rough costs.",
        "",
        "Reproducible: training is seeded and deterministic on CPU (`torch.use_deterministic_algorithms`, one",
        "thread), so `python -m seqviz train NAME` gives the same weights every time; the files differ between",
        "runs only in the recorded `train_seconds`.",
        "",
        "Each model is one file, `NAME.safetensors`: an ordinary safetensors file (weights only, never pickled)",
        "whose header's `__metadata__` holds one entry, `seqviz`, a JSON document (format, version, family,",
        "config, vocabularies, labels, task, seeds, steps, training seconds, hyperparameters, held-out metrics).",
        "`seqviz.checkpoints.read_meta` reads that document from the header alone, without torch.",
        "",
    ]
    path = directory / "README.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def cmd_train(args) -> int:
    names = list(zoo.NAMES) if args.all else args.names
    if not names:
        _log("name the models to train, or pass --all")
        return 2
    for name in names:
        zoo.entry(name)  # fail early on a typo
    directory = Path(args.dir)
    start = time.perf_counter()
    failures = []
    if args.jobs > 1 and len(names) > 1:
        with ProcessPoolExecutor(max_workers=args.jobs, mp_context=get_context("spawn")) as pool:
            futures = {pool.submit(zoo.train_with_log, n, str(directory), args.log_every): n for n in names}
            for future in as_completed(futures):
                try:
                    future.result()
                except Exception as error:  # report every failure, train the rest
                    failures.append(futures[future])
                    _log(f"[{futures[future]}] FAILED: {error!r}")
    else:
        for name in names:
            try:
                zoo.train_with_log(name, str(directory), args.log_every)
            except Exception as error:
                failures.append(name)
                _log(f"[{name}] FAILED: {error!r}")
    readme = write_readme(directory)
    _log(f"wrote {readme} ({time.perf_counter() - start:.0f} s in all)")
    return 1 if failures else 0


def evaluate_models(names: list[str], directory: Path, stored: bool) -> list[dict]:
    """For each name: name, family, task, params, train seconds and held-out metrics."""
    results = []
    for name in names:
        meta = zoo.metadata(name, directory)
        metrics = meta.get("metrics")
        if not stored:
            checkpoint = zoo.load(name, directory)
            task = zoo.make_task(name, vocabularies=checkpoint.vocabularies)
            metrics = task.evaluate(checkpoint.model)
        results.append({
            "name": name,
            "family": meta["family"],
            "task": meta.get("task"),
            "params": meta.get("params"),
            "train_seconds": meta.get("train_seconds"),
            "steps": meta.get("steps"),
            "metrics": metrics,
        })
    return results


def cmd_evaluate(args) -> int:
    directory = Path(args.dir)
    names = args.names or zoo.available(directory)
    for name in names:
        zoo.entry(name)
    if not args.stored:
        from seqviz.runtime import configure_torch

        configure_torch(args.threads)
    results = evaluate_models(names, directory, args.stored)
    if args.json:
        print(json.dumps(results, indent=1, ensure_ascii=False, allow_nan=False))
    else:
        for result in results:
            print(f"{result['name']:24} {result['family']:20} {result['task']:12} {result['params']:>9,}  "
                  f"{_describe(result)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m seqviz", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    train = commands.add_parser("train", help="train shipped models and write their checkpoints")
    train.add_argument("names", nargs="*", help=f"models to train: {', '.join(zoo.NAMES)}")
    train.add_argument("--all", action="store_true", help="train every shipped model")
    train.add_argument("--jobs", type=int, default=1, help="trainings run at once, one thread each (default 1)")
    train.add_argument("--dir", default=str(zoo.ASSETS_DIR), help="where checkpoints go (default assets/models)")
    train.add_argument("--log-every", type=int, default=250, help="log the loss every N steps")
    train.set_defaults(run=cmd_train)
    evaluate = commands.add_parser("evaluate", help="measure shipped models on held-out data")
    evaluate.add_argument("names", nargs="*", help="models to evaluate (default: every shipped one)")
    evaluate.add_argument("--json", action="store_true", help="print JSON")
    evaluate.add_argument("--stored", action="store_true", help="print the metrics saved at training time")
    evaluate.add_argument("--dir", default=str(zoo.ASSETS_DIR), help="where checkpoints are")
    evaluate.add_argument("--threads", type=int, default=1, help="torch threads for evaluation")
    evaluate.set_defaults(run=cmd_evaluate)
    args = parser.parse_args(argv)
    if args.command == "train":
        from seqviz.runtime import configure_torch

        configure_torch()
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
