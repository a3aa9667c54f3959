"""Faults a classroom brings: a browser closed while its run trains, a tab reloaded while its run waits or trains, a
websocket dropped while a page computes, a visitor who clicks every button twice. The server keeps serving the
others, a run nobody looks at any more stops and keeps its model, a reloaded tab finds its run where it was,
nothing raises, no lab has two runs going.

A run belongs to its browser's lab (the cookie seqviz_lab), not to a tab: it is a record in the lab store that a
training worker writes, and it is stopped (keeping what it learned, stop reason "nobody looking") only when nobody
of its lab has looked at any page for the orphan timeout: 4 s on the test server (SEQVIZ_TRAIN_ORPHAN_TIMEOUT_S,
conftest) instead of the app's ten minutes. Whether a run trains is read from the store (the server's own SQLite
file, conftest's ``classroom.runs``) and from outside, in /proc: seqviz.worker names the worker thread that trains
a run `seqviz-run` while the run lasts. Memory is measured twice: the web server's and its workers' resident memory
before, during and after (recorded, never asserted: the allocator keeps some), and, in this process on a cluster
of its own, the worker's memory, most of which must come back once the run has stopped.

Every wait is bounded; no test asserts on how long anything took.

(a') A tab reloaded mid-queue or mid-run, a run watched, a worker killed mid-run: tests/load/test_faults_mid_run.py.
(b) A websocket dropped and (c) every button twice: tests/load/test_faults_websocket_and_buttons.py. The moves they
share: tests/load/load_support.py.
"""

from __future__ import annotations

import time

import pytest
from browsing import assert_no_exception, wait_for_app
from load_support import (
    ORPHAN_TIMEOUT_S,
    TRAIN_THREAD,
    Sampler,
    choose,
    ended,
    no_run_going,
    record,
    start_training,
    step_shown,
    tracebacks_since,
)
from polling import wait_until

BIG_PRESET = "Bottleneck: plain encoder-decoder, hidden 128"  # 570,057 numbers to learn, the largest preset


# --- (a) a browser closed in the middle of a training run --------------------------------------------------


@pytest.mark.browser
@pytest.mark.timeout(240)
def test_a_browser_closed_while_training_has_its_run_stopped_and_kept_and_others_are_served(classroom, visitors):
    from seqviz.store import labs, models

    log_offset = len(classroom.log_text())
    began = time.monotonic()
    other = visitors("other")
    other.open(f"{classroom.url}/attention?s=where+is+my+parcel+?")
    other.wait_painted()
    closer = visitors("closer")
    closer.open(f"{classroom.url}/train")
    closer.wait_painted()
    choose(closer.page, "Preset", BIG_PRESET)  # builds the translation data, which the server keeps for everyone
    wait_for_app(closer.page)
    assert no_run_going(classroom), "a run is queued or training before this test starts one"
    before = classroom.memory_mb()
    workers_before = classroom.workers_memory_mb()

    with Sampler(classroom) as sampler:
        start_training(closer)
        clicked = time.monotonic()
        assert wait_until(lambda: (step_shown(closer.page) or 0) >= 3, 90), (
            f"the run did not start training: {classroom.runs()[-1:]}")
        training_seen = time.monotonic()
        # The worker's threads named seqviz-run: the one that trains the run, and any it started meanwhile (Linux
        # gives a new thread its creator's name: seqviz.worker's heartbeat, which writes that the run is alive).
        tids = set(classroom.threads(TRAIN_THREAD))
        assert tids, "no worker thread is named seqviz-run while the run trains"
        # The lab whose run it is, from the store; the browser's cookie names the same lab (so the server keeps its
        # labs in the store this test reads).
        (run,) = [row for row in classroom.runs() if row["status"] == "running"]
        lab = run["lab_id"]
        assert classroom.lab_of(closer) == lab
        during = classroom.memory_mb()
        workers_during = classroom.workers_memory_mb()
        closer.close()  # the browser goes, its only tab and websocket with it: nobody of its lab will look again
        closed_at = time.monotonic()
        last_look = labs.last_seen(classroom.store, lab)

        # Another visitor is served while the lab goes unseen.
        other.type("the charger never arrived .")
        served_s = other.wait_painted(60)
        assert_no_exception(other.page)
        assert "the+charger+never+arrived" in other.sidebar_text()

        done = ended(classroom, run["id"])
        stop_s = time.monotonic() - closed_at
        assert done is not None, f"the closed browser's run was still going {stop_s:.0f} s after the close"
        assert done["status"] == "stopped" and done["stop_reason"] == "nobody looking", done
        assert 3 <= done["step"] < done["steps"], done
        assert wait_until(lambda: not tids & set(classroom.threads(TRAIN_THREAD)), 30, every_s=0.1), (
            "the worker thread still trains the stopped run")
        # It kept what it learned: its model is the lab's, in the store.
        [kept] = models.listed(classroom.store, lab)
        assert kept.origin == "trained here" and done["model_id"] is not None
        time.sleep(1)
        after = classroom.memory_mb()
        workers_after = classroom.workers_memory_mb()
        idle_cpu = _cpu_rate(classroom, 2.0)

    assert not sampler.failures, sampler.failures[:5]
    assert not tracebacks_since(classroom, log_offset), tracebacks_since(classroom, log_offset)[:20]
    assert not classroom.threads(TRAIN_THREAD)
    record("fault_closed_tab", {
        "run": f"{BIG_PRESET} (570,057 numbers to learn)",
        "seconds_from_close_to_run_stopped": round(stop_s, 1),
        "seconds_from_lab_last_seen_to_run_stopped": round(done["ended_at"] - last_look, 1),
        "steps_when_stopped": done["step"],
        "seconds_open_and_preset": round(clicked - began, 1),
        "seconds_from_start_to_step_3_seen": round(training_seen - clicked, 1),
        "orphan_timeout_s_on_this_server": ORPHAN_TIMEOUT_S, "orphan_timeout_s_by_default": 600,
        "other_visitor_view_s_meanwhile": round(served_s, 2),
        "server_rss_mb_before_run": before["rss_mb"], "server_rss_mb_training": during["rss_mb"],
        "server_rss_mb_after_stopped": after["rss_mb"],
        "server_rss_mb_freed": round(during["rss_mb"] - after["rss_mb"], 1),
        "workers_rss_mb_before_run": workers_before, "workers_rss_mb_training": workers_during,
        "workers_rss_mb_after_stopped": workers_after,
        "workers_rss_mb_freed": round(workers_during - workers_after, 1),
        "server_cpu_cores_busy_after_stopped": round(idle_cpu, 2),
        **sampler.figures(),
    })


