"""Training for a shared server: one :class:`RunManager` per web process; every run trains in a Dask worker.

The Train page submits a :class:`seqviz.runs.RunSpec` for its browser session (the run's ``owner``) and
polls: ``manager.touch(owner)``, then ``manager.runs_of(owner)`` and each run's :meth:`Run.state`, an
immutable :class:`RunState` (status, what it is doing, step, loss and held-out metric history, ETA, snapshots,
and at the end the metrics and the checkpoint bytes). Nothing here imports streamlit or trains.

- **Where runs train**: worker processes of a Dask cluster (:mod:`seqviz.cluster`): the app's own local cluster,
  started the first time a run is submitted, or an existing one (``SEQVIZ_DASK_SCHEDULER``). The web process
  never trains, evaluates or builds a checkpoint; each run is one Dask task, :func:`seqviz.worker.train_on_worker`,
  and what crosses over is plain data: the spec (and a named "watch it learn" view) in; progress, snapshots,
  metrics and the checkpoint's bytes out. Every state reports the worker's process id and address.
- **Queue**: as many runs train at once as the cluster has worker threads (``max_running`` caps that, for tests);
  the others wait in a first-in first-out queue of at most ``max_queued`` (seqviz.limits.TRAIN_MAX_QUEUED): their
  ``queue_position`` is 1, 2, ... and ``expected_start_at`` estimates when they begin from the runs ahead (the pace
  of runs of the same shape seen so far). A full queue refuses new runs with :class:`RunRefused`, and so does a
  session that already has seqviz.limits.TRAIN_MAX_ACTIVE_PER_OWNER runs queued or training.
- **Stop** (:meth:`Run.stop`) ends training between two steps (within ``TRAIN_REPORT_EVERY_S`` on the worker plus
  a tick here) and the model learned so far is still evaluated and saved; a queued run is cancelled instead. A run
  is also stopped at seqviz.limits.TRAIN_MAX_SECONDS of training, and kept.
- **Progress**: what the run is doing before its first step (``phase``: starting, loading the data, building the
  model, measuring), every step's loss, the held-out metric as often as keeps measuring under
  seqviz.limits.TRAIN_EVAL_SHARE of the run's time, and "watch it learn" snapshots (``snapshot_fn(model)``, a
  picklable callable that returns plain values, computed on the worker every ``snapshot_every_s`` s; one that
  raises is switched off and the run goes on). The list of snapshots is bounded (seqviz.limits.TRAIN_MAX_SNAPSHOTS).
- **Faults**: a run whose worker dies fails with a plain message and frees its place; the next run starts (and the
  cluster's nanny starts a new worker). A cluster that cannot be reached makes :meth:`RunManager.unavailable`
  say why, and new runs are refused with that reason.
- A session that has not touched the manager for ``orphan_timeout_s`` seconds, and whose tab ``still_there``
  says is closed, has gone: its runs, queued or running, are stopped (a running one on its worker, skipping its
  evaluation) and forgotten. ``runs_of(owner)`` and ``get(owner, run_id)`` only ever return that owner's runs.
- One daemon thread, ``seqviz-run-tender``, does all the talking to the cluster (starting it, handing runs to it,
  sending stops, reading progress, collecting ends) and the reaping, every ``TICK_S``: page calls never wait on
  the network.
"""

from __future__ import annotations

import copy
import pickle
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from seqviz import limits
from seqviz.cluster import Cluster, ClusterUnavailable
from seqviz.runs import RunSpec

