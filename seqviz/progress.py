"""What crosses between a training worker and the page: one typed progress record, and the run's state.

A worker writes :class:`Report` values into the lab store (seqviz.store.runs.report) and reads back a
:class:`Control` (whether to stop, and when somebody of the run's lab last looked); a page reads :class:`RunState`
values from the store. Plain values only: no torch, no streamlit, no database here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

STATUSES = ("queued", "running", "finished", "stopped", "failed", "cancelled")
ENDED = frozenset({"finished", "stopped", "failed", "cancelled"})
ACTIVE = ("queued", "running")

PHASES = {
    "cluster": "starting the training workers (the server's first run)",
    "starting": "starting on a training worker",
    "data": "loading the task's data",
    "building": "building the model",
    "resuming": "going on from its last saved point",
    "training": "training",
    "measuring": "measuring on held-out data",
    "saving": "measuring the trained model and saving it",
}


@dataclass
class Report:
    """What happened on the worker since its last report (appended to the run's record)."""

    phase: str | None = None
    step: int | None = None
    trained_s: float | None = None
    losses: list[tuple[int, float]] = field(default_factory=list)  # (step, training loss)
    metrics: list[tuple[int, float]] = field(default_factory=list)  # (step, held-out metric)
    snapshots: list[tuple[int, bytes]] = field(default_factory=list)  # (step, pickled snapshot)
    error: str | None = None
    stop_reason: str | None = None

    def empty(self) -> bool:
        return not (self.losses or self.metrics or self.snapshots) and all(
            value is None for value in (self.phase, self.step, self.trained_s, self.error, self.stop_reason))


@dataclass(frozen=True)
class Control:
    """What the worker reads back after a report."""

    stop: bool  # the visitor asked to stop (or the run was cancelled or is gone from the store)
    last_seen: float | None  # time.time() somebody of the lab last looked (None: the lab is gone)


@dataclass(frozen=True)
class RunState:
    """What a page shows of a run at one moment, as the store has it."""

    id: str
    name: str
    spec: Any  # seqviz.runs.RunSpec
    status: str  # one of STATUSES
    queue_position: int | None  # 1 = next to start; None unless queued
    step: int
    steps: int
    elapsed_s: float  # seconds since it left the queue
    eta_s: float | None  # seconds left, from the pace so far (None until a step is done)
    losses: tuple[tuple[int, float], ...]
    metric_name: str
    metric_history: tuple[tuple[int, float], ...]
    snapshots: tuple[tuple[int, Any], ...]  # (step, snapshot), oldest first
    stop_reason: str | None  # "asked", "time limit", "nobody looking", or "left" (this lab stopped following it)
    error: str | None
    metrics: dict | None
    fingerprint: str | None  # its model's, once it has ended with one
    train_seconds: float | None
    submitted_at: float
    started_at: float | None
    ended_at: float | None
    phase: str | None = None  # in words, while queued or running
    worker: str | None = None
    worker_pid: int | None = None
    expected_start_at: float | None = None
    trained_s: float = 0.0
    note: str | None = None  # e.g. that it went on from a saved point after its worker stopped
    attempts: int = 0
    followers: int = 1  # labs following it now (or to its end): identical runs are trained once for them all
    joined_at: float | None = None  # when this lab asked for it (later than submitted_at: it joined a run)
    asked_first: bool = True  # this lab asked for it first: the sentence its snapshots read is this lab's

    @property
    def ended(self) -> bool:
        return self.status in ENDED

    @property
    def metric(self) -> float | None:
        return self.metric_history[-1][1] if self.metric_history else None

    @property
    def waited_s(self) -> float | None:
        return None if self.started_at is None else max(0.0, self.started_at - self.submitted_at)
