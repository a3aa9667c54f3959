"""One run, in a Dask worker process: :func:`train_on_worker` is the task the web server submits.

It trains through the one driver (:func:`seqviz.driver.run`: build, the one training loop, measure, save; the
command line's and the zoo's too) and talks to the web server only through
the scheduler, so the worker may be on another machine:

- **Progress out**: a :class:`distributed.Queue` named after the run. The training loop's own progress callback
  buffers what happened (steps, losses, held-out measures, "watch it learn" snapshots, what it is doing before its
  first step) and puts it on the queue at most every ``seqviz.limits.TRAIN_REPORT_EVERY_S`` seconds, and at once
  when the phase changes or a snapshot is taken: one message, a pickled dict of plain values. The web server
  drains the queue.
- **Stop in**: a :class:`distributed.Event` named after the run, read by the training loop's own ``stop`` check
  between two steps, at most every ``TRAIN_REPORT_EVERY_S`` seconds (each read is a round trip to the scheduler).
  A second event says the visitor has gone: then the run ends without evaluating or saving.
- **Result out**: the task's return value, a dict of plain values (metrics, the checkpoint's bytes, the last
  snapshot); Dask hands it to the web server's future.

A run's task is started once. If its worker dies mid-run, Dask would start the task again on another worker;
the task notices (a third event, set on its first start) and fails at once with :class:`WorkerLost`, so the page
says plainly that the run's worker stopped, instead of a run that silently begins again from step 0.

Choice: one task per run with a worker-side loop (not a run cut into chunks that each carry the model and the
optimiser's state): the training loop stays the one the command line uses, untouched, so the same spec and seed
give the same weights bit for bit; a chunked run would ship the model and AdamW's state (up to 7 MB for the
largest preset) through the scheduler every chunk and reseed its batch generator at every chunk boundary.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any

from seqviz import limits
from seqviz.runtime import give_memory_back

PHASES = {
    "cluster": "starting the training workers (the server's first run)",
    "starting": "starting on a training worker",
    "data": "loading the task's data",
    "building": "building the model",
    "training": "training",
    "measuring": "measuring on held-out data",
    "saving": "measuring the trained model and saving it",
}


# A worker trains at this lower CPU priority (Unix nice), so that on a host it shares with the web server, the
# pages get the CPU first and training takes what is left.
WORKER_NICE = 10
_niced = False


def dask_setup(worker) -> None:
    """Run by every worker as it starts (the app's own cluster preloads this module; on another cluster:
    ``dask worker --preload seqviz.worker``): the worker's priority lowered, and torch loaded and set to one
    thread and deterministic algorithms before the first run, instead of in its first seconds."""
    from seqviz.runtime import configure_torch

    _lower_priority()
    configure_torch()
    import seqviz.train  # noqa: F401  (torch and the models, imported once)


def _lower_priority() -> None:
    """Lower this worker process's CPU priority to WORKER_NICE, once (where the OS allows it)."""
    global _niced
    if _niced:
        return
    _niced = True
    with contextlib.suppress(OSError, AttributeError):
        os.nice(max(0, WORKER_NICE - os.nice(0)))


class WorkerLost(RuntimeError):
    """The run's worker process stopped in the middle of the run (killed, or out of memory)."""


def names(run_id: str) -> dict[str, str]:
    """The scheduler-side names of one run's queue and events."""
    return {"progress": f"seqviz-progress-{run_id}", "stop": f"seqviz-stop-{run_id}",
            "gone": f"seqviz-gone-{run_id}", "started": f"seqviz-started-{run_id}"}


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


class _Link:
    """The run's side of the queue and events; buffers progress and sends it at most every few tenths of a
    second (or at once when asked)."""

    def __init__(self, run_id: str):
        from distributed import Event, Queue, get_client

        client = get_client()
        named = names(run_id)
        self.queue = Queue(named["progress"], client=client)
        self.stop_event = Event(named["stop"], client=client)
        self.gone_event = Event(named["gone"], client=client)
        self.started_event = Event(named["started"], client=client)
        self.every_s = limits.TRAIN_REPORT_EVERY_S
        self.pending: dict[str, Any] = {"losses": [], "metrics": [], "snapshots": []}
        self.last_sent = 0.0
        self.last_asked = 0.0
        self.stopped = False

    def note(self, **fields) -> None:
        for key in ("losses", "metrics", "snapshots"):
            if key in fields:
                self.pending[key].extend(fields.pop(key))
        self.pending.update(fields)

    def send(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last_sent < self.every_s:
            return
        message, self.pending = self.pending, {"losses": [], "metrics": [], "snapshots": []}
        self.last_sent = now
        self.queue.put(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))

    def stop_asked(self) -> bool:
        if self.stopped:
            return True
        now = time.monotonic()
        if now - self.last_asked >= self.every_s:
            self.last_asked = now
            self.stopped = bool(self.stop_event.is_set())
        return self.stopped

    def gone(self) -> bool:
        return bool(self.gone_event.is_set())


