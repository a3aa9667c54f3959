"""A lecture hall: hosting/compose.yaml run with podman-compose, as it is: HAProxy (hosting/haproxy.cfg) in front
of two app servers, one Dask scheduler and its workers, each in a container on the compose file's own network.

The images are built first: the project's by `scripts/check-container --build-only` (the stand-in base made from
Debian's archive and the build's pip settings: see that script), the balancer's from hosting/haproxy.Dockerfile
on the same stand-in base, tagged as the compose file names them. What Podman needs on this machine (runc,
explicit ulimits) goes in a containers.conf of the test's own (CONTAINERS_CONF); the balancer is published on a
free loopback port (SEQVIZ_HALL_PORT=127.0.0.1:PORT). Chromium reaches it as hall.test:PORT. HAProxy logs every
request with the server that answered it (`podman logs`).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time

import pytest
from browsing import (
    ROOT,
    assert_no_exception,
    browser_resolving,
    full_page_screenshot,
    go_to,
    new_visitor,
    set_number,
    type_sentence,
    upload_checkpoint,
    wait_for_app,
)
from playwright.sync_api import expect

from seqviz.browser import free_port, wait_healthy

HOST = "hall.test"
LOGS = ROOT / "test-output"
COMPOSE = ROOT / "hosting" / "compose.yaml"
PROJECT = "seqvizhall"
APP_IMAGE = "localhost/seqviz:lecture-hall"  # compose.yaml's seqviz:lecture-hall
BALANCER_IMAGE = "localhost/seqviz-balancer:lecture-hall"
COOKIE = "SEQVIZ_SERVER"
SERVERS = {"app1", "app2"}
CANNOT_RUN_CONTAINERS = 3  # scripts/check-container's exit status when no container can run here
FINISHED = re.compile(r"(Finished|Stopped)[^.]* after \d+ steps")
CONTAINERS_CONF = """[containers]
default_ulimits = ["nofile={files}:{files}", "nproc=4096:4096"]
[engine]
runtime = "runc"
"""


def _run(command: list[str], timeout: float, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=ROOT, **kwargs)


class Hall:
    def __init__(self, url: str, env: dict[str, str]):
        self.url = url
        self.env = env

    def container(self, service: str) -> str:
        return f"{PROJECT}_{service}_1"

    def log(self, service: str) -> str:
        done = _run(["podman", "logs", self.container(service)], 60, env=self.env)
        return done.stdout + done.stderr

    def answered_by(self, pattern: str) -> list[str]:
        """The server names that answered the balancer's logged requests matching ``pattern``."""
        found = []
        for line in self.log("balancer").splitlines():
            if re.search(pattern, line):
                server = re.search(r" seqviz_servers/(\S+) ", line)
                found.append(server.group(1) if server else "?")
        return found


