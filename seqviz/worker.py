"""One run, in a Dask worker process: :func:`train_on_worker` is the task the web server submits.

It trains through the one driver (:func:`seqviz.driver.run`: build, the one training loop, measure, save; the
command line's and the zoo's too) and talks to nobody but the lab store (seqviz.store.runs), which the web
servers read, so the worker may be on another machine and the run lands in the store even while no web server
is up:

- **Progress out**: the training loop's own callbacks buffer what happened (steps, losses, held-out measures,
  "watch it learn" snapshots, what it is doing before its first step) as one typed record
  (:class:`seqviz.progress.Report`) written to the run's row at most every ``seqviz.limits.TRAIN_REPORT_EVERY_S``
  seconds, and at once when the phase changes or a snapshot is taken.
- **Control in**: each write reads back whether the visitor asked to stop, and when somebody of the run's lab
  last looked at a page; nobody for ``orphan_timeout_s`` (past the LAB_SEEN_EVERY_S a look may be newer than the
  store says) stops the run, keeping what it learned (unless it stopped before its first step: nothing learned).
  A lab that was forgotten meanwhile ends the run unsaved.
- **Saved points**: every ``seqviz.limits.TRAIN_SAVE_EVERY_S`` seconds of training, the model, the optimiser and
  the random states (:class:`seqviz.train.TrainState`) go to the run's row. If the worker dies, Dask starts the
  task again on another worker, which goes on from that point (:func:`seqviz.store.runs.begin` rolls the record
  back to it): the final weights are an uninterrupted run's, bit for bit.
- **Result**: the checkpoint joins the models of every lab following the run (identical runs are trained once:
  seqviz.run_identity), and the run's row gets its end (metrics, model, times).

Why the worker writes, not the web server: a run must outlive the web server that submitted it (a redeploy, a
failover in the lecture hall); a web process forwarding progress would lose whatever arrives while it is down,
and only it could show the run. The workers reach the store with the same settings (SEQVIZ_DATABASE_URL, or the
SQLite file, which the app's own workers share with it on one machine).
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

from seqviz import limits
from seqviz.progress import Report
from seqviz.runtime import give_memory_back

WORKER_NICE = 10  # a worker trains at this Unix nice: on a host it shares with the web server, pages come first
HEARTBEAT_S = 5.0  # seconds between two writes of "still here" to a training run's record
# glibc's malloc settings (mallopt) for a training worker: see keep_freed_memory.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt's parameter numbers (malloc.h)
MMAP_THRESHOLD = 32 * 2**20  # the most glibc's own adaptive threshold grows to (64-bit DEFAULT_MMAP_THRESHOLD_MAX)
_malloc_set = False


def dask_setup(worker) -> None:
    """Run by every worker as it starts (the app's own cluster preloads this module; on another cluster:
    ``dask worker --preload seqviz.worker``): the worker's priority lowered, its malloc set for training, torch
    set to one thread and deterministic algorithms, and everything a run imports (torch, the models, the views its
    snapshots trace, the store) loaded before the first run, instead of in its first seconds: the views' first
    import alone took 3 s of a first run's training clock (its first snapshot) on this 2-core machine."""
    from seqviz.runtime import configure_torch, lower_priority

    lower_priority(WORKER_NICE)
    keep_freed_memory()
    configure_torch()
    import seqviz.driver
    import seqviz.store.runs
    import seqviz.watch  # noqa: F401  (torch, the models and tasks, the store, the views: imported once)


def keep_freed_memory() -> None:
    """Let this worker's malloc keep freed memory for the next step, as a plain process's does; once per process.

    Dask's nanny starts every worker with ``MALLOC_TRIM_THRESHOLD_=65536`` (``distributed.nanny.pre-spawn-environ``)
    so that freed memory goes back to the OS at once. Setting it also fixes glibc's mmap threshold at 128 KiB: every
    tensor above that (a batch's activations, each gradient) becomes a fresh mmap, faulted in page by page and
    unmapped when freed. On the quick translator that is 1.7 M page faults and 5.5 s of system time per 60 steps,
    against 45 k and 0.3 s in ``python -m seqviz train``: each step took 1.75x the CPU (issue 26). The worker sets
    the thresholds glibc's adaptive rule reaches by itself in a plain process (mmap above 32 MiB, give back above
    64 MiB free), and hands the memory back when each run ends (seqviz.runtime.give_memory_back). glibc only (Linux);
    elsewhere it does nothing."""
    global _malloc_set
    if _malloc_set:
        return
    _malloc_set = True
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
        libc.mallopt(_M_TRIM_THRESHOLD, 2 * MMAP_THRESHOLD)


