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
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import pytest
from browsing import assert_no_exception, full_page_screenshot, go_to, upload_checkpoint, wait_for_app
from conftest import LAB_SEEN_EVERY_S, ORPHAN_TIMEOUT_S, TRAIN_THREAD, Sampler, record, tracebacks_since
from playwright.sync_api import expect
from polling import wait_until

from seqviz.checkpoints import fingerprint
from seqviz.progress import ACTIVE

try:
    from checkpoint_files import tiny_checkpoint
except ImportError:  # tests/ is on sys.path through tests/conftest.py; this is the fallback
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from checkpoint_files import tiny_checkpoint

from test_classroom_load import choose, set_number

STEP_TEXT = re.compile(r"Step (\d+) of (\d+)")
BIG_PRESET = "Bottleneck: plain encoder-decoder, hidden 128"  # 570,057 numbers to learn, the largest preset
QUICK_PRESET = "Quick: LSTM email classifier"
GONE_AFTER_S = ORPHAN_TIMEOUT_S + LAB_SEEN_EVERY_S  # a lab unseen this long is taken for gone (seqviz.worker)


def step_shown(page) -> int | None:
    try:
        found = STEP_TEXT.search(page.get_by_test_id("stMain").inner_text(timeout=5_000))
    except Exception:  # redrawn while read
        return None
    return int(found.group(1)) if found else None


def runs_on_page(page) -> list[str]:
    return [h.strip() for h in page.get_by_test_id("stMain").locator("h3").all_inner_texts()]


def start_training(visitor) -> None:
    """Press Start training, then make the visitor's next move: a sentence typed in the sidebar, a full run of the
    page. From that run on, the sidebar's status line polls the run every POLL_S (2 s) and notes the lab seen.
    Without it, a /train tab whose run began in its last run notes its lab seen only with Your models' watch, every
    10 s, past this server's orphan timeout, so the run stops while its visitor watches it: that is an app bug,
    test_a_visitor_watching_their_run_on_train_keeps_it (a strict xfail)."""
    visitor.page.get_by_test_id("stMain").get_by_role("button", name="Start training", exact=True).click()
    wait_for_app(visitor.page)
    visitor.type("where is my parcel ?")
    visitor.wait_painted(60)


def only_run(server, lab: str) -> dict:
    found = server.runs(lab)
    assert len(found) == 1, f"the lab has {len(found)} runs, not one: {found}"
    return found[0]


def ended(server, run_id: str, timeout_s: float = 60) -> dict | None:
    """The run's row once it has ended (None if it had not within ``timeout_s``)."""
    return wait_until(lambda: (lambda row: row if row and row["status"] not in ACTIVE else None)(server.run(run_id)),
                      timeout_s, every_s=0.1)


def no_run_going(server, timeout_s: float = 60) -> bool:
    """Whether, within ``timeout_s``, no run of the store is queued or training and no worker thread trains."""
    return bool(wait_until(lambda: not any(r["status"] in ACTIVE for r in server.runs())
                           and not server.threads(TRAIN_THREAD), timeout_s))


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


# --- (a') a tab reloaded while its run waits, and while it trains ---------------------------------------------


