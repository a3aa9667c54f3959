"""seqviz.network: which of this computer's addresses a class on its network is handed (fake interface lists)."""

import os
import shutil
import socket
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from seqviz import network
from seqviz.network import Interface, lan_address, lan_addresses

LO = Interface("lo", ("127.0.0.1",), loopback=True)


@pytest.mark.parametrize(("listed", "picked"), [
    # a Linux laptop on the classroom's Wi-Fi, with Docker and a libvirt bridge
    ([LO, Interface("docker0", ("172.17.0.1",)), Interface("virbr0", ("192.168.122.1",)),
      Interface("br-3f2a9c", ("172.18.0.1",)), Interface("wlp2s0", ("10.12.34.56",))], "10.12.34.56"),
    # a Mac: lo0, the Wi-Fi en0, Internet-sharing's bridge, a VPN's utun
    ([Interface("lo0", ("127.0.0.1",)), Interface("en0", ("192.168.1.23",)), Interface("utun3", ("10.8.0.2",)),
      Interface("awdl0", ())], "192.168.1.23"),
    # Windows: the Wi-Fi, WSL's and Hyper-V's virtual switches
    ([Interface("vEthernet (WSL)", ("172.29.64.1",)), Interface("Wi-Fi", ("192.168.0.12",)),
      Interface("Loopback Pseudo-Interface 1", ("127.0.0.1",))], "192.168.0.12"),
    # Wi-Fi before a wired dock, whatever the listing order
    ([Interface("enp0s31f6", ("192.168.50.4",)), Interface("wlan0", ("192.168.60.7",))], "192.168.60.7"),
    # a connected cable before a Wi-Fi that is switched on but not connected
    ([Interface("wlan0", ("192.168.60.7",), running=False), Interface("eth0", ("10.0.0.9",))], "10.0.0.9"),
    # a university that gives laptops public addresses: used when there is no private one
    ([LO, Interface("eth0", ("129.215.1.20",))], "129.215.1.20"),
    # but a private one comes first
    ([Interface("eth0", ("129.215.1.20",)), Interface("eth1", ("172.20.3.4",))], "172.20.3.4"),
    # the first address of an interface with several (the order the system lists them in)
    ([Interface("wlan0", ("192.168.1.5", "192.168.1.6"))], "192.168.1.5"),
    # an interface named nothing we know is still a network
    ([LO, Interface("bond0", ("10.1.2.3",))], "10.1.2.3"),
])
def test_the_address_a_class_is_handed(listed, picked):
    assert lan_address(listed) == picked


@pytest.mark.parametrize("listed", [
    [],
    [LO],
    [LO, Interface("docker0", ("172.17.0.1",)), Interface("veth12ab", ("172.17.0.5",))],
    [Interface("tailscale0", ("100.101.102.103",)), Interface("wg0", ("10.6.0.2",)), Interface("tun0", ("10.8.0.6",))],
    # link-local (no DHCP answer), carrier-grade NAT, documentation, multicast, unspecified, broken text
    [Interface("wlan0", ("169.254.12.3", "100.64.1.2", "192.0.2.2", "224.0.0.251", "0.0.0.0", "not an address"))],
    # a loopback, whatever it is called, and an interface switched off
    [Interface("weird0", ("192.168.1.9",), loopback=True), Interface("wlan0", ("192.168.1.10",), up=False)],
    # an IPv6 address is not what a class types or scans here
    [Interface("wlan0", ("fd00::2",))],
])
def test_no_address_a_class_could_open(listed):
    assert lan_address(listed) is None
    assert lan_addresses(listed) == []


def test_every_candidate_once_best_first():
    listed = [Interface("eth0", ("10.0.0.9", "129.215.1.20")), Interface("wlan0", ("192.168.1.5",)),
              Interface("eth1", ("10.0.0.9",)), Interface("docker0", ("172.17.0.1",))]
    assert lan_addresses(listed) == ["192.168.1.5", "10.0.0.9", "129.215.1.20"]


@pytest.mark.parametrize(("name", "virtual"), [
    ("docker0", True), ("br-0a1b2c", True), ("veth9f8e", True), ("virbr0", True), ("vboxnet0", True),
    ("vmnet8", True), ("vEthernet (Default Switch)", True), ("utun2", True), ("tailscale0", True), ("wg0", True),
    ("lo", True), ("lo0", True), ("wlp2s0", False), ("en0", False), ("eth0", False), ("Wi-Fi", False),
    ("Ethernet 2", False), ("Local Area Connection", False), ("bond0", False),
])
def test_which_interfaces_are_virtual(name, virtual):
    assert network.virtual(name) is virtual


@pytest.mark.parametrize(("host", "port", "base", "url"), [
    ("192.168.1.23", 8501, "", "http://192.168.1.23:8501"),
    ("192.168.1.23", "8080", "/seqviz/", "http://192.168.1.23:8080/seqviz"),
    ("10.0.0.2", 80, "lab", "http://10.0.0.2/lab"),
    ("fd00::2", 8501, "", "http://[fd00::2]:8501"),
])
def test_url(host, port, base, url):
    assert network.url(host, port, base) == url


