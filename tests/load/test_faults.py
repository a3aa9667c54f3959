"""Faults a classroom brings: a tab closed while its run trains, a websocket dropped while a page computes, a
visitor who clicks every button twice. The server keeps serving the others, the orphaned run stops and its model
is freed, nothing raises, no run is started twice.

The test server reaps a closed tab's runs after 4 s of silence (SEQVIZ_TRAIN_ORPHAN_TIMEOUT_S, conftest) instead
of the app's minute; the rule is the same: silent, and Streamlit no longer has the tab connected. Whether the run
stopped is read from outside, in /proc: seqviz.worker names the worker thread that trains a run `seqviz-run`
while the run lasts. Memory is measured twice: the web server's and its workers' resident memory before, during
and after (recorded, never asserted: the allocator keeps some), and, in this process on a cluster of its own, the
worker's memory, most of which must come back once the run is reaped.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import pytest
from browsing import assert_no_exception, full_page_screenshot, go_to, upload_checkpoint, wait_for_app
from conftest import TRAIN_THREAD, Sampler, record, tracebacks_since
from playwright.sync_api import expect
from polling import wait_until

from seqviz.checkpoints import fingerprint

try:
    from checkpoint_files import tiny_checkpoint
except ImportError:  # tests/ is on sys.path through tests/conftest.py; this is the fallback
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from checkpoint_files import tiny_checkpoint

from test_classroom_load import choose, set_number

STEP_TEXT = re.compile(r"Step (\d+) of (\d+)")
BIG_PRESET = "Bottleneck: plain encoder-decoder, hidden 128"  # 570,057 numbers to learn, the largest preset
QUICK_PRESET = "Quick: LSTM email classifier"


def step_shown(page) -> int | None:
    try:
        found = STEP_TEXT.search(page.get_by_test_id("stMain").inner_text(timeout=5_000))
    except Exception:  # redrawn while read
        return None
    return int(found.group(1)) if found else None


# --- (a) a browser closed in the middle of a training run --------------------------------------------------


@pytest.mark.browser
@pytest.mark.timeout(240)
def test_a_tab_closed_while_training_loses_its_run_and_others_are_served(classroom, visitors):
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
    assert not classroom.threads(TRAIN_THREAD), "a run is training before this test starts one"
    before = classroom.memory_mb()
    workers_before = classroom.workers_memory_mb()

    with Sampler(classroom) as sampler:
        closer.page.get_by_test_id("stMain").get_by_role("button", name="Start training", exact=True).click()
        clicked = time.monotonic()
        assert wait_until(lambda: (step_shown(closer.page) or 0) >= 3, 90), "the run did not start training"
        training_seen = time.monotonic()
        (tid,) = classroom.threads(TRAIN_THREAD)
        during = classroom.memory_mb()
        workers_during = classroom.workers_memory_mb()
        closer.close()  # the tab goes, its websocket with it; nobody will ever poll this run again
        closed_at = time.monotonic()

        # Another visitor is served while the orphan is being found.
        other.type("the charger never arrived .")
        served_s = other.wait_painted(60)
        assert_no_exception(other.page)
        assert "the+charger+never+arrived" in other.sidebar_text()

        stopped = wait_until(lambda: tid not in classroom.threads(TRAIN_THREAD), 60, every_s=0.1)
        stop_s = time.monotonic() - closed_at
        assert stopped, f"the closed tab's run was still training {stop_s:.0f} s after the tab closed"
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
        "seconds_open_and_preset": round(clicked - began, 1),
        "seconds_from_start_to_step_3_seen": round(training_seen - clicked, 1),
        "orphan_timeout_s_on_this_server": 4, "orphan_timeout_s_by_default": 60,
        "other_visitor_view_s_meanwhile": round(served_s, 2),
        "server_rss_mb_before_run": before["rss_mb"], "server_rss_mb_training": during["rss_mb"],
        "server_rss_mb_after_reaped": after["rss_mb"],
        "server_rss_mb_freed": round(during["rss_mb"] - after["rss_mb"], 1),
        "workers_rss_mb_before_run": workers_before, "workers_rss_mb_training": workers_during,
        "workers_rss_mb_after_reaped": workers_after,
        "server_cpu_cores_busy_after_reaped": round(idle_cpu, 2),
        **sampler.figures(),
    })


def _cpu_rate(server, seconds: float) -> float:
    began = server.cpu_seconds()
    time.sleep(seconds)
    return (server.cpu_seconds() - began) / seconds


def test_an_orphaned_run_stops_on_its_worker_and_the_worker_s_memory_returns():
    """In this process, on a cluster of one worker: a run whose owner has gone is stopped on its worker, the
    worker is free again, and its resident memory comes back to near where it was before the run (the model,
    its optimiser and its batches freed, and handed back to the OS)."""
    import psutil

    from seqviz.cluster import Cluster
    from seqviz.jobs import RunManager
    from seqviz.runs import RunSpec

    def rss_mb() -> float:
        (value,) = cluster.client().run(lambda: psutil.Process().memory_info().rss).values()
        return round(value / 2**20, 1)

    connected = {"warm-up": True, "closed-tab": True}
    cluster = Cluster(workers=1)
    manager = RunManager(max_running=1, orphan_timeout_s=0.3, reaper_interval_s=0.05, cluster=cluster,
                         still_there=lambda owner: connected[owner])
    try:
        warm = manager.submit("warm-up", RunSpec(task="emails", family="transformer", embedding=16, hidden=16,
                                                 heads=2, layers=1, steps=3))
        assert warm.wait(120) and warm.state().status == "finished", warm.state().error  # torch, the data: loaded
        before = rss_mb()
        spec = RunSpec(task="emails", family="transformer", embedding=128, hidden=256, heads=4, layers=2,
                       steps=5000, batch_size=256)
        run = manager.submit("closed-tab", spec)
        assert wait_until(lambda: run.state().step >= 3, 60, every_s=0.05), "the run never began training"
        during = rss_mb()
        time.sleep(0.5)  # silent for longer than the timeout, but still connected: it trains on
        assert run.status == "running"
        connected["closed-tab"] = False  # the tab closes
        closed = time.monotonic()
        assert run.wait(60), "the orphaned run did not stop within a minute"
        stop_s = time.monotonic() - closed
        state = run.state()
        assert state.status == "stopped" and state.stop_reason == "session gone" and state.step < 5000
        assert manager.runs_of("other") == [] and manager.load()["running"] == 0
        assert wait_until(lambda: not any(cluster.client().processing().values()), 10), "the worker is still busy"
        after = rss_mb()
    finally:
        manager.close()
        cluster.close()
    record("fault_orphan_worker_memory", {
        "run": f"emails transformer, {spec.num_parameters():,} numbers to learn, batch 256",
        "seconds_from_tab_gone_to_run_stopped": round(stop_s, 1), "worker_rss_mb_before": before,
        "worker_rss_mb_training": during, "worker_rss_mb_after": after,
    })
    grown, freed = during - before, during - after
    assert freed >= grown / 2, f"the worker kept {after - before:.0f} of the {grown:.0f} MB the run took"


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
        # One tab is closed while its script runs; another loses its network (offline) in the middle of a run.
        closer, offline = heavy
        closer.type("the parcel that i ordered last week never arrived and the charger is broken .")
        assert wait_until(lambda: closer.look()["state"] == "running", 15, every_s=0.02), "the rerun never started"
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


def runs_on_page(page) -> list[str]:
    return [h.strip() for h in page.get_by_test_id("stMain").locator("h4").all_inner_texts()]


def twice(locator) -> None:
    """Two clicks as fast as a hand can: a double click."""
    locator.dblclick()


@pytest.mark.browser
@pytest.mark.timeout(240)
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
    assert_no_exception(page)

    # A second run of the same session is refused (one run per session, seqviz.limits.TRAIN_MAX_ACTIVE_PER_OWNER).
    set_number(page, "Steps", 2000)
    main.get_by_role("button", name="Start training", exact=True).click()
    expect(main.get_by_text("You already have a run queued or training")).to_be_visible(timeout=30_000)
    # Another visitor's run waits behind it (the test server has one training worker); Cancel twice.
    other = visitors("queued visitor")
    other.open(f"{classroom.url}/train")
    other.wait_painted()
    choose(other.page, "Preset", QUICK_PRESET)
    wait_for_app(other.page)
    other_main = other.page.get_by_test_id("stMain")
    other_main.get_by_role("button", name="Start training", exact=True).click()
    expect(other_main.get_by_text("place 1 in the queue")).to_be_visible(timeout=30_000)
    twice(other_main.get_by_role("button", name="Cancel", exact=True))
    expect(other_main.get_by_text("Cancelled before it started.")).to_be_visible(timeout=30_000)
    assert_no_exception(other.page)
    assert_no_exception(page)

    # Stop twice: the first run stops, is kept, and joins Your models.
    twice(main.get_by_role("button", name="Stop training", exact=True))
    expect(main.get_by_test_id("stAlert").filter(has_text=re.compile(r"Stopped when you asked after \d+ steps"))
           ).to_be_visible(timeout=60_000)
    expect(sidebar.get_by_test_id("stExpander").filter(has_text="Your models (1)")).to_have_count(1, timeout=30_000)
    wait_for_app(page)
    assert runs_on_page(page) == ["lstm emails, hidden 32, 3000 steps"]
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
