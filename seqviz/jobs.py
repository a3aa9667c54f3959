"""Training for a shared server: runs are records in the lab store, trained by Dask, never by the web process.

A page submits a :class:`seqviz.runs.RunSpec` for its browser's lab (:meth:`RunManager.submit`) and reads the
lab's runs back from the store (:meth:`RunManager.runs_of`: :class:`seqviz.progress.RunState` values), in any
tab, on any web server of a lecture hall. This module is a thin layer over Dask:

- **Dask queues.** Each run is one task, :func:`seqviz.worker.train_on_worker`, keyed ``seqviz-run-<id>`` and
  asking for the worker resource ``{"train": 1}``: the scheduler holds the queue and hands a run to a worker
  as soon as one is free, one run per worker, oldest first. The task is ``fire_and_forget``: it trains to its
  end even if this web server stops.
- **Dask cancels**: a queued run that is stopped is cancelled in the store (at once, for every tab) and its
  future is cancelled; a worker that gets it anyway finds it cancelled and does nothing.
- **Dask restarts**: a task whose worker died is started again by the scheduler on another worker, which goes on
  from the run's last saved point (seqviz.worker).
- **What this layer adds**: admission (seqviz.admission: the per-lab cap and the queue's limit), expected starts
  (seqviz.queue_estimate), and *recovery*: every few seconds, and when the server starts, the store's queued and
  running runs that the scheduler does not know (the server restarted and its own cluster with it, a scheduler
  that restarted) are handed to it again; they go on from their saved points. A running run whose worker lives
  (its process, on this machine; its heartbeat within RUNNING_SILENT_S, elsewhere) trains on another server's
  cluster and is left alone.

One daemon thread, ``seqviz-run-tender``, does all the talking to the cluster (starting it, submitting,
cancelling, recovering): page calls never wait on the network. Nothing here imports streamlit or trains.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

from seqviz import limits
from seqviz.admission import Load, RunRefused, admit
from seqviz.cluster import Cluster, ClusterUnavailable
from seqviz.progress import RunState
from seqviz.queue_estimate import Paces, Training, expected_starts, steady
from seqviz.run_identity import identity_key
from seqviz.runs import RunSpec

__all__ = ["RunManager", "RunRefused"]

TICK_S = 0.25  # seconds between two rounds of the tender thread when woken for nothing
RECOVER_EVERY_S = 5.0  # seconds between two looks for runs the scheduler does not know
RECOVER_GRACE_S = 10.0  # a run submitted less than this long ago by another server is left to that server
# A running run that this server's scheduler does not hold, whose worker wrote (seqviz.worker's heartbeat, every
# HEARTBEAT_S) within this many seconds, may be alive on another server's cluster: it is not handed to this one (it
# would train twice). A worker on this machine is asked directly (its process lives or not).
RUNNING_SILENT_S = 30.0
RETRY_UNAVAILABLE_S = 15.0  # a cluster that could not be reached is tried again after this many seconds
KEY_PREFIX = "seqviz-run-"


def _scheduler_keys(dask_scheduler=None) -> list[str]:
    """Run on the scheduler: the keys of the seqviz runs it holds (queued, training, or being restarted)."""
    return [str(key) for key in dask_scheduler.tasks if str(key).startswith(KEY_PREFIX)]


class RunManager:
    """This web process's side of training: submit, stop, read, and keep the cluster training what the store holds.

    Keep one per process (the app: ``st.cache_resource``). Tests pass a store ``db`` and a shared ``cluster``."""

    def __init__(self, db, cluster: Cluster | None = None, max_queued: int = limits.TRAIN_MAX_QUEUED,
                 max_active_per_lab: int = limits.TRAIN_MAX_ACTIVE_PER_OWNER,
                 orphan_timeout_s: float = limits.TRAIN_ORPHAN_TIMEOUT_S,
                 max_seconds: float = limits.TRAIN_MAX_SECONDS,
                 snapshot_every_s: float = limits.TRAIN_SNAPSHOT_EVERY_S, train_identical_once: bool = True,
                 save_every_s: float = limits.TRAIN_SAVE_EVERY_S):
        if max_queued < 0 or orphan_timeout_s <= 0:
            raise ValueError("max_queued must be >= 0 and orphan_timeout_s > 0")
        if not 1 <= max_active_per_lab <= limits.TRAIN_MAX_ACTIVE_PER_OWNER_MOST:
            raise ValueError(f"max_active_per_lab must be from 1 to {limits.TRAIN_MAX_ACTIVE_PER_OWNER_MOST}")
        self.db = db
        self.max_queued, self.max_active_per_lab = max_queued, max_active_per_lab
        self.orphan_timeout_s, self.max_seconds = float(orphan_timeout_s), float(max_seconds)
        self.snapshot_every_s, self.save_every_s = float(snapshot_every_s), float(save_every_s)
        self.train_identical_once = train_identical_once  # False: every run trains (tests of determinism)
        self._owns_cluster = cluster is None
        self.cluster = cluster if cluster is not None else Cluster.from_environment()
        self._lock = threading.Lock()
        self._futures: dict[str, Any] = {}  # run id -> the future this process submitted
        self._to_submit: list[str] = []
        self._to_cancel: list[str] = []
        self._slots = 0
        self._slots_counted = 0.0
        self._shown: dict[str, tuple[float, float]] = {}  # queued run id -> (when, expected start) last shown
        self._last_recovery = 0.0
        self._unavailable: str | None = None
        self._unavailable_at = 0.0
        self._connect_wanted = True  # on start: runs the store holds from before must go on
        self._connect_done = threading.Event()
        self._closed = False
        self._wake = threading.Event()
        self._tender = threading.Thread(target=self._tend_forever, name="seqviz-run-tender", daemon=True)
        self._tender.start()

    # ---- what the page calls ----------------------------------------------------------------------------

    def submit(self, lab_id: str, spec: RunSpec, watch=None) -> str:
        """Queue ``spec`` for the lab (a worker takes it as soon as one is free); returns the run's id. A run identical
        to one queued or training is joined (the lab follows it), to one finished taken at once (its model copied
        into the lab): identical runs are trained once (seqviz.run_identity). Raises
        RunRefused when the lab or the server has as many runs as it may, or training is unavailable. ``watch``:
        the seqviz.worker.SnapshotView the run is watched through (or None)."""
        from seqviz.store import runs

        if not isinstance(spec, RunSpec):
            raise TypeError("submit takes a seqviz.runs.RunSpec")
        with self._lock:
            if self._closed:
                raise RunRefused("The server is shutting down; no new runs.")
        finished = self._take_finished(lab_id, spec) if self.train_identical_once else None  # (no cluster needed)
        if finished is not None:
            return finished
        with self._lock:
            if self._unavailable is not None and time.monotonic() - self._unavailable_at < RETRY_UNAVAILABLE_S:
                raise RunRefused(f"Training is unavailable: {self._unavailable}.")

        def check(total: dict, mine: dict, joining: bool) -> None:  # in the run's transaction, the lab's row locked
            # Joining an identical run adds no work: only the lab's own cap applies.
            admit(Load(0 if joining else total["running"], 0 if joining else total["queued"],
                       mine["queued"] + mine["running"]), self.max_active_per_lab, self.max_queued)

        key = identity_key(spec) if self.train_identical_once else None
        run_id, how = runs.create_or_join(self.db, lab_id, spec, watch.to_dict() if watch is not None else None,
                                          admit=check, key=key)
        if how == "new":
            with self._lock:
                self._to_submit.append(run_id)
            self._wake.set()
        return run_id

    def _take_finished(self, lab_id: str, spec: RunSpec) -> str | None:
        """A run identical to ``spec`` (seqviz.run_identity) that finished, whose model some lab keeps: its model
        is copied into this lab (checked like an upload) and the lab follows the run; returns the run's id. None
        when there is none. Raises RunRefused when the lab cannot take the model (full)."""
        from seqviz import zoo
        from seqviz.checkpoints import CheckpointError
        from seqviz.store import models, runs

        found = runs.finished_model(self.db, identity_key(spec))
        if found is None:
            return None
        run_id, data = found
        try:
            kept, _new = models.add(self.db, lab_id, data, f"{spec.label}.safetensors", origin="trained here",
                                    taken=set(zoo.NAMES))
        except CheckpointError as error:
            raise RunRefused(f"This model was trained here already, but your lab cannot take it: {error}") from error
        runs.follow_finished(self.db, lab_id, run_id, models.model_id(self.db, lab_id, kept.fingerprint))
        return run_id

    def runs_of(self, lab_id: str, snapshots: bool = True) -> list[RunState]:
        """The lab's runs, newest first, each queued one with its expected start."""
        import dataclasses

        from seqviz.store import runs

        found = runs.states(self.db, lab_id, snapshots=snapshots)
        queued = [state for state in found if state.status == "queued"]
        if not queued:
            return found
        starts = self._starts()
        now = time.time()
        with self._lock:  # each waiting run's start kept steady against the one last shown (any lab's page)
            by_id = {run_id: steady(self._shown.get(run_id), now + start, now) for run_id, start in starts.items()}
            self._shown = {**{k: v for k, v in self._shown.items() if k in starts},
                           **{run_id: (now, at) for run_id, at in by_id.items() if run_id is not None}}
        return [dataclasses.replace(state, expected_start_at=by_id.get(state.id)) if state.status == "queued"
                else state for state in found]

    def stop(self, lab_id: str, run_id: str) -> str | None:
        """Stop the lab's run: a queued one is cancelled (it never starts), a training one stops after its current
        step and keeps what it learned; a run other labs follow too goes on for them ("left"). Returns its status
        after, or None when the lab has no such run."""
        from seqviz.store import runs

        status = runs.request_stop(self.db, lab_id, run_id)
        if status == "cancelled":
            with self._lock:
                self._to_cancel.append(run_id)
            self._wake.set()
        return status

    def load(self) -> dict[str, Any]:
        """How busy training is, across the store: runs training and waiting, how many train at once, the expected
        wait of a run submitted now, and why training is unavailable (else None)."""
        from seqviz.store import runs

        total = runs.counts(self.db)
        starts = self._starts(extra=1)
        return {"running": total["running"], "queued": total["queued"], "max_running": self._slot_count(),
                "wait_s": starts.get(None, 0.0), "unavailable": self._unavailable}

    def unavailable(self, wait_s: float = 0.0) -> str | None:
        """Why runs cannot train now, or None. A configured scheduler not yet reached is tried (by the tender),
        waiting up to ``wait_s`` seconds for the answer; the app's own cluster is not started by this call."""
        with self._lock:
            connect = self.cluster.external and not self.cluster.started and (
                self._unavailable is None or time.monotonic() - self._unavailable_at >= RETRY_UNAVAILABLE_S)
            if connect:
                self._connect_wanted = True
                self._connect_done.clear()
        if connect:
            self._wake.set()
            self._connect_done.wait(wait_s)
        with self._lock:
            return self._unavailable

    def close(self, timeout: float = 10.0) -> None:
        """Stop the tender (runs go on in the cluster, and in the store); a cluster this manager started is shut
        down, so its runs go on from their saved points when a server starts again."""
        with self._lock:
            self._closed = True
        self._wake.set()
        self._tender.join(timeout)
        self._futures.clear()  # (fire-and-forget: the runs go on; a shared client holds their results no longer)
        if self._owns_cluster:
            self.cluster.close()

    # ---- estimates ---------------------------------------------------------------------------------------

    def _slot_count(self) -> int:
        if self.cluster.started:
            return max(1, self._slots)
        from seqviz.cluster import local_worker_count

        return self.cluster.workers or (1 if self.cluster.external else local_worker_count())

    def _starts(self, extra: int = 0) -> dict[str | None, float]:
        """Run id -> seconds from now it is expected to start (None: a run submitted now)."""
        from seqviz.store import runs

        now = time.time()
        training = [Training(spec, step, steps, trained, now - (started or now))
                    for spec, step, steps, trained, started in runs.running(self.db)]
        queued = runs.queued_specs(self.db)
        starts = expected_starts(training, [spec for _id, spec in queued], self._slot_count(),
                                 Paces(runs.paces(self.db)), extra=extra)
        found: dict[str | None, float] = dict(zip([run_id for run_id, _spec in queued], starts, strict=False))
        if extra:
            found[None] = starts[-1]
        return found

    # ---- the tender thread: everything that talks to the cluster ------------------------------------------

    def _tend_forever(self) -> None:
        while True:
            self._wake.wait(TICK_S)
            self._wake.clear()
            with self._lock:
                if self._closed:
                    break
            try:
                self._tend()
            except Exception as error:  # never let the thread die; say why where pages look
                with self._lock:
                    self._unavailable = f"the training cluster failed: {type(error).__name__}: {error}"[:500]
                    self._unavailable_at = time.monotonic()
        self._connect_done.set()

    def _tend(self) -> None:
        from seqviz.store import StoreUnavailable, runs

        with self._lock:
            wanted = bool(self._to_submit) or self._connect_wanted
        recover = time.monotonic() - self._last_recovery >= RECOVER_EVERY_S
        if recover and not self.cluster.started and not wanted:
            with contextlib.suppress(StoreUnavailable):  # the store's runs that must go on start the cluster
                wanted = bool(runs.unfinished(self.db))
            self._last_recovery = time.monotonic()
        if wanted and not self.cluster.started and not self._start_cluster():
            return
        if not self.cluster.started:
            return
        client = self.cluster.client()
        if time.monotonic() - self._slots_counted >= 1.0:
            self._slots, self._slots_counted = self.cluster.slots(), time.monotonic()
        with self._lock:
            submit, self._to_submit = self._to_submit, []
            cancel, self._to_cancel = self._to_cancel, []
        for run_id in submit:
            self._submit(client, run_id)
        for future in filter(None, (self._futures.pop(run_id, None) for run_id in cancel)):
            with contextlib.suppress(Exception):
                future.cancel()
        for run_id in [run_id for run_id, future in self._futures.items() if future.done()]:
            self._futures.pop(run_id, None)
        if recover:
            self._last_recovery = time.monotonic()
            self._recover(client)

    def _start_cluster(self) -> bool:
        from seqviz.store import runs

        with self._lock:
            if self._unavailable is not None and time.monotonic() - self._unavailable_at < RETRY_UNAVAILABLE_S \
                    and not self._connect_wanted:
                return False
        local = not self.cluster.external
        if local:
            runs.set_queued_phase(self.db, "cluster")
        try:
            self.cluster.client()
            problem = None
        except ClusterUnavailable as error:
            problem = str(error)
        if local:
            runs.set_queued_phase(self.db, None)
        with self._lock:
            self._connect_wanted = False
            self._unavailable, self._unavailable_at = problem, time.monotonic()
        self._connect_done.set()
        return problem is None

    def _submit(self, client, run_id: str) -> None:
        from distributed import fire_and_forget

        from seqviz.worker import train_on_worker

        url = None if self.cluster.external else self.db.url  # an external cluster's workers read their own setting
        # fifo_timeout=0: each run a generation of its own, so a worker takes the oldest first.
        future = client.submit(train_on_worker, run_id, url, self.orphan_timeout_s, self.max_seconds,
                               self.snapshot_every_s, self.save_every_s, key=KEY_PREFIX + run_id,
                               resources={"train": 1}, pure=False, fifo_timeout=0)
        fire_and_forget(future)
        self._futures[run_id] = future

    @staticmethod
    def _orphaned(worker: tuple[str | None, int | None], silent_s: float) -> bool:
        """Whether a running run's worker is gone: its process, where it ran on this machine (a local cluster's
        worker listens on loopback); else its heartbeat, silent for RUNNING_SILENT_S."""
        import ipaddress
        from urllib.parse import urlsplit

        import psutil

        address, pid = worker
        host = urlsplit(address).hostname if address else None
        try:
            local = host is not None and ipaddress.ip_address(host).is_loopback
        except ValueError:
            local = host == "localhost"
        if local and pid:
            return not psutil.pid_exists(pid)
        return silent_s >= RUNNING_SILENT_S

    def _recover(self, client) -> None:
        """Hand the scheduler every queued or running run of the store that it does not hold."""
        from seqviz.store import runs

        unfinished = runs.unfinished(self.db)
        if not unfinished:
            return
        held = set(client.run_on_scheduler(_scheduler_keys))
        workers = runs.workers(self.db)
        now = time.time()
        for run_id, _status, updated_at in unfinished:
            if KEY_PREFIX + run_id in held or run_id in self._futures:
                continue
            if now - updated_at < RECOVER_GRACE_S and _status == "queued":
                continue  # just submitted, maybe by another server: its own tender hands it over
            if _status == "running" and not self._orphaned(workers.get(run_id, (None, None)), now - updated_at):
                continue  # its worker lives: it trains on another server's cluster
            self._submit(client, run_id)
