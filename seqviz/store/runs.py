"""A lab's runs in the store, from submission to end: the record every tab of the lab, on any server, reads.

The training worker writes a run's progress itself (:func:`begin`, :func:`report`, :func:`save_point`,
:func:`end`), so a run on an external cluster lands in the store even while no web server is up, and a page
anywhere reads the same record (:func:`states`). A page asks a run to stop (:func:`request_stop`); the worker
reads that back with its next report.
"""

from __future__ import annotations

import pickle
import secrets
import time
from dataclasses import asdict
from typing import Any

from sqlalchemy import delete, func, select, update

from seqviz import limits
from seqviz.progress import ACTIVE, ENDED, PHASES, Control, Report, RunState
from seqviz.store.engine import Database, lock_for
from seqviz.store.schema import Lab, Model, Run, RunFollower, RunPoint, Snapshot


def create(db: Database, lab_id: str, spec, watch: dict | None = None, now: float | None = None) -> str:
    """Record a new queued run of ``spec`` for the lab, never joined with another; returns its id."""
    return create_or_join(db, lab_id, spec, watch, now)[0]


def create_or_join(db: Database, lab_id: str, spec, watch: dict | None = None, now: float | None = None,
                   admit=None, key: str | None = None) -> tuple[str, str]:
    """Record that the lab wants a run of ``spec`` (a seqviz.runs.RunSpec); returns (run id, how): "new" (queued
    for a worker), or "joined" (a run with the same ``key``, seqviz.run_identity, is queued or training: the lab
    follows it). ``admit(total, lab, joining)`` (the store's and the lab's :func:`counts`) may refuse it by
    raising, in the same transaction: the lab's row is locked first, so two servers submitting for one lab at once
    take turns and the second counts the first. (A finished identical run: :func:`finished_model`.)"""
    now = time.time() if now is None else now
    with db.transaction() as session:
        session.scalar(select(Lab.id).where(Lab.id == lab_id).with_for_update())
        if key is not None:
            lock_for(session, f"run {key}")  # thirty labs asking at once: one creates the run, 29 join it
        joined = None if key is None else session.scalar(  # locked: its end waits, or this sees it ended
            select(Run).where(Run.key == key, Run.status.in_(ACTIVE), Run.stop_requested.is_(False))
            .order_by(Run.submitted_at).limit(1).with_for_update())
        if admit is not None:
            admit(_counts(session), _counts(session, lab_id), joined is not None)
        if joined is not None:
            follower = session.get(RunFollower, (joined.id, lab_id))
            if follower is None:
                session.add(RunFollower(run_id=joined.id, lab_id=lab_id, joined_at=now))
            else:  # it stopped following and asks again
                follower.left_at = None
            return joined.id, "joined"
        run_id = secrets.token_hex(16)
        session.add(Run(id=run_id, lab_id=lab_id, key=key, name=spec.label, spec=asdict(spec), watch=watch,
                        status="queued", step=0, steps=spec.steps_to_run, trained_s=0.0, losses=[],
                        metric_history=[], stop_requested=False, attempts=0, saved_step=0, submitted_at=now,
                        updated_at=now))
        session.flush()
        session.add(RunFollower(run_id=run_id, lab_id=lab_id, joined_at=now))
    return run_id, "new"


def finished_model(db: Database, key: str) -> tuple[str, bytes] | None:
    """(run id, checkpoint file) of a finished run with this key whose model some lab still keeps, else None."""
    with db.transaction(reading=True) as session:
        found = session.execute(
            select(Run.id, Model.data).join(RunFollower, RunFollower.run_id == Run.id)
            .join(Model, Model.id == RunFollower.model_id)
            .where(Run.key == key, Run.status == "finished").order_by(Run.ended_at.desc()).limit(1)).first()
        return None if found is None else (found[0], found[1])


def follow_finished(db: Database, lab_id: str, run_id: str, model_id: int | None) -> None:
    """The lab asked for a run identical to ``run_id``, which had finished: it follows it, with its own copy of
    the model (``model_id``, in the lab's models)."""
    with db.transaction() as session:
        follower = session.get(RunFollower, (run_id, lab_id))
        if follower is None:
            session.add(RunFollower(run_id=run_id, lab_id=lab_id, joined_at=time.time(), model_id=model_id))
        else:
            follower.left_at, follower.model_id = None, model_id