STATUSES = ("queued", "running", "finished", "stopped", "failed", "cancelled")
ENDED = frozenset({"finished", "stopped", "failed", "cancelled"})
TICK_S = 0.25  # seconds between two rounds of the tender thread
RETRY_UNAVAILABLE_S = 15.0  # a cluster that could not be reached is tried again after this many seconds
# Until a run of the same shape has been seen, a run is guessed to take this long (the presets' measured times:
# README, "Presets"; the largest up to seqviz.limits.TRAIN_MAX_SECONDS); only for waiting estimates.
GUESS_RUN_S = 60.0
OVERHEAD_GUESS_S = 5.0  # seconds a run spends outside its training steps (data, model, last measure, saving)


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
    elapsed_s: float  # seconds since the run left the queue (its worker starting and its first measure included)
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
    phase: str | None = None  # what it does now, in words ("building the model"); None when queued or ended
    worker: str | None = None  # the Dask worker's address it trains on
    worker_pid: int | None = None  # that worker's process id (never the web server's)
    expected_start_at: float | None = None  # time.time() it is expected to begin, while queued
    trained_s: float = 0.0  # seconds of training so far, by the worker's clock (from its first step's start)

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


def _shape(spec: RunSpec) -> tuple:
    """What a run's pace per step depends on (not its seed, name, learning rate or number of steps)."""
    return spec.task, spec.family, spec.embedding, spec.hidden, spec.heads, spec.layers, spec.batch_size