def train_on_worker(run_id: str, spec, snapshot_fn, snapshot_every_s: float, max_seconds: float) -> dict:
    """Train ``spec`` (a seqviz.runs.RunSpec) in this worker; returns the run's end as plain values.

    ``snapshot_fn`` is a picklable callable (a :class:`SnapshotView`, or None) called on the model every
    ``snapshot_every_s`` seconds of training; it must return plain values."""
    link = _Link(run_id)
    if link.started_event.is_set():
        raise WorkerLost("its worker process stopped in the middle of the run (it was killed or ran out of memory)")
    link.started_event.set()
    _lower_priority()  # (done already where the worker preloaded this module)
    thread_name = _name_os_thread("seqviz-run")  # the worker's thread lives on after the run: its name comes back
    link.note(phase="starting", pid=os.getpid(), host=socket.gethostname(), worker=_worker_address())
    link.send(force=True)
    try:
        return _train(link, spec, snapshot_fn, snapshot_every_s, max_seconds)
    finally:
        with contextlib.suppress(Exception):
            link.send(force=True)
        with contextlib.suppress(Exception):
            link.queue.close()
        if thread_name:
            _name_os_thread(thread_name)
        gc.collect()
        give_memory_back()


def _train(link: _Link, spec, snapshot_fn, snapshot_every_s: float, max_seconds: float) -> dict:
    """The run through the one driver (seqviz.driver): this side only reports it, stops it and takes snapshots."""
    from seqviz.runtime import configure_torch

    configure_torch()  # one thread, deterministic: once per worker process
    import torch

    from seqviz import driver

    clock: dict[str, Any] = {"start": time.perf_counter(), "next_eval": 0.0, "next_snapshot": 0.0, "phase": ""}
    error: list[str] = []

    def take_snapshot(model, step: int) -> None:
        nonlocal snapshot_fn
        if snapshot_fn is None:
            return
        model.eval()
        try:
            with torch.inference_mode():
                value = snapshot_fn(model)
            link.note(snapshots=[(step, value)])
        except Exception as failure:  # a broken snapshot function must not end the training
            snapshot_fn = None
            error.append(f"watch-it-learn snapshot failed and was switched off: {type(failure).__name__}: "
                         f"{failure}"[:500])
            link.note(error=error[-1])
        link.send(force=True)

    def phase(name: str) -> None:
        if name == clock.get("phase"):
            return
        clock["phase"] = name
        if name == "training":
            clock["start"] = time.perf_counter()
            link.note(train_elapsed=0.0)
        link.note(phase=name)
        link.send(force=True)

    def should_stop() -> bool:
        if link.stop_asked():
            return True
        if time.perf_counter() - clock["start"] > max_seconds:
            link.note(stop_reason="time limit")
            return True
        return False

    def progress(p) -> None:
        now = time.perf_counter() - clock["start"]
        link.note(step=p.step, train_elapsed=now, phase="training")
        if p.loss == p.loss:  # not nan (bow has no loss)
            link.note(losses=[(p.step, float(p.loss))])
        metric = p.metric
        if metric is None and p.step < p.steps and now >= clock["next_eval"] and not link.stopped:
            link.note(phase="measuring")
            link.send(force=True)  # the step is on the page before a measure that may take seconds
            began = time.perf_counter()
            p.model.eval()  # the loop puts it back in training mode before the next step
            metric = task.headline(task.evaluate(p.model))
            cost = time.perf_counter() - began
            share = limits.TRAIN_EVAL_SHARE
            clock["next_eval"] = now + cost + cost * (1 - share) / share
            link.note(phase="training", train_elapsed=time.perf_counter() - clock["start"])
        if metric is not None:
            link.note(metrics=[(p.step, float(metric))])
        if snapshot_every_s > 0 and now >= clock["next_snapshot"] and p.step < p.steps:
            take_snapshot(p.model, p.step)
            clock["next_snapshot"] = (time.perf_counter() - clock["start"]) + snapshot_every_s
        link.send(force=p.step == 1)

    def finished(result) -> bool:
        if link.stopped and link.gone():  # nobody will read it: no evaluation, no checkpoint
            return False
        link.note(step=result.steps, train_elapsed=time.perf_counter() - clock["start"])
        return True

    phase("data")  # the recipe reads the task's vocabularies: loading the data is its first phase
    recipe = driver.from_spec(spec, "trained in the app")
    task = recipe.make_task()  # the one the driver trains on (shared, read-only): for the measures in between
    trained = driver.run(recipe, progress=progress, stop=should_stop, phase=phase,
                         finished=finished)  # leaves torch's global state alone
    result = trained.result
    if not trained.saved:
        return {"abandoned": True, "step": result.steps}
    final_snapshot = None
    if snapshot_fn is not None:
        try:
            with torch.inference_mode():
                final_snapshot = (result.steps, snapshot_fn(trained.model))
        except Exception as failure:
            error.append(f"watch-it-learn snapshot failed and was switched off: {type(failure).__name__}: "
                         f"{failure}"[:500])
    return {
        "abandoned": False, "step": result.steps, "stopped": result.stopped,
        "headline": float(trained.task.headline(trained.metrics)), "metrics": trained.metrics,
        "checkpoint": trained.checkpoint, "train_seconds": round(result.seconds, 2),
        "train_elapsed": time.perf_counter() - clock["start"], "snapshot": final_snapshot,
        "error": error[-1] if error else None, "pid": os.getpid(),
    }


def _worker_address() -> str | None:
    with contextlib.suppress(Exception):
        from distributed import get_worker

        return get_worker().address
    return None


def _name_os_thread(name: str) -> str | None:
    """Name the calling thread for the OS too (Linux: ``top -H``, /proc/<pid>/task/<tid>/comm), so the CPU that
    training takes can be told from the rest of the worker's (tests/load reads it); returns the name it had (None
    where the OS does not say, and then it does nothing)."""
    path = f"/proc/self/task/{threading.get_native_id()}/comm"
    try:
        with open(path) as comm:
            before = comm.read().strip()
        with open(path, "w") as comm:
            comm.write(name[:15])
    except OSError:
        return None
    return before
