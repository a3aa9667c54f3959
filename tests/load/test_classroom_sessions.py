"""A class on one link without browsers: thirty sessions at once, each starting a run and polling it, writing to the
lab store together; then thirty on the same preset and seed, following one run.

Thirty sessions (load_visitors.AppSession: Streamlit's websocket protocol, no browser; thirty Chromium tabs would be
this 2-core machine's whole load and open over minutes) each open /train at the same moment (a lab made: a
write), press Start training (the run recorded, the lab's row locked to count its runs: a write), and poll their
run as the page does (the lab's last-seen time: writes), while a worker writes the first run's progress; then each
stops or cancels its run (a write). Asserted: every run recorded, each in its own lab, none refused; no store error
and no exception in any session; "database is locked" never in the log nor in anything the server sent (section
"thirty_sessions"). Each of those sessions has a seed of its own (set through the address): thirty distinct runs.

Thirty sessions on the same preset and seed: identical runs are trained once, so the class follows one run, and each
lab has its own copy of its model when it ends; every page says it was trained once for the class (section
"class_follows_one_run").
"""

from __future__ import annotations

import threading
import time
from urllib.parse import urlencode

import pytest
from load_support import LOCKED, Sampler, quantile, record, tracebacks_since
from load_visitors import AppSession
from polling import wait_until

pytestmark = pytest.mark.browser


# --- Thirty sessions writing at once ----------------------------------------------------------------------------

SESSIONS = 30  # a class
# Each session trains a run of its own: /train's default preset with a seed of its own, set through the address
# (the form's widgets are bound to it). On the same settings they would follow one run (identical runs are trained
# once): test_a_class_on_one_preset_follows_one_run_and_each_gets_its_model.
FIRST_SEED = 100
HOLD_S = 20  # seconds each session polls its run, as an open /train tab does
SESSION_TIMEOUT_S = 120  # a script run not ended by then is a problem of that session
STORE_TROUBLE = (LOCKED.encode(), b"cannot be used now")  # SQLite's words; the store's StoreUnavailable's


def session_problems(sessions) -> list[str]:
    """What went wrong for the sessions: their own problems, exceptions, and the store's trouble said to them."""
    problems = [problem for session in sessions for problem in session.problems]
    problems += [f"{s.name}: an exception: {e}" for s in sessions for e in s.exceptions]
    return problems + [f"{s.name}: the server said {words.decode()!r}" for s in sessions for words in STORE_TROUBLE
                       if s.saw(words)]


def a_student(session: AppSession, barrier: threading.Barrier, made: dict) -> None:
    """One student: open /train with the class, press Start training, look at the run as the page does, stop it."""
    try:
        barrier.wait(timeout=SESSION_TIMEOUT_S)
        began = time.monotonic()
        if not session.run("train") or "Start training" not in session.buttons:
            session.problems.append(f"{session.name}: /train never drew Start training")
            return
        made["opened_s"] = time.monotonic() - began
        pressed = time.monotonic()
        if not session.run("train", press="Start training"):
            return
        made["start_s"] = time.monotonic() - pressed
        made["start_said"] = list(session.texts)
        session.run("train")  # the page run whole again (a sentence typed, say): the sidebar's status line polls
        polling = time.monotonic()
        made["polls"] = session.poll("train", HOLD_S)
        made["latest_rerun_s"] = session.latest_rerun(polling)
        made["pressed"] = []
        for _ in range(3):  # Cancel pressed as the run left the queue finds its button gone: press what is there now
            stop = next((label for label in ("Stop training", "Cancel") if label in session.buttons), None)
            if stop is None:  # its run has ended (or the first one ended by itself while it looked)
                break
            made["pressed"].append((stop, time.time()))
            session.run("train", press=stop)
            session.run("train")
    except Exception as error:  # say whose session failed, and how
        session.problems.append(f"{session.name}: {type(error).__name__}: {error}")