def following(db: Database, run_id: str, without_model: bool = False) -> list[str]:
    """The labs following the run (not those that stopped following), in the order they came."""
    with db.transaction(reading=True) as session:
        query = select(RunFollower.lab_id).where(RunFollower.run_id == run_id, RunFollower.left_at.is_(None))
        if without_model:
            query = query.where(RunFollower.model_id.is_(None))
        return list(session.scalars(query.order_by(RunFollower.joined_at)))


def delivered(db: Database, run_id: str, lab_id: str, model_id: int | None) -> None:
    """The follower's copy of the run's model (in its lab's models)."""
    with db.transaction() as session:
        session.execute(update(RunFollower).where(RunFollower.run_id == run_id, RunFollower.lab_id == lab_id)
                        .values(model_id=model_id))


def hand_over(session, lab_ids) -> None:
    """Labs about to be deleted: each run whose record hangs off one of them goes to another lab following it,
    so the run (and the class following it) outlives the first lab that asked for it."""
    for run in session.scalars(select(Run).where(Run.lab_id.in_(list(lab_ids)))):
        heir = session.scalar(select(RunFollower.lab_id).where(RunFollower.run_id == run.id,
                                                               RunFollower.lab_id.not_in(list(lab_ids)))
                              .order_by(RunFollower.left_at.is_not(None), RunFollower.joined_at).limit(1))
        if heir is not None:
            run.lab_id = heir


def counts(db: Database, lab_id: str | None = None) -> dict[str, int]:
    """Runs queued and running, across the store (or of one lab)."""
    with db.transaction(reading=True) as session:
        return _counts(session, lab_id)


def _counts(session, lab_id: str | None = None) -> dict[str, int]:
    query = select(Run.status, func.count(Run.id)).where(Run.status.in_(ACTIVE)).group_by(Run.status)
    if lab_id is not None:  # the runs the lab follows
        query = query.join(RunFollower, RunFollower.run_id == Run.id).where(RunFollower.lab_id == lab_id,
                                                                            RunFollower.left_at.is_(None))
    found = dict(session.execute(query).all())
    return {status: int(found.get(status, 0)) for status in ACTIVE}


def unfinished(db: Database) -> list[tuple[str, str, float]]:
    """(id, status, updated_at) of every queued or running run, oldest first: what a cluster must be training."""
    with db.transaction(reading=True) as session:
        return [tuple(row) for row in session.execute(
            select(Run.id, Run.status, Run.updated_at).where(Run.status.in_(ACTIVE)).order_by(Run.submitted_at))]


def workers(db: Database) -> dict[str, tuple[str | None, int | None]]:
    """run id -> (worker address, worker pid) of every running run: whether its worker still lives."""
    with db.transaction(reading=True) as session:
        return {run_id: (worker, pid) for run_id, worker, pid in session.execute(
            select(Run.id, Run.worker, Run.worker_pid).where(Run.status == "running"))}


def set_queued_phase(db: Database, phase: str | None) -> None:
    """What every queued run waits on, in words for the page (the app's own workers starting), or None."""
    with db.transaction() as session:
        session.execute(update(Run).where(Run.status == "queued").values(phase=phase))


def begin(db: Database, run_id: str, worker: str | None, pid: int, now: float | None = None) -> dict | None:
    """A worker takes the run up: it is running now. Returns what the worker needs (spec, watch, lab, saved point,
    attempts) or None when there is nothing to train (ended, cancelled, gone)."""
    now = time.time() if now is None else now
    with db.transaction() as session:
        run = session.get(Run, run_id, with_for_update=True)
        if run is None or run.status in ENDED:
            return None
        if run.status == "queued" and run.stop_requested:
            run.status, run.ended_at, run.updated_at = "cancelled", now, now
            return None
        run.attempts += 1
        point = session.get(RunPoint, run_id)
        if run.attempts > 1:
            run.note = (f"Its worker stopped at step {run.step}; it went on from its last saved point (step "
                        f"{run.saved_step}) on another worker." if point is not None else
                        f"Its worker stopped at step {run.step} before a point was saved; it began again.")
            run.step = run.saved_step
            run.losses = [pair for pair in run.losses if pair[0] <= run.saved_step]
            run.metric_history = [pair for pair in run.metric_history if pair[0] <= run.saved_step]
            session.execute(delete(Snapshot).where(Snapshot.run_id == run_id, Snapshot.step > run.saved_step))
        run.status, run.phase, run.worker, run.worker_pid, run.updated_at = "running", "starting", worker, pid, now
        run.started_at = run.started_at or now
        return {"spec": dict(run.spec), "watch": run.watch, "key": run.key, "saved_state": point and point.state,
                "saved_step": run.saved_step, "attempts": run.attempts, "stop": run.stop_requested}