@dataclass(frozen=True)
class SnapshotView:
    """The "watch it learn" views a run is watched through, as the worker computes them: picklable in a few bytes
    (the task's data is not shipped with it: the worker builds the snapshot function from its own copy)."""

    task: str
    family: str
    tokens: tuple[str, ...]
    views: tuple[str, ...]  # view names, in the page's order of preference (seqviz.watch.watched_view)

    @classmethod
    def for_run(cls, spec, tokens, views) -> SnapshotView | None:
        """The views for a run of ``spec`` on these tokens; None when none of them has anything to show."""
        from seqviz.watch import watched_view

        tokens = tuple(tokens or ())
        if watched_view(views, spec.family, spec.task, tokens) is None:
            return None
        return cls(spec.task, spec.family, tokens, tuple(views))

    @classmethod
    def from_dict(cls, fields: dict) -> SnapshotView:
        return cls(str(fields["task"]), str(fields["family"]), tuple(map(str, fields["tokens"])),
                   tuple(map(str, fields["views"])))

    def to_dict(self) -> dict:
        return {**asdict(self), "tokens": list(self.tokens), "views": list(self.views)}

    def __call__(self, model) -> Any:
        return _view_function(self)(model)


_VIEWS: dict[SnapshotView, Any] = {}


def _view_function(view: SnapshotView):
    function = _VIEWS.get(view)
    if function is None:
        from seqviz.runs import shared_task
        from seqviz.watch import snapshot_fn

        function = snapshot_fn(shared_task(view.task), view.tokens, view.family, view.views)
        if function is None:
            raise ValueError("this view has nothing to show")
        if len(_VIEWS) >= 32:
            _VIEWS.clear()
        _VIEWS[view] = function
    return function


class _Reporter:
    """The run's side of the store: buffers a Report and writes it at most every TRAIN_REPORT_EVERY_S (or at once
    when asked), reading back whether to stop."""

    def __init__(self, db, run_id: str, orphan_timeout_s: float):
        self.db, self.run_id, self.orphan_timeout_s = db, run_id, orphan_timeout_s
        self.pending = Report()
        self.last_sent = 0.0
        self.stopped = False  # asked, timed out, nobody looking, or the lab gone
        self.gone = False  # the lab (or the run) is no longer in the store: nothing to save
        self.reason: str | None = None

    def note(self, **fields) -> None:
        for key in ("losses", "metrics", "snapshots"):
            getattr(self.pending, key).extend(fields.pop(key, ()))
        for key, value in fields.items():
            setattr(self.pending, key, value)

    def send(self, force: bool = False) -> None:
        from seqviz.store import runs

        now = time.monotonic()
        if not force and now - self.last_sent < limits.TRAIN_REPORT_EVERY_S:
            return
        record, self.pending = self.pending, Report()
        self.last_sent = now
        control = runs.report(self.db, self.run_id, record)
        if control.last_seen is None:
            self.stopped = self.gone = True
        elif control.stop:
            self.stopped = True
        elif time.time() - control.last_seen > self.orphan_timeout_s + limits.LAB_SEEN_EVERY_S:
            self.stop("nobody looking")  # (last_seen is written at most every LAB_SEEN_EVERY_S: a look may be newer)

    def stop(self, reason: str) -> None:
        if not self.stopped:
            self.stopped, self.reason = True, reason
            self.note(stop_reason=reason)


class _Heartbeat(threading.Thread):
    """Writes the run's updated_at every HEARTBEAT_S while it trains, measures or saves (a report may not come for
    a while then): a run whose worker stopped writing is one a web server may hand to its cluster again
    (seqviz.jobs.RUNNING_SILENT_S), and one that writes is left to the cluster training it."""

    def __init__(self, db, run_id: str):
        super().__init__(name="seqviz-run-heartbeat", daemon=True)
        self.db, self.run_id, self.done = db, run_id, threading.Event()

    def run(self) -> None:
        from seqviz.store import StoreUnavailable, runs

        while not self.done.wait(HEARTBEAT_S):
            with contextlib.suppress(StoreUnavailable):  # the store back later: the next beat
                runs.report(self.db, self.run_id, Report())

    def stop(self) -> None:
        self.done.set()


