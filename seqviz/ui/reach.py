"""Getting a class in: the address students on the same network can open, and a QR code of it.

:func:`base_url` is the app's address to hand out (the share box and the class page build their links on it);
:func:`qr` draws a link as a QR code thirty phones can scan off a projector. Picking the address is
:mod:`seqviz.network`'s job (no streamlit there, and no outbound call anywhere).
"""

from __future__ import annotations

import functools
import io
import time
from urllib.parse import urlsplit

import streamlit as st

from seqviz import network
from seqviz.share import is_local_address

_INTERFACES_TTL_S = 5.0  # a laptop that moves to another Wi-Fi gets its new address within a few seconds
_interfaces_read: tuple[float, list[network.Interface]] = (float("-inf"), [])


def base_url() -> str:
    """The app's address, ``scheme://host[:port][/base path]``, as students should be given it.

    Served to a class on the local network (``SEQVIZ_LAN=1 scripts/serve``): ``http://<LAN IPv4>:<port>/<base>``,
    this computer's address on the classroom's network even when the teacher opened localhost. Otherwise (or when
    this computer has no such address) the address the visitor's browser used: a hosted copy's own address, or
    localhost, which works on this computer only (:func:`seqviz.share.is_local_address` tells).
    """
    return lan_base_url() or browser_base_url()


def lan_base_url() -> str | None:
    """``http://<LAN IPv4>:<port>/<base>`` when this server serves a class on the local network and this computer
    has an address there; None otherwise."""
    if not serving_class():
        return None
    addresses = lan_addresses()
    bound = (st.get_option("server.address") or "").strip()
    if bound and not _all_interfaces(bound):
        addresses = [bound] if network.reachable(bound) else []  # listening on one address only: that one
    if not addresses:
        return None
    used = urlsplit(st.context.url or "").hostname
    host = used if used in addresses else addresses[0]  # a visitor on one of this computer's networks: theirs
    return network.url(host, st.get_option("server.port"), st.get_option("server.baseUrlPath") or "")


def serving_class() -> bool:
    """True when the server was started to serve a class on the local network (``SEQVIZ_LAN=1``) and listens
    beyond this computer."""
    if not network.enabled():
        return False
    bound = (st.get_option("server.address") or "").strip()
    return not bound or _all_interfaces(bound) or not is_local_address(bound)


def lan_addresses() -> list[str]:
    """This computer's addresses on its networks, the best first (read again every few seconds)."""
    global _interfaces_read
    read_at, listed = _interfaces_read
    if time.monotonic() - read_at > _INTERFACES_TTL_S:
        listed = network.interfaces()
        _interfaces_read = (time.monotonic(), listed)
    return network.lan_addresses(listed)


def browser_base_url() -> str:
    """scheme://host[/base path] of the address the visitor opened (localhost when unknown, as in tests)."""
    parts = urlsplit(st.context.url or "")
    host = f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else "http://localhost:8501"
    base_path = (st.get_option("server.baseUrlPath") or "").strip("/")
    return f"{host}/{base_path}" if base_path else host


def _all_interfaces(bound: str) -> bool:
    return bound in ("0.0.0.0", "::", "[::]", "*")  # every interface, as it is written


def qr(url: str, caption: str, *, width: int | str = "stretch") -> None:
    """A QR code of ``url``, black on white with the standard quiet zone (four modules) so it reads the same on
    the light and the dark theme, off a projector and off a phone's screen. Drawn as SVG, sharp at any size;
    ``width`` in pixels or "stretch" (the column's width). ``caption`` is shown as text under it; screen readers
    get "QR code of <url>". An address too long for any QR code (a long sentence of emoji) gets a line saying so."""
    svg = _qr_svg(url)
    if svg is None:
        st.caption(f"This address is too long for a QR code ({len(url.encode())} bytes): a shorter sentence "
                   "makes one.")
        return
    st.image(svg, caption=_plain(caption), width=width, alt=f"QR code of {url}")


@functools.lru_cache(maxsize=64)  # a few share addresses a minute; up to ~100 kB each
def _qr_svg(url: str) -> str | None:
    import segno
    from segno import DataOverflowError

    for error in ("m", "l"):  # M still reads with a glare spot or a smudged screen; L holds a longer address
        try:
            code = segno.make(url, error=error, micro=False)
        except DataOverflowError:
            continue
        out = io.BytesIO()
        code.save(out, kind="svg", scale=8, border=4, dark="#000000", light="#ffffff", xmldecl=False, nl=False,
                  title="QR code")
        return out.getvalue().decode()
    return None


def _plain(text: str) -> str:
    from seqviz.ui import escape_markdown

    return escape_markdown(text)