@pytest.mark.parametrize(("value", "on"), [
    ("1", True), ("true", True), (" YES ", True), ("on", True), ("0", False), ("", False), ("no", False),
])
def test_the_setting(monkeypatch, value, on):
    monkeypatch.setenv(network.LAN_VARIABLE, value)
    assert network.enabled() is on
    monkeypatch.delenv(network.LAN_VARIABLE)
    assert network.enabled() is False


def test_interfaces_read_from_psutil(monkeypatch):
    """The system's table as psutil gives it: IPv4 only, up and running from the interface's stats and flags."""
    import psutil

    def entry(family, address):
        return SimpleNamespace(family=family, address=address)

    monkeypatch.setattr(psutil, "net_if_addrs", lambda: {
        "lo": [entry(socket.AF_INET, "127.0.0.1"), entry(socket.AF_INET6, "::1")],
        "wlan0": [entry(socket.AF_INET, "192.168.1.5"), entry(socket.AF_INET6, "fe80::1%wlan0")],
        "tap0": [entry(socket.AF_INET, "192.168.77.10")],
        "eth9": [entry(socket.AF_INET6, "fd00::9")],
        "nostats": [entry(socket.AF_INET, "10.9.9.9")],
    })
    monkeypatch.setattr(psutil, "net_if_stats", lambda: {
        "lo": SimpleNamespace(isup=True, flags="up,loopback,running"),
        "wlan0": SimpleNamespace(isup=True, flags="up,broadcast,running,multicast"),
        "tap0": SimpleNamespace(isup=False, flags="up,broadcast,multicast"),
    })
    got = {i.name: i for i in network.interfaces()}
    assert set(got) == {"lo", "wlan0", "tap0", "nostats"}
    assert got["lo"].loopback and not got["wlan0"].loopback
    assert got["wlan0"].addresses == ("192.168.1.5",) and got["wlan0"].running
    assert got["tap0"].up and not got["tap0"].running
    assert got["nostats"].up and got["nostats"].running


def test_an_unreadable_interface_table_means_no_address(monkeypatch):
    import psutil

    def refuse():
        raise PermissionError("sandboxed")

    monkeypatch.setattr(psutil, "net_if_addrs", refuse)
    assert network.interfaces() == [] and lan_address() is None


def test_listing_the_interfaces_opens_no_socket(monkeypatch):
    """No connect, no lookup: reading this computer's addresses sends nothing anywhere."""
    def forbidden(*args, **kwargs):
        raise AssertionError("an outbound call")

    monkeypatch.setattr(socket.socket, "connect", forbidden)
    monkeypatch.setattr(socket, "getaddrinfo", forbidden)
    monkeypatch.setattr(socket, "create_connection", forbidden)
    network.interfaces()
    lan_addresses()


ROOT = Path(__file__).resolve().parents[2]
# A python3 for a copy of scripts/serve: `-m seqviz.network` answers as a laptop would (ADDRESS, or exit 1 when
# empty); anything else prints the command it was given, one argument a line.
STUB = """#!/bin/sh
if [ "$1 $2" = "-m seqviz.network" ]; then
    [ -n "$STUB_ADDRESS" ] || exit 1
    echo "$STUB_ADDRESS"; exit 0
fi
for arg in "$@"; do echo "$arg"; done
"""


def _serve(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    (tmp_path / "scripts").mkdir(exist_ok=True)
    shutil.copy2(ROOT / "scripts" / "serve", tmp_path / "scripts" / "serve")
    stub = tmp_path / "bin" / "python3"
    stub.parent.mkdir(exist_ok=True)
    stub.write_text(STUB)
    stub.chmod(0o755)
    clean = {k: v for k, v in os.environ.items() if k not in ("PORT", "SEQVIZ_BASE_PATH", network.LAN_VARIABLE)}
    return subprocess.run([str(tmp_path / "scripts" / "serve")], capture_output=True, text=True, timeout=30,
                          env={**clean, "PATH": f"{stub.parent}{os.pathsep}/usr/bin:/bin", **env})


@pytest.mark.parametrize("setting", ["1", "yes", " TRUE "])
def test_serve_hands_a_class_the_laptops_address(tmp_path, setting):
    done = _serve(tmp_path, SEQVIZ_LAN=setting, STUB_ADDRESS="192.168.1.23", PORT="8080", SEQVIZ_BASE_PATH="lab")
    assert done.returncode == 0, done.stderr
    words = done.stdout.split("\n")
    assert words[words.index("--browser.serverAddress") + 1] == "192.168.1.23"  # Streamlit's banner: no checkip
    assert words[words.index("--server.address") + 1] == "0.0.0.0"
    assert "students open http://192.168.1.23:8080/lab" in done.stderr


@pytest.mark.parametrize("env", [{}, {"SEQVIZ_LAN": "0"}, {"SEQVIZ_LAN": ""}])
def test_serve_stays_as_it_was_without_the_setting(tmp_path, env):
    done = _serve(tmp_path, STUB_ADDRESS="192.168.1.23", **env)
    assert done.returncode == 0, done.stderr
    assert "--browser.serverAddress" not in done.stdout.split("\n")  # .streamlit/config.toml's localhost
    assert "students open" not in done.stderr


def test_serve_without_a_network_says_so_and_serves(tmp_path):
    done = _serve(tmp_path, SEQVIZ_LAN="1", STUB_ADDRESS="")
    assert done.returncode == 0, done.stderr
    assert "--browser.serverAddress" not in done.stdout.split("\n")
    assert "no address on a local network" in done.stderr
