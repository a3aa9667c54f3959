"""The share box when a teacher serves a class from a laptop (docs/hosting.md, *Serve a class from a laptop*).

With ``SEQVIZ_LAN=1`` (scripts/serve's setting) the box offers this computer's address on the classroom's network,
never localhost, with a QR code of it in an expander; without it the box offers the address the browser used and,
for localhost, says it works only on this computer. The interfaces are faked (seqviz.network.interfaces): the
test machine's own network says nothing about a classroom's.
"""

import base64
import io
from urllib.parse import parse_qsl, urlsplit

import pytest
import vl_convert
import zxingcpp
from conftest import all_text, set_sentence
from PIL import Image

from seqviz import network
from seqviz.network import Interface
from seqviz.ui import reach

CLASSROOM = [
    Interface("lo", ("127.0.0.1",), loopback=True),
    Interface("docker0", ("172.17.0.1",)),
    Interface("wlp2s0", ("192.168.1.23",)),
]
LOCAL_NOTE = "works only on this computer"


@pytest.fixture
def classroom(monkeypatch):
    """A laptop on a classroom's Wi-Fi, its lab served with SEQVIZ_LAN=1; returns the interfaces to change."""
    listed = list(CLASSROOM)
    monkeypatch.setenv(network.LAN_VARIABLE, "1")
    monkeypatch.setattr(network, "interfaces", lambda: listed)
    monkeypatch.setattr(reach, "_interfaces_read", (float("-inf"), []))
    monkeypatch.setattr(reach, "_INTERFACES_TTL_S", 0.0)
    return listed


def _share(at) -> str:
    codes = [c.value for c in at.sidebar.code]
    assert codes, "no share box in the sidebar"
    return codes[-1]


def _qr_codes(at) -> list:
    return list(at.sidebar.get("image"))


def _qr_alts(at) -> list[str]:
    return [img.alt for e in _qr_codes(at) for img in e.proto.imgs]


def _read(svg: str, background: str) -> list[str]:
    """What a phone's camera reads off the code as drawn, on a page of ``background`` (the light or dark theme)."""
    png = vl_convert.svg_to_png(svg, scale=1.0)
    code = Image.open(io.BytesIO(png)).convert("RGBA")
    page = Image.new("RGBA", (code.width + 80, code.height + 80), background)
    page.alpha_composite(code, (40, 40))
    return [found.text for found in zxingcpp.read_barcodes(page.convert("L"))]


def _svg_of(at) -> str:
    (element,) = _qr_codes(at)
    (img,) = element.proto.imgs
    return base64.b64decode(img.url.split(",", 1)[1]).decode()


def test_served_to_a_class_the_box_offers_the_lan_address_and_its_qr(classroom, open_page):
    at = open_page("app_pages/attention.py", s="where is my parcel")
    address = _share(at)
    parts = urlsplit(address)
    assert parts.scheme == "http" and parts.netloc == "192.168.1.23:8501", address
    assert parts.path.rstrip("/").endswith("attention")
    assert ("s", "where is my parcel") in parse_qsl(parts.query)
    text = all_text(at)
    assert LOCAL_NOTE not in text and "localhost" not in address
    assert "anyone on this computer's network can open" in text
    (expander,) = [e for e in at.sidebar.expander if "QR code" in e.label]
    assert _qr_alts(at) == [f"QR code of {address}"]
    assert list(expander.get("image")), "the QR code is inside the expander"
    for background in ("#FFFFFF", "#10141B"):  # .streamlit/config.toml's light and dark backgrounds
        assert _read(_svg_of(at), background) == [address]

    # The QR code follows the view: a new sentence, a new address and a new code.
    set_sentence(at, "hello there")
    assert "hello+there" in _share(at) and _qr_alts(at) == [f"QR code of {_share(at)}"]
    assert _read(_svg_of(at), "#FFFFFF") == [_share(at)]


def test_served_to_a_class_without_a_network_the_box_says_so(classroom, open_page):
    classroom[:] = [Interface("lo", ("127.0.0.1",), loopback=True), Interface("docker0", ("172.17.0.1",))]
    at = open_page()
    assert urlsplit(_share(at)).hostname == "localhost"
    assert "no address on a local network" in all_text(at)
    assert not _qr_codes(at), "no QR code of an address only this computer opens"


def test_not_served_to_a_class_the_box_stays_as_it_was(monkeypatch, open_page):
    monkeypatch.delenv(network.LAN_VARIABLE, raising=False)
    monkeypatch.setattr(network, "interfaces", lambda: list(CLASSROOM))
    at = open_page("app_pages/attention.py")
    assert urlsplit(_share(at)).netloc == "localhost:8501"
    text = all_text(at)
    assert LOCAL_NOTE in text and "SEQVIZ_LAN=1 scripts/serve" in text
    assert not _qr_codes(at) and not [e for e in at.sidebar.expander if "QR code" in e.label]


def test_a_long_address_still_makes_a_code_a_phone_reads_or_says_it_cannot(monkeypatch, open_page):
    """The longest sentence of accented letters the box takes (400, each percent-escaped to 6 characters) still
    fits a QR code, and reads back; 400 emoji do not fit any QR code: the box says so instead."""
    address = "http://192.168.1.23:8501/attention?s=" + "%C3%A9" * 400
    assert _read(reach._qr_svg(address), "#10141B") == [address]
    assert reach._qr_svg("http://192.168.1.23:8501/?s=" + "%F0%9F%A6%9C" * 400) is None

    monkeypatch.setenv(network.LAN_VARIABLE, "1")
    monkeypatch.setattr(network, "interfaces", lambda: list(CLASSROOM))
    monkeypatch.setattr(reach, "_INTERFACES_TTL_S", 0.0)
    at = open_page()
    set_sentence(at, "\N{PARROT}" * 400)
    assert not _qr_codes(at) and "too long for a QR code" in all_text(at)
    assert urlsplit(_share(at)).hostname == "192.168.1.23"


@pytest.mark.parametrize(("opened", "bound", "expected"), [
    ("http://localhost:8501/attention", "0.0.0.0", "http://192.168.1.23:8501/lab"),  # the teacher, on the laptop
    ("http://10.0.0.9:8501/attention", "", "http://10.0.0.9:8501/lab"),  # a visitor on the laptop's other network
    ("http://203.0.113.7:8501/", "0.0.0.0", "http://192.168.1.23:8501/lab"),  # an address not the laptop's
    ("http://localhost:8501/", "10.0.0.9", "http://10.0.0.9:8501/lab"),  # listening on one address: that one
    ("http://localhost:8501/", "127.0.0.1", None),  # listening on this computer only: no class can open it
])
def test_which_address_of_the_laptop(monkeypatch, opened, bound, expected):
    from types import SimpleNamespace

    options = {"server.address": bound, "server.port": 8501, "server.baseUrlPath": "/lab/"}
    monkeypatch.setenv(network.LAN_VARIABLE, "1")
    monkeypatch.setattr(network, "interfaces", lambda: [*CLASSROOM, Interface("eth0", ("10.0.0.9",))])
    monkeypatch.setattr(reach, "_INTERFACES_TTL_S", 0.0)
    monkeypatch.setattr(reach, "st", SimpleNamespace(get_option=options.get, context=SimpleNamespace(url=opened)))
    assert reach.lan_base_url() == expected
    assert reach.base_url() == (expected or urlsplit(opened)._replace(path="/lab", query="").geturl())