@pytest.mark.browser
@pytest.mark.timeout(300)
def test_a_tab_reloaded_mid_queue_or_mid_run_keeps_its_run_its_place_and_its_progress(classroom, visitors):
    """The issue's "Reload mid-queue or mid-run: the run keeps its place and its progress": one browser's run
    trains while another's waits behind it (one training worker); the waiting tab is reloaded (same browser: its
    lab) and shows its run still first in the queue; the training tab is reloaded and shows its run going on from
    where it was, not stopped, not begun again, past the orphan timeout. Then the first is stopped and the waiting
    run trains to its end.

    A second tab of the training browser looks while the first reloads: on a busy 2-core machine a reload took 7 to
    10 s to paint, and until the new session first runs nobody notes the lab seen, so past this server's GONE_AFTER_S
    (5 s; ten minutes in the app) the worker rightly stopped the run "nobody looking" and the reloaded tab showed it
    stopped: the flaky "does not show the run past step N". Once the reloaded tab shows the run, the second tab
    closes: the reloaded tab alone then keeps the run going."""
    from seqviz.store import labs

    log_offset = len(classroom.log_text())
    trainer, waiter = visitors("reloads mid-run"), visitors("reloads mid-queue")
    for visitor in (trainer, waiter):
        visitor.open(f"{classroom.url}/train")
        visitor.wait_painted()
        choose(visitor.page, "Preset", QUICK_PRESET)
    set_number(trainer.page, "Batch size", 256)  # minutes of steps: it is still training when stopped
    set_number(trainer.page, "Steps", 5000)
    assert no_run_going(classroom), "a run is queued or training before this test starts one"

    with Sampler(classroom) as sampler:
        start_training(trainer)
        assert wait_until(lambda: (step_shown(trainer.page) or 0) >= 3, 90), "the run did not start training"
        trainer_lab, waiter_lab = classroom.lab_of(trainer), classroom.lab_of(waiter)
        assert trainer_lab and waiter_lab and trainer_lab != waiter_lab
        training = only_run(classroom, trainer_lab)
        start_training(waiter)
        waiter_main = waiter.page.get_by_test_id("stMain")
        expect(waiter_main.get_by_text("place 1 in the queue")).to_be_visible(timeout=30_000)
        queued = only_run(classroom, waiter_lab)
        assert queued["status"] == "queued" and training["status"] == "running"

        # Mid-queue: the reloaded tab (a new session of the same browser) finds its run, still first in line.
        waiter.reload()
        waiter_reload_s = waiter.wait_painted(60)
        expect(waiter_main.get_by_text("place 1 in the queue")).to_be_visible(timeout=30_000)
        assert runs_on_page(waiter.page) == [queued["name"]]
        again = only_run(classroom, waiter_lab)
        assert classroom.lab_of(waiter) == waiter_lab and again["id"] == queued["id"] and again["status"] == "queued"

        # Mid-run: the reloaded tab shows the same run going on from where it was.
        other_tab = trainer.context.new_page()  # the same browser: its lab
        other_tab.goto(f"{classroom.url}/train", wait_until="commit")
        assert wait_until(lambda: (step_shown(other_tab) or 0) > 0, 60), "the second tab does not show the run"
        step_before = classroom.run(training["id"])["step"]
        trainer.reload()
        trainer_reload_s = trainer.wait_painted(60)
        assert wait_until(lambda: (step_shown(trainer.page) or 0) > step_before, 60), (
            f"the reloaded tab does not show the run past step {step_before}: {classroom.run(training['id'])}")
        other_tab.close()
        closed_at = time.time()  # the store's clock
        # When the reloaded tab alone noted the lab seen (its polling), by the store's clock.
        seen_again = wait_until(lambda: (lambda t: t if t > closed_at else None)(
            labs.last_seen(classroom.store, trainer_lab)), 30, every_s=0.05)
        assert classroom.lab_of(trainer) == trainer_lab and runs_on_page(trainer.page) == [training["name"]]
        # ... and it trains on, past the time after which a lab nobody looks at is taken for gone.
        watched: list[dict] = []
        deadline = time.monotonic() + 2 * GONE_AFTER_S
        while time.monotonic() < deadline:
            watched.append(classroom.run(training["id"]))
            assert watched[-1]["status"] == "running", f"the reloaded tab's run stopped: {watched[-1]}"
            time.sleep(0.5)
        assert watched[-1]["step"] > watched[0]["step"] > step_before and watched[-1]["attempts"] == 1, watched[-1]
        assert classroom.run(queued["id"])["status"] == "queued"
        assert_no_exception(trainer.page)
        assert_no_exception(waiter.page)

        # The first is stopped; the waiting run then trains to its end (its tab still open and looking).
        trainer.page.get_by_test_id("stMain").get_by_role("button", name="Stop training", exact=True).click()
        expect(trainer.page.get_by_test_id("stAlert").filter(
            has_text=re.compile(r"Stopped when you asked after \d+ steps"))).to_be_visible(timeout=60_000)
        expect(waiter_main.get_by_test_id("stAlert").filter(has_text="Finished after 300 steps")).to_be_visible(
            timeout=120_000)
        assert ended(classroom, queued["id"])["status"] == "finished"
        assert classroom.run(training["id"])["stop_reason"] == "asked"
        assert_no_exception(waiter.page)

    assert not sampler.failures, sampler.failures[:5]
    assert not tracebacks_since(classroom, log_offset), tracebacks_since(classroom, log_offset)[:20]
    record("fault_reload_mid_run", {
        "training_tab_reload_to_painted_s": round(trainer_reload_s, 2),
        "queued_tab_reload_to_painted_s": round(waiter_reload_s, 2),
        "lab_seen_by_the_reloaded_tab_alone_after_s": round(seen_again - closed_at, 2) if seen_again else None,
        "step_at_reload": step_before, "step_after_watching": watched[-1]["step"],
        "watched_after_reload_s": round(2 * GONE_AFTER_S, 1),
        **sampler.figures(),
    })