def train_on_worker(run_id: str, database_url: str | None, orphan_timeout_s: float,
                    max_seconds: float = limits.TRAIN_MAX_SECONDS,
                    snapshot_every_s: float = limits.TRAIN_SNAPSHOT_EVERY_S,
                    save_every_s: float = limits.TRAIN_SAVE_EVERY_S) -> str:
    """Train the store's run ``run_id`` in this worker, from its last saved point if it has one; returns how it
    ended ("finished", "stopped", "failed", or "nothing to do" for a run cancelled or ended meanwhile).
    ``database_url``: the store (None: this worker's own settings, SEQVIZ_DATABASE_URL or the SQLite file)."""
    from seqviz import store
    from seqviz.runtime import lower_priority, name_os_thread
    from seqviz.store import runs

    db = store.database(database_url)
    lower_priority(WORKER_NICE)  # (these two done already where the worker preloaded this module)
    keep_freed_memory()
    began = runs.begin(db, run_id, _worker_address(), os.getpid())
    if began is None:
        return "nothing to do"
    heartbeat = _Heartbeat(db, run_id)
    heartbeat.start()  # (before the OS name below: a new thread takes its starter's, and the heartbeat trains nothing)
    thread_name = name_os_thread("seqviz-run")  # the worker's thread lives on after the run: its name comes back
    reporter = _Reporter(db, run_id, orphan_timeout_s)
    try:
        return _train(db, run_id, began, reporter, max_seconds, snapshot_every_s, save_every_s)
    except Exception as error:  # the run fails with the reason; the worker goes on to the next run
        runs.end(db, run_id, "failed", error=f"{type(error).__name__}: {error}"[:500])
        return "failed"
    finally:
        heartbeat.stop()
        if thread_name:
            name_os_thread(thread_name)
        gc.collect()
        give_memory_back()


