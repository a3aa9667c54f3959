"""Command line: ``python -m seqviz train --all | train NAME [NAME ...] | train --task T --family F ... --out FILE``
and ``evaluate [--json] [NAME ...]``.

``train NAME`` / ``train --all`` rebuild shipped checkpoints in assets/models/ with the one training loop
(deterministic: training again gives the same weights) and rewrite assets/models/README.md from the
checkpoints' headers. ``train --task T --family F [sizes] --steps N [--lr --batch-size --seed --name]
--out FILE.safetensors`` trains a model of your own, exactly as the app's /train page does (a
:class:`seqviz.runs.RunSpec`, so the same bounds, seqviz.limits), and writes the one-file checkpoint the
app's upload takes, with its held-out metrics. ``evaluate`` loads every shipped model and measures it again
on held-out data (``--stored`` prints the numbers saved at training time instead, without loading any model).
"""

from __future__ import annotations

import argparse
import json
import re
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


# ---------------------------------------------------------------------------------------------------------
# train --task ...: a run of your own, the app's RunSpec


# The options of a run of your own and the RunSpec field each sets (None: left at RunSpec's default).
SPEC_OPTIONS = ("task", "family", "embedding", "hidden", "heads", "layers", "steps", "lr", "batch_size", "seed",
                "name")
SIZE_OPTIONS = ("embedding", "hidden", "heads", "layers")


def _option(field: str) -> str:
    return "--" + field.replace("_", "-")


def spec_from_args(args):
    """The :class:`seqviz.runs.RunSpec` the options describe; ValueError (one sentence) when they cannot run."""
    from seqviz import families
    from seqviz.runs import TASKS, RunSpec, task_families

    if args.task is not None and args.task not in TASKS:
        raise ValueError(f"--task must be one of {', '.join(TASKS)}, not {args.task!r:.40}")
    if args.family is None:
        raise ValueError(f"--task {args.task} needs --family, one of {', '.join(task_families(args.task))}")
    counts = args.family in families.FAMILIES and families.get(args.family).counts  # no steps to set
    if args.steps is None and not counts:
        raise ValueError(f"--task needs --steps N: optimisation steps, 1 to {_max_steps()}")
    fields = {field: getattr(args, field) for field in SPEC_OPTIONS if getattr(args, field) is not None}
    try:
        spec = RunSpec(**fields)
    except ValueError as error:
        text = re.sub(r"^(embedding|hidden|heads|layers|steps|lr|seed) is ", r"--\1 is ", str(error))
        raise ValueError(text.replace("batch_size", "--batch-size")) from None
    ignored = [_option(f) for f in SIZE_OPTIONS if getattr(args, f) is not None and f not in spec.sizes]
    if ignored:
        _log(f"note: {', '.join(ignored)} {'does' if len(ignored) == 1 else 'do'} not apply to {spec.family}; ignored")
    return spec


def _max_steps() -> int:
    from seqviz import limits

    return limits.TRAIN_MAX_STEPS


def check_own_run(args) -> str | None:
    """Why the train command's options do not make sense together (None when they do)."""
    own = [_option(f) for f in (*SPEC_OPTIONS, "out") if f != "task" and getattr(args, f) is not None]
    if args.task is None:
        if own:
            verb = "describes" if len(own) == 1 else "describe"
            return f"{', '.join(own)} {verb} a run of your own: add --task (translation, emails or memory)"
        return None
    if args.names or args.all:
        shipped = "--all" if args.all else " ".join(args.names)
        return (f"train either shipped models ({shipped}) or a run of your own (--task), not both: "
                "drop the model names or --task")
    if args.out is None:
        return "--task needs --out FILE.safetensors: where the checkpoint goes"
    if not args.out.endswith(".safetensors") or args.out.endswith("/.safetensors") or args.out == ".safetensors":
        return f"--out must name a file ending in .safetensors (the app's upload takes those), not {args.out!r:.80}"
    if Path(args.out).is_dir():
        return f"--out is a folder ({args.out!r:.80}); name the file, e.g. {args.out.rstrip('/')}/model.safetensors"
    return None