@pytest.mark.browser
@pytest.mark.timeout(180)
def test_a_visitor_watching_their_run_on_train_keeps_it(classroom, visitors):
    """A visitor presses Start training and watches the run on /train, doing nothing else: their lab is looking,
    so the run trains on past the orphan timeout. (Only the watch's assertion is the bug's: anything else failing
    fails the test, through pytest.fail.)

    The bug: app_pages/train.py's run panel polls the run every POLL_S without seqviz.ui.lab.seen(), and the
    sidebar's status line (training.sidebar_status, which calls it every POLL_S) is not started by the run in which
    Start training was pressed: app.py calls it before the page submits the run, when the lab has none going. Until
    the tab's next full run, only Your models' watch notes the lab seen, every WATCH_EVERY_S = 10 s, so with an
    orphan timeout under about 10 s (this server's 4 s; SEQVIZ_TRAIN_ORPHAN_TIMEOUT_S takes 1 to 3600) the run is
    stopped "nobody looking" while its visitor watches it. Harmless at the default 600 s."""
    visitor = visitors("watcher")
    visitor.open(f"{classroom.url}/train")
    visitor.wait_painted()
    choose(visitor.page, "Preset", QUICK_PRESET)
    set_number(visitor.page, "Batch size", 256)  # minutes of steps
    set_number(visitor.page, "Steps", 5000)
    if not no_run_going(classroom):
        pytest.fail("a run is queued or training before this test starts one")
    visitor.page.get_by_test_id("stMain").get_by_role("button", name="Start training", exact=True).click()
    wait_for_app(visitor.page)
    lab = classroom.lab_of(visitor)
    runs = classroom.runs(lab) if lab else []
    if len(runs) != 1:
        pytest.fail(f"Start training made {len(runs)} runs in the visitor's lab")
    run_id = runs[0]["id"]
    if not wait_until(lambda: classroom.run(run_id)["status"] != "queued", 90):
        pytest.fail("the run never left the queue")
    watched = []
    try:
        deadline = time.monotonic() + 3 * GONE_AFTER_S
        while time.monotonic() < deadline:
            watched.append(classroom.run(run_id))
            if watched[-1]["status"] not in ACTIVE and watched[-1]["stop_reason"] != "nobody looking":
                pytest.fail(f"the run ended otherwise: {watched[-1]}")
            time.sleep(0.5)
    finally:
        visitor.close()  # nobody of the lab looks now: a run still going stops within seconds
        if ended(classroom, run_id) is None:
            pytest.fail("the run went on after its browser closed")
    stopped = [row for row in watched if row["status"] not in ACTIVE]
    assert not stopped, (f"the run of a visitor watching it on /train stopped 'nobody looking' at step "
                         f"{stopped[0]['step']}, {stopped[0]['ended_at'] - stopped[0]['started_at']:.1f} s after it "
                         f"began; the visitor had pressed Start training and kept the tab open")


