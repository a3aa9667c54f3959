"""Training in the background of a shared server: one :class:`RunManager` per process, one thread per run.

The Train page submits a :class:`seqviz.runs.RunSpec` for its browser session (the run's ``owner``) and
polls: ``manager.touch(owner)``, then ``manager.runs_of(owner)`` and each run's :meth:`Run.state`, an
immutable :class:`RunState` (status, step, loss and held-out metric history, ETA, snapshots, and at the
end the metrics and the checkpoint bytes). Nothing here imports streamlit; the worker never touches it.

- At most ``max_running`` runs train at once across every session (seqviz.limits.TRAIN_MAX_RUNNING); the
  others wait in a first-in first-out queue (their ``queue_position`` is 1, 2, ...), and a queued run can be
  cancelled. A full queue refuses new runs with :class:`RunRefused`.
- Each run trains through the one training loop (:func:`seqviz.train.train`) on one torch thread, stops
  between two steps when asked (:meth:`Run.stop`) or at seqviz.limits.TRAIN_MAX_SECONDS, and is then
  evaluated and saved all the same: stopping keeps what was learned.
- Its held-out metric is measured during training as often as keeps the measuring under
  seqviz.limits.TRAIN_EVAL_SHARE of the run's time (the first measure at step 1, the last at the end).
- "Watch it learn": ``snapshot_fn(model)`` is called under ``torch.inference_mode()`` every
  ``snapshot_every_s`` seconds of training and at the end; the list of (step, snapshot) is bounded. It runs
  in the worker thread on the model being trained: return plain values (text, numpy arrays, a trace
  dataclass), never the model or tensors that share its memory. One that raises is switched off; the run goes on.
- A session that has not touched the manager for ``orphan_timeout_s`` seconds, and whose tab ``still_there``
  says is closed, has gone: its runs, queued or running, are stopped and forgotten (a running one skips its
  evaluation), so their memory is returned (to the OS too, see :func:`_give_memory_back`). This is checked on
  every manager call and by a small daemon thread.
- A training thread is named ``seqviz-run`` for the OS, and each run notes when it was submitted, began and
  ended (``RunState.submitted_at``, ``started_at``, ``ended_at``), so a shared server's queue can be seen.
- ``runs_of(owner)`` and ``get(owner, run_id)`` only ever return that owner's runs.
- Creating the manager calls :func:`seqviz.runtime.configure_torch` (one thread, deterministic, once per
  process); training itself changes no process-wide torch state.
"""

from __future__ import annotations

import contextlib
import copy
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from seqviz import limits
from seqviz.runs import RunSpec
from seqviz.runtime import configure_torch

STATUSES = ("queued", "running", "finished", "stopped", "failed", "cancelled")
ENDED = frozenset({"finished", "stopped", "failed", "cancelled"})


class RunRefused(RuntimeError):
    """A run the server cannot take now (queue full, too many runs of this session); the message says why."""


@dataclass(frozen=True)
class RunState:
    """What the page shows of a run at one moment; never changes after it is handed out."""

    id: str
    name: str
    spec: RunSpec
    status: str  # one of STATUSES
    queue_position: int | None  # 1 = next to start; None unless queued
    step: int  # steps done
    steps: int  # steps planned
    elapsed_s: float  # seconds since training started (evaluations and snapshots included)
    eta_s: float | None  # seconds left, estimated from the pace so far (None until a step is done)
    losses: tuple[tuple[int, float], ...]  # (step, training loss) of every step
    metric_name: str  # what the held-out metric is, e.g. "held-out exact match (<= 30 tokens)"
    metric_history: tuple[tuple[int, float], ...]  # (step, held-out metric)
    snapshots: tuple[tuple[int, Any], ...]  # (step, snapshot_fn(model)), oldest first
    stop_reason: str | None  # "asked", "time limit" or "session gone" when stopped early
    error: str | None  # what went wrong, when failed (or a snapshot_fn that failed and was dropped)
    metrics: dict | None  # the task's full held-out metrics at the end (a copy: safe to keep)
    checkpoint: bytes | None  # the checkpoint file (checkpoints.dumps) at the end: load_bytes, download, registry
    fingerprint: str | None  # checkpoints.fingerprint of those bytes: the key for caches of this model
    train_seconds: float | None  # seconds of training at the end
    submitted_at: float  # time.time() when the run was asked for
    started_at: float | None  # time.time() when it left the queue and began (None while queued, or if cancelled)
    ended_at: float | None  # time.time() when it ended and gave its slot back (None until then)

    @property
    def ended(self) -> bool:
        return self.status in ENDED

    @property
    def metric(self) -> float | None:
        """The latest held-out metric."""
        return self.metric_history[-1][1] if self.metric_history else None

    @property
    def waited_s(self) -> float | None:
        """Seconds it waited in the queue before it began (None if it never began)."""
        return None if self.started_at is None else max(0.0, self.started_at - self.submitted_at)


