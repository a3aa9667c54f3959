"""seqviz.share.is_local_address: which addresses only this computer can open (table-driven)."""

import pytest

from seqviz.share import is_local_address

LOCAL = [
    "http://localhost:8501",
    "http://localhost:8501/attention?s=where+is+my+parcel",
    "https://LOCALHOST/",
    "http://localhost./",  # trailing dot: the same host
    "localhost",
    "localhost:8501/attention",  # no scheme
    "//localhost:8501",
    "http://app.localhost:8501",  # RFC 6761: every *.localhost is loopback
    "http://a.b.localhost",
    "http://127.0.0.1:8501/seqviz/",
    "http://127.1.2.3",
    "127.0.0.1",
    "http://127.1:8501",  # shorthand browsers accept
    "http://2130706433/",  # 127.0.0.1 as one number
    "http://0x7f.0.0.1/",
    "http://[::1]:8501/order",
    "[::1]",
    "[::1]:8501",
    "::1",
    "http://[::ffff:127.0.0.1]:8501",  # IPv4-mapped loopback
    "http://0.0.0.0:8501",  # what a server bound to every interface prints
    "0.0.0.0",
    "http://[::]:8501",
    "http://user:secret@localhost:8501",
    "http://evil.example@localhost/",  # the host is what comes after the @
    "  http://localhost:8501  ",  # pasted with spaces
    "http://localhost:notaport/",  # a bad port does not hide the host
]

NOT_LOCAL = [
    "https://example.org",
    "https://seqviz.example.edu/seqviz/attention?s=x",
    "https://huggingface.co/spaces/someone/seqviz",
    "https://someone-seqviz.hf.space/",
    "http://8.8.8.8:8501",
    "http://192.168.1.20:8501",  # a classroom's local network: others on it can open this
    "http://10.0.0.5:8501",
    "http://172.16.0.1",
    "http://[2001:db8::1]:8501",
    "http://[fe80::1%25eth0]:8501",  # link-local: other machines on the link
    "http://localhost@evil.example/",  # userinfo is not the host
    "http://localhost.example.com",
    "http://127.0.0.1.nip.io",  # a public name that resolves to loopback is not knowable here
    "http://mylocalhost",
    "http://notlocalhost.org",
    "seqviz.example.org:8501",
]

MALFORMED = [
    "",
    "   ",
    "http://",
    "http://[::1",  # unclosed bracket: urlsplit raises
    "http://]::1[",
    "::::",
    "http://:8501",
    "://localhost",
    "not a url at all",
    "http://local host",
    "javascript:alert(1)",
    "file:///etc/passwd",
    "\x00\x01",
    "http://" + "a" * 10_000,
    "http://256.256.256.256",
    "http://999999999999",
    None,
    42,
    b"http://localhost",
    ["http://localhost"],
]


@pytest.mark.parametrize("url", LOCAL)
def test_local_addresses(url):
    assert is_local_address(url) is True


@pytest.mark.parametrize("url", NOT_LOCAL)
def test_public_and_network_addresses(url):
    assert is_local_address(url) is False


@pytest.mark.parametrize("url", MALFORMED, ids=repr)
def test_malformed_input_is_not_local_and_never_raises(url):
    assert is_local_address(url) is False


def test_a_visitor_moved_from_a_stopped_server_is_known_by_the_balancers_cookie():
    from seqviz.share import MOVED_COOKIE, moved_from

    assert moved_from({MOVED_COOKIE: "app1"}, "app2") == "app1"  # moved from app1, served by app2
    assert moved_from({MOVED_COOKIE: "app2"}, "app2") is None  # moved here earlier, now at home
    assert moved_from({}, "app2") is None  # not moved
    assert moved_from({MOVED_COOKIE: "app1"}, None) is None  # not behind the balancer
    assert moved_from({MOVED_COOKIE: "x" * 500}, "app2") == "x" * 40  # a forged cookie stays short