@pytest.mark.timeout(300)
def test_thirty_sessions_writing_at_once_never_find_the_store_locked(classroom):
    from sqlalchemy import select

    from seqviz.store import labs
    from seqviz.store.schema import LabKey

    log_offset = len(classroom.log_text())
    labs_before = classroom.lab_ids()
    assert not any(row["status"] in ("queued", "running") for row in classroom.runs()), "runs are still going"
    sessions = [AppSession(classroom.url, f"session {n}", timeout_s=SESSION_TIMEOUT_S,
                           query=f"tr_seed={FIRST_SEED + n}") for n in range(SESSIONS)]
    made: list[dict] = [{} for _ in sessions]
    barrier = threading.Barrier(SESSIONS)
    students = [threading.Thread(target=a_student, args=(session, barrier, mine), name=session.name, daemon=True)
                for session, mine in zip(sessions, made, strict=True)]
    began = time.monotonic()
    with Sampler(classroom) as sampler:
        for student in students:
            student.start()
        for student in students:
            student.join(SESSION_TIMEOUT_S * 2 + HOLD_S)
        class_s = time.monotonic() - began
        new_labs = classroom.lab_ids() - labs_before
        rows = [row for row in classroom.runs() if row["lab_id"] in new_labs]
        # Every run ends: the one training stops after its step, the queued ones were cancelled at once.
        ended = wait_until(lambda: all(row["status"] not in ("queued", "running") for row in classroom.runs()), 120)
    for session in sessions:
        session.close()

    problems = session_problems(sessions)
    problems += [f"{student.name} never finished" for student in students if student.is_alive()]
    by_lab: dict[str, list[dict]] = {}
    for row in rows:
        by_lab.setdefault(row["lab_id"], []).append(row)
    final = {row["id"]: row for row in classroom.runs()}
    statuses: dict[str, int] = {}
    for row in rows:
        key = f"{final[row['id']]['status']} ({final[row['id']]['stop_reason']})"
        statuses[key] = statuses.get(key, 0) + 1
    log = classroom.log_text()[log_offset:]
    lab_of_session = {}
    for session, mine in zip(sessions, made, strict=True):
        with classroom.store.transaction(reading=True) as store:
            for key in session.lab_keys():
                lab_of_session[store.scalar(select(LabKey.lab_id).where(LabKey.key_hash == labs.digest(key)))] = mine
    orphaned = [  # runs taken for orphaned: how late their session's polling came round, what it pressed when
        {"latest_rerun_s": round(mine.get("latest_rerun_s", -1), 1),
         "started_s_after_first_press": round(final[row["id"]]["started_at"] - mine["pressed"][0][1], 1)
         if mine.get("pressed") and final[row["id"]]["started_at"] else None,
         "pressed": [label for label, _ in mine.get("pressed", [])], "step": final[row["id"]]["step"]}
        for row in rows if final[row["id"]]["stop_reason"] == "nobody looking"
        for mine in [lab_of_session.get(row["lab_id"], {})]]
    record("thirty_sessions", {
        "sessions": SESSIONS, "new_labs": len(new_labs), "runs_recorded": len(rows),
        "open_train_p50_s": quantile([m["opened_s"] for m in made if "opened_s" in m], 0.5),
        "open_train_max_s": round(max((m["opened_s"] for m in made if "opened_s" in m), default=0), 2),
        "start_training_p50_s": quantile([m["start_s"] for m in made if "start_s" in m], 0.5),
        "start_training_max_s": round(max((m["start_s"] for m in made if "start_s" in m), default=0), 2),
        "poll_reruns": sum(m.get("polls", 0) for m in made), "seconds_polled_each": HOLD_S,
        "script_run_p95_s": quantile([t for s in sessions for t in s.took], 0.95),
        "latest_fragment_rerun_s": round(max((m.get("latest_rerun_s", 0) for m in made), default=0), 1),
        "runs_stopped_nobody_looking": orphaned,
        "runs_ended_as": statuses, "everything_s": round(class_s, 1),
        **sampler.figures(),
    })

    assert not problems, "\n".join(problems[:30])
    assert LOCKED not in log.lower(), [line for line in log.splitlines() if LOCKED in line.lower()][:10]
    assert not tracebacks_since(classroom, log_offset), tracebacks_since(classroom, log_offset)[:20]
    assert not sampler.failures, sampler.failures[:5]
    # Each session made a lab of its own (the key the server gave it names it), and recorded one run in it: none
    # refused, none lost, none doubled.
    said = [m.get("start_said") for m in made]
    # ... each on settings of its own: the seed its address gave it is the one Start training trains
    assert all(s.saw(f", seed {FIRST_SEED + n}.".encode()) for n, s in enumerate(sessions)), (
        f"sessions whose form did not take the seed from the address: "
        f"{[s.name for n, s in enumerate(sessions) if not s.saw(f', seed {FIRST_SEED + n}.'.encode())]}")
    keys = [session.lab_keys() for session in sessions]
    assert all(len(found) == 1 for found in keys), f"lab keys per session: {[len(found) for found in keys]}"
    with classroom.store.transaction(reading=True) as store:
        session_labs = [store.scalar(select(LabKey.lab_id).where(LabKey.key_hash == labs.digest(key)))
                        for (key,) in keys]
    assert None not in session_labs and len(set(session_labs)) == SESSIONS, session_labs
    assert [len(by_lab.get(lab, [])) for lab in session_labs] == [1] * SESSIONS, (
        f"runs per lab: {[len(by_lab.get(lab, [])) for lab in session_labs]}; what Start training said: {said}")
    assert ended, f"runs still going two minutes after the class stopped them: {statuses}"
    assert not any(status.startswith("failed") for status in statuses), statuses


