"""Which running runs a web server hands to its cluster again (seqviz.jobs.RunManager._orphaned): one whose worker is
gone, never one alive on another server's cluster (it would train twice). A worker on this machine is asked
directly; one elsewhere counts as gone once its heartbeat has been silent for RUNNING_SILENT_S. The whole recovery
on real clusters: tests/unit/test_jobs_durability.py (a restarted server) and
tests/pages/test_train_server_status.py (a second server on one store)."""

import os
import subprocess
import sys

from seqviz.jobs import RUNNING_SILENT_S, RunManager


def test_a_local_workers_run_is_orphaned_exactly_when_its_process_is_gone():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # a pid that was a process and is not any more (reaped)
    for address in ("tcp://127.0.0.1:40001", "tls://[::1]:40001", "tcp://localhost:40001"):
        assert not RunManager._orphaned((address, os.getpid()), silent_s=10 * RUNNING_SILENT_S)  # alive
        assert RunManager._orphaned((address, child.pid), silent_s=0.0)  # gone: at once, whatever the heartbeat


def test_a_worker_elsewhere_is_gone_once_its_heartbeat_is_silent_long_enough():
    for address in ("tcp://10.0.0.7:40001", "tls://worker-3.cluster:40001", None):
        assert not RunManager._orphaned((address, os.getpid()), silent_s=RUNNING_SILENT_S - 1)
        assert RunManager._orphaned((address, 1), silent_s=RUNNING_SILENT_S)


def test_a_training_runs_heartbeat_writes_while_nothing_else_does(db, monkeypatch):
    import time

    from polling import wait_until
    from store_fixtures import spec

    from seqviz import worker
    from seqviz.store import labs, runs

    monkeypatch.setattr(worker, "HEARTBEAT_S", 0.05)
    lab = labs.open_lab(db, None).id
    run_id = runs.create(db, lab, spec())
    runs.begin(db, run_id, "tcp://10.0.0.7:1", 1, now=1000.0)  # (its last write, long ago)
    (_, _, before), = runs.unfinished(db)
    beat = worker._Heartbeat(db, run_id)
    beat.start()
    try:
        assert wait_until(lambda: runs.unfinished(db)[0][2] > before + 1, 30)
        assert runs.unfinished(db)[0][2] > time.time() - 30
    finally:
        beat.stop()
        beat.join(5)
    assert not beat.is_alive()
    runs.end(db, run_id, "stopped")
    assert runs.unfinished(db) == []