METRIC_NAMES = {
    "emails": "held-out accuracy",
    "memory": "held-out accuracy at distance 20",
    "translation": "held-out exact match (sources of at most 30 tokens)",
}


class Run:
    """One training run; its state is written by its worker thread and read by pages through :meth:`state`."""

    def __init__(self, owner: str, spec: RunSpec, snapshot_fn: Callable[[Any], Any] | None, snapshot_every_s: float,
                 max_seconds: float):
        self.id = secrets.token_hex(8)
        self.owner = owner
        self.spec = spec
        self.name = spec.label
        self._snapshot_fn = snapshot_fn
        self._snapshot_every_s = float(snapshot_every_s)
        self._max_seconds = float(max_seconds)
        self._lock = threading.Lock()
        self._stop = threading.Event()  # ask the worker to end between two steps
        self._ended = threading.Event()  # set once the run has ended (any way) and released its slot
        self._abandon = False  # the owner is gone: skip evaluation and saving, keep nothing
        self._thread: threading.Thread | None = None
        # Guarded by _lock:
        self._status = "queued"
        self._queue_position: int | None = None
        self._step = 0
        self._steps = 1 if spec.family == "bow" else spec.steps
        self._elapsed = 0.0
        self._losses: list[tuple[int, float]] = []
        self._metric_history: list[tuple[int, float]] = []
        self._snapshots: list[tuple[int, Any]] = []
        self._stop_reason: str | None = None
        self._error: str | None = None
        self._metrics: dict | None = None
        self._checkpoint: Any = None
        self._fingerprint: str | None = None
        self._train_seconds: float | None = None
        self._submitted_at = time.time()
        self._started_at: float | None = None
        self._ended_at: float | None = None

    # ---- what the page calls ----------------------------------------------------------------------------

    def state(self) -> RunState:
        with self._lock:
            step, steps, elapsed = self._step, self._steps, self._elapsed
            eta = None
            if self._status == "running" and step > 0:
                eta = max(0.0, min(elapsed / step * (steps - step), self._max_seconds - elapsed))
            elif self._status in ENDED:
                eta = 0.0
            return RunState(
                id=self.id, name=self.name, spec=self.spec, status=self._status, queue_position=self._queue_position,
                step=step, steps=steps, elapsed_s=elapsed, eta_s=eta, losses=tuple(self._losses),
                metric_name=METRIC_NAMES[self.spec.task], metric_history=tuple(self._metric_history),
                snapshots=tuple(self._snapshots), stop_reason=self._stop_reason, error=self._error,
                metrics=copy.deepcopy(self._metrics), checkpoint=self._checkpoint, fingerprint=self._fingerprint,
                train_seconds=self._train_seconds, submitted_at=self._submitted_at, started_at=self._started_at,
                ended_at=self._ended_at,
            )

    @property
    def status(self) -> str:
        with self._lock:
            return self._status

    def stop(self) -> None:
        """End training after the current step; the model learned so far is still evaluated and saved.

        A queued run is cancelled instead: it never starts (the manager drops it from the queue on its next call)."""
        with self._lock:
            cancelled = self._status == "queued"
            if cancelled:
                self._status, self._queue_position = "cancelled", None
                self._ended_at = time.time()
            elif self._status == "running" and self._stop_reason is None:
                self._stop_reason = "asked"
        self._stop.set()
        if cancelled:
            self._ended.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the run has ended (True) or ``timeout`` seconds have passed (False)."""
        return self._ended.wait(timeout)

    # ---- used by the manager and the worker -------------------------------------------------------------

    def _set(self, **fields) -> None:
        with self._lock:
            for key, value in fields.items():
                setattr(self, "_" + key, value)

    def _release(self) -> None:
        """Drop everything heavy (snapshots, checkpoint, the snapshot function and what it holds)."""
        with self._lock:
            self._snapshots = []
            self._checkpoint = None
            self._metrics = None
            self._snapshot_fn = None


class RunManager:
    """Every run of this server process: the cap on runs at once, the queue, the owners and the reaper.

    Keep one per process (the app: ``st.cache_resource``). Pass small numbers to the constructor in tests.
    """

    def __init__(
        self,
        max_running: int = limits.TRAIN_MAX_RUNNING,
        max_queued: int = limits.TRAIN_MAX_QUEUED,
        orphan_timeout_s: float = limits.TRAIN_ORPHAN_TIMEOUT_S,
        max_active_per_owner: int = limits.TRAIN_MAX_ACTIVE_PER_OWNER,
        max_kept_per_owner: int = limits.TRAIN_MAX_KEPT_PER_OWNER,
        max_seconds: float = limits.TRAIN_MAX_SECONDS,
        reaper_interval_s: float | None = None,
        still_there: Callable[[str], bool] | None = None,
    ):
        if max_running < 1 or max_queued < 0 or orphan_timeout_s <= 0:
            raise ValueError("max_running must be >= 1, max_queued >= 0 and orphan_timeout_s > 0")
        configure_torch()
        self.max_running = max_running
        self.max_queued = max_queued
        self.orphan_timeout_s = float(orphan_timeout_s)
        self.max_active_per_owner = max_active_per_owner
        self.max_kept_per_owner = max_kept_per_owner
        self.max_seconds = float(max_seconds)
        self._lock = threading.Lock()
        self._runs: dict[str, Run] = {}  # id -> run, every run not yet forgotten, in submission order
        self._running: list[Run] = []
        self._queue: deque[Run] = deque()
        self._last_seen: dict[str, float] = {}  # owner -> time.monotonic() of its last call
        # Asked before an owner silent for orphan_timeout_s is reaped: the app answers from Streamlit's own
        # record of connected browser tabs, so a tab whose timers the browser slows down in the background
        # keeps its run, and a closed one loses it.
        self._still_there = still_there
        self._closed = False
        interval = reaper_interval_s if reaper_interval_s is not None else min(5.0, self.orphan_timeout_s / 4)
        self._reaper_wake = threading.Event()
        self._reaper = threading.Thread(target=self._reap_forever, args=(interval,), name="seqviz-run-reaper",
                                        daemon=True)
        self._reaper.start()

    # ---- what the page calls ----------------------------------------------------------------------------

    def submit(self, owner: str, spec: RunSpec, snapshot_fn: Callable[[Any], Any] | None = None,
               snapshot_every_s: float = limits.TRAIN_SNAPSHOT_EVERY_S) -> Run:
        """Start ``spec`` for ``owner`` now if a slot is free, else queue it; raises RunRefused when full."""
        _check_owner(owner)
        if not isinstance(spec, RunSpec):
            raise TypeError("submit takes a seqviz.runs.RunSpec")
        with self._lock:
            if self._closed:
                raise RunRefused("The server is shutting down; no new runs.")
            self._last_seen[owner] = time.monotonic()
            self._reap_locked()
            mine = [run for run in self._runs.values() if run.owner == owner]
            active = [run for run in mine if run.status in ("queued", "running")]
            if len(active) >= self.max_active_per_owner:
                raise RunRefused(
                    f"You already have {len(active)} runs queued or training, the most one session may have "
                    "(seqviz.limits.TRAIN_MAX_ACTIVE_PER_OWNER): stop one or wait for it to end."
                )
            if len(self._running) >= self.max_running and len(self._queue) >= self.max_queued:
                raise RunRefused(
                    f"The server is busy: {len(self._running)} runs training and {len(self._queue)} waiting, "
                    "the most it takes (seqviz.limits.TRAIN_MAX_QUEUED). Try again in a minute."
                )
            ended = [run for run in mine if run.status in ENDED]
            while ended and len(mine) >= self.max_kept_per_owner:  # keep the newest runs
                oldest = ended.pop(0)
                mine.remove(oldest)
                self._forget_locked(oldest)
            run = Run(owner, spec, snapshot_fn, snapshot_every_s, self.max_seconds)
            self._runs[run.id] = run
            self._queue.append(run)
            self._advance_locked()
            return run

    def touch(self, owner: str) -> None:
        """Say that ``owner``'s session is still there (call it on every poll)."""
        _check_owner(owner)
        with self._lock:
            self._last_seen[owner] = time.monotonic()
            self._reap_locked()

    def runs_of(self, owner: str) -> list[Run]:
        """``owner``'s runs, oldest first (and nobody else's); counts as a touch."""
        self.touch(owner)
        with self._lock:
            return [run for run in self._runs.values() if run.owner == owner]

    def get(self, owner: str, run_id: str) -> Run | None:
        """``owner``'s run ``run_id``, or None (also when the run is someone else's); counts as a touch."""
        self.touch(owner)
        with self._lock:
            run = self._runs.get(run_id)
            return run if run is not None and run.owner == owner else None

    def cancel(self, owner: str, run_id: str) -> bool:
        """Stop ``owner``'s run: a queued one never starts (cancelled), a running one keeps what it learned."""
        run = self.get(owner, run_id)
        if run is None:
            return False
        run.stop()
        with self._lock:
            self._drop_cancelled_locked()
        return True

    def forget(self, owner: str, run_id: str) -> bool:
        """Drop ``owner``'s ended run and its checkpoint (a running or queued one is stopped first)."""
        run = self.get(owner, run_id)
        if run is None:
            return False
        with self._lock:
            if run.status in ENDED:
                self._forget_locked(run)
                return True
        run._abandon = True
        run.stop()
        with self._lock:
            self._drop_cancelled_locked()
            self._runs.pop(run.id, None)
        return True

    def load(self) -> dict[str, int]:
        """How busy the server is (no owner's data): {"running": n, "queued": n, "max_running": n}."""
        with self._lock:
            self._reap_locked()
            return {"running": len(self._running), "queued": len(self._queue), "max_running": self.max_running}

    def close(self, timeout: float = 10.0) -> None:
        """Stop every run, refuse new ones and wait (up to ``timeout`` s) for the workers to end (tests, exit)."""
        with self._lock:
            self._closed = True
            runs = list(self._runs.values())
            queued = list(self._queue)
            self._queue.clear()
        for run in queued:
            run.stop()
        for run in runs:
            run.stop()
        deadline = time.monotonic() + timeout
        for run in runs:
            run.wait(max(0.0, deadline - time.monotonic()))
        self._reaper_wake.set()

    # ---- slots, queue, reaping (called with self._lock held) ---------------------------------------------

    def _advance_locked(self) -> None:
        self._drop_cancelled_locked()
        while self._queue and len(self._running) < self.max_running:
            run = self._queue.popleft()
            with run._lock:  # a run cancelled a moment ago stays cancelled
                if run._status != "queued":
                    continue
                run._status, run._queue_position = "running", None
                run._started_at = time.time()
            self._running.append(run)
            run._thread = threading.Thread(target=self._work, args=(run,), name=f"seqviz-run-{run.id}", daemon=True)
            run._thread.start()
        for position, run in enumerate(self._queue, start=1):
            run._set(queue_position=position)

    def _drop_cancelled_locked(self) -> None:
        for run in [r for r in self._queue if r._stop.is_set()]:
            self._queue.remove(run)
            run.stop()  # marks it cancelled if it was not yet
        for position, run in enumerate(self._queue, start=1):
            run._set(queue_position=position)

    def _forget_locked(self, run: Run) -> None:
        self._runs.pop(run.id, None)
        run._release()

    def _reap_locked(self) -> list[str]:
        """Stop and forget the runs of owners silent for longer than orphan_timeout_s; returns their ids."""
        now = time.monotonic()
        silent = [owner for owner, seen in self._last_seen.items() if now - seen > self.orphan_timeout_s]
        gone = set()
        for owner in silent:
            if self._asks_still_there(owner):
                self._last_seen[owner] = now
            else:
                gone.add(owner)
        if not gone:
            return []
        reaped = []
        for run in [r for r in self._runs.values() if r.owner in gone]:
            reaped.append(run.id)
            run._abandon = True
            with run._lock:
                if run._status == "running" and run._stop_reason is None:
                    run._stop_reason = "session gone"
            run.stop()
            self._forget_locked(run)
        for owner in gone:
            del self._last_seen[owner]
        self._advance_locked()  # queued runs of gone owners are cancelled, freeing queue places
        return reaped

    def _asks_still_there(self, owner: str) -> bool:
        if self._still_there is None:
            return False
        try:
            return bool(self._still_there(owner))
        except Exception:  # an answer we cannot get counts as gone
            return False

    def _reap_forever(self, interval: float) -> None:
        while not self._closed:
            self._reaper_wake.wait(interval)
            with self._lock:
                self._reap_locked()

    def _finished(self, run: Run) -> None:
        run._set(ended_at=time.time())  # before the slot is given to the next run
        with self._lock:
            if run in self._running:
                self._running.remove(run)
            if run._abandon:
                self._runs.pop(run.id, None)
                run._release()
            if not self._closed:
                self._advance_locked()
        run._ended.set()

    # ---- the worker --------------------------------------------------------------------------------------

    def _work(self, run: Run) -> None:
        _name_os_thread("seqviz-run")
        try:
            _train_run(run)
        except BaseException as error:  # the page shows it; the slot is freed below
            with run._lock:
                run._status = "failed"
                run._error = f"{type(error).__name__}: {error}"[:500]
        finally:
            self._finished(run)
        _give_memory_back()  # the run's model, optimiser and batches are gone with _train_run's frame