@pytest.mark.browser
@pytest.mark.timeout(300)
def test_a_killed_worker_s_run_goes_on_and_the_new_worker_runs_no_app(classroom, visitors):
    """docs/training.md's fault "a worker killed in the middle of a run" (as the out-of-memory killer would): its nanny
    starts a new worker and the run goes on there, from its saved point. Starting that worker runs no app in it: no
    lab appears that no browser holds, and no error lands in the server's log.

    (It did until app.py ran the router only as ``__main__``: multiprocessing's spawn imports the parent's
    ``__main__`` in the child, the app script under ``streamlit run``, so every worker ran the home page as it
    started, opening a lab nobody held, and with runs in the store a RunManager whose tender tried every 15 s to
    start a cluster inside the worker: "daemonic processes are not allowed to have children" in the server's log.
    This test was its strict xfail.)"""
    import signal

    visitor = visitors("run on a killed worker")
    visitor.open(f"{classroom.url}/train")
    visitor.wait_painted()
    choose(visitor.page, "Preset", QUICK_PRESET)
    set_number(visitor.page, "Batch size", 256)  # minutes of steps
    set_number(visitor.page, "Steps", 5000)
    assert no_run_going(classroom), "a run is queued or training before this test starts one"
    start_training(visitor)
    lab = classroom.lab_of(visitor)
    assert wait_until(lambda: (step_shown(visitor.page) or 0) >= 3, 90), (
        f"the run did not start training: {classroom.runs(lab)}")
    (run,) = classroom.runs(lab)
    labs_before, log_offset = classroom.lab_ids(), len(classroom.log_text())
    killed = classroom.training_workers()
    assert len(killed) == 1, f"the server has {len(killed)} training worker processes, not one"
    os.kill(killed[0], signal.SIGKILL)
    goes_on = wait_until(lambda: (lambda row: row if row["attempts"] >= 2 and row["status"] == "running" and
                                  row["step"] > 0 else None)(classroom.run(run["id"])), 180)
    assert goes_on, f"the run did not go on on the new worker: {classroom.run(run['id'])}"
    new_workers = classroom.training_workers()
    assert new_workers not in ([], killed)
    # What a stray run manager in the new worker did every 15 s, it would have done 20 s after the worker started
    # (the time it took to take the run up again counts).
    import psutil

    started = min(psutil.Process(pid).create_time() for pid in new_workers)  # (the epoch's clock)
    time.sleep(max(0.0, started + 20 - time.time()))
    visitor.close()  # nobody of the lab looks now: the run stops within seconds (if it has not ended already)
    assert ended(classroom, run["id"]) is not None, (
        f"the run went on after its browser closed: {classroom.run(run['id'])}")
    strays = classroom.lab_ids() - labs_before
    errors = tracebacks_since(classroom, log_offset)
    bare = classroom.log_text()[log_offset:].count("missing ScriptRunContext")
    assert not strays and not errors and not bare, (
        f"the new worker's start made {len(strays)} labs nobody holds, {len(errors)} error lines in the server's "
        f"log and {bare} 'missing ScriptRunContext' warnings (Streamlit code run outside a session): {errors[:6]}")
    record("fault_killed_worker", {"steps_before_the_kill": run["step"], "attempts": goes_on["attempts"],
                                   "step_seen_on_the_new_worker": goes_on["step"]})


# --- (b) a websocket dropped while a page computes ----------------------------------------------------------


