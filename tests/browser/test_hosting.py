"""Hosting: the container's start command and the smoke check, run here without a container.

`scripts/serve` (the Dockerfile's CMD) is started on a free port under the base path /seqviz, from a copy of
the files the image would hold (the repository less what .dockerignore leaves out), and the smoke check
(`scripts/smoke`, `python -m seqviz.smoke`) is run against it and against the ordinary test server. The image
itself is built and run by tests/hosting/test_container.py (scripts/check-container).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from browsing import ROOT, assert_no_exception, full_page_screenshot, wait_for_app
from playwright.sync_api import expect

from seqviz.browser import free_port, new_context, new_page, stop, wait_healthy

BASE_PATH = "seqviz"
SMOKE_TIMEOUT_S = 170  # the whole smoke run, every page; a page is given 60 s inside it
LOGS = ROOT / "test-output"


# --- The build context, as `docker build` would see it ---------------------------------------------


def _dockerignore_patterns() -> list[str]:
    lines = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    return [line.strip().lstrip("/") for line in lines if line.strip() and not line.lstrip().startswith("#")]


def _pattern_regex(pattern: str) -> re.Pattern:
    """Docker's pattern syntax as far as .dockerignore uses it: *, ?, ** and literal names."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out)


def _ignored(relative: str, patterns: list[re.Pattern]) -> bool:
    """A path is out of the context when a pattern matches it or one of the folders above it."""
    parts = relative.split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    return any(p.fullmatch(prefix) for p in patterns for prefix in prefixes)


def copy_build_context(destination: Path) -> list[str]:
    """Copy what `COPY . .` would copy into the image; returns the relative paths copied."""
    raw = _dockerignore_patterns()
    assert not any(p.startswith("!") for p in raw), "this copy does not handle ! exceptions in .dockerignore"
    patterns = [_pattern_regex(p.rstrip("/")) for p in raw]
    copied = []
    for folder, dirs, files in os.walk(ROOT):
        here = Path(folder).relative_to(ROOT).as_posix()
        prefix = "" if here == "." else here + "/"
        dirs[:] = [d for d in dirs if not _ignored(prefix + d, patterns)]
        for name in files:
            relative = prefix + name
            if not _ignored(relative, patterns):
                (destination / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / relative, destination / relative)
                copied.append(relative)
    return copied


# --- Servers ---------------------------------------------------------------------------------------


def _venv_path() -> str:
    """PATH with this interpreter's folder first: the copied context has no .venv, as in the image, where
    `python3` is the image's own; here it is the virtual environment's."""
    return f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"


# The image's files (``image_files``) and `scripts/serve` started from them under /seqviz (``hosted``) are
# tests/browser/conftest.py's, started once for this module and test_lab's cookie under a base path.


def _run_smoke(command: list[str], log_name: str) -> subprocess.CompletedProcess:
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=SMOKE_TIMEOUT_S,
                          env={**os.environ, "PATH": _venv_path()})
    (LOGS / log_name).write_text(done.stdout + done.stderr, encoding="utf-8")
    return done


def _page_lines(stdout: str) -> dict[str, str]:
    """'/attention' -> its line, from the smoke check's output."""
    return {line.split()[0]: line for line in stdout.splitlines() if line.startswith("/")}


# --- (a) the start command and the smoke check under a base path ------------------------------------