def rekey(db: Database, run_id: str, key: str) -> None:
    """The worker's own identity key of the run (seqviz.run_identity): where it trains decides what it equals."""
    with db.transaction() as session:
        session.execute(update(Run).where(Run.id == run_id).values(key=key))


def begin_again(db: Database, run_id: str, why: str) -> None:
    """The run's saved point could not be used: its record starts again from step 0, saying ``why``."""
    with db.transaction() as session:
        run = session.get(Run, run_id)
        if run is None or run.status != "running":
            return
        run.note = f"{why}; it began again from step 0."[:1000]
        run.step, run.saved_step, run.losses, run.metric_history = 0, 0, [], []
        for table in (Snapshot, RunPoint):
            session.execute(delete(table).where(table.run_id == run_id))


def report(db: Database, run_id: str, record: Report, now: float | None = None) -> Control:
    """Append the worker's report to the run; returns whether to stop and when the lab last looked."""
    now = time.time() if now is None else now
    with db.transaction() as session:
        run = session.get(Run, run_id, with_for_update=True)  # two reports at once: one waits, none lost
        if run is None or run.status != "running":
            return Control(stop=True, last_seen=None)
        if record.losses:
            run.losses = [*run.losses, *[[int(s), float(v)] for s, v in record.losses]]
        if record.metrics:
            run.metric_history = [*run.metric_history, *[[int(s), float(v)] for s, v in record.metrics]]
        for name in ("phase", "step", "trained_s", "error", "stop_reason"):
            value = getattr(record, name)
            if value is not None and not (name == "stop_reason" and run.stop_reason):
                setattr(run, name, value)
        for step, data in record.snapshots:
            session.add(Snapshot(run_id=run_id, step=int(step), data=data))
        if record.snapshots:
            _thin_snapshots(session, run_id)
        run.updated_at = now
        seen = session.scalar(select(func.max(Lab.last_seen_at)).join(RunFollower, RunFollower.lab_id == Lab.id)
                              .where(RunFollower.run_id == run_id, RunFollower.left_at.is_(None)))
        return Control(stop=bool(run.stop_requested), last_seen=seen)  # (None: nobody follows it any more)


def _thin_snapshots(session, run_id: str) -> None:
    """Keep at most TRAIN_MAX_SNAPSHOTS: when over, every other one goes, the newest kept."""
    session.flush()
    ids = list(session.scalars(select(Snapshot.id).where(Snapshot.run_id == run_id).order_by(Snapshot.step.desc(),
                                                                                          Snapshot.id.desc())))
    gone = []
    while len(ids) > limits.TRAIN_MAX_SNAPSHOTS:  # one report may bring many: halve until within the limit
        gone += ids[1::2]
        ids = ids[0::2]
    if gone:
        session.execute(delete(Snapshot).where(Snapshot.id.in_(gone)))


def save_point(db: Database, run_id: str, step: int, state: bytes) -> None:
    """The run's latest saved point (seqviz.train.TrainState bytes): where it goes on from after a lost worker."""
    with db.transaction() as session:  # (beside the run's row: reports rewrite that row, SQLite all of it)
        if session.execute(update(Run).where(Run.id == run_id, Run.status == "running")
                           .values(saved_step=int(step), updated_at=time.time())).rowcount:
            session.merge(RunPoint(run_id=run_id, state=state))


