"""The lab store, measured: what keeping a class's work costs, and what a restart and a lost worker cost.

- writing (checked whole, then stored) and reading back a checkpoint of each preset's size, on SQLite (the
  default) and PostgreSQL (a server from Debian's archive, started here as the tests start it);
- the database's size per lab after a class of 30 (each lab: the quick translator's model, and its run with a
  full curve and snapshots);
- a restart with 30 queued runs: all still queued, and how long until the new server's cluster holds them all;
- the quick translator with its worker killed halfway, against the same run uninterrupted: the same weights, and
  the time lost.

- a reload, in Chromium, until *Your models* lists the model uploaded before it (the page painted with it).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.report import table

ROOT = Path(__file__).resolve().parents[1]
CLASS = 30


@contextlib.contextmanager
def _stores():
    """(name, Database, size in bytes of everything it holds) for SQLite and PostgreSQL."""
    from seqviz.store.engine import Database

    sys.path.insert(0, str(ROOT / "tests"))
    from databases import postgres_server  # the tests' own PostgreSQL server

    with tempfile.TemporaryDirectory() as folder, postgres_server(ROOT) as server:
        sqlite = Database(f"sqlite:///{folder}/seqviz.db")

        def sqlite_size() -> int:  # the database's pages, those still in its write-ahead log included
            with sqlite.transaction(reading=True) as session:
                pages = session.connection().exec_driver_sql("PRAGMA page_count").scalar()
                return int(pages) * int(session.connection().exec_driver_sql("PRAGMA page_size").scalar())

        postgres = Database(server.url)

        def postgres_size() -> int:
            from sqlalchemy import text

            with postgres.engine.connect() as connection:
                return int(connection.execute(text("SELECT pg_database_size(current_database())")).scalar())

        yield [("SQLite", sqlite, sqlite_size), ("PostgreSQL", postgres, postgres_size)]
        sqlite.dispose()
        postgres.dispose()


def _preset_files() -> dict[str, bytes]:
    """A checkpoint of each preset's model (one training step: the file's size is the trained one's)."""
    from seqviz import driver
    from seqviz.runs import PRESETS

    files = {}
    for preset in PRESETS:
        spec = dataclasses.replace(preset.spec, steps=1)
        files[preset.name] = driver.run(driver.from_spec(spec, "benchmark")).checkpoint
    return files


def checkpoints(files: dict[str, bytes], stores, repeats: int) -> list[dict]:
    from seqviz.store import labs, models

    rows = []
    for store_name, db, _size in stores:
        for name, data in files.items():
            writes, reads = [], []
            for _ in range(repeats):
                lab = labs.open_lab(db, None)
                began = time.perf_counter()
                kept, _ = models.add(db, lab.id, data, "model.safetensors")
                writes.append(time.perf_counter() - began)
                began = time.perf_counter()
                models.checked(models.data(db, lab.id, kept.fingerprint))
                reads.append(time.perf_counter() - began)
                labs.forget(db, lab.id)
            rows.append({"store": store_name, "preset": name, "file KB": len(data) / 1024,
                         "write (checked + stored) ms": 1000 * statistics.median(writes),
                         "read (read + checked) ms": 1000 * statistics.median(reads)})
    return rows


