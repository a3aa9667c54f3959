"""A lecture hall: two app servers behind HAProxy (hosting/haproxy.cfg as it is), one shared Dask cluster.

Everything runs on loopback in a network and mount namespace of its own (`unshare --net --mount`), laid out as
hosting/compose.yaml lays out its containers: /etc/hosts there names app1 (127.0.0.2), app2 (127.0.0.3) and
the scheduler (127.0.0.4), so the balancer's file is used unchanged (port 80, servers app1:8501 and app2:8501).
Each app server is `scripts/serve` with SEQVIZ_DASK_SCHEDULER pointing at a `dask scheduler` with one `dask
worker` (--preload seqviz.worker), as in the compose file. Chromium reaches the balancer as hall.test:PORT through
a forwarder into the namespace (hosting/netns.py). HAProxy logs every request with the server that answered it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import (
    CHROMIUM,
    CHROMIUM_FLAGS,
    ROOT,
    assert_no_exception,
    full_page_screenshot,
    go_to,
    type_sentence,
    upload_checkpoint,
    wait_for_app,
)
from playwright.sync_api import expect

HOST = "hall.test"
LOGS = ROOT / "test-output"
HAPROXY_CFG = ROOT / "hosting" / "haproxy.cfg"
COOKIE = "SEQVIZ_SERVER"
SERVERS = {"app1": "127.0.0.2", "app2": "127.0.0.3"}
SCHEDULER = "127.0.0.4"
HOLD_S = 900  # the namespace's holder exits by itself after this long, whatever happens to the test
FINISHED = re.compile(r"(Finished|Stopped)[^.]* after \d+ steps")

_spec = importlib.util.spec_from_file_location("seqviz_netns", ROOT / "hosting" / "netns.py")
netns = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(netns)


def _in_namespace(pid: int, command: list[str]) -> list[str]:
    return ["nsenter", "--target", str(pid), "--net", "--mount", *command]


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_for(holder: int, url: str, seconds: int = 90) -> bool:
    """Whether ``url`` (in the namespace) answers within ``seconds``."""
    code = ("import sys, time, urllib.request\n"
            f"deadline = time.monotonic() + {seconds}\n"
            "while time.monotonic() < deadline:\n"
            "    try:\n"
            f"        urllib.request.urlopen({url!r}, timeout=2); sys.exit(0)\n"
            "    except OSError:\n"
            "        time.sleep(0.5)\n"
            "sys.exit(1)")
    return subprocess.run(_in_namespace(holder, [sys.executable, "-c", code]), timeout=seconds + 30).returncode == 0


class Hall:
    def __init__(self, holder: subprocess.Popen, port: int, log: Path):
        self.holder = holder
        self.url = f"http://{HOST}:{port}"
        self.log = log
        self.servers: dict[str, subprocess.Popen] = {}

    def answered_by(self, pattern: str) -> list[str]:
        """The server names that answered the logged requests matching ``pattern``."""
        found = []
        for line in self.log.read_text().splitlines():
            if re.search(pattern, line):
                server = re.search(r" seqviz_servers/(\S+) ", line)
                found.append(server.group(1) if server else "?")
        return found


@pytest.fixture(scope="module")
def hall(tmp_path_factory):
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("nsenter"):
        pytest.fail("the lecture-hall test needs root, unshare and nsenter: it runs HAProxy on port 80 and two app "
                    "servers in a network namespace of their own")
    ensure = subprocess.run([str(ROOT / "scripts" / "ensure-packages"), "haproxy"], capture_output=True, text=True,
                            timeout=600)
    if ensure.returncode != 0:
        pytest.fail(f"Debian's haproxy is missing and could not be installed: {ensure.stderr}")
    LOGS.mkdir(parents=True, exist_ok=True)
    scratch = tmp_path_factory.mktemp("hall")
    hosts = scratch / "hosts"
    hosts.write_text("127.0.0.1 localhost\n" + "".join(f"{ip} {name}\n" for name, ip in SERVERS.items())
                     + f"{SCHEDULER} scheduler\n")
    holder = subprocess.Popen(["unshare", "--net", "--mount", "sh", "-c",
                               f"ip link set lo up && mount --bind {hosts} /etc/hosts && exec sleep {HOLD_S}"])
    processes: list[subprocess.Popen] = []
    forwarder = None

    def start(name: str, command: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
        with open(LOGS / f"hall-{name}.log", "w") as log:
            process = subprocess.Popen(_in_namespace(holder.pid, command), cwd=ROOT, stdout=log,
                                       stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1",
                                                                      **(env or {})})
        processes.append(process)
        return process

    try:
        time.sleep(0.5)
        assert holder.poll() is None, "could not make the namespace"
        dask = str(Path(sys.executable).parent / "dask")
        # both import seqviz: the scheduler unpickles each run's task too (as in hosting/compose.yaml)
        start("scheduler", [dask, "scheduler", "--host", SCHEDULER, "--port", "8786", "--no-dashboard"],
              {"PYTHONPATH": str(ROOT)})
        start("worker", [dask, "worker", "tcp://scheduler:8786", "--nthreads", "1", "--nworkers", "1",
                         "--preload", "seqviz.worker", "--no-dashboard"], {"PYTHONPATH": str(ROOT)})
        servers = {}
        for name, address in SERVERS.items():
            servers[name] = start(name, [str(ROOT / "scripts" / "serve"), "--server.address", address],
                                  {"PORT": "8501", "SEQVIZ_BASE_PATH": "",
                                   "SEQVIZ_DASK_SCHEDULER": "tcp://scheduler:8786"})
        for name in SERVERS:
            assert _wait_for(holder.pid, f"http://{name}:8501/_stcore/health"), f"{name} never answered; see logs"
        checked = subprocess.run(_in_namespace(holder.pid, ["haproxy", "-c", "-f", str(HAPROXY_CFG)]),
                                 capture_output=True, text=True, timeout=30)
        assert checked.returncode == 0, f"haproxy -c refused hosting/haproxy.cfg:\n{checked.stdout}{checked.stderr}"
        start("haproxy", ["haproxy", "-W", "-db", "-f", str(HAPROXY_CFG)])
        assert _wait_for(holder.pid, "http://127.0.0.1:80/_stcore/health", 30), "HAProxy never answered"
        forwarder = netns.Forwarder(holder.pid, 80)
        hall = Hall(holder, forwarder.port, LOGS / "hall-haproxy.log")
        hall.servers = servers
        yield hall
    finally:
        if forwarder:
            forwarder.close()
        for process in reversed(processes):
            _stop(process)
        _stop(holder)


@pytest.fixture(scope="module")
def hall_browser(playwright):
    browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                         args=[*CHROMIUM_FLAGS, f"--host-resolver-rules=MAP {HOST} 127.0.0.1"])
    yield browser
    browser.close()


def _visitor(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(60_000)
    return context, page


def _server_of(context) -> str | None:
    cookies = {c["name"]: c["value"] for c in context.cookies()}
    return cookies.get(COOKIE)


def _set_number(page, label: str, value: int) -> None:
    box = page.get_by_test_id("stMain").get_by_role("spinbutton", name=label, exact=True)
    box.fill(str(value))
    box.press("Enter")
    wait_for_app(page)
    expect(box).to_have_value(str(value))


@pytest.mark.browser
@pytest.mark.timeout(200)
def test_smoke_passes_through_the_balancer(hall):
    done = subprocess.run([str(ROOT / "scripts" / "smoke"), hall.url, "--resolve", f"{HOST}:127.0.0.1",
                           "--timeout", "40", "--pages", "/,attention,train"],
                          cwd=ROOT, capture_output=True, text=True, timeout=180)
    (LOGS / "smoke-lecture-hall.txt").write_text(done.stdout + done.stderr, encoding="utf-8")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3/3 pages OK" in done.stdout


@pytest.mark.browser
@pytest.mark.timeout(420)
def test_two_visitors_on_two_servers_and_one_server_lost(hall, hall_browser, tmp_path):
    from checkpoint_files import tiny_checkpoint

    # Two visitors: the balancer puts them on different servers and pins each with its cookie.
    first_context, first = _visitor(hall_browser)
    second_context, second = _visitor(hall_browser)
    second_sockets = []
    second.on("websocket", lambda ws: second_sockets.append(time.monotonic()) if "_stcore/stream" in ws.url else None)
    try:
        for page in (first, second):
            page.goto(f"{hall.url}/attention?s=where+is+my+parcel")
            wait_for_app(page)
            assert_no_exception(page)
        mine, theirs = _server_of(first_context), _server_of(second_context)
        assert {mine, theirs} == set(SERVERS), (mine, theirs)
        for page in (first, second):
            type_sentence(page, "the charger never arrived")
            assert_no_exception(page)

        # The first visitor uploads a model and trains one: both land on their own server.
        path = tmp_path / "tiny-lstm.safetensors"
        path.write_bytes(tiny_checkpoint("lstm-classifier"))
        upload_checkpoint(first, path, 0)
        assert hall.answered_by(r'"PUT /_stcore/upload_file/') == [mine]
        go_to(first, "Train your own", "train")
        expect(first.get_by_test_id("stSidebar")).to_contain_text("Your models (1)")
        _set_number(first, "Hidden", 16)
        _set_number(first, "Steps", 20)
        _set_number(first, "Batch size", 16)
        first.get_by_test_id("stMain").get_by_role("button", name="Start training", exact=True).click()
        done = first.get_by_test_id("stMain").get_by_test_id("stAlert").filter(has_text=FINISHED)
        expect(done).to_be_visible(timeout=180_000)
        wait_for_app(first)
        expect(first.get_by_test_id("stSidebar")).to_contain_text("Your models (2)")
        assert _server_of(first_context) == mine
        # it trained on the shared cluster: the app servers are the scheduler's clients
        scheduler_log = (LOGS / "hall-scheduler.log").read_text()
        assert re.findall(r"Receive client connection: Client-(?!worker)", scheduler_log), scheduler_log[-2000:]

        # The second visitor's server dies mid-session.
        sockets_before = len(second_sockets)
        killed = time.monotonic()
        hall.servers[theirs].send_signal(signal.SIGKILL)
        hall.servers[theirs].wait(timeout=30)
        # Their page reconnects, through the balancer, to the only server left: a fresh session that works.
        while len(second_sockets) == sockets_before:
            assert time.monotonic() < killed + 90, "the page never opened a new websocket"
            second.wait_for_timeout(250)
        reconnected_s = second_sockets[-1] - killed
        wait_for_app(second)
        type_sentence(second, "my parcel never came")
        expect(second.get_by_role("textbox", name="Sentence", exact=True)).to_have_value("my parcel never came")
        assert_no_exception(second)
        expect(second.get_by_test_id("stSidebar")).to_contain_text("Your models (0)")
        full_page_screenshot(second, "lecture-hall-after-its-server-died")
        # The first visitor goes on, their models with them.
        type_sentence(first, "where is my order")
        assert_no_exception(first)
        expect(first.get_by_test_id("stSidebar")).to_contain_text("Your models (2)")
        (LOGS / "lecture-hall-figures.txt").write_text(f"reconnected after {reconnected_s:.1f} s\n")
    finally:
        first_context.close()
        second_context.close()