def _cpu_rate(server, seconds: float) -> float:
    began = server.cpu_seconds()
    time.sleep(seconds)
    return (server.cpu_seconds() - began) / seconds


def test_an_orphaned_run_stops_on_its_worker_and_the_worker_s_memory_returns(tmp_path):
    """In this process, on a cluster of one worker and a store of its own: a run whose lab nobody looks at (its
    last-seen time is never written after the lab opened: no labs.seen) is stopped on its worker after the orphan
    timeout, "nobody looking", keeping what it learned in the lab's models; the worker is free again, and its
    resident memory comes back to near where it was before the run (the model, its optimiser and its batches freed,
    and handed back to the OS)."""
    import psutil

    from seqviz import limits
    from seqviz.cluster import Cluster
    from seqviz.jobs import RunManager
    from seqviz.runs import RunSpec
    from seqviz.store import labs, models, runs
    from seqviz.store.engine import Database

    def rss_mb() -> float:
        (value,) = cluster.client().run(lambda: psutil.Process().memory_info().rss).values()
        return round(value / 2**20, 1)

    def state(lab: str, run_id: str):
        (found,) = runs.states(db, lab, run_id, snapshots=False)
        return found

    orphan_timeout_s = 5.0  # the run's: long enough to be seen training first, short enough for a test
    db = Database(f"sqlite:///{tmp_path}/s.db")
    cluster = Cluster(workers=1)
    # The warm-up's manager has the app's default timeout: its short run is never taken for orphaned.
    warm_manager = RunManager(db, cluster=cluster)
    manager = RunManager(db, cluster=cluster, orphan_timeout_s=orphan_timeout_s)
    try:
        warm_lab = labs.open_lab(db, None).id
        warm = warm_manager.submit(warm_lab, RunSpec(task="emails", family="transformer", embedding=16, hidden=16,
                                                     heads=2, layers=1, steps=3))
        warmed = wait_until(lambda: (lambda s: s if s.ended else None)(state(warm_lab, warm)), 120)
        assert warmed is not None and warmed.status == "finished", warmed  # torch and the data: loaded
        before = rss_mb()
        spec = RunSpec(task="emails", family="transformer", embedding=128, hidden=256, heads=4, layers=2,
                       steps=5000, batch_size=256)
        gone = labs.open_lab(db, None).id  # its page opened, submitted, and was closed: nobody looks again
        other = labs.open_lab(db, None).id
        run_id = manager.submit(gone, spec)
        training = wait_until(lambda: (lambda s: s if s.ended or s.step >= 3 else None)(state(gone, run_id)), 60,
                              every_s=0.05)
        assert training is not None and training.status == "running", f"the run never began training: {training}"
        # What the run took: the worker's largest resident memory seen while it trained (sampled until it ends).
        samples = [rss_mb()]
        done = wait_until(lambda: (lambda s: s if s.ended else samples.append(rss_mb()))(state(gone, run_id)), 60,
                          every_s=0.1)
        assert done is not None, "the orphaned run did not stop within a minute"
        during = max(samples)
        last_look = labs.last_seen(db, gone)
        assert done.status == "stopped" and done.stop_reason == "nobody looking" and 3 <= done.step < 5000, done
        assert done.ended_at - last_look >= orphan_timeout_s, "the run stopped before its lab counted as gone"
        # It kept what it learned: its model is the lab's.
        assert [model.fingerprint for model in models.listed(db, gone)] == [done.fingerprint]
        assert manager.runs_of(other) == [] and runs.counts(db) == {"queued": 0, "running": 0}
        assert wait_until(lambda: not any(cluster.client().processing().values()), 10), "the worker is still busy"
        after = rss_mb()
    finally:
        manager.close()
        warm_manager.close()
        cluster.close()
        db.dispose()
    record("fault_orphan_worker_memory", {
        "run": f"emails transformer, {spec.num_parameters():,} numbers to learn, batch 256",
        "orphan_timeout_s": orphan_timeout_s, "lab_seen_every_s_in_the_worker": limits.LAB_SEEN_EVERY_S,
        "seconds_from_lab_last_seen_to_run_stopped": round(done.ended_at - last_look, 1),
        "steps_when_stopped": done.step, "worker_rss_mb_before": before,
        "worker_rss_mb_training": during, "worker_rss_mb_after": after,
    })
    grown, freed = during - before, during - after
    assert freed >= grown / 2, f"the worker kept {after - before:.0f} of the {grown:.0f} MB the run took"