def end(db: Database, run_id: str, status: str, *, step: int | None = None, metrics: dict | None = None,
        train_seconds: float | None = None, trained_s: float | None = None, model_id: int | None = None,
        headline: float | None = None, error: str | None = None, stop_reason: str | None = None) -> None:
    """The run has ended (finished, stopped, failed or cancelled); its saved point is dropped."""
    now = time.time()
    with db.transaction() as session:
        run = session.get(Run, run_id)
        if run is None or run.status in ENDED:
            return
        run.status, run.phase, run.ended_at, run.updated_at = status, None, now, now
        session.execute(delete(RunPoint).where(RunPoint.run_id == run_id))
        for name, value in (("step", step), ("metrics", metrics), ("train_seconds", train_seconds),
                            ("trained_s", trained_s), ("model_id", model_id), ("error", error)):
            if value is not None:
                setattr(run, name, value)
        if headline is not None:
            run.metric_history = [*[p for p in run.metric_history if p[0] != run.step], [run.step, float(headline)]]
        if stop_reason and not run.stop_reason:
            run.stop_reason = stop_reason
        if status == "finished":
            run.stop_reason = None
        if model_id is not None:  # the model of the lab the record hangs off is its copy (others: delivered)
            session.execute(update(RunFollower).where(
                RunFollower.run_id == run_id, RunFollower.lab_id == run.lab_id, RunFollower.model_id.is_(None),
                select(Model.id).where(Model.id == model_id, Model.lab_id == run.lab_id).exists()
            ).values(model_id=model_id))
        for lab_id in session.scalars(select(RunFollower.lab_id).where(RunFollower.run_id == run_id)):
            _prune(session, lab_id)


def _prune(session, lab_id: str) -> None:
    """A lab keeps its newest TRAIN_MAX_KEPT_PER_OWNER ended runs (their models stay in its models); a run no lab
    follows any more goes."""
    ended = list(session.scalars(select(Run.id).join(RunFollower, RunFollower.run_id == Run.id)
                                 .where(RunFollower.lab_id == lab_id, Run.status.in_(ENDED))
                                 .order_by(RunFollower.joined_at.desc())))
    gone = ended[limits.TRAIN_MAX_KEPT_PER_OWNER:]
    if gone:
        session.execute(delete(RunFollower).where(RunFollower.lab_id == lab_id, RunFollower.run_id.in_(gone)))
        session.flush()
        followed = select(RunFollower.run_id).where(RunFollower.run_id.in_(gone))
        session.execute(delete(Run).where(Run.id.in_(gone), Run.id.not_in(followed)))


def request_stop(db: Database, lab_id: str, run_id: str) -> str | None:
    """Ask the lab's run to stop: a queued one is cancelled at once. A run other labs follow too goes on for them:
    this lab only stops following it ("left"). Returns its status after (or "left"), None if the lab has no such
    run."""
    now = time.time()
    with db.transaction() as session:
        run = session.get(Run, run_id, with_for_update=True)
        follower = session.get(RunFollower, (run_id, lab_id))
        if run is None or follower is None:
            return None
        if run.status in ACTIVE and follower.left_at is None:
            others = session.scalar(select(func.count()).select_from(RunFollower).where(
                RunFollower.run_id == run_id, RunFollower.lab_id != lab_id, RunFollower.left_at.is_(None)))
            if others:
                follower.left_at = now
                return "left"
        if follower.left_at is not None:
            return "left"
        if run.status == "queued":
            run.status, run.ended_at, run.updated_at, run.stop_requested = "cancelled", now, now, True
        elif run.status == "running" and not run.stop_requested:
            run.stop_requested, run.updated_at = True, now
            run.stop_reason = run.stop_reason or "asked"
        return run.status


def _spec(data: dict):
    from seqviz.runs import RunSpec

    return RunSpec(**data)


def _snapshots(session, run_id: str) -> tuple[tuple[int, Any], ...]:
    found = []
    for step, data in session.execute(select(Snapshot.step, Snapshot.data).where(Snapshot.run_id == run_id)
                                      .order_by(Snapshot.step, Snapshot.id)):
        try:
            found.append((step, pickle.loads(data)))
        except Exception:  # a damaged snapshot is left out; the run's other records still show
            continue
    return tuple(found)


