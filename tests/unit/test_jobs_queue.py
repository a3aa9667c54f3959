"""The run engine's queue and admission, on a real Dask cluster and lab store (tests/unit/test_jobs.py says how):
runs wait in order with queue places and expected starts; a cancelled run never starts; stop and the time limit
keep what was learned; the per-lab cap and the full queue are refused from the store's counts, so two web servers on
one store share them; a lab never sees another's runs; a lab nobody looks at has its run stopped (and kept).
"""

from __future__ import annotations

import threading
import time

import jobs_support
import pytest
import torch
from jobs_support import LONG, WAIT, ended, new_lab, reached, row, state, tiny
from store_fixtures import in_threads, meeting_at_first_write

from seqviz import limits
from seqviz.checkpoints import load_bytes
from seqviz.jobs import RunRefused
from seqviz.store import labs, models, runs
from seqviz.worker import train_on_worker

cluster, managers, sqlite_db = jobs_support.cluster, jobs_support.managers, jobs_support.sqlite_db  # its fixtures


# ---- the queue, stop and the time limit ---------------------------------------------------------------------


def test_a_worker_reuses_freed_memory_as_a_plain_process_does(cluster):
    """Dask's nanny starts its workers with MALLOC_TRIM_THRESHOLD_=65536, which made every tensor over 128 KiB a fresh
    mmap, faulted in page by page (issue 26: each step took 1.75x the CPU of the command line's); a worker of the
    app's cluster reuses freed memory, as a plain process does."""

    def faults_of_fresh_tensors() -> int:  # (in a task's thread, as a run's steps are)
        import resource

        import torch

        for _ in range(10):
            torch.ones(2**20)  # 4 MiB, allocated and freed
        before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
        for _ in range(100):
            torch.ones(2**20)
        return resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before

    faults = cluster.client().submit(faults_of_fresh_tensors, pure=False).result(WAIT)
    assert faults < 100 * 1024 // 8  # each fresh mmap would fault its 1024 pages in (51 k faults here, 0 reused)


def test_runs_wait_with_places_and_expected_starts_and_a_cancelled_one_never_starts(sqlite_db, managers, cluster):
    """Both workers busy: runs wait in the store's order, each with its place and expected start; a cancelled one
    never starts, even on a worker that gets its task. (Which waiting run a freed worker takes is Dask's choice
    across workers: the order on one worker is the restart test's.)"""
    db = sqlite_db
    manager = managers(db, max_active_per_lab=2)
    a, b, c, e = (new_lab(db) for _ in range(4))
    first, second = manager.submit(a, LONG), manager.submit(b, LONG)
    reached(db, a, first, 10)
    reached(db, b, second, 10)
    third, fourth, fifth = manager.submit(c, tiny(steps=5)), manager.submit(c, tiny(steps=5)), \
        manager.submit(e, tiny(steps=5))
    looked = time.time()
    mine = {s.id: s for s in manager.runs_of(c)}  # one look: both of lab c's waiting runs
    waiting = [mine[third], mine[fourth], manager.runs_of(e)[0]]
    assert [(s.status, s.queue_position) for s in waiting] == [("queued", 1), ("queued", 2), ("queued", 3)]
    assert all(s.started_at is None and s.waited_s is None and s.phase is None for s in waiting)
    assert looked < waiting[0].expected_start_at <= waiting[1].expected_start_at  # behind two runs training
    assert looked < waiting[2].expected_start_at
    load = manager.load()
    assert (load["running"], load["queued"], load["max_running"], load["unavailable"]) == (2, 3, 2, None)
    assert load["wait_s"] > 0  # a run submitted now waits for the runs ahead of it

    assert manager.stop(c, fourth) == "cancelled"  # a queued run: cancelled at once, for every tab
    assert state(db, c, fourth).status == "cancelled" and state(db, c, fourth).ended
    assert [state(db, c, third).queue_position, state(db, e, fifth).queue_position] == [1, 2]
    assert manager.load()["queued"] == 2

    assert manager.stop(a, first) == "running"  # a training run stops after its step, and frees its worker
    stopped = ended(db, a, first)
    assert stopped.status == "stopped"
    for lab, run_id in ((c, third), (e, fifth)):
        done = ended(db, lab, run_id)
        assert done.status == "finished" and done.started_at >= stopped.ended_at, done  # it waited for a worker
        assert done.waited_s == done.started_at - done.submitted_at > 0
    manager.stop(b, second)
    ended(db, b, second)

    cancelled = state(db, c, fourth)
    assert cancelled.status == "cancelled" and cancelled.step == 0 and cancelled.started_at is None
    assert cancelled.attempts == 0 and cancelled.worker_pid is None and len(models.listed(db, c)) == 1
    # A worker that gets it anyway (Dask may still hold the task) finds it cancelled.
    again = cluster.client().submit(train_on_worker, fourth, db.url, 60.0, resources={"train": 1}, pure=False)
    assert again.result(WAIT) == "nothing to do"
    assert state(db, c, fourth).status == "cancelled" and row(db, fourth)["attempts"] == 0


def test_stop_keeps_what_was_learned(sqlite_db, managers):
    db = sqlite_db
    manager = managers(db)
    lab = new_lab(db)
    run_id = manager.submit(lab, LONG)
    reached(db, lab, run_id, 20)
    assert manager.stop(lab, run_id) == "running" and row(db, run_id)["stop_requested"]
    done = ended(db, lab, run_id)
    assert done.status == "stopped" and done.stop_reason == "asked"
    assert 20 <= done.step < LONG.steps and done.metrics is not None and done.fingerprint
    checkpoint = load_bytes(models.data(db, lab, done.fingerprint))
    assert checkpoint.meta["steps"] == done.step
    initial, _, _ = LONG.build()
    learned = checkpoint.model.state_dict()
    assert any(not torch.equal(learned[k], v) for k, v in initial.state_dict().items())
    assert manager.stop(lab, run_id) == "stopped"  # stopping an ended run changes nothing