def train_own(spec, out: Path, log_every: int | None = None, stop=None) -> dict:
    """Train ``spec`` with the one driver (seqviz.driver, as the app's workers do), measure it on held-out data,
    save it to ``out``.

    Logs progress to stderr; returns the checkpoint's document. The document is the app's: name, task, seeds,
    steps, training seconds, train config, spec, vocabularies, held-out metrics.
    """
    from seqviz import driver

    started = time.perf_counter()
    every = log_every or max(1, min(100, spec.steps // 20))
    said = {
        "data": f"preparing {spec.task} data and a {spec.family} model ({spec.num_parameters():,} numbers to learn)",
        "training": f"training: {spec.label}",
    }

    def phase(name: str) -> None:
        if name in said:
            _log(said[name])

    def progress(p) -> None:
        if p.step == 1 or p.step % every == 0 or p.step == p.steps:
            loss = "" if p.loss != p.loss else f" loss {p.loss:.4f}"
            _log(f"step {p.step}/{p.steps}{loss} ({p.elapsed_s:.1f} s)")

    def finished(result) -> bool:
        if result.stopped:
            _log(f"stopped after {result.steps} of {spec.train_config().steps} steps; keeping what it learned")
        _log(f"trained {result.steps} steps in {result.seconds:.1f} s; measuring it on held-out data")
        return True

    trained = driver.run(driver.from_spec(spec, "trained from the command line"), out, progress=progress, stop=stop,
                         phase=phase, finished=finished)
    meta = trained.document
    _log(f"held-out: {_describe(meta)}")
    _log(f"wrote {trained.path} ({trained.path.stat().st_size / 1024:.0f} KB; "
         f"{time.perf_counter() - started:.0f} s in all)")
    return meta


def _stop_on_interrupt():
    """A threading.Event set by the first Ctrl-C (training ends after the step and is saved); the second one
    interrupts. Returns (event, restore)."""
    import signal
    import threading

    event = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        return event, lambda: None
    previous = signal.getsignal(signal.SIGINT)

    def handler(signum, frame) -> None:
        if event.is_set():
            raise KeyboardInterrupt
        event.set()
        _log("stopping after this step (Ctrl-C again to quit without saving)")

    signal.signal(signal.SIGINT, handler)
    return event, lambda: signal.signal(signal.SIGINT, previous)


def cmd_train_own(args) -> int:
    spec = args.spec
    stop, restore = _stop_on_interrupt()
    try:
        train_own(spec, Path(args.out), args.log_every, stop=stop)
    except KeyboardInterrupt:
        _log("interrupted: nothing written")
        return 130
    finally:
        restore()
    print(args.out)
    return 0


# ---------------------------------------------------------------------------------------------------------


def cmd_train(args) -> int:
    if args.task is not None:
        return cmd_train_own(args)
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
            futures = {pool.submit(zoo.train_with_log, n, str(directory), args.log_every or 250): n for n in names}
            for future in as_completed(futures):
                try:
                    future.result()
                except Exception as error:  # report every failure, train the rest
                    failures.append(futures[future])
                    _log(f"[{futures[future]}] FAILED: {error!r}")
    else:
        for name in names:
            try:
                zoo.train_with_log(name, str(directory), args.log_every or 250)
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


TRAIN_USAGE = """python -m seqviz train --all
       python -m seqviz train NAME [NAME ...]
       python -m seqviz train --task T --family F [--embedding N --hidden N --heads N --layers N] --steps N
                              [--lr X --batch-size N --seed N --name S] --out FILE.safetensors"""


def _wants_help(argv: list[str] | None) -> bool:
    words = sys.argv[1:] if argv is None else argv
    return "train" in words and ("-h" in words or "--help" in words)


def _own_run_help(detailed: bool) -> tuple[str, dict]:
    """The help of a run of your own, and RunSpec's defaults by field.

    Importing seqviz.runs builds the three tasks' data (its presets are checked at import: seconds), so only
    ``train --help`` and ``train --task`` import it; every other command starts without it."""
    from seqviz import limits

    width = limits.TRAIN_WIDTH_RANGE
    bounds = (
        f"Bounds: embedding and hidden {width[0]}-{width[1]}, heads 1-{limits.TRAIN_MAX_HEADS} (embedding must "
        f"divide by heads), layers 1-{limits.TRAIN_MAX_LAYERS}, steps 1-{limits.TRAIN_MAX_STEPS}, batch size "
        f"{limits.TRAIN_BATCH_RANGE[0]}-{limits.TRAIN_BATCH_RANGE[1]}, lr {limits.TRAIN_LR_RANGE[0]:g}-"
        f"{limits.TRAIN_LR_RANGE[1]:g}, at most {limits.TRAIN_MAX_PARAMETERS:,} numbers to learn. Sizes a family "
        "does not use are ignored. One torch thread; Ctrl-C stops after the current step and still saves."
    )
    intro = ("Train a model of your own, as the app's /train page does (the same RunSpec, the same bounds: "
             "seqviz.limits), and write the one-file checkpoint the app's upload takes.")
    if not detailed:
        return f"{intro} {bounds}", {}
    from seqviz.runs import TASKS, RunSpec, task_families

    families = "Families by task: " + "; ".join(f"{task}: {', '.join(task_families(task))}" for task in TASKS)
    return f"{intro} {families}. {bounds}", {field: getattr(RunSpec, field) for field in SPEC_OPTIONS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m seqviz", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    train = commands.add_parser("train", help="train shipped models, or a model of your own (--task)",
                                usage=TRAIN_USAGE)
    train.add_argument("names", nargs="*", help=f"shipped models to train: {', '.join(zoo.NAMES)}")
    train.add_argument("--all", action="store_true", help="train every shipped model")
    train.add_argument("--jobs", type=int, default=1, help="trainings run at once, one thread each (default 1)")
    train.add_argument("--dir", default=str(zoo.ASSETS_DIR), help="where checkpoints go (default assets/models)")
    train.add_argument("--log-every", type=int, default=None,
                       help="log the loss every N steps (default 250; a run of your own: about 20 lines)")
    own_help, defaults = _own_run_help(_wants_help(argv))

    def default(field: str) -> str:
        return f" (default {defaults[field]:g})" if field in defaults else ""

    own = train.add_argument_group("a model of your own", own_help)
    own.add_argument("--task", help="translation, emails or memory")
    own.add_argument("--family", help="the model family (see above)")
    for field in SIZE_OPTIONS:
        own.add_argument(_option(field), type=int, default=None, metavar="N",
                         help=f"{field}{default(field)}")
    own.add_argument("--steps", type=int, default=None, metavar="N", help="optimisation steps, one batch each")
    own.add_argument("--lr", type=float, default=None, metavar="X", help=f"peak learning rate{default('lr')}")
    own.add_argument("--batch-size", type=int, default=None, metavar="N",
                     help=f"examples per step{default('batch_size')}")
    own.add_argument("--seed", type=int, default=None, metavar="N", help="initial weights and batches (default 0)")
    own.add_argument("--name", default=None, metavar="S", help="the model's name (default: described from the run)")
    own.add_argument("--out", default=None, metavar="FILE.safetensors", help="where the checkpoint goes")
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
        problem = check_own_run(args)
        if problem is None and args.task is not None:
            try:
                args.spec = spec_from_args(args)
            except ValueError as error:
                problem = str(error)
        if problem is None and args.task is None:
            unknown = [name for name in args.names if name not in zoo.NAMES]
            if unknown:
                problem = (f"no shipped model called {', '.join(unknown)}; shipped models: {', '.join(zoo.NAMES)} "
                           "(or train your own with --task)")
        if problem is not None:
            train.error(problem)  # usage and the message on stderr, exit code 2
        from seqviz.runtime import configure_torch

        configure_torch()
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