def states(db: Database, lab_id: str, run_id: str | None = None, snapshots: bool = True) -> list[RunState]:
    """The lab's runs (or one of them), newest first, with queue places among every queued run of the store."""
    from seqviz.tasks import TASKS

    with db.transaction(reading=True) as session:
        query = (select(Run, RunFollower).join(RunFollower, RunFollower.run_id == Run.id)
                 .where(RunFollower.lab_id == lab_id).order_by(RunFollower.joined_at.desc(), Run.submitted_at.desc()))
        if run_id is not None:
            query = query.where(Run.id == run_id)
        rows = session.execute(query).all()
        queued = list(session.scalars(select(Run.id).where(Run.status == "queued").order_by(Run.submitted_at)))
        fingerprints = dict(session.execute(select(Model.id, Model.fingerprint).where(
            Model.id.in_([f.model_id for _r, f in rows if f.model_id is not None]))).all())
        followers = dict(session.execute(
            select(RunFollower.run_id, func.count()).where(RunFollower.run_id.in_([r.id for r, _f in rows]),
                                                           RunFollower.left_at.is_(None))
            .group_by(RunFollower.run_id)).all())
        now = time.time()
        found = []
        for run, follower in rows:
            try:
                spec = _spec(run.spec)
            except (TypeError, ValueError):  # a record from another version, or damaged: not shown
                continue
            left = follower.left_at is not None  # this lab stopped following it: for the lab it ended there
            status = "stopped" if left else run.status
            active = status in ACTIVE
            eta = None
            if status == "running" and run.step > 0:
                eta = max(0.0, min(run.trained_s / run.step * (run.steps - run.step),
                                   limits.TRAIN_MAX_SECONDS - run.trained_s))
            elif status in ENDED:
                eta = 0.0
            ended_at = follower.left_at if left else run.ended_at
            found.append(RunState(
                id=run.id, name=run.name, spec=spec, status=status,
                queue_position=queued.index(run.id) + 1 if run.id in queued and not left else None,
                step=run.step, steps=run.steps,
                elapsed_s=0.0 if run.started_at is None else max(0.0, (ended_at or now) - run.started_at),
                eta_s=eta, losses=tuple(tuple(p) for p in run.losses),
                metric_name=TASKS[spec.task].headline_name if spec.task in TASKS else "held-out metric",
                metric_history=tuple(tuple(p) for p in run.metric_history),
                snapshots=_snapshots(session, run.id) if snapshots else (),
                stop_reason="left" if left else run.stop_reason, error=run.error,
                metrics=None if left else run.metrics, fingerprint=fingerprints.get(follower.model_id),
                train_seconds=run.train_seconds, submitted_at=run.submitted_at, started_at=run.started_at,
                ended_at=ended_at, phase=PHASES.get(run.phase, run.phase) if active else None,
                worker=run.worker, worker_pid=run.worker_pid, trained_s=run.trained_s, note=run.note,
                attempts=run.attempts, followers=int(followers.get(run.id, 0)), joined_at=follower.joined_at,
                asked_first=follower.joined_at <= run.submitted_at))
        return found


def paces(db: Database, limit: int = 200) -> list[tuple[dict, float, float]]:
    """(spec, seconds per step, seconds outside training) of recent ended runs: for expected starts."""
    with db.transaction(reading=True) as session:
        rows = session.execute(select(Run.spec, Run.step, Run.train_seconds, Run.started_at, Run.ended_at)
                               .where(Run.status.in_(("finished", "stopped")), Run.step > 0,
                                      Run.train_seconds.is_not(None))
                               .order_by(Run.ended_at.desc()).limit(limit)).all()
    return [(spec, seconds / step, max(0.0, (ended or 0) - (started or 0) - seconds))
            for spec, step, seconds, started, ended in rows]


def running(db: Database) -> list[tuple[dict, int, int, float, float | None]]:
    """(spec, step, steps, trained_s, started_at) of every running run: when their workers come free."""
    with db.transaction(reading=True) as session:
        return [tuple(row) for row in session.execute(
            select(Run.spec, Run.step, Run.steps, Run.trained_s, Run.started_at).where(Run.status == "running"))]


def queued_specs(db: Database) -> list[tuple[str, dict]]:
    with db.transaction(reading=True) as session:
        return [tuple(row) for row in session.execute(
            select(Run.id, Run.spec).where(Run.status == "queued").order_by(Run.submitted_at))]
