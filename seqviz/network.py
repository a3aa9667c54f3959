"""Which address of this computer a class on the same network can open (no streamlit, no outbound call).

A teacher serves the lab from a laptop on the classroom's Wi-Fi (``SEQVIZ_LAN=1 scripts/serve``, docs/hosting.md
*Serve a class from a laptop*). Students' phones must be handed the laptop's address on that network, not localhost. The
usual trick (connect a UDP socket to 8.8.8.8 and read the local end, as Streamlit does) touches the outside
world; here the interfaces are listed instead (psutil, which the training cluster already needs) and one of their
IPv4 addresses is picked:

- private (RFC 1918: 10/8, 172.16/12, 192.168/16) before public (a university may give laptops public addresses);
  never loopback, link-local (169.254/16), carrier-grade NAT (100.64/10, e.g. Tailscale), multicast or reserved;
- never on a container, virtual machine or VPN interface (docker0, br-…, veth…, virbr0, vboxnet0, vEthernet (WSL),
  tun0, wg0, utun3, tailscale0…): nobody else in the room can reach those;
- a connected interface before one that is only switched on, Wi-Fi before wired before anything else, and
  otherwise the order the system lists them in.

``python -m seqviz.network`` prints the address picked (exit status 1 when there is none); scripts/serve uses it.
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass
from urllib.parse import quote

LAN_VARIABLE = "SEQVIZ_LAN"  # "1": scripts/serve serves a class on the local network (docs/hosting.md)

_RFC1918 = tuple(ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))

# Interfaces no one else in the room can reach: containers, virtual machines' host-only networks, VPN tunnels.
_VIRTUAL = re.compile(
    r"^(docker|br-|veth|virbr|lxcbr|lxdbr|cni|flannel|cali|weave|kube|podman|cilium|vboxnet|vmnet|vnet|"
    r"vethernet|tun|tap|utun|ipsec|ppp|wg|tailscale|zt|nordlynx|awdl|llw|anpi|gif|stf|isatap|teredo|"
    r"lo$|lo\d|lo:|loopback)",
    re.IGNORECASE)
_WIRELESS = re.compile(r"^(wl|wlan|wifi|wi-fi|wireless|ath|ra\d)", re.IGNORECASE)
_WIRED = re.compile(r"^(en|eth|em\d|eno|ens|enp|ethernet|local area connection)", re.IGNORECASE)


@dataclass(frozen=True)
class Interface:
    """One network interface as the system lists it: its name, its IPv4 addresses, whether it is switched on
    (``up``) and connected (``running``: a carrier, an associated Wi-Fi), and whether the system calls it a
    loopback."""

    name: str
    addresses: tuple[str, ...]
    up: bool = True
    running: bool = True
    loopback: bool = False


def enabled() -> bool:
    """True when the server was started to serve a class on the local network (``SEQVIZ_LAN=1``)."""
    return os.environ.get(LAN_VARIABLE, "").strip().lower() in ("1", "true", "yes", "on")


def interfaces() -> list[Interface]:
    """This computer's interfaces and their IPv4 addresses, read from the system (no packet is sent)."""
    import socket

    import psutil

    try:
        addresses = psutil.net_if_addrs()
        stats = psutil.net_if_stats()
    except Exception:  # an unreadable interface table (a sandbox): no LAN address, the caller says so
        return []
    found = []
    for name, entries in addresses.items():
        ipv4 = tuple(e.address for e in entries if e.family == socket.AF_INET and e.address)
        if not ipv4:
            continue
        stat = stats.get(name)
        flags = set((getattr(stat, "flags", "") or "").split(","))
        found.append(Interface(
            name=name, addresses=ipv4,
            up=bool(stat.isup or "up" in flags) if stat is not None else True,
            running=bool(stat.isup) if stat is not None else True,
            loopback="loopback" in flags))
    return found


def reachable(address: str) -> bool:
    """True for an IPv4 address others on a network can open: private (RFC 1918) or public, never loopback,
    link-local, carrier-grade NAT, multicast, reserved or unspecified."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0].strip())
    except ValueError:
        return False
    if not isinstance(ip, ipaddress.IPv4Address):
        return False
    return _private(ip) or (ip.is_global and not ip.is_multicast)


def _private(ip: ipaddress.IPv4Address) -> bool:
    return any(ip in network for network in _RFC1918)


def virtual(name: str) -> bool:
    """True when an interface's name is a container's, a virtual machine's or a VPN's (see the module's doc)."""
    return bool(_VIRTUAL.match(name.strip()))


def lan_addresses(listed: list[Interface] | None = None) -> list[str]:
    """Every address of this computer a class on its network could open, the best first (see the module's doc).
    ``listed`` defaults to :func:`interfaces`; tests pass their own."""
    listed = interfaces() if listed is None else listed
    ranked = []
    for order, iface in enumerate(listed):
        if iface.loopback or not iface.up or virtual(iface.name):
            continue
        kind = 0 if _WIRELESS.match(iface.name) else 1 if _WIRED.match(iface.name) else 2
        for address in iface.addresses:
            if reachable(address):
                ip = ipaddress.IPv4Address(address.split("%", 1)[0].strip())
                ranked.append(((not iface.running, not _private(ip), kind, order), str(ip)))
    seen: list[str] = []
    for _, address in sorted(ranked, key=lambda pair: pair[0]):
        if address not in seen:
            seen.append(address)
    return seen


def lan_address(listed: list[Interface] | None = None) -> str | None:
    """The one address to hand a class (the best of :func:`lan_addresses`), or None when there is none."""
    found = lan_addresses(listed)
    return found[0] if found else None


def url(host: str, port: int | str, base_path: str = "") -> str:
    """``http://host:port/base`` (the port left out when it is 80; an IPv6 host in brackets)."""
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    netloc = host if str(port) in ("80", "") else f"{host}:{port}"
    base = quote(base_path.strip("/"), safe="/")
    return f"http://{netloc}/{base}" if base else f"http://{netloc}"


if __name__ == "__main__":
    import sys

    best = lan_address()
    if best is None:
        sys.exit(1)
    print(best)