class Run:
    """One training run; its state is written by the manager's tender thread and read by pages via :meth:`state`."""

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
        self._stop = threading.Event()  # asked to end (the tender tells the worker)
        self._ended = threading.Event()  # set once the run has ended (any way) and released its slot
        self._abandon = False  # the owner is gone: skip evaluation and saving, keep nothing
        self._future = None  # the Dask future of its task, while it runs
        self._remote: dict | None = None  # its progress queue and stop/gone/started events on the scheduler
        self._stop_sent = False
        # Guarded by _lock:
        self._status = "queued"
        self._phase: str | None = None
        self._queue_position: int | None = None
        self._expected_start_at: float | None = None
        self._step = 0
        self._steps = spec.steps_to_run
        self._train_elapsed = 0.0  # seconds of training as the worker counts them
        self._losses: list[tuple[int, float]] = []
        self._metric_history: list[tuple[int, float]] = []
        self._snapshots: list[tuple[int, Any]] = []
        self._stop_reason: str | None = None
        self._error: str | None = None
        self._metrics: dict | None = None
        self._checkpoint: Any = None
        self._fingerprint: str | None = None
        self._train_seconds: float | None = None
        self._worker: str | None = None
        self._worker_pid: int | None = None
        self._submitted_at = time.time()
        self._started_at: float | None = None
        self._ended_at: float | None = None

    # ---- what the page calls ----------------------------------------------------------------------------

    def state(self) -> RunState:
        from seqviz.tasks import TASKS
        from seqviz.worker import PHASES

        with self._lock:
            step, steps, trained = self._step, self._steps, self._train_elapsed
            eta = None
            if self._status == "running" and step > 0:
                eta = max(0.0, min(trained / step * (steps - step), self._max_seconds - trained))
            elif self._status in ENDED:
                eta = 0.0
            began, ended = self._started_at, self._ended_at
            elapsed = 0.0 if began is None else max(0.0, (ended or time.time()) - began)
            phase = PHASES.get(self._phase, self._phase) if self._status in ("running", "queued") else None
            return RunState(
                id=self.id, name=self.name, spec=self.spec, status=self._status, queue_position=self._queue_position,
                step=step, steps=steps, elapsed_s=elapsed, eta_s=eta, losses=tuple(self._losses),
                metric_name=TASKS[self.spec.task].headline_name, metric_history=tuple(self._metric_history),
                snapshots=tuple(self._snapshots), stop_reason=self._stop_reason, error=self._error,
                metrics=copy.deepcopy(self._metrics), checkpoint=self._checkpoint, fingerprint=self._fingerprint,
                train_seconds=self._train_seconds, submitted_at=self._submitted_at, started_at=self._started_at,
                ended_at=self._ended_at, phase=phase, worker=self._worker, worker_pid=self._worker_pid,
                expected_start_at=self._expected_start_at if self._status == "queued" else None,
                trained_s=trained,
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
                self._status, self._queue_position, self._expected_start_at = "cancelled", None, None
                self._ended_at = time.time()
            elif self._status == "running" and self._stop_reason is None:
                self._stop_reason = "asked"
        self._stop.set()
        if cancelled:
            self._ended.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the run has ended (True) or ``timeout`` seconds have passed (False)."""
        return self._ended.wait(timeout)

    # ---- used by the manager ----------------------------------------------------------------------------

    def _set(self, **fields) -> None:
        with self._lock:
            for key, value in fields.items():
                setattr(self, "_" + key, value)

    def _apply(self, message: dict) -> None:
        """One progress message from the worker (seqviz.worker._Link.send)."""
        with self._lock:
            if self._status != "running":
                return
            self._losses.extend(message.get("losses", ()))
            self._metric_history.extend(message.get("metrics", ()))
            self._snapshots.extend(message.get("snapshots", ()))
            while len(self._snapshots) > limits.TRAIN_MAX_SNAPSHOTS:  # thin evenly, keep the newest
                self._snapshots = self._snapshots[-1::-2][::-1]
            for key in ("phase", "step", "train_elapsed", "worker", "error"):
                if message.get(key) is not None:
                    setattr(self, "_" + key, message[key])
            if message.get("pid") is not None:
                self._worker_pid = message["pid"]
            if message.get("stop_reason") and self._stop_reason is None:
                self._stop_reason = message["stop_reason"]

    def _release(self) -> None:
        """Drop everything heavy (snapshots, checkpoint, the snapshot function and what it holds)."""
        with self._lock:
            self._snapshots = []
            self._checkpoint = None
            self._metrics = None
            self._snapshot_fn = None


class RunManager:
    """Every run of this server process: the queue, the owners, the reaper, and the cluster the runs train on.

    Keep one per process (the app: ``st.cache_resource``). Pass small numbers (and a shared ``cluster``) in tests.
    """

    def __init__(
        self,
        max_running: int | None = None,
        max_queued: int = limits.TRAIN_MAX_QUEUED,
        orphan_timeout_s: float = limits.TRAIN_ORPHAN_TIMEOUT_S,
        max_active_per_owner: int = limits.TRAIN_MAX_ACTIVE_PER_OWNER,
        max_kept_per_owner: int = limits.TRAIN_MAX_KEPT_PER_OWNER,
        max_seconds: float = limits.TRAIN_MAX_SECONDS,
        reaper_interval_s: float | None = None,
        still_there: Callable[[str], bool] | None = None,
        cluster: Cluster | None = None,
    ):
        if (max_running is not None and max_running < 1) or max_queued < 0 or orphan_timeout_s <= 0:
            raise ValueError("max_running must be >= 1, max_queued >= 0 and orphan_timeout_s > 0")
        if not 1 <= max_active_per_owner <= limits.TRAIN_MAX_ACTIVE_PER_OWNER_MOST:
            raise ValueError(f"max_active_per_owner must be from 1 to {limits.TRAIN_MAX_ACTIVE_PER_OWNER_MOST}")
        self.max_running = max_running
        self.max_queued = max_queued
        self.orphan_timeout_s = float(orphan_timeout_s)
        self.max_active_per_owner = max_active_per_owner
        self.max_kept_per_owner = max_kept_per_owner
        self.max_seconds = float(max_seconds)
        self._owns_cluster = cluster is None
        self.cluster = cluster if cluster is not None else Cluster.from_environment()
        self._lock = threading.Lock()
        self._runs: dict[str, Run] = {}  # id -> run, every run not yet forgotten, in submission order
        self._running: list[Run] = []
        self._queue: deque[Run] = deque()
        self._last_seen: dict[str, float] = {}  # owner -> time.monotonic() of its last call
        self._paces: dict[tuple, deque] = {}  # run shape -> recent seconds per step
        self._overheads: deque[float] = deque(maxlen=20)  # recent seconds of runs outside their steps
        # Asked before an owner silent for orphan_timeout_s is reaped: the app answers from Streamlit's own
        # record of connected browser tabs, so a tab whose timers the browser slows down in the background
        # keeps its run, and a closed one loses it.
        self._still_there = still_there
        self._closed = False
        self._unavailable: str | None = None
        self._unavailable_at = 0.0
        self._connect_wanted = False
        self._connect_done = threading.Event()
        self._slots = 0  # the cluster's worker threads, counted by the tender thread
        self._slots_counted = 0.0
        self._reap_every = reaper_interval_s if reaper_interval_s is not None else min(5.0, self.orphan_timeout_s / 4)
        self._wake = threading.Event()
        self._tender = threading.Thread(target=self._tend_forever, name="seqviz-run-tender", daemon=True)
        self._tender.start()

    # ---- what the page calls ----------------------------------------------------------------------------

    def submit(self, owner: str, spec: RunSpec, snapshot_fn: Callable[[Any], Any] | None = None,
               snapshot_every_s: float = limits.TRAIN_SNAPSHOT_EVERY_S) -> Run:
        """Queue ``spec`` for ``owner`` (it starts as soon as a worker is free); raises RunRefused when it cannot.

        ``snapshot_fn`` goes to the worker: a picklable callable (seqviz.worker.SnapshotView) returning plain values.
        """
        _check_owner(owner)
        if not isinstance(spec, RunSpec):
            raise TypeError("submit takes a seqviz.runs.RunSpec")
        with self._lock:
            if self._closed:
                raise RunRefused("The server is shutting down; no new runs.")
            if self._unavailable is not None and time.monotonic() - self._unavailable_at < RETRY_UNAVAILABLE_S:
                raise RunRefused(f"Training is unavailable: {self._unavailable}.")
            self._last_seen[owner] = time.monotonic()
            self._reap_locked()
            mine = [run for run in self._runs.values() if run.owner == owner]
            active = [run for run in mine if run.status in ("queued", "running")]
            if len(active) >= self.max_active_per_owner:
                many = "a run" if len(active) == 1 else f"{len(active)} runs"
                raise RunRefused(
                    f"You already have {many} queued or training, the most one session may have "
                    "(seqviz.limits.TRAIN_MAX_ACTIVE_PER_OWNER): stop it or wait for it to end."
                )
            if len(self._queue) >= self.max_queued:
                raise RunRefused(
                    f"The server is busy: {len(self._running)} runs training and {len(self._queue)} waiting, "
                    "the most it takes (seqviz.limits.TRAIN_MAX_QUEUED). Try again in a few minutes."
                )
            ended = [run for run in mine if run.status in ENDED]
            while ended and len(mine) >= self.max_kept_per_owner:  # keep the newest runs
                oldest = ended.pop(0)
                mine.remove(oldest)
                self._forget_locked(oldest)
            run = Run(owner, spec, snapshot_fn, snapshot_every_s, self.max_seconds)
            self._runs[run.id] = run
            self._queue.append(run)
            self._renumber_locked()
        self._wake.set()
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
        self._wake.set()
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
        self._wake.set()
        return True

    def load(self) -> dict[str, Any]:
        """How busy the server is (no owner's data): runs training and waiting, how many can train at once
        (``max_running``; the configured size while the cluster has not started), the estimated wait of a run
        submitted now (``wait_s``), and why training is unavailable (``unavailable``, else None)."""
        with self._lock:
            self._reap_locked()
            slots = self._slots_locked(expected=True)
            starts = self._start_times_locked(slots, extra=1)
            return {"running": len(self._running), "queued": len(self._queue), "max_running": slots,
                    "wait_s": starts[-1] if starts else 0.0, "unavailable": self._unavailable}

    def unavailable(self, wait_s: float = 0.0) -> str | None:
        """Why runs cannot train now (a configured scheduler that cannot be reached, workers that would not
        start), or None. For a configured scheduler not yet connected, it tries (in the tender thread), waiting
        up to ``wait_s`` seconds for the answer; the app's own cluster is never started by this call."""
        with self._lock:
            connect = self.cluster.external and not self.cluster.started and (
                self._unavailable is None or time.monotonic() - self._unavailable_at >= RETRY_UNAVAILABLE_S)
            if connect and not self._connect_wanted:
                self._connect_wanted = True
                self._connect_done.clear()
        if connect:
            self._wake.set()
            self._connect_done.wait(wait_s)
        with self._lock:
            return self._unavailable

    def close(self, timeout: float = 10.0) -> None:
        """Stop every run, refuse new ones and wait (up to ``timeout`` s) for them to end (tests, exit); a cluster
        this manager started is shut down."""
        with self._lock:
            self._closed = True
            runs = list(self._runs.values())
            queued = list(self._queue)
            self._queue.clear()
        for run in queued:
            run.stop()
        for run in runs:
            run.stop()
        self._wake.set()
        deadline = time.monotonic() + timeout
        for run in runs:
            run.wait(max(0.0, deadline - time.monotonic()))
        self._tender.join(max(0.0, deadline - time.monotonic()) + 2)
        if self._owns_cluster:
            self.cluster.close()

    # ---- slots, queue, reaping (called with self._lock held) ---------------------------------------------

    def _slots_locked(self, expected: bool = False) -> int:
        """Runs that may train at once: the cluster's worker threads as last counted by the tender (or, with
        ``expected``, the local cluster's planned size before it has started), capped by ``max_running``."""
        slots = self._slots
        if expected and not self.cluster.started and not self.cluster.external:
            from seqviz.cluster import local_worker_count

            slots = self.cluster.workers or local_worker_count()
        if self.max_running is not None:
            slots = min(slots, self.max_running)
        return slots

    def _estimate_locked(self, spec: RunSpec) -> float:
        """Seconds ``spec`` is expected to take from leaving the queue to its end."""
        steps = spec.steps_to_run
        paces = list(self._paces.get(_shape(spec), ()))
        if not paces:  # none of this shape has ended yet: the pace of those training now
            for run in self._running:
                with run._lock:
                    step, trained = run._step, run._train_elapsed
                if step >= 5 and _shape(run.spec) == _shape(spec):
                    paces.append(trained / step)
        overhead = sum(self._overheads) / len(self._overheads) if self._overheads else OVERHEAD_GUESS_S
        training = sum(paces) / len(paces) * steps if paces else GUESS_RUN_S
        return min(training, self.max_seconds) + overhead

    def _start_times_locked(self, slots: int, extra: int = 0) -> list[float]:
        """Seconds from now until each queued run (and ``extra`` more of a typical kind) is expected to begin."""
        now = time.time()
        overhead = sum(self._overheads) / len(self._overheads) if self._overheads else OVERHEAD_GUESS_S
        free = []
        for run in self._running:
            with run._lock:
                started, step, steps, trained = run._started_at, run._step, run._steps, run._train_elapsed
            if step >= 10:  # its own pace so far (the first measure, at step 1, is over), and half a typical
                # overhead for its last measure and saving
                left = min(trained / step * (steps - step), self.max_seconds - trained) + overhead / 2
            else:
                left = self._estimate_locked(run.spec) - (now - (started or now))
            free.append(max(0.0, left))
        free = sorted(free)[:max(1, slots)] + [0.0] * max(0, max(1, slots) - len(free))
        starts = []
        specs = [run.spec for run in self._queue] + [self._queue[-1].spec if self._queue else None] * extra
        for spec in specs:
            at = min(free)
            starts.append(at)
            free[free.index(at)] = at + (self._estimate_locked(spec) if spec is not None else GUESS_RUN_S)
        return starts

    def _renumber_locked(self) -> None:
        starts = self._start_times_locked(self._slots_locked(expected=True))
        now = time.time()
        for position, (run, start) in enumerate(zip(self._queue, starts, strict=True), start=1):
            run._set(queue_position=position, expected_start_at=now + start)

    def _drop_cancelled_locked(self) -> None:
        for run in [r for r in self._queue if r._stop.is_set()]:
            self._queue.remove(run)
            run.stop()  # marks it cancelled if it was not yet
        self._renumber_locked()

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
        self._drop_cancelled_locked()  # queued runs of gone owners are cancelled, freeing queue places
        self._wake.set()
        return reaped

    def _asks_still_there(self, owner: str) -> bool:
        if self._still_there is None:
            return False
        try:
            return bool(self._still_there(owner))
        except Exception:  # an answer we cannot get counts as gone
            return False

    # ---- the tender thread: everything that talks to the cluster ------------------------------------------

    def _tend_forever(self) -> None:
        last_reap = 0.0
        while True:
            self._wake.wait(min(TICK_S, self._reap_every))
            self._wake.clear()
            if time.monotonic() - last_reap >= self._reap_every:
                last_reap = time.monotonic()
                with self._lock:
                    self._reap_locked()
            try:
                self._tend()
            except Exception as error:  # never let the thread die: say why on the runs it concerns
                self._fail_all(f"the training cluster failed: {type(error).__name__}: {error}"[:500])
            with self._lock:
                if self._closed and not self._running:
                    break
        self._connect_done.set()

    def _tend(self) -> None:
        with self._lock:
            want_cluster = bool(self._queue) or self._connect_wanted
        if want_cluster and not self.cluster.started:
            self._start_cluster()
        with self._lock:
            running = list(self._running)
        for run in running:
            try:
                self._follow(run)
            except Exception as error:  # this run's messages or result could not be read: it alone fails
                self._end(run, status="failed", error=f"{type(error).__name__}: {error}"[:500])
        if self.cluster.started and time.monotonic() - self._slots_counted >= 1.0:
            slots = self.cluster.slots()  # a round trip to the scheduler: at most once a second
            with self._lock:
                self._slots, self._slots_counted = slots, time.monotonic()
        if self.cluster.started:
            with self._lock:
                self._drop_cancelled_locked()
                slots = self._slots_locked()
                starting = []
                while self._queue and len(self._running) < slots and not self._closed:
                    run = self._queue.popleft()
                    with run._lock:  # a run cancelled a moment ago stays cancelled
                        if run._status != "queued":
                            continue
                        run._status, run._queue_position, run._expected_start_at = "running", None, None
                        run._phase = "starting"
                        run._started_at = time.time()
                    self._running.append(run)
                    starting.append(run)
                self._renumber_locked()
            for run in starting:
                self._hand_to_worker(run)

    def _start_cluster(self) -> None:
        with self._lock:
            if self._unavailable is not None and time.monotonic() - self._unavailable_at < RETRY_UNAVAILABLE_S \
                    and not self._connect_wanted:
                return
            if not self.cluster.external:
                for run in self._queue:
                    run._set(phase="cluster")
        try:
            self.cluster.client()
            problem = None
        except ClusterUnavailable as error:
            problem = str(error)
        with self._lock:
            self._connect_wanted = False
            self._unavailable = problem
            self._unavailable_at = time.monotonic()
            queued = list(self._queue) if problem else []
            if problem:
                self._queue.clear()
            for run in self._queue:  # started: they wait for a worker like any other run now
                run._set(phase=None)
        self._connect_done.set()
        for run in queued:  # nothing to train them on: say why
            self._end(run, status="failed", error=f"Training is unavailable: {problem}")

    def _hand_to_worker(self, run: Run) -> None:
        from distributed import Event, Queue

        from seqviz.worker import names, train_on_worker

        try:
            client = self.cluster.client()
            named = names(run.id)
            run._remote = {"queue": Queue(named["progress"], client=client),
                           **{key: Event(named[key], client=client) for key in ("stop", "gone", "started")}}
            run._future = client.submit(train_on_worker, run.id, run.spec, run._snapshot_fn, run._snapshot_every_s,
                                        run._max_seconds, key=f"seqviz-run-{run.id}", pure=False)
        except Exception as error:
            self._end(run, status="failed", error=f"the run could not be handed to a training worker: "
                                                   f"{type(error).__name__}: {error}"[:500])

    def _follow(self, run: Run) -> None:
        """Send a stop the run was asked for, read its progress, and collect its end."""
        remote, future = run._remote, run._future
        if remote is None or future is None:
            return
        if run._stop.is_set() and not run._stop_sent:
            if run._abandon:
                remote["gone"].set()
            remote["stop"].set()
            run._stop_sent = True
        self._drain(run)
        if future.done():
            self._drain(run)
            self._collect(run, future)

    def _drain(self, run: Run) -> None:
        for data in run._remote["queue"].get(batch=True):
            run._apply(pickle.loads(data))

    def _collect(self, run: Run, future) -> None:
        from seqviz.worker import WorkerLost

        try:
            result = future.result(timeout=5)
        except BaseException as error:  # whatever ended the task on the worker (a BaseException there too)
            killed = isinstance(error, WorkerLost) or type(error).__name__ in ("KilledWorker", "CommClosedError")
            if killed:
                message = ("its worker process stopped in the middle of the run (it was killed or ran out of "
                           "memory); the server started a new worker: press Start training to run it again")
            else:
                message = f"{type(error).__name__}: {error}"[:500]
            self._end(run, status="failed", error=message)
            return
        if result.get("abandoned"):
            self._end(run, status="stopped", step=result["step"])
            return
        from seqviz.checkpoints import fingerprint

        with run._lock:
            step = result["step"]
            run._metric_history = [(s, m) for s, m in run._metric_history if s != step]
            run._metric_history.append((step, result["headline"]))
            if result.get("snapshot") is not None:
                run._snapshots.append(result["snapshot"])
                while len(run._snapshots) > limits.TRAIN_MAX_SNAPSHOTS:
                    run._snapshots = run._snapshots[-1::-2][::-1]
            run._step = step
            run._train_elapsed = result["train_elapsed"]
            run._train_seconds = result["train_seconds"]
            run._metrics = result["metrics"]
            run._checkpoint = result["checkpoint"]
            run._fingerprint = fingerprint(result["checkpoint"])
            run._worker_pid = result.get("pid", run._worker_pid)
            if result.get("error"):
                run._error = result["error"]
            stopped = result["stopped"]
            if not stopped:
                run._stop_reason = None  # asked to stop after the last step: it finished
        self._end(run, status="stopped" if stopped else "finished")

    def _end(self, run: Run, status: str, error: str | None = None, step: int | None = None) -> None:
        """The run has ended: record it, give its slot back, let go of its scheduler-side objects."""
        now = time.time()
        with run._lock:
            run._status, run._phase, run._ended_at = status, None, now
            run._queue_position = run._expected_start_at = None
            if error is not None:
                run._error = error
            if step is not None:
                run._step = step
            started, trained, steps = run._started_at, run._train_seconds, run._step
        with self._lock:
            if run in self._running:
                self._running.remove(run)
            if status in ("finished", "stopped") and trained and steps > 0 and started is not None:
                self._paces.setdefault(_shape(run.spec), deque(maxlen=10)).append(trained / steps)
                self._overheads.append(max(0.0, now - started - trained))
            if run._abandon:
                self._runs.pop(run.id, None)
                run._release()
            self._renumber_locked()
        self._let_go(run)
        run._ended.set()
        self._wake.set()

    def _let_go(self, run: Run) -> None:
        remote, run._remote, run._future = run._remote, None, None
        if remote is None:
            return
        try:
            remote["queue"].close()
            for key in ("stop", "gone", "started"):
                remote[key].clear()
        except Exception:  # the cluster is gone: nothing left to free
            pass

    def _fail_all(self, message: str) -> None:
        with self._lock:
            running = list(self._running)
        for run in running:
            self._end(run, status="failed", error=message)


def _check_owner(owner) -> None:
    if not isinstance(owner, str) or not owner or len(owner) > 200:
        raise ValueError("owner must be a non-empty session id string")