def test_a_run_over_its_time_limit_is_stopped_and_kept(sqlite_db, managers):
    db = sqlite_db
    lab = new_lab(db)
    run_id = managers(db, max_seconds=2.0).submit(lab, LONG)
    done = ended(db, lab, run_id)
    assert done.status == "stopped" and done.stop_reason == "time limit" and 0 < done.step < LONG.steps, done
    assert done.trained_s >= 2.0 and [m.fingerprint for m in models.listed(db, lab)] == [done.fingerprint]


# ---- admission, shared by every web server on the store ----------------------------------------------------


def test_the_lab_cap_and_the_full_queue_are_refused_and_two_servers_share_them(db, managers):
    with pytest.raises(ValueError, match="max_active_per_lab"):
        managers(db, max_active_per_lab=limits.TRAIN_MAX_ACTIVE_PER_OWNER_MOST + 1)
    assert limits.TRAIN_MAX_QUEUED >= 60 and limits.TRAIN_MAX_ACTIVE_PER_OWNER == 1
    one, two = managers(db, max_queued=1), managers(db, max_queued=1)  # two web servers, one store
    a, b, c, d, e = (new_lab(db) for _ in range(5))
    first = one.submit(a, LONG)
    with pytest.raises(RunRefused, match="TRAIN_MAX_ACTIVE_PER_OWNER"):
        two.submit(a, tiny(steps=3))  # the other server counts the lab's run
    reached(db, a, first)  # (until a worker takes it, it fills the queue of one)
    second = two.submit(b, LONG)
    reached(db, b, second)
    waiting = one.submit(c, tiny(steps=3))  # both workers busy: it waits, the queue is full
    for manager in (one, two):
        with pytest.raises(RunRefused, match="busy"):
            manager.submit(d, tiny(steps=3))
        assert manager.runs_of(c)[0].queue_position == 1 and manager.load()["queued"] == 1
    assert runs.counts(db) == {"queued": 1, "running": 2} and runs.counts(db, d) == {"queued": 0, "running": 0}
    assert two.stop(a, first) == "running"  # any server stops any run of the lab
    assert ended(db, a, first).status == "stopped"
    assert ended(db, c, waiting).status == "finished"
    later = two.submit(d, tiny(steps=3))  # room again
    assert ended(db, d, later).status == "finished"
    # Two tabs of one lab on two servers at the same moment: one run is taken, the other refused.
    with meeting_at_first_write():
        results = in_threads(lambda: one.submit(e, tiny(steps=3)), lambda: two.submit(e, tiny(steps=3)))
    assert sorted(type(result).__name__ for result in results) == ["RunRefused", "str"], results
    assert "TRAIN_MAX_ACTIVE_PER_OWNER" in str(next(r for r in results if isinstance(r, RunRefused)))
    assert len(runs.states(db, e)) == 1
    assert ended(db, e, next(r for r in results if isinstance(r, str))).status == "finished"
    two.stop(b, second)
    ended(db, b, second)


def test_a_lab_never_sees_another_labs_runs(sqlite_db, managers):
    db = sqlite_db
    manager = managers(db)
    alice, bob = new_lab(db), new_lab(db)
    mine, theirs = manager.submit(alice, tiny(steps=3)), manager.submit(bob, tiny(steps=3))
    ended(db, alice, mine)
    ended(db, bob, theirs)
    assert [s.id for s in manager.runs_of(alice)] == [mine] and [s.id for s in manager.runs_of(bob)] == [theirs]
    assert runs.states(db, alice, theirs) == []
    assert manager.stop(alice, theirs) is None  # not hers: not found
    assert [m.fingerprint for m in models.listed(db, alice)] == [state(db, alice, mine).fingerprint]
    assert [m.fingerprint for m in models.listed(db, bob)] == [state(db, bob, theirs).fingerprint]


# ---- labs that stop looking ----------------------------------------------------------------------------------


def test_a_lab_nobody_looks_at_has_its_run_stopped_and_kept_while_a_looking_lab_trains_on(sqlite_db, managers):
    """Lab ``gone``'s page closes once its run trains (labs.seen is called no more): the run stops after
    orphan_timeout_s, plus the LAB_SEEN_EVERY_S that a look may be newer than the lab's last-seen time, keeping its
    model. Lab ``here``, whose page looks all along, trains on past that."""
    db = sqlite_db
    manager = managers(db, orphan_timeout_s=2.0)
    here, gone = new_lab(db), new_lab(db)
    pages = {here: threading.Event(), gone: threading.Event()}  # set: the lab's page is closed

    def page(lab: str) -> None:
        while not pages[lab].wait(0.2):
            labs.seen(db, lab)

    watchers = [threading.Thread(target=page, args=(lab,), daemon=True) for lab in pages]
    for watcher in watchers:
        watcher.start()
    try:
        kept, lost = manager.submit(here, LONG), manager.submit(gone, LONG)
        reached(db, gone, lost)
        pages[gone].set()  # the visitor closes the tab
        done = ended(db, gone, lost)
        assert done.status == "stopped" and done.stop_reason == "nobody looking", done
        assert 0 < done.step < LONG.steps and [m.fingerprint for m in models.listed(db, gone)] == [done.fingerprint]
        time.sleep(1.0)  # as long again as the gone lab's run went on after its stop was due
        assert state(db, here, kept).status == "running"
    finally:
        for closed in pages.values():
            closed.set()
        for watcher in watchers:
            watcher.join(5)
    assert manager.stop(here, kept) == "running"
    assert ended(db, here, kept).stop_reason == "asked"
