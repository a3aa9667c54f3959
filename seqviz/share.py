"""Pure helpers for share links and hosting (no streamlit): is an address one that only this computer can open?
Was this visitor moved here from another server?

The share box shows the address a visitor opened. When that is http://localhost:8501, a teacher who copies it
to a class hands out a link that opens nothing on anyone else's machine; the share box can say so.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Mapping
from urllib.parse import urlsplit


def is_local_address(url: str) -> bool:
    """True when ``url``'s host names this computer only: localhost, *.localhost, 127.x.x.x, ::1, 0.0.0.0 (and ::).

    Addresses on a local network (192.168.x.x, 10.x.x.x, a hostname) are not local: others on that network
    can open them. A URL without a scheme ("localhost:8501/attention") is read as a host. Never raises:
    anything that is not a readable URL (None, "", "http://[::1", "::::") gives False.
    """
    try:
        return _host_is_local(_host_of(url))
    except Exception:  # malformed input of any kind: not known to be local
        return False


def _host_of(url: str) -> str:
    text = url.strip()
    try:
        return str(ipaddress.ip_address(text.strip("[]")))  # a bare address: "::1", "[::1]", "127.0.0.1"
    except ValueError:
        pass
    if "://" not in text and not text.startswith("//"):
        text = "//" + text  # "localhost:8501" reads as a host, not as the scheme "localhost"
    host = urlsplit(text).hostname or ""  # lowercased, brackets and user:password@ removed
    return host.rstrip(".")  # "localhost." is localhost


def _host_is_local(host: str) -> bool:
    if not host:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])  # "fe80::1%eth0": drop the zone
    except ValueError:
        return _legacy_ipv4_is_local(host)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # ::ffff:127.0.0.1
    return address.is_loopback or address.is_unspecified


def _legacy_ipv4_is_local(host: str) -> bool:
    """Forms browsers still read as IPv4 ("127.1", "0x7f.1", "2130706433"): only when made of digits and dots."""
    if not all(c in "0123456789abcdefx." for c in host) or not host[0].isdigit():
        return False
    try:
        packed = socket.inet_aton(host)
    except OSError:
        return False
    return packed[0] == 127 or packed == b"\0\0\0\0"


# Behind the lecture hall's load balancer (hosting/haproxy.cfg): each app server knows its own name
# (SEQVIZ_SERVER_NAME), and the balancer gives a visitor it had to move from a stopped server a short-lived
# cookie naming that server.
SERVER_NAME_VARIABLE = "SEQVIZ_SERVER_NAME"
MOVED_COOKIE = "SEQVIZ_MOVED_FROM"


def moved_from(cookies: Mapping[str, str], here: str | None) -> str | None:
    """The server a visitor was moved from, when the balancer says they were moved and it was not this one: their
    server stopped and this is a new session. None when this server has no name, or the visitor was not moved."""
    was = (cookies.get(MOVED_COOKIE) or "").strip()
    if not here or not was or was == here:
        return None
    return was[:40]