# --- A class on one preset: one run, a model for everyone ---------------------------------------------------------

FOLLOW_QUERY = urlencode({"preset": "Quick: LSTM email classifier", "tr_seed": 21})  # a seed no other test trains
FOLLOW_TIMEOUT_S = 180  # the one run's whole life: queue, 300 steps, a model for every lab


def a_student_following(session: AppSession, barrier: threading.Barrier, done: threading.Event) -> None:
    """One student: open /train on the preset, press Start training, look at the run as the page does until it
    has ended, then the page once more."""
    try:
        barrier.wait(timeout=SESSION_TIMEOUT_S)
        if not session.run("train") or "Start training" not in session.buttons:
            session.problems.append(f"{session.name}: /train never drew Start training")
            return
        if not session.run("train", press="Start training"):
            return
        session.run("train")
        deadline = time.monotonic() + FOLLOW_TIMEOUT_S
        while not done.is_set() and time.monotonic() < deadline:
            session.poll("train", 1)
        session.run("train")
    except Exception as error:  # say whose session failed, and how
        session.problems.append(f"{session.name}: {type(error).__name__}: {error}")


@pytest.mark.timeout(300)
def test_a_class_on_one_preset_follows_one_run_and_each_gets_its_model(classroom):
    """Thirty sessions press Start training on the same preset and seed at once: identical runs are trained once
    (seqviz.jobs), so one run is recorded, every session's lab follows it, and when it ends each lab has a copy of
    its model; each page says the run was trained once for the class."""
    from sqlalchemy import select

    from seqviz.store import labs, models, runs
    from seqviz.store.schema import LabKey

    log_offset = len(classroom.log_text())
    labs_before = classroom.lab_ids()
    sessions = [AppSession(classroom.url, f"follower {n}", timeout_s=SESSION_TIMEOUT_S, query=FOLLOW_QUERY)
                for n in range(SESSIONS)]
    barrier, done = threading.Barrier(SESSIONS), threading.Event()
    students = [threading.Thread(target=a_student_following, args=(session, barrier, done), name=session.name,
                                 daemon=True) for session in sessions]
    try:
        for student in students:
            student.start()

        def the_run_ended() -> dict | None:
            rows = [row for row in classroom.runs() if row["lab_id"] in classroom.lab_ids() - labs_before]
            return rows[0] if len(rows) == 1 and rows[0]["status"] not in ("queued", "running") else None

        ended = wait_until(the_run_ended, FOLLOW_TIMEOUT_S, every_s=0.5)
        delivered = ended and wait_until(lambda: not runs.following(classroom.store, ended["id"], without_model=True),
                                         60, every_s=0.5)
    finally:
        done.set()
        for student in students:
            student.join(SESSION_TIMEOUT_S)
        for session in sessions:
            session.close()

    problems = session_problems(sessions)
    assert not problems, "\n".join(problems[:30])
    assert not tracebacks_since(classroom, log_offset), tracebacks_since(classroom, log_offset)[:20]
    new_labs = classroom.lab_ids() - labs_before
    rows = [row for row in classroom.runs() if row["lab_id"] in new_labs]
    assert len(rows) == 1, f"{len(rows)} runs recorded for {SESSIONS} sessions on the same settings: {rows}"
    assert ended and ended["status"] == "finished", f"the class's run did not finish: {rows}"
    # Each session's lab (the key the server gave it names it) follows the one run, and has its own copy of its model.
    keys = [session.lab_keys() for session in sessions]
    assert all(len(found) == 1 for found in keys), f"lab keys per session: {[len(found) for found in keys]}"
    with classroom.store.transaction(reading=True) as store:
        session_labs = [store.scalar(select(LabKey.lab_id).where(LabKey.key_hash == labs.digest(key)))
                        for (key,) in keys]
    assert None not in session_labs and len(set(session_labs)) == SESSIONS, session_labs
    assert sorted(runs.following(classroom.store, ended["id"])) == sorted(session_labs)
    assert delivered, f"labs still without the model: {runs.following(classroom.store, ended['id'], True)}"
    kept = {lab: [(m.name, m.origin, m.fingerprint) for m in models.listed(classroom.store, lab)]
            for lab in session_labs}
    assert all(len(found) == 1 and found[0][1] == "trained here" for found in kept.values()), kept
    assert len({found[0][2] for found in kept.values()}) == 1, "the labs' copies are not the same model"
    # ... and every page said so.
    told = f"Trained once for {SESSIONS} visitors".encode()
    assert all(session.saw(told) for session in sessions), (
        f"pages that never said {told.decode()!r}: {[s.name for s in sessions if not s.saw(told)]}")
    record("class_follows_one_run", {"sessions": SESSIONS, "runs_recorded": len(rows), "steps": ended["step"],
                                     "script_run_p95_s": quantile([t for s in sessions for t in s.took], 0.95)})