@pytest.mark.browser
@pytest.mark.timeout(240)
def test_smoke_passes_under_a_base_path(hosted):
    """Three pages, to keep the suite's time: every page runs under /seqviz through nginx (test_nginx.py) and in
    the image itself (tests/hosting/test_container.py)."""
    pages = ["/", "attention", "train"]
    done = _run_smoke([str(ROOT / "scripts" / "smoke"), hosted, "--timeout", "60", "--pages", ",".join(pages)],
                      "smoke-base-path.txt")
    lines = _page_lines(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(lines) == ["/", "/attention", "/train"]
    assert all(line.split()[1] == "OK" for line in lines.values()), done.stdout


@pytest.mark.browser
@pytest.mark.timeout(60)
def test_dockerfile_healthcheck_command_answers(hosted):
    """The HEALTHCHECK's own command, run here with the container's environment, passes; on a wrong port it fails."""
    text = re.sub(r"\\\n\s*", " ", (ROOT / "Dockerfile").read_text(encoding="utf-8"))
    command = json.loads(re.search(r"^HEALTHCHECK .*?CMD (\[.*\])\s*$", text, re.M).group(1))
    command[0] = sys.executable if command[0] in ("python", "python3") else command[0]
    port = hosted.split(":")[2].split("/")[0]
    good = subprocess.run(command, env={**os.environ, "PORT": port, "SEQVIZ_BASE_PATH": BASE_PATH},
                          capture_output=True, text=True, timeout=30)
    assert good.returncode == 0, good.stderr
    bad = subprocess.run(command, env={**os.environ, "PORT": port, "SEQVIZ_BASE_PATH": ""},
                         capture_output=True, timeout=30)
    assert bad.returncode != 0  # no app at /_stcore/health when it is served under /seqviz


# --- (b) a visitor's view under the base path ---------------------------------------------------------


@pytest.mark.browser
@pytest.mark.timeout(120)
def test_deep_link_download_and_share_box_under_a_base_path(hosted, page):
    page.goto(f"{hosted}/attention?s=where+is+my+parcel")
    wait_for_app(page)
    assert_no_exception(page)
    # the box takes the address's value as the app starts: wait for it rather than read it at once
    expect(page.get_by_role("textbox", name="Sentence", exact=True)).to_have_value("where is my parcel",
                                                                                   timeout=30_000)

    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_text("Share this view: copy the address", exact=True).wait_for()
    share = sidebar.locator("code").filter(has_text="://").first
    share.wait_for()
    address = "".join(share.inner_text().split())
    assert address.startswith(f"{hosted}/"), address
    assert address.startswith(f"{hosted}/attention?") and "s=where+is+my+parcel" in address, address

    with page.expect_download() as download:
        page.get_by_role("button", name="CSV", exact=True).first.click()
    assert download.value.suggested_filename.endswith(".csv")
    rows = Path(download.value.path()).read_text(encoding="utf-8").strip().splitlines()
    assert len(rows) >= 2 and "," in rows[0], rows[:3]

    shot = full_page_screenshot(page, "hosting-attention-under-base-path")
    assert shot.stat().st_size > 10_000


# --- (c) the smoke check against the ordinary test server (no base path) -------------------------------


@pytest.mark.browser
@pytest.mark.timeout(150)
def test_smoke_passes_at_the_root(app_url):
    """Three pages only, to keep this file near two minutes: test (a) runs every page, and the walkthrough
    visits every page of this same server; here the smoke check's URL has no path prefix."""
    pages = ["/", "rnn-memory", "attention"]
    done = _run_smoke([sys.executable, "-m", "seqviz.smoke", app_url, "--timeout", "60", "--pages", ",".join(pages)],
                      "smoke-root.txt")
    lines = _page_lines(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(lines) == ["/", "/attention", "/rnn-memory"]
    assert all(line.split()[1] == "OK" for line in lines.values()), done.stdout


# --- The smoke check fails when it should ------------------------------------------------------------

BROKEN_APP = '''
import streamlit as st

def home():
    st.write("home")

def broken():
    raise RuntimeError("a page that breaks")

def error_box():
    st.error("These trained models are not shipped in assets/models/: lstm.")

def wrong_share():
    st.sidebar.caption("Share this view: copy the address")
    st.sidebar.code("http://localhost:8501/somewhere-else", language=None)

nav = st.navigation([st.Page(home, title="Home", default=True),
                     st.Page(broken, title="Broken", url_path="broken"),
                     st.Page(error_box, title="Error box", url_path="error-box"),
                     st.Page(wrong_share, title="Wrong share", url_path="wrong-share")])
st.sidebar.text_input("Sentence", value="hello", key="s", bind="query-params")
nav.run()
'''


@pytest.mark.browser
@pytest.mark.timeout(120)
def test_smoke_reports_each_kind_of_failure(tmp_path):
    (tmp_path / "app.py").write_text(BROKEN_APP, encoding="utf-8")
    (tmp_path / ".streamlit").mkdir()
    shutil.copy(ROOT / ".streamlit" / "config.toml", tmp_path / ".streamlit" / "config.toml")  # errors redacted
    port = free_port()
    log_path = LOGS / "smoke-broken-app.log"
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port), "--server.headless",
             "true", "--server.address", "127.0.0.1", "--server.baseUrlPath", "broken-app"],
            cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}/broken-app"
            assert wait_healthy(url, server, 90), f"{url}/_stcore/health never answered; see {log_path}"
            done = _run_smoke([sys.executable, "-m", "seqviz.smoke", url, "--timeout", "30",
                               "--pages", "/,broken,error-box,wrong-share,no-such-page"], "smoke-broken-app.txt")
        finally:
            stop(server)
    lines = _page_lines(done.stdout)
    assert done.returncode == 1, done.stdout + done.stderr
    assert lines["/"].split()[1] == "OK"
    assert "FAIL" in lines["/broken"] and "exception shown" in lines["/broken"]
    assert "FAIL" in lines["/error-box"] and "error shown after the deep link: These trained" in lines["/error-box"]
    assert "FAIL" in lines["/wrong-share"] and "share box" in lines["/wrong-share"]
    assert "FAIL" in lines["/no-such-page"] and "Page not found" in lines["/no-such-page"]
    assert "1/5 pages OK" in done.stdout