@pytest.mark.browser
@pytest.mark.timeout(180)
def test_a_websocket_dropped_while_a_page_computes(classroom, visitors):
    log_offset = len(classroom.log_text())
    steady = visitors("steady")
    steady.open(f"{classroom.url}/?s=where+is+my+parcel+?")
    steady.wait_painted()
    heavy = [visitors(f"dropper {n}") for n in range(2)]
    for visitor, path in zip(heavy, ("transformer", "attention"), strict=True):
        visitor.open(f"{classroom.url}/{path}")
        visitor.wait_painted()

    with Sampler(classroom) as sampler:
        # One browser is closed while its script runs; another loses its network (offline) in the middle of a run.
        closer, offline = heavy
        closer.type("the parcel that i ordered last week never arrived and the charger is broken .")
        running = wait_until(lambda: closer.look()["state"] == "running", 15, every_s=0.02)
        if not running and not closer.look()["ran"]:  # the Enter reached no rerun (a busy machine): type it again
            closer.type_again()
            running = wait_until(lambda: closer.look()["state"] == "running", 15, every_s=0.02)
        assert running, f"the rerun never started: {closer.diagnosis()}"
        closer.close()
        offline.type("my red phone never arrived and nobody answers my emails .")
        wait_until(lambda: offline.look()["state"] == "running", 15, every_s=0.02)
        offline.context.set_offline(True)
        time.sleep(3)
        offline.context.set_offline(False)

        # The others are served.
        steady.type("the charger never arrived .")
        steady_s = steady.wait_painted(60)
        assert_no_exception(steady.page)
        assert "the+charger+never+arrived" in steady.sidebar_text()
        # The tab that was offline comes back and works.
        reconnected = wait_until(lambda: offline.look()["state"] == "notRunning", 60)
        assert reconnected, "the tab that went offline did not come back"
        offline.type("where is the parcel ?")
        offline_s = offline.wait_painted(60)
        assert_no_exception(offline.page)
        assert "where+is+the+parcel" in offline.sidebar_text()

    assert not sampler.failures, sampler.failures[:5]
    assert not tracebacks_since(classroom, log_offset), tracebacks_since(classroom, log_offset)[:20]
    record("fault_dropped_websocket", {"steady_visitor_view_s": round(steady_s, 2),
                                       "offline_visitor_view_after_reconnect_s": round(offline_s, 2),
                                       **sampler.figures()})


# --- (c) every button twice ---------------------------------------------------------------------------------


def twice(locator) -> None:
    """Two clicks as fast as a hand can: a double click."""
    locator.dblclick()


