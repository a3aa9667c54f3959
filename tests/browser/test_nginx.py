"""The proxy recipe, tested: hosting/nginx.conf as it is, Debian's nginx in front of `scripts/serve`.

nginx and the app run in a network and mount namespace of their own (`unshare --net --mount`, loopback only),
so the file's own ports (nginx on 80, the app on 127.0.0.1:8501) are free whatever else this machine runs, and
its cache folder (/var/lib/nginx/seqviz-static) is a scratch tmpfs there. A forwarder (hosting/netns.py) brings
nginx's port 80 to a free loopback port here, and Chromium reaches it as http://seqviz.test:PORT/seqviz/, a host
name with a port (mapped to 127.0.0.1 by --host-resolver-rules): the address a visitor sees is never the one
nginx listens on, which is what `proxy_set_header Host $host` broke.

nginx's access log records, for every request, whether it reached the app ($upstream_addr) and whether the
cache answered it ($upstream_cache_status): that is how the test counts the requests that reach the app.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from browsing import (
    ROOT,
    assert_no_exception,
    new_visitor,
    type_sentence,
    upload_checkpoint,
    wait_for_app,
)
from playwright.sync_api import expect

from seqviz.browser import stop

HOST = "seqviz.test"
LOGS = ROOT / "test-output"
FIGURES = LOGS / "hosting-figures.json"
NGINX_CONF = ROOT / "hosting" / "nginx.conf"
APP_PORT = 8501  # where hosting/nginx.conf expects the app
NGINX_PORT = 80  # where it listens

_spec = importlib.util.spec_from_file_location("seqviz_netns", ROOT / "hosting" / "netns.py")
netns = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(netns)

# The http block around the file, as Debian's /etc/nginx/nginx.conf has one (conf.d/*.conf is included in it),
# with its own pid, logs and a log line that says where each request went.
WRAPPER = """
user www-data;
worker_processes 1;
pid {scratch}/nginx.pid;
error_log {scratch}/error.log notice;
events {{ worker_connections 1024; }}
http {{
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    sendfile on;
    gzip on;
    log_format seqviz '$request_method $uri $status upstream=$upstream_addr cache=$upstream_cache_status '
                      'bytes=$body_bytes_sent request_bytes=$request_length';
    access_log {scratch}/access.log seqviz;
    include {conf};
}}
"""


def _record(section: str, figures: dict) -> None:
    """Figures for docs/hosting.md, never asserted."""
    FIGURES.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(FIGURES.read_text()) if FIGURES.exists() else {}
    data[section] = {**figures, "date": time.strftime("%Y-%m-%d")}
    FIGURES.write_text(json.dumps(data, indent=2))


def _in_namespace(pid: int, command: list[str]) -> list[str]:
    return ["nsenter", "--target", str(pid), "--net", "--mount", *command]


class Proxy:
    def __init__(self, scratch: Path, port: int):
        self.scratch = scratch
        self.url = f"http://{HOST}:{port}/seqviz"
        self.access_log = scratch / "access.log"

    def log_lines(self) -> list[str]:
        return self.access_log.read_text().splitlines() if self.access_log.exists() else []


@pytest.fixture(scope="module")
def behind_nginx(tmp_path_factory):
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("nsenter"):
        pytest.fail("the nginx test needs root, unshare and nsenter (util-linux): it runs nginx on port 80 in a "
                    "network namespace of its own")
    ensure = subprocess.run([str(ROOT / "scripts" / "ensure-packages"), "nginx"], capture_output=True, text=True,
                            timeout=600)
    if ensure.returncode != 0:
        pytest.fail(f"Debian's nginx is missing and could not be installed: {ensure.stderr}")
    LOGS.mkdir(parents=True, exist_ok=True)
    scratch = tmp_path_factory.mktemp("nginx")
    (scratch / "nginx.conf").write_text(WRAPPER.format(scratch=scratch, conf=NGINX_CONF), encoding="utf-8")
    app_log = LOGS / "nginx-streamlit.log"
    env = {**os.environ, "PORT": str(APP_PORT), "SEQVIZ_BASE_PATH": "seqviz", "PYTHONUNBUFFERED": "1"}
    # The namespace lives as long as the app; /var/lib/nginx there is a scratch tmpfs (nginx makes its folders).
    setup = "ip link set lo up && mount -t tmpfs -o size=256m tmpfs /var/lib/nginx && exec scripts/serve"
    with open(app_log, "w") as log:
        app = subprocess.Popen(["unshare", "--net", "--mount", "sh", "-c", setup], cwd=ROOT, env=env, stdout=log,
                               stderr=subprocess.STDOUT)
    nginx = forwarder = None
    try:
        netns.wait_until_apart(app.pid)
        wait = ("import sys, time, urllib.request\nfor _ in range(180):\n    try:\n"
                f"        urllib.request.urlopen('http://127.0.0.1:{APP_PORT}/seqviz/_stcore/health', timeout=2)\n"
                "        sys.exit(0)\n    except OSError:\n        time.sleep(0.5)\nsys.exit(1)")
        healthy = subprocess.run(_in_namespace(app.pid, [sys.executable, "-c", wait]), timeout=100)
        assert healthy.returncode == 0 and app.poll() is None, f"the app never answered; see {app_log}"
        checked = subprocess.run(_in_namespace(app.pid, ["nginx", "-t", "-c", str(scratch / "nginx.conf"), "-e",
                                                         str(scratch / "error.log")]),
                                 capture_output=True, text=True, timeout=30)
        assert checked.returncode == 0, f"nginx -t refused hosting/nginx.conf:\n{checked.stderr}"
        nginx = subprocess.Popen(_in_namespace(app.pid, ["nginx", "-c", str(scratch / "nginx.conf"), "-e",
                                                         str(scratch / "error.log"), "-g", "daemon off;"]),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        forwarder = netns.Forwarder(app.pid, NGINX_PORT)
        proxy = Proxy(scratch, forwarder.port)
        from seqviz.smoke import check_health

        deadline = time.monotonic() + 30
        while (problem := check_health(proxy.url, timeout=2, resolve={HOST: "127.0.0.1"})) is not None:
            assert time.monotonic() < deadline and nginx.poll() is None, \
                f"no answer through nginx: {problem}\n{(scratch / 'error.log').read_text()}"
            time.sleep(0.3)
        yield proxy
    finally:
        if forwarder:
            forwarder.close()
        if nginx:
            stop(nginx)
        stop(app)
        if (scratch / "error.log").exists():
            shutil.copy(scratch / "error.log", LOGS / "nginx-error.log")
        if (scratch / "access.log").exists():
            shutil.copy(scratch / "access.log", LOGS / "nginx-access.log")


@pytest.fixture(scope="module")
def visitor_browser(browser):
    """Chromium that finds seqviz.test at 127.0.0.1 (the smoke check's --resolve does the same): this folder's one
    Chromium (tests/browser/conftest.py), which does."""
    return browser


class QuietTab:
    """A visitor's tab opened on /attention through the proxy, with every websocket it opens and closes counted."""

    def __init__(self, browser, url: str):
        self.sockets = {"opened": 0, "closed": 0}
        self.context, self.page = new_visitor(browser)
        self.page.on("websocket", self._on_socket)
        self.opened_at = time.monotonic()
        self.page.goto(f"{url}/attention?s=where+is+my+parcel")

    def _on_socket(self, ws) -> None:
        if "_stcore/stream" in ws.url:
            self.sockets["opened"] += 1
            ws.on("close", lambda _ws: self.sockets.__setitem__("closed", self.sockets["closed"] + 1))


@pytest.fixture(scope="module", autouse=True)
def quiet_tab(behind_nginx, visitor_browser):
    """test_a_class_behind_nginx's first visitor, whose tab must stay open on one websocket past one of Streamlit's
    pings: opened before this module's first test, so that the time it stays quiet passes while the smoke check
    runs (the smoke check's own Chromium goes through the same proxy meanwhile)."""
    tab = QuietTab(visitor_browser, behind_nginx.url)
    yield tab
    tab.context.close()


def _uncompressed_bytes(proxy: Proxy, uris: set[str]) -> int:
    """What the same files weigh without gzip (asked of nginx's cache, without Accept-Encoding)."""
    import http.client

    netloc = urlsplit(proxy.url).netloc
    connection = http.client.HTTPConnection("127.0.0.1", int(netloc.split(":")[1]), timeout=30)
    total = 0
    try:
        for uri in sorted(uris):
            connection.request("GET", uri, headers={"Host": netloc})
            total += len(connection.getresponse().read())
    finally:
        connection.close()
    return total


def _parse(line: str) -> dict[str, str]:
    method, uri, status, *fields = line.split()
    return {"method": method, "uri": uri, "status": status, **dict(f.split("=", 1) for f in fields)}


@pytest.mark.browser
@pytest.mark.timeout(400)
def test_smoke_passes_through_nginx_on_every_page(behind_nginx):
    """Every page through the proxy (a page that never draws usually means a websocket the proxy refused)."""
    from seqviz.smoke import page_paths

    per_page = 30  # seconds; a page takes 3 to 8 s here
    done = subprocess.run([str(ROOT / "scripts" / "smoke"), behind_nginx.url, "--resolve", f"{HOST}:127.0.0.1",
                           "--timeout", str(per_page), "--screenshots", str(LOGS / "screenshots")],
                          cwd=ROOT, capture_output=True, text=True, timeout=per_page * len(page_paths()) + 60)
    (LOGS / "smoke-nginx.txt").write_text(done.stdout + done.stderr, encoding="utf-8")
    assert done.returncode == 0, done.stdout + done.stderr
    pages = [line.split()[0] for line in done.stdout.splitlines() if line.startswith("/")]
    assert sorted(pages) == sorted(f"/{p}" for p in page_paths())
    assert f"{len(pages)}/{len(pages)} pages OK" in done.stdout


@pytest.mark.browser
@pytest.mark.timeout(300)
def test_a_class_behind_nginx(behind_nginx, visitor_browser, quiet_tab, tmp_path):
    """One visitor's tab stays open throughout on one websocket; another uploads a 5 MB checkpoint (nginx's
    default limit is 1 MB); a third, with an empty browser cache, gets every one of Streamlit's script files
    from nginx's cache (none reaches the app), gzipped; then the first tab, quiet all along, still answers."""
    from seqviz import checkpoints
    from seqviz.models import build
    from seqviz.tasks import make_task

    # 1. A visitor whose tab stays open (opened by the quiet_tab fixture): every websocket it opens and closes is
    #    recorded.
    sockets, first, opened_at = quiet_tab.sockets, quiet_tab.page, quiet_tab.opened_at
    wait_for_app(first)
    assert_no_exception(first)
    assert sockets == {"opened": 1, "closed": 0}

    # 2. A second visitor uploads a 5 MB checkpoint (an LSTM classifier 400 wide, untrained: size is the point).
    task = make_task("emails")
    model = build("lstm", {"emb_dim": 400, "hidden_dim": 400, **task.model_fields()})
    data = checkpoints.dumps(model, {"name": "five-mb-lstm", "task": "emails", "seed": 0, "steps": 0,
                                     "vocabularies": task.vocabularies})
    assert len(data) > 5_000_000
    path = tmp_path / "five-mb-lstm.safetensors"
    path.write_bytes(data)
    second_context, second = new_visitor(visitor_browser)
    try:
        second.goto(f"{behind_nginx.url}/")
        wait_for_app(second)
        upload_checkpoint(second, path, 0)
        expect(second.get_by_test_id("stSidebar")).to_contain_text("five-mb-lstm")
        assert_no_exception(second)
    finally:
        second_context.close()
    uploads = [_parse(line) for line in behind_nginx.log_lines() if "upload_file" in line.split()[1]]
    big = [u for u in uploads if u["method"] == "PUT" and int(u["request_bytes"]) > 5_000_000]
    assert big and all(u["status"].startswith("2") for u in big), uploads

    # 3. A third visitor with an empty cache: Streamlit's script files come from nginx's cache.
    before = len(behind_nginx.log_lines())
    third_context, third = new_visitor(visitor_browser)
    encodings = []
    third.on("response", lambda r: encodings.append((r.url, r.headers.get("content-encoding")))
             if "/static/" in r.url and r.url.endswith(".js") else None)
    try:
        third.goto(f"{behind_nginx.url}/attention?s=where+is+my+parcel")
        wait_for_app(third)
        assert_no_exception(third)
        third.wait_for_timeout(1000)  # the last lazily loaded files
    finally:
        third_context.close()
    requests = [_parse(line) for line in behind_nginx.log_lines()[before:]]
    static = [r for r in requests if r["uri"].startswith("/seqviz/static/")]
    reached_app = [r for r in static if r["upstream"] != "-"]
    assert len(static) >= 50, f"only {len(static)} static requests: is this Streamlit's page?"
    assert reached_app == [], f"{len(reached_app)} of {len(static)} static requests reached the app: {reached_app[:5]}"
    assert {r["cache"] for r in static} == {"HIT"}
    # every script file came gzipped, except those under gzip_min_length (1 KB), which gzip would not shrink
    sent = {r["uri"]: int(r["bytes"]) for r in static}
    plain = {urlsplit(url).path: sent.get(urlsplit(url).path) for url, encoding in encodings if encoding != "gzip"}
    assert len(encodings) > len(plain) >= 0 and all(size is not None and size < 1024 for size in plain.values()), \
        f"scripts sent uncompressed: {plain}"

    # 4. The first tab, quiet meanwhile, still has its one websocket and answers a sentence (at least 35 s on:
    #    past one of Streamlit's websocket pings).
    first.wait_for_timeout(max(0.0, 35 - (time.monotonic() - opened_at)) * 1000)
    type_sentence(first, "the charger never arrived")
    expect(first.get_by_role("textbox", name="Sentence", exact=True)).to_have_value("the charger never arrived")
    assert_no_exception(first)
    assert sockets == {"opened": 1, "closed": 0}, sockets

    _record("nginx", {
        "static_requests_new_visitor": len(static),
        "static_requests_reaching_app": len(reached_app),
        "static_bytes_sent_gzipped": sum(int(r["bytes"]) for r in static),
        "static_bytes_uncompressed": _uncompressed_bytes(behind_nginx, {r["uri"] for r in static}),
        "upload_bytes": len(data),
        "websocket_seconds_open": round(time.monotonic() - opened_at, 1),
    })