def test_smoke_says_when_nothing_answers():
    done = subprocess.run([sys.executable, "-m", "seqviz.smoke", f"http://127.0.0.1:{free_port()}/seqviz"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "_stcore/health did not answer" in done.stderr


# --- No outbound call: the start command in a network namespace with only loopback ----------------------

# Loaded by every Python of the server (PYTHONPATH): logs each name lookup, connection and bound address the
# process asks for, with its address, through Python's audit hooks (sys.addaudithook).
NET_AUDIT = '''
import os, sys

_log = os.environ.get("SEQVIZ_NET_LOG")
_EVENTS = {"socket.bind": 1, "socket.connect": 1, "socket.sendto": 1, "socket.getaddrinfo": 0,
           "socket.gethostbyname": 0, "socket.gethostbyname_ex": 0, "socket.gethostbyaddr": 0}

def _audit(event, args):
    if _log and event in _EVENTS:
        address = args[_EVENTS[event]]
        host = address[0] if isinstance(address, tuple) else address
        with open(_log, "a", encoding="utf-8") as out:
            out.write(f"{event} {host!r}\\n")

sys.addaudithook(_audit)
'''
LOOPBACK = {"127.0.0.1", "::1", "localhost", "0.0.0.0", "::", None, b"127.0.0.1", b"localhost"}


def _outbound(log: Path) -> list[str]:
    """The logged lookups and connections whose address is neither loopback nor a local (unix) socket."""
    import ast

    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    out = []
    for line in lines:
        _, _, raw = line.partition(" ")
        host = ast.literal_eval(raw)
        unix_socket = isinstance(host, str | bytes) and (host[:1] in ("/", b"/") or host[:1] in ("\0", b"\0"))
        if host not in LOOPBACK and not unix_socket:
            out.append(line)
    return out


def _in_namespace(pid: int, command: list[str]) -> list[str]:
    return ["nsenter", "--target", str(pid), "--net", *command]


def _netns():
    """hosting/netns.py, loaded by path (hosting/ is not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("seqviz_netns", ROOT / "hosting" / "netns.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.browser
@pytest.mark.timeout(200)
def test_start_makes_no_outbound_call(image_files, tmp_path):
    """`scripts/serve` (0.0.0.0, headless: the container's start) in a network namespace that has only
    loopback, every lookup and connection of its Python logged: it serves, two pages pass the smoke check from
    inside that namespace, and not one lookup or connection went anywhere but loopback. (Without
    browser.serverAddress in .streamlit/config.toml, Streamlit asks checkip.amazonaws.com at every start.)"""
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("nsenter"):
        pytest.fail("this test needs root, unshare and nsenter (util-linux) for a network namespace")
    (tmp_path / "sitecustomize.py").write_text(NET_AUDIT, encoding="utf-8")
    net_log = tmp_path / "net.log"
    port = free_port()
    LOGS.mkdir(parents=True, exist_ok=True)
    log_path = LOGS / "hosting-offline-streamlit.log"
    env = {**os.environ, "PORT": str(port), "SEQVIZ_BASE_PATH": "", "PATH": _venv_path(), "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": str(tmp_path), "SEQVIZ_NET_LOG": str(net_log)}
    url = f"http://127.0.0.1:{port}"
    wait = ("import sys, time, urllib.request\nfor _ in range(180):\n    try:\n"
            f"        urllib.request.urlopen('{url}/_stcore/health', timeout=2); sys.exit(0)\n"
            "    except OSError:\n        time.sleep(0.5)\nsys.exit(1)")
    with open(log_path, "w") as log:
        server = subprocess.Popen(["unshare", "--net", "sh", "-c", "ip link set lo up && exec scripts/serve"],
                                  cwd=image_files, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            _netns().wait_until_apart(server.pid)
            healthy = subprocess.run(_in_namespace(server.pid, [sys.executable, "-c", wait]), timeout=100,
                                     env={**os.environ, "PYTHONPATH": ""})
            assert healthy.returncode == 0 and server.poll() is None, f"never healthy; see {log_path}"
            outside = subprocess.run([sys.executable, "-c", f"import urllib.request; urllib.request.urlopen("
                                      f"'{url}/_stcore/health', timeout=2)"], capture_output=True, timeout=30)
            assert outside.returncode != 0, "the server is reachable from outside its namespace: not isolated"
            smoke = _run_smoke(_in_namespace(server.pid, [str(ROOT / "scripts" / "smoke"), url, "--timeout", "60",
                                                          "--pages", "/,attention"]), "smoke-offline.txt")
        finally:
            stop(server)
    assert smoke.returncode == 0, smoke.stdout + smoke.stderr
    assert "2/2 pages OK" in smoke.stdout
    logged = net_log.read_text(encoding="utf-8") if net_log.exists() else ""
    assert "socket.bind '0.0.0.0'" in logged, f"the audit hook did not see the server bind its port: {logged!r}"
    assert _outbound(net_log) == [], f"outbound lookups or connections at start and while serving: {_outbound(net_log)}"


@pytest.mark.browser
def test_a_visitor_moved_from_a_stopped_server_is_told(app_server, browser):
    """An app server named app2 (SEQVIZ_SERVER_NAME, as in hosting/compose.yaml: the shared test server is named so,
    tests/browser/conftest.py) gets a visitor the balancer moved
    from app1 (its SEQVIZ_MOVED_FROM cookie, hosting/haproxy.cfg). With the lab store the servers share, their lab
    came with them: a toast says they moved, nothing says anything was lost. A lab key this server's store does not
    know (a server on a store of its own) gets the sidebar's warning, which names the setting to fix. A visitor the
    cookie names this server for is told nothing. (tests/browser/test_lecture_hall.py kills a real server behind
    HAProxy, on a shared PostgreSQL.)"""
    from seqviz.share import MOVED_COOKIE, SERVER_NAME_VARIABLE
    from seqviz.ui.lab import COOKIE

    environ = Path(f"/proc/{app_server.pid}/environ").read_bytes().split(b"\0")
    assert f"{SERVER_NAME_VARIABLE}=app2".encode() in environ, "the shared test server is not named app2"
    url = app_server.url
    for moved_from, lab_key, toast, warned in (("app1", None, "Your lab came with you", False),
                                               ("app1", "A" * 22, "you are on another one now", True),
                                               ("app2", None, None, False)):
        context = new_context(browser)
        try:
            cookies = [{"name": MOVED_COOKIE, "value": moved_from, "url": url}]
            if lab_key:
                cookies.append({"name": COOKIE, "value": lab_key, "url": url})
            context.add_cookies(cookies)
            page = new_page(context)
            page.goto(f"{url}/order")
            if toast:  # looked for as soon as it shows (a toast goes after 10 s)
                expect(page.get_by_test_id("stToast").get_by_text(toast)).to_have_count(1, timeout=60_000)
            wait_for_app(page)
            if not toast:
                expect(page.get_by_test_id("stToast")).to_have_count(0)
            notice = page.get_by_test_id("stSidebar").get_by_text("The server you were on (app1) stopped")
            expect(notice).to_have_count(1 if warned else 0)
            assert_no_exception(page)
        finally:
            context.close()