@pytest.fixture(scope="module")
def hall(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.fail("the lecture-hall test needs root (rootful Podman, as scripts/check-container)")
    LOGS.mkdir(parents=True, exist_ok=True)
    ensure = _run([str(ROOT / "scripts" / "ensure-packages"), "podman-compose", "containernetworking-plugins",
                   "golang-github-containernetworking-plugin-dnsname", "iptables"], 600)
    if ensure.returncode != 0:
        pytest.fail(f"podman-compose and the container network plugins could not be installed: {ensure.stderr}")
    built = _run([str(ROOT / "scripts" / "check-container"), "--build-only"], 900)
    (LOGS / "lecture-hall-build.txt").write_text(built.stdout + built.stderr, encoding="utf-8")
    if built.returncode == CANNOT_RUN_CONTAINERS:
        pytest.skip(f"this machine cannot run containers: {built.stdout.strip().splitlines()[-1]}")
    assert built.returncode == 0, built.stdout[-4000:] + built.stderr[-2000:]
    figures = json.loads(next(line for line in built.stdout.splitlines() if line.startswith("figures: "))[9:])
    import resource

    files = min(resource.getrlimit(resource.RLIMIT_NOFILE)[1], 65536)
    conf = tmp_path_factory.mktemp("hall") / "containers.conf"
    conf.write_text(CONTAINERS_CONF.format(files=files), encoding="utf-8")
    port = free_port()
    env = {**os.environ, "CONTAINERS_CONF": str(conf), "SEQVIZ_HALL_PORT": f"127.0.0.1:{port}"}
    tagged = _run(["podman", "tag", figures["tag"], APP_IMAGE], 60, env=env)
    assert tagged.returncode == 0, tagged.stderr
    balancer = _run(["podman", "build", "--format", "docker", "--network", "host", "--build-arg",
                     f"BASE_IMAGE={figures['base_image']}", "--file", "hosting/haproxy.Dockerfile", "--tag",
                     BALANCER_IMAGE, "."], 600, env=env)
    assert balancer.returncode == 0, balancer.stdout[-3000:] + balancer.stderr[-2000:]
    compose = ["podman-compose", "--project-name", PROJECT, "--file", str(COMPOSE)]
    _run([*compose, "down"], 180, env=env)  # what a run stopped short may have left
    hall = Hall(f"http://{HOST}:{port}", env)
    try:
        up = _run([*compose, "up", "--detach"], 300, env=env)
        (LOGS / "lecture-hall-up.txt").write_text(up.stdout + up.stderr, encoding="utf-8")
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        healthy = wait_healthy(f"http://127.0.0.1:{port}", timeout_s=120, every_s=1)  # once a server answers
        assert healthy, f"the balancer never answered:\n{hall.log('balancer')[-3000:]}"
        yield hall
    finally:
        for service in ("balancer", "app1", "app2", "scheduler", "worker"):
            (LOGS / f"lecture-hall-{service}.log").write_text(hall.log(service), encoding="utf-8")
        _run([*compose, "down"], 180, env=env)
        _run(["podman", "network", "rm", "--force", f"{PROJECT}_default"], 60, env=env)


@pytest.fixture(scope="module")
def hall_browser(playwright):
    browser = browser_resolving(playwright, HOST)
    yield browser
    browser.close()


def _server_of(context) -> str | None:
    cookies = {c["name"]: c["value"] for c in context.cookies()}
    return cookies.get(COOKIE)


@pytest.mark.browser
@pytest.mark.timeout(1200)  # its fixture builds the images: a first run makes the base image (up to 5 min)
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
    first_context, first = new_visitor(hall_browser)
    second_context, second = new_visitor(hall_browser)
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
        set_number(first, "Hidden", 16)
        set_number(first, "Steps", 20)
        set_number(first, "Batch size", 16)
        first.get_by_test_id("stMain").get_by_role("button", name="Start training", exact=True).click()
        done = first.get_by_test_id("stMain").get_by_test_id("stAlert").filter(has_text=FINISHED)
        expect(done).to_be_visible(timeout=180_000)
        wait_for_app(first)
        expect(first.get_by_test_id("stSidebar")).to_contain_text("Your models (2)")
        assert _server_of(first_context) == mine
        # it trained on the shared cluster: the app servers are the scheduler's clients
        scheduler_log = hall.log("scheduler")
        assert re.findall(r"Receive client connection: Client-(?!worker)", scheduler_log), scheduler_log[-2000:]

        # The second visitor's server dies mid-session.
        sockets_before = len(second_sockets)
        killed = time.monotonic()
        dead = _run(["podman", "kill", hall.container(theirs)], 60, env=hall.env)
        assert dead.returncode == 0, dead.stderr
        # Their page reconnects, through the balancer, to the only server left: a fresh session that works.
        for _ in range(360):  # look for 90 s, on the page's own clock (its events arrive while it waits)
            if len(second_sockets) > sockets_before:
                break
            second.wait_for_timeout(250)
        else:
            pytest.fail("the page never opened a new websocket")
        reconnected_s = second_sockets[-1] - killed
        wait_for_app(second)
        type_sentence(second, "my parcel never came")
        expect(second.get_by_role("textbox", name="Sentence", exact=True)).to_have_value("my parcel never came")
        assert_no_exception(second)
        expect(second.get_by_test_id("stSidebar")).to_contain_text("Your models (0)")
        # and it says so: the balancer's cookie still names the server that died
        expect(second.get_by_test_id("stSidebar")).to_contain_text(
            f"The server you were on ({theirs}) stopped, and you were moved to another one")
        full_page_screenshot(second, "lecture-hall-after-its-server-died")
        # The first visitor goes on, their models with them.
        type_sentence(first, "where is my order")
        assert_no_exception(first)
        expect(first.get_by_test_id("stSidebar")).not_to_contain_text("The server you were on")
        expect(first.get_by_test_id("stSidebar")).to_contain_text("Your models (2)")
        (LOGS / "lecture-hall-figures.txt").write_text(f"reconnected after {reconnected_s:.1f} s\n")
    finally:
        first_context.close()
        second_context.close()