def _name_os_thread(name: str) -> None:
    """Name the calling thread for the OS too (Linux: ``top -H``, /proc/<pid>/task/<tid>/comm), so the CPU that
    training takes can be told from the rest of the server's (tests/load reads it); elsewhere it does nothing."""
    with contextlib.suppress(OSError), open(f"/proc/self/task/{threading.get_native_id()}/comm", "w") as comm:
        comm.write(name[:15])


def _give_memory_back() -> None:
    """Hand the heap memory that a run freed back to the OS (glibc only; elsewhere it does nothing).

    glibc keeps freed memory in the worker thread's malloc arena: without this, a run of the largest preset left
    the server about 170 MB larger for good after its model was collected (measured: tests/load/test_faults.py);
    with it, about 110 MB of that goes back at once. Takes milliseconds, once per run."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _check_owner(owner) -> None:
    if not isinstance(owner, str) or not owner or len(owner) > 200:
        raise ValueError("owner must be a non-empty session id string")


# ---------------------------------------------------------------------------------------------------------
# One run, in its worker thread


def _train_run(run: Run) -> None:
    import torch

    from seqviz import checkpoints
    from seqviz.train import train

    spec = run.spec
    model, task, config = spec.build()
    clock = {"start": time.perf_counter(), "eval_s": 0.0, "next_eval": 0.0, "next_snapshot": 0.0}
    snapshot_fn = run._snapshot_fn

    def take_snapshot(step: int) -> None:
        nonlocal snapshot_fn
        if snapshot_fn is None or run._abandon:
            return
        model.eval()
        try:
            with torch.inference_mode():
                value = snapshot_fn(model)
        except Exception as error:  # a broken snapshot function must not end the training
            snapshot_fn = None
            problem = f"{type(error).__name__}: {error}"
            run._set(error=f"watch-it-learn snapshot failed and was switched off: {problem}"[:500])
            return
        with run._lock:
            run._snapshots.append((step, value))
            if len(run._snapshots) > limits.TRAIN_MAX_SNAPSHOTS:  # thin evenly, keep the newest
                run._snapshots = run._snapshots[-1::-2][::-1]

    def should_stop() -> bool:
        if run._stop.is_set():
            return True
        if time.perf_counter() - clock["start"] > run._max_seconds:
            with run._lock:
                run._stop_reason = run._stop_reason or "time limit"
            return True
        return False

    def progress(p) -> None:
        now = time.perf_counter() - clock["start"]
        metric = p.metric
        if metric is None and p.step < p.steps and now >= clock["next_eval"] and not run._abandon:
            began = time.perf_counter()
            p.model.eval()  # the loop puts it back in training mode before the next step
            metric = task.headline(task.evaluate(p.model))
            cost = time.perf_counter() - began
            clock["eval_s"] += cost
            share = limits.TRAIN_EVAL_SHARE
            clock["next_eval"] = now + cost + cost * (1 - share) / share
        with run._lock:
            run._step, run._elapsed = p.step, time.perf_counter() - clock["start"]
            if p.loss == p.loss:  # not nan (bow has no loss)
                run._losses.append((p.step, float(p.loss)))
            if metric is not None:
                run._metric_history.append((p.step, float(metric)))
        if run._snapshot_every_s > 0 and now >= clock["next_snapshot"] and p.step < p.steps:
            take_snapshot(p.step)
            clock["next_snapshot"] = (time.perf_counter() - clock["start"]) + run._snapshot_every_s

    result = train(model, task, config, progress=progress, stop=should_stop)  # leaves torch's global state alone
    if run._abandon:  # nobody will read it: no evaluation, no checkpoint
        run._set(status="stopped", step=result.steps)
        return
    model.eval()
    metrics = task.evaluate(model)
    headline = float(task.headline(metrics))
    take_snapshot(result.steps)
    meta = spec.checkpoint_meta(task, config, result, metrics, "trained in the app")
    data = checkpoints.dumps(model, meta)
    with run._lock:
        run._metric_history = [(s, m) for s, m in run._metric_history if s != result.steps]
        run._metric_history.append((result.steps, headline))
        run._step = result.steps
        run._elapsed = time.perf_counter() - clock["start"]
        run._train_seconds = round(result.seconds, 2)
        run._metrics = metrics
        run._checkpoint = data
        run._fingerprint = checkpoints.fingerprint(data)
        run._status = "stopped" if result.stopped else "finished"
        if not result.stopped:
            run._stop_reason = None  # asked to stop after the last step: it finished