@pytest.mark.browser
@pytest.mark.timeout(300)
def test_every_button_clicked_twice(classroom, visitors, tmp_path):
    log_offset = len(classroom.log_text())
    visitor = visitors("double-clicker")
    page = visitor.page
    main, sidebar = page.get_by_test_id("stMain"), page.get_by_test_id("stSidebar")
    visitor.open(f"{classroom.url}/train")
    visitor.wait_painted()
    choose(page, "Preset", QUICK_PRESET)
    set_number(page, "Steps", 3000)
    wait_for_app(page)
    assert no_run_going(classroom), "a run is queued or training before this test starts one"

    # Start training, twice: one run. Then once more a second later, as someone does when a busy server seems
    # not to have heard: still one run, and a note says why.
    start = main.get_by_role("button", name="Start training", exact=True)
    twice(start)
    page.wait_for_timeout(1_000)
    start.click()
    expect(main.get_by_test_id("stProgress").filter(has_text=STEP_TEXT)).to_have_count(1, timeout=60_000)
    expect(main.get_by_text("These settings are already training")).to_be_visible(timeout=30_000)
    page.wait_for_timeout(1_500)  # every click has reached the server
    wait_for_app(page)
    assert runs_on_page(page) == ["lstm emails, hidden 32, 3000 steps"], runs_on_page(page)
    lab = classroom.lab_of(visitor)
    assert [row["name"] for row in classroom.runs(lab)] == ["lstm emails, hidden 32, 3000 steps"]
    assert_no_exception(page)

    # A second run of the same lab is refused (one run per lab: seqviz.limits.TRAIN_MAX_ACTIVE_PER_OWNER counts a
    # lab's queued and training runs), from this tab and from a second tab of the same browser alike.
    set_number(page, "Steps", 2000)
    main.get_by_role("button", name="Start training", exact=True).click()
    expect(main.get_by_text("You already have a run queued or training")).to_be_visible(timeout=30_000)
    second_tab = visitor.context.new_page()
    second_tab.goto(f"{classroom.url}/train")
    wait_for_app(second_tab)
    choose(second_tab, "Preset", QUICK_PRESET)
    set_number(second_tab, "Seed", 7)
    second_tab.get_by_test_id("stMain").get_by_role("button", name="Start training", exact=True).click()
    expect(second_tab.get_by_test_id("stMain").get_by_text("You already have a run queued or training")
           ).to_be_visible(timeout=30_000)
    assert runs_on_page(second_tab) == ["lstm emails, hidden 32, 3000 steps"]  # the lab's run, in every tab
    assert_no_exception(second_tab)
    second_tab.close()
    assert len(classroom.runs(lab)) == 1
    # Another visitor's run waits behind it (the test server has one training worker); Cancel twice.
    other = visitors("queued visitor")
    other.open(f"{classroom.url}/train")
    other.wait_painted()
    choose(other.page, "Preset", QUICK_PRESET)
    # A seed of its own: the preset's own run may have finished on this server (test_a_tab_reloaded_...), and an
    # identical run is never trained twice (seqviz.jobs): it would take that run's model at once, never waiting.
    set_number(other.page, "Seed", 11)
    wait_for_app(other.page)
    other_main = other.page.get_by_test_id("stMain")
    other_main.get_by_role("button", name="Start training", exact=True).click()
    expect(other_main.get_by_text("place 1 in the queue")).to_be_visible(timeout=30_000)
    twice(other_main.get_by_role("button", name="Cancel", exact=True))
    expect(other_main.get_by_text("Cancelled before it started.")).to_be_visible(timeout=30_000)
    assert [row["status"] for row in classroom.runs(classroom.lab_of(other))] == ["cancelled"]
    assert_no_exception(other.page)
    assert_no_exception(page)

    # Stop twice: the first run stops, is kept, and joins Your models.
    twice(main.get_by_role("button", name="Stop training", exact=True))
    expect(main.get_by_test_id("stAlert").filter(has_text=re.compile(r"Stopped when you asked after \d+ steps"))
           ).to_be_visible(timeout=60_000)
    expect(sidebar.get_by_test_id("stExpander").filter(has_text="Your models (1)")).to_have_count(1, timeout=30_000)
    wait_for_app(page)
    assert runs_on_page(page) == ["lstm emails, hidden 32, 3000 steps"]
    assert [(row["status"], row["stop_reason"]) for row in classroom.runs(lab)] == [("stopped", "asked")]
    assert_no_exception(page)

    # Download checkpoint twice: two identical files.
    files = []
    page.on("download", lambda d: files.append(d))  # (handed over while the test calls Playwright: no sleep)
    with page.expect_download():
        twice(main.get_by_role("button", name="Download checkpoint", exact=True))
    page.wait_for_timeout(1_500)  # the second one, if the browser asks for it
    contents = {Path(d.path()).read_bytes() for d in files}
    assert len(contents) == 1 and len(next(iter(contents))) > 1_000
    assert_no_exception(page)
    full_page_screenshot(page, "faults-train-every-button-twice")

    # Upload, then Remove twice: the upload goes, the trained model stays.
    path = tmp_path / "tiny-dot.safetensors"
    path.write_bytes(tiny_checkpoint("dot-translator"))
    upload_checkpoint(page, path, models_before=1)
    data = path.read_bytes()
    remove = sidebar.locator(f".st-key-rm-{fingerprint(data)[:12]}").get_by_role("button", name="Remove")
    twice(remove)
    expect(sidebar.get_by_test_id("stExpander").filter(has_text="Your models (1)")).to_have_count(1, timeout=30_000)
    wait_for_app(page)
    expect(sidebar.get_by_test_id("stExpander").filter(has_text="Your models (1)")).to_contain_text(
        "lstm emails, hidden 32, 3000 steps")
    assert "tiny-dot" not in sidebar.get_by_test_id("stExpander").filter(has_text="Your models (1)").inner_text()
    assert_no_exception(page)

    # A page link twice, then the Measure-again style buttons of a page: still one session, no exception.
    twice(page.get_by_test_id("stSidebarNav").get_by_text("Attention", exact=True))
    page.wait_for_url("**/attention**")
    wait_for_app(page)
    assert_no_exception(page)
    expect(sidebar.get_by_test_id("stExpander").filter(has_text="Your models (1)")).to_have_count(1)
    go_to(page, "Train your own", "train")
    assert runs_on_page(page) == ["lstm emails, hidden 32, 3000 steps"]
    assert not classroom.threads(TRAIN_THREAD)
    assert not tracebacks_since(classroom, log_offset), tracebacks_since(classroom, log_offset)[:20]
