"""Serving a class from a laptop: `SEQVIZ_LAN=1 scripts/serve` (docs/hosting.md, *Serve a class from a laptop*).

The start command runs in a network namespace of its own, made to look like a laptop on a classroom's Wi-Fi:
loopback and a "wlan0" at 192.168.77.10/24 that leads nowhere (a tap device with no carrier), every lookup and
connection of its Pythons logged (tests/browser/test_hosting.py's audit hook). The teacher's browser, outside,
reaches it through a forwarded loopback port (hosting/netns.py), as a teacher opens localhost on their laptop.

It must: find 192.168.77.10 without asking anything outside (no lookup, no connection beyond loopback: Streamlit
would ask checkip.amazonaws.com, and the usual trick connects a UDP socket to 8.8.8.8), print it at the start and
in Streamlit's banner, answer a student at that address, and show the teacher, who opened localhost, that address
in the share box with a QR code a phone reads, on a desktop and a 390 px phone, light and dark. Screenshots:
test-output/screenshots/share-qr-*.png.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys

import pytest
import zxingcpp
from browsing import ROOT, SHOTS, assert_no_exception, wait_for_app
from PIL import Image
from playwright.sync_api import expect
from test_hosting import NET_AUDIT, _in_namespace, _netns, _outbound

from seqviz import browser as harness

LAN_IP = "192.168.77.10"
CLASSROOM = ("ip link set lo up && ip tuntap add wlan0 mode tap && ip addr add 192.168.77.10/24 dev wlan0 "
             "&& ip link set wlan0 up && exec scripts/serve")
LOG = ROOT / "test-output" / "serve-class-streamlit.log"


@pytest.fixture(scope="module")
def classroom(tmp_path_factory):
    """`SEQVIZ_LAN=1 scripts/serve` on a laptop on the classroom's Wi-Fi: yields (forwarded URL, port, net log,
    server process)."""
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("nsenter"):
        pytest.fail("this test needs root, unshare and nsenter (util-linux) for a network namespace")
    tmp = tmp_path_factory.mktemp("serve-class")
    (tmp / "sitecustomize.py").write_text(NET_AUDIT, encoding="utf-8")
    net_log = tmp / "net.log"
    port = harness.free_port()
    env = {**os.environ, "PORT": str(port), "SEQVIZ_BASE_PATH": "", "SEQVIZ_LAN": "1", "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": str(tmp), "SEQVIZ_NET_LOG": str(net_log), "SEQVIZ_DATA_DIR": str(tmp / "store")}
    LOG.parent.mkdir(parents=True, exist_ok=True)
    SHOTS.mkdir(parents=True, exist_ok=True)
    with open(LOG, "w") as log:
        server = subprocess.Popen(["unshare", "--net", "sh", "-c", CLASSROOM], cwd=ROOT, env=env, stdout=log,
                                  stderr=subprocess.STDOUT)
    forward = None
    try:
        _netns().wait_until_apart(server.pid)
        forward = _netns().Forwarder(server.pid, port)
        url = f"http://127.0.0.1:{forward.port}"
        assert harness.wait_healthy(url, server, 120), f"never healthy; see {LOG}"
        yield url, port, net_log, server
    finally:
        if forward is not None:
            forward.close()
        harness.stop(server)


@pytest.mark.browser
@pytest.mark.timeout(300)
def test_a_class_gets_the_laptops_address_and_nothing_goes_out(classroom, browser):
    url, port, net_log, server = classroom
    student_url = f"http://{LAN_IP}:{port}"

    started = LOG.read_text(encoding="utf-8")
    assert f"students open {student_url}/" in started, started
    assert f"URL: {student_url}" in started, f"Streamlit's banner does not give the class's address: {started}"

    # A student's phone on the Wi-Fi: the server answers at the laptop's address.
    student = subprocess.run(_in_namespace(server.pid, [sys.executable, "-c", (
        f"import urllib.request; print(urllib.request.urlopen('{student_url}/_stcore/health', timeout=5).status)")]),
        capture_output=True, text=True, timeout=30, env={**os.environ, "PYTHONPATH": ""})
    assert student.stdout.strip() == "200", student.stderr

    # The teacher, on localhost: the share box gives the class's address and a QR code of it.
    shared = f"{student_url}/attention?s=where+is+my+parcel"
    for device, scheme in ((harness.DESKTOP, "light"), (harness.DESKTOP, "dark"), (harness.PHONE, "light"),
                           (harness.PHONE, "dark")):
        name = f"share-qr-{'phone' if device is harness.PHONE else 'desktop'}-{scheme}"
        context = harness.new_context(browser, device, color_scheme=scheme)
        try:
            pg = harness.new_page(context)
            pg.goto(f"{url}/attention?s=where+is+my+parcel")
            wait_for_app(pg)
            assert_no_exception(pg)
            if device is harness.PHONE:
                pg.get_by_test_id("stExpandSidebarButton").tap()
            sidebar = pg.get_by_test_id("stSidebar")
            code = sidebar.get_by_test_id("stCode").last
            assert code.inner_text().strip() == shared
            assert "works only on this computer" not in sidebar.inner_text()
            sidebar.get_by_text("QR code for phones").click()
            image = sidebar.get_by_role("img", name=f"QR code of {shared}")
            expect(image).to_be_visible()
            pg.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=image.element_handle())
            pg.wait_for_timeout(400)  # the expander's opening animation
            image.evaluate("img => img.scrollIntoView({block: 'center'})")
            pg.wait_for_timeout(200)
            box = image.bounding_box()
            assert box and box["width"] >= 200, f"a QR code too small to scan off a screen: {box}"
            pg.screenshot(path=str(SHOTS / f"{name}.png"))
            shot = Image.open(io.BytesIO(image.screenshot())).convert("L")  # the code with its quiet zone
            assert [r.text for r in zxingcpp.read_barcodes(shot)] == [shared], f"{name}: the QR code does not read"
            if device is harness.DESKTOP:  # for a projector: the image's full-screen button fills the screen
                image.hover()
                toolbar = sidebar.get_by_test_id("stElementToolbar")
                # the toolbar fades in under the mouse: a click during the fade can be lost
                pg.wait_for_function("bar => getComputedStyle(bar).opacity === '1'", arg=toolbar.element_handle())
                toolbar.get_by_test_id("stElementToolbarButton").last.click()
                pg.wait_for_function(
                    "name => [...document.querySelectorAll('img')].some(i => i.alt === name && i.width >= 800)",
                    arg=f"QR code of {shared}", timeout=10_000)
                big = pg.get_by_role("img", name=f"QR code of {shared}").bounding_box()
                assert big and min(big["width"], big["height"]) >= 800, f"full screen, the code is small: {big}"
                pg.screenshot(path=str(SHOTS / f"{name}-full-screen.png"))
                projected = Image.open(SHOTS / f"{name}-full-screen.png").convert("L")
                assert [r.text for r in zxingcpp.read_barcodes(projected)] == [shared]
        finally:
            context.close()

    logged = net_log.read_text(encoding="utf-8") if net_log.exists() else ""
    assert "socket.bind '0.0.0.0'" in logged, f"the audit hook did not see the server bind its port: {logged!r}"
    assert _outbound(net_log) == [], f"outbound lookups or connections: {_outbound(net_log)}"