def _train(db, run_id: str, began: dict, reporter: _Reporter, max_seconds: float, snapshot_every_s: float,
           save_every_s: float) -> str:
    """The run through the one driver (seqviz.driver): this side reports it, stops it, saves its points and takes
    snapshots."""
    from seqviz.runtime import configure_torch

    configure_torch()  # one thread, deterministic: once per worker process
    import torch

    from seqviz import driver
    from seqviz.run_identity import identity_key
    from seqviz.runs import RunSpec
    from seqviz.store import runs
    from seqviz.train import TrainState, TrainStateError

    spec = RunSpec(**began["spec"])
    if began["key"] is not None and began["key"] != identity_key(spec):  # this worker computes otherwise
        runs.rekey(db, run_id, identity_key(spec))
    watch = began["watch"]
    snapshot_fn = SnapshotView.from_dict(watch) if watch else None
    resume = None
    if began["saved_state"] is not None:
        try:
            resume = TrainState.from_bytes(began["saved_state"])
        except TrainStateError as error:  # a damaged saved point: its record begins again, and says so
            runs.begin_again(db, run_id, f"Its worker stopped; its saved point (step {began['saved_step']}) could "
                                         f"not be read ({error})")
    trained_before = resume.seconds if resume is not None else 0.0
    clock: dict[str, Any] = {"start": time.perf_counter(), "next_eval": 0.0, "next_snapshot": 0.0, "phase": ""}
    if began["stop"]:
        reporter.stop("asked")

    def trained_s() -> float:
        return trained_before + time.perf_counter() - clock["start"]

    def take_snapshot(model, step: int) -> None:
        nonlocal snapshot_fn
        if snapshot_fn is None:
            return
        model.eval()
        try:
            with torch.inference_mode():
                value = snapshot_fn(model)
            reporter.note(snapshots=[(step, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))])
        except Exception as failure:  # a broken snapshot function must not end the training
            snapshot_fn = None
            reporter.note(error=f"watch-it-learn snapshot failed and was switched off: {type(failure).__name__}: "
                                f"{failure}"[:500])
        reporter.send(force=True)

    def phase(name: str) -> None:
        if name == clock.get("phase"):
            return
        clock["phase"] = name
        if name == "training":
            clock["start"] = time.perf_counter()
            reporter.note(trained_s=trained_before)
        reporter.note(phase="resuming" if name == "training" and resume is not None else name)
        reporter.send(force=True)

    def should_stop() -> bool:
        if not reporter.stopped and trained_s() > max_seconds:
            reporter.stop("time limit")
        reporter.send()
        return reporter.stopped

    def save_state(state) -> None:  # the curve up to the point is in the store first: a resumed run's is whole
        reporter.send(force=True)
        runs.save_point(db, run_id, state.step, state.to_bytes())

    def progress(p) -> None:
        now = trained_s()
        reporter.note(step=p.step, trained_s=now, phase="training")
        if p.loss == p.loss:  # not nan (bow has no loss)
            reporter.note(losses=[(p.step, float(p.loss))])
        metric = p.metric
        if metric is None and p.step < p.steps and now >= clock["next_eval"] and not reporter.stopped:
            reporter.note(phase="measuring")
            reporter.send(force=True)  # the step is on the page before a measure that may take seconds
            measured_at = time.perf_counter()
            p.model.eval()  # the loop puts it back in training mode before the next step
            metric = task.headline(task.evaluate(p.model))
            cost = time.perf_counter() - measured_at
            share = limits.TRAIN_EVAL_SHARE
            clock["next_eval"] = now + cost + cost * (1 - share) / share
            reporter.note(phase="training", trained_s=trained_s())
        if metric is not None:
            reporter.note(metrics=[(p.step, float(metric))])
        if snapshot_every_s > 0 and now >= clock["next_snapshot"] and p.step < p.steps:
            take_snapshot(p.model, p.step)
            clock["next_snapshot"] = trained_s() + snapshot_every_s
        reporter.send(force=p.step == 1)

    def finished(result) -> bool:  # no evaluation, no checkpoint: nobody's lab to keep it in, or nothing learned
        return not reporter.gone and result.steps > 0

    phase("data")
    recipe = driver.from_spec(spec, "trained in the app")
    task = recipe.make_task()  # the one the driver trains on (shared, read-only): for the measures in between
    trained = driver.run(recipe, progress=progress, stop=should_stop, phase=phase, finished=finished,
                         resume=resume, save_state=save_state, save_every_s=save_every_s)
    result = trained.result
    if not trained.saved:  # (a gone lab's run is gone from the store too)
        runs.end(db, run_id, "stopped", step=0, trained_s=trained_s(), stop_reason=reporter.reason)
        return "stopped"
    if snapshot_fn is not None:
        take_snapshot(trained.model, result.steps)
    reporter.send(force=True)
    status = "stopped" if result.stopped else "finished"
    deliver = _Delivery(db, run_id, trained.checkpoint, spec)
    deliver()  # every lab following the run gets its own copy of the model ...
    runs.end(db, run_id, status, step=result.steps, metrics=trained.metrics, train_seconds=round(result.seconds, 2),
             trained_s=trained_s(), model_id=deliver.first, headline=float(trained.task.headline(trained.metrics)),
             stop_reason=reporter.reason)
    deliver()  # ... those that joined while it was being delivered too (none can join an ended run)
    return status


class _Delivery:
    """The trained model into the lab of every follower that has none yet (each copy checked like an upload)."""

    def __init__(self, db, run_id: str, checkpoint: bytes, spec):
        self.db, self.run_id, self.checkpoint, self.spec = db, run_id, checkpoint, spec
        self.first: int | None = None

    def __call__(self) -> None:
        from seqviz import zoo
        from seqviz.checkpoints import CheckpointError
        from seqviz.store import models, runs

        for lab_id in runs.following(self.db, self.run_id, without_model=True):
            try:  # a run the lab was allowed to start keeps its model even over the lab's limits
                kept, _ = models.add(self.db, lab_id, self.checkpoint, f"{self.spec.label}.safetensors",
                                     origin="trained here", taken=set(zoo.NAMES), within_limits=False)
            except CheckpointError:  # the lab was forgotten meanwhile: nothing to keep
                continue
            model_id = models.model_id(self.db, lab_id, kept.fingerprint)
            runs.delivered(self.db, self.run_id, lab_id, model_id)
            self.first = self.first or model_id


def _worker_address() -> str | None:
    with contextlib.suppress(Exception):
        from distributed import get_worker

        return get_worker().address
    return None