def class_size(translator: bytes, stores) -> list[dict]:
    """Bytes per lab after CLASS labs each kept the quick translator and its run (a full curve, 40 snapshots)."""
    import pickle

    from seqviz import limits
    from seqviz.progress import Report
    from seqviz.runs import preset
    from seqviz.store import labs, models, runs

    spec = preset("Quick: attention translator").spec
    snapshot = pickle.dumps({"alignment": [[0.1] * 12] * 14, "words": ["mot"] * 14})  # about a real one's size
    rows = []
    for store_name, db, size in stores:
        before = size()
        for _ in range(CLASS):
            lab = labs.open_lab(db, None)
            run_id = runs.create(db, lab.id, spec)
            runs.begin(db, run_id, "benchmark", os.getpid())
            for step in range(1, spec.steps + 1, 10):
                runs.report(db, run_id, Report(step=step, losses=[(s, 1.0 / s) for s in range(step, step + 10)],
                                               metrics=[(step, 0.5)]))
            for step in range(limits.TRAIN_MAX_SNAPSHOTS):
                runs.report(db, run_id, Report(snapshots=[(step, snapshot)]))
            kept, _ = models.add(db, lab.id, translator, "quick.safetensors", origin="trained here")
            runs.end(db, run_id, "finished", step=spec.steps, model_id=models.model_id(db, lab.id, kept.fingerprint))
        after = size()
        rows.append({"store": store_name, "labs": CLASS, "grew MB": (after - before) / 2**20,
                     "per lab KB": (after - before) / CLASS / 1024, "model KB": len(translator) / 1024})
    return rows


def restart_with_queued_runs() -> dict:
    """30 queued runs in the store of a server that stopped before its cluster trained any, then a new server on
    the same store."""
    from seqviz.cluster import Cluster
    from seqviz.jobs import KEY_PREFIX, RunManager, _scheduler_keys
    from seqviz.runs import RunSpec
    from seqviz.store import labs, runs
    from seqviz.store.engine import Database

    with tempfile.TemporaryDirectory() as folder:
        db = Database(f"sqlite:///{folder}/seqviz.db")
        spec = RunSpec(task="emails", family="bow", steps=1, seed=0)
        for _ in range(CLASS):  # what a server records as 30 visitors press Start, before it stops
            runs.create(db, labs.open_lab(db, None).id, spec)
        queued_after_stop = runs.counts(db)["queued"]
        began = time.perf_counter()
        second = RunManager(db, cluster=Cluster(workers=1))
        held = 0
        while time.perf_counter() - began < 300:
            client = second.cluster._client
            if client is not None:
                keys = client.run_on_scheduler(_scheduler_keys)
                held = len([k for k in keys if k.startswith(KEY_PREFIX)])
                ended = CLASS - sum(runs.counts(db).values())
                if held + ended >= CLASS:
                    break
            time.sleep(0.2)
        handed = time.perf_counter() - began
        second.close()
        db.dispose()
    return {"queued runs": CLASS, "still queued after the stop": queued_after_stop,
            "handed to the new cluster s (its start included)": handed}


def worker_kill(at_share: float = 0.5) -> dict:
    """The quick translator through the app's run engine, uninterrupted and with its worker killed at ``at_share``
    of its steps (after a saved point): its weights against the uninterrupted run's, and the time lost."""
    import torch

    from seqviz.checkpoints import load_bytes
    from seqviz.cluster import Cluster
    from seqviz.jobs import RunManager
    from seqviz.runs import preset
    from seqviz.store import labs, models, runs
    from seqviz.store.engine import Database

    spec = preset("Quick: attention translator").spec
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        db = Database(f"sqlite:///{folder}/seqviz.db")
        manager = RunManager(db, cluster=Cluster(workers=2), max_seconds=3600)  # a busy machine: no time limit
        for kill in (False, True):
            lab = labs.open_lab(db, None)
            run_id = manager.submit(lab.id, spec)
            killed = False
            while True:
                labs.seen(db, lab.id)
                (state,) = runs.states(db, lab.id, snapshots=False)
                if state.ended:
                    break
                if kill and not killed and state.status == "running" and state.step >= at_share * spec.steps:
                    with db.transaction(reading=True) as session:
                        from seqviz.store.schema import Run

                        saved = session.get(Run, run_id).saved_step
                    if saved > 0:
                        os.kill(state.worker_pid, signal.SIGKILL)
                        killed = True
                time.sleep(0.2)
            data = models.data(db, lab.id, state.fingerprint)
            results["killed" if kill else "uninterrupted"] = {
                "submitted to end s": state.ended_at - state.submitted_at, "status": state.status,
                "attempts": state.attempts, "note": state.note, "weights": load_bytes(data).model.state_dict()}
        manager.close()
        db.dispose()
    a, b = results["uninterrupted"].pop("weights"), results["killed"].pop("weights")
    return {**results, "same weights": all(torch.equal(a[k], b[k]) for k in a),
            "time lost s": results["killed"]["submitted to end s"] - results["uninterrupted"]["submitted to end s"]}


def reload_to_your_models(repeats: int) -> dict:
    """Seconds from a reload in Chromium to the page painted with *Your models (1)* in its sidebar, on a server of
    its own (seqviz.browser: the one harness) with a store of its own."""
    from seqviz import browser

    with tempfile.TemporaryDirectory() as folder, browser.streamlit_server(
            Path(folder) / "server.log", {"SEQVIZ_DATA_DIR": folder}) as server, browser.chromium() as chromium:
        page = browser.new_page(browser.new_context(chromium))
        page.goto(f"{server.url}/order")
        browser.wait_painted(page)
        sidebar = page.get_by_test_id("stSidebar")
        sidebar.get_by_text("Your models (0)").first.click()
        sidebar.locator("input[type=file]").set_input_files(str(ROOT / "assets" / "models" / "lstm.safetensors"))
        sidebar.get_by_text("Your models (1)").first.wait_for(timeout=60_000)
        times = []
        for _ in range(repeats):
            began = time.perf_counter()
            page.reload()
            sidebar.get_by_text("Your models (1)").first.wait_for(timeout=60_000)
            browser.wait_painted(page)
            times.append(time.perf_counter() - began)
    return {"reloads": repeats, "median s": statistics.median(times), "max s": max(times)}


def measure(quick: bool = False) -> dict:
    from seqviz.runtime import configure_torch

    configure_torch()
    files = _preset_files()
    with _stores() as stores:
        figures = {"checkpoints": checkpoints(files, stores, repeats=3 if quick else 7),
                   "class": class_size(files["Quick: attention translator"], stores)}
    figures["reload"] = reload_to_your_models(repeats=3 if quick else 10)
    figures["restart"] = restart_with_queued_runs()
    figures["worker_kill"] = worker_kill()
    return figures


def markdown(figures: dict) -> str:
    kill = figures["worker_kill"]
    restart = figures["restart"]
    return "\n\n".join([
        "## The lab store: what keeping a class's work costs",
        "A checkpoint of each preset's size written to the store (checked whole first, as an upload is) and read "
        "back (read and checked again, as every page does), median of several:",
        table(figures["checkpoints"]),
        f"The database after a class of {CLASS} labs, each keeping the quick translator's model and its run (a "
        "curve of every step, 40 snapshots):",
        table(figures["class"]),
        f"A reload in Chromium until the page is painted with *Your models (1)* again (the model uploaded before): "
        f"median {figures['reload']['median s']:.2f} s, at most {figures['reload']['max s']:.2f} s over "
        f"{figures['reload']['reloads']} reloads (/order, its charts included).",
        f"A server stopped with {restart['queued runs']} runs queued: {restart['still queued after the stop']} "
        f"still queued afterwards; a new server handed them all to its cluster in "
        f"{restart['handed to the new cluster s (its start included)']:.1f} s, starting the cluster included.",
        f"The quick translator with its worker killed halfway: the same weights as uninterrupted: "
        f"{'yes' if kill['same weights'] else 'NO'}; submitted to end {kill['uninterrupted']['submitted to end s']:.0f}"
        f" s uninterrupted and {kill['killed']['submitted to end s']:.0f} s with the kill ({kill['time lost s']:.0f} s "
        f"lost: the steps since the saved point, and a new worker starting). Its note: {kill['killed']['note']}",
    ])


if __name__ == "__main__":
    import json

    found = measure(quick="--quick" in sys.argv)
    print(markdown(found))
    print(json.dumps(found, indent=1, default=str))
