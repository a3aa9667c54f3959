"""Smoke check of a running seqviz, local or deployed: every page in Chromium, a few seconds each.

    python -m seqviz.smoke http://localhost:8501           # or: scripts/smoke URL
    python -m seqviz.smoke https://example.org/seqviz      # served under a path prefix

First the server's health (``URL/_stcore/health``); then, for each page:

1. open it by a deep link, ``PAGE?s=<sentence>``, and wait for the app to finish running (and its charts
   to draw); the address must still be that page (not "Page not found") and the sidebar's Sentence box
   must hold the sentence from the link;
2. type another sentence into the Sentence box, press Enter, wait again; the address must carry it (?s=);
3. on both runs, no exception box (``[data-testid="stException"]``) and no error box (``st.error``, shown for
   instance when a shipped model is missing) may be on the page, and the share box, where a page has one,
   must hold an address under URL.

It prints one line per page (page, OK or FAIL, seconds, reason) and exits 0 only when every page passed.
``--resolve HOST:ADDRESS`` (as curl's) sends HOST's requests to ADDRESS, for the health check and in Chromium:
a proxy under its own host name checked before that name is in the DNS, or in a test.

It needs Playwright and Debian's Chromium (``pip install -r requirements-dev.txt``, ``scripts/ensure-chromium``)
and never imports streamlit: it checks the app from the outside, as a visitor's browser sees it. Chromium and
what "painted" means are seqviz.browser's, as for the browser tests and the benchmark.
"""

from __future__ import annotations

import argparse
import http.client
import socket
import ssl
import sys
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, quote_plus, urlsplit

from seqviz import browser as harness
from seqviz.browser import CHROMIUM, resolver_rules

LINK_SENTENCE = "where is my parcel?"  # opened by ?s= (the "?" checks the link's encoding)
TYPED_SENTENCE = "the charger never arrived"  # typed into the box, then Enter
SHARE_CAPTION = "Share this view: copy the address"


@dataclass(frozen=True)
class PageResult:
    path: str  # "" for home, else "attention" style
    ok: bool
    seconds: float
    reason: str

    def line(self) -> str:
        return f"/{self.path:<22} {'OK' if self.ok else 'FAIL':<4} {self.seconds:6.1f} s  {self.reason}"


class PageFailure(Exception):
    """A check on one page did not hold; the message is the reason printed."""


def page_paths() -> list[str]:
    """Every page of the app, home first ("" for home), from the story's single list of pages."""
    from seqviz.story import PAGES

    return [p.url_path for p in PAGES]


def normalize_base(url: str) -> str:
    """http://host:port[/base] without a trailing slash, query or fragment; http:// when no scheme is given."""
    url = url.strip()
    if "://" not in url:
        url = "http://" + url
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"


def parse_resolve(values: Sequence[str]) -> dict[str, str]:
    """["seqviz.test:127.0.0.1"] -> {"seqviz.test": "127.0.0.1"} (the address may be IPv6: host:::1)."""
    mapping = {}
    for value in values:
        host, sep, address = value.partition(":")
        if not sep or not host or not address:
            raise ValueError(f"--resolve wants HOST:ADDRESS, got {value!r}")
        mapping[host.lower()] = address
    return mapping


def check_health(base: str, timeout: float = 10.0, resolve: dict[str, str] | None = None) -> str | None:
    """None when URL/_stcore/health answers "ok", else why not."""
    url = f"{base}/_stcore/health"
    try:
        parts = urlsplit(url)
        address = (resolve or {}).get((parts.hostname or "").lower())
        if address is None:
            with urllib.request.urlopen(url, timeout=timeout) as reply:
                status, body = reply.status, reply.read(200)
        else:
            status, body = _get_at(parts, address, timeout)
        text = body.decode("utf-8", "replace").strip()
        return None if status == 200 else f"health answered {status} {text!r}"
    except Exception as error:  # any failure to reach the server is the answer
        return f"{url} did not answer: {error}"


def _get_at(parts, address: str, timeout: float) -> tuple[int, bytes]:
    """GET the URL from ``address`` instead of its host's own, with the URL's host name in Host (and TLS SNI)."""
    https = parts.scheme == "https"
    port = parts.port or (443 if https else 80)
    connection = (http.client.HTTPSConnection if https else http.client.HTTPConnection)(parts.hostname, port,
                                                                                         timeout=timeout)
    sock = socket.create_connection((address, port), timeout=timeout)
    connection.sock = ssl.create_default_context().wrap_socket(sock, server_hostname=parts.hostname) if https else sock
    try:
        connection.request("GET", parts.path or "/", headers={"Host": parts.netloc})
        reply = connection.getresponse()
        return reply.status, reply.read(200)
    finally:
        connection.close()


def check_page(pg, base: str, path: str, timeout_s: float) -> PageResult:
    """Run the checks of the module docstring on one page; never raises for a failed check."""
    start = time.monotonic()
    deadline = start + timeout_s
    try:
        notes = _check_page(pg, base, path, deadline)
        return PageResult(path, True, time.monotonic() - start, notes)
    except PageFailure as failure:
        return PageResult(path, False, time.monotonic() - start, str(failure))
    except Exception as error:  # a Playwright timeout or a closed page: say what, go on to the next page
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return PageResult(path, False, time.monotonic() - start, f"{type(error).__name__}: {first_line}")


def _check_page(pg, base: str, path: str, deadline: float) -> str:
    page_url = f"{base}/{path}"
    pg.goto(f"{page_url}?s={quote_plus(LINK_SENTENCE)}", timeout=_ms_left(deadline))
    box = pg.get_by_role("textbox", name="Sentence", exact=True)
    try:
        box.wait_for(state="visible", timeout=_ms_left(deadline))
    except Exception as error:
        raise PageFailure(f"the Sentence box never appeared{_dialog_text(pg)} (is the websocket, "
                          f"{base}/_stcore/stream, blocked by a proxy?)") from error
    _wait_for_app(pg, deadline)
    _no_exception(pg, "after the deep link")
    if urlsplit(pg.url).path.rstrip("/") != urlsplit(page_url).path.rstrip("/"):
        raise PageFailure(f"the deep link landed on {pg.url}{_dialog_text(pg)}")
    if box.input_value() != LINK_SENTENCE:
        raise PageFailure(f"the deep link's sentence was not kept: the box holds {box.input_value()!r}")
    _share_box_under(pg, page_url)

    box.fill(TYPED_SENTENCE)
    box.press("Enter")
    _wait_for_query(pg, TYPED_SENTENCE, deadline)
    charts = _wait_for_app(pg, deadline)
    _no_exception(pg, "after typing a sentence")
    _share_box_under(pg, page_url)
    return f"deep link kept, typed sentence ran, {charts} chart{'s' if charts != 1 else ''} drawn"


def _ms_left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise PageFailure("ran out of time")
    return left * 1000


def _wait_for_app(pg, deadline: float) -> int:
    """Wait until the page is painted (seqviz.browser: the run finished, no skeleton, every chart drawn, the page
    still); the number of charts on it."""
    try:
        return harness.wait_painted(pg, timeout_ms=_ms_left(deadline))["charts"]
    except harness.NotPainted as failure:
        raise PageFailure(str(failure)) from None


def _wait_for_query(pg, sentence: str, deadline: float) -> None:
    """The address carries the typed sentence (the box is bound to ?s=)."""
    while True:
        if parse_qs(urlsplit(pg.url).query).get("s") == [sentence]:
            return
        if time.monotonic() > deadline:
            raise PageFailure(f"the typed sentence did not reach the address: {pg.url}")
        pg.wait_for_timeout(100)


def _no_exception(pg, when: str) -> None:
    """No exception box, and no error box either (the app shows one when, say, a shipped model is missing)."""
    for selector, what in (("[data-testid=stException]", "exception"), ("[data-testid=stAlertContentError]", "error")):
        boxes = pg.locator(selector)
        if boxes.count():
            words = boxes.first.locator("[data-testid=stMarkdownContainer]")  # the message, not its icon's name
            text = " ".join((words.first if words.count() else boxes.first).inner_text().split())[:160]
            raise PageFailure(f"{what} shown {when}: {text}")


def _share_box_under(pg, page_url: str) -> None:
    """Where the page has a share box, its address starts with this page's address under the served base."""
    sidebar = pg.get_by_test_id("stSidebar")
    if sidebar.get_by_text(SHARE_CAPTION, exact=True).count() == 0:
        return
    give_up = time.monotonic() + 15  # the code block paints a moment after the script has finished
    while True:
        codes = ["".join(text.split()) for text in sidebar.locator("code").all_inner_texts()]
        addresses = [c for c in codes if "://" in c]
        if addresses:
            break
        if time.monotonic() > give_up:
            raise PageFailure("the share box holds no address")
        pg.wait_for_timeout(100)
    if not any(_same_page(a, page_url) for a in addresses):
        raise PageFailure(f"the share box's address {addresses[0]} is not under {page_url}")


def _same_page(address: str, page_url: str) -> bool:
    a, b = urlsplit(address), urlsplit(page_url)
    return (a.scheme, a.netloc, a.path.rstrip("/")) == (b.scheme, b.netloc, b.path.rstrip("/"))


def _dialog_text(pg) -> str:
    try:
        texts = [" ".join(t.split()) for t in pg.locator("[role=dialog]").all_inner_texts()]
    except Exception:
        return ""
    return f" (dialog: {'; '.join(texts)[:160]})" if texts else ""


def run(base_url: str, paths: Sequence[str], *, timeout_s: float = 90.0, chromium: str = CHROMIUM,
        screenshots: Path | None = None, echo=print, chromium_args: Sequence[str] = ()) -> list[PageResult]:
    """Check each page in one Chromium (``chromium_args`` added to its flags); ``echo`` gets each page's line as
    soon as it is known."""
    base = normalize_base(base_url)
    results = []
    with harness.chromium(executable=chromium, args=chromium_args) as browser:
        # One context for every page: the app's scripts come from the browser's cache after the first page.
        context = harness.new_context(browser)
        for path in paths:
            pg = context.new_page()
            try:
                result = check_page(pg, base, path.strip("/"), timeout_s)
                if screenshots is not None and not result.ok:
                    screenshots.mkdir(parents=True, exist_ok=True)
                    pg.screenshot(path=str(screenshots / f"smoke-{path.strip('/') or 'home'}.png"))
            finally:
                pg.close()
            results.append(result)
            echo(result.line())
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m seqviz.smoke", description=__doc__.split("\n\n")[0])
    parser.add_argument("url", help="where the app is served, e.g. http://localhost:8501 or https://host/seqviz")
    parser.add_argument("--pages", help="comma-separated page addresses to check (default: every page; "
                                        "'' or / for home), e.g. --pages /,attention")
    parser.add_argument("--timeout", type=float, default=90.0, help="seconds allowed per page (default 90)")
    parser.add_argument("--chromium", default=CHROMIUM, help=f"Chromium to drive (default {CHROMIUM})")
    parser.add_argument("--screenshots", type=Path, help="save a screenshot of each failed page here")
    parser.add_argument("--resolve", action="append", default=[], metavar="HOST:ADDRESS",
                        help="send HOST's requests to ADDRESS (as curl's --resolve, without the port), e.g. "
                             "--resolve seqviz.example.org:127.0.0.1; may be given more than once")
    args = parser.parse_args(argv)
    try:
        resolve = parse_resolve(args.resolve)
    except ValueError as error:
        parser.error(str(error))

    base = normalize_base(args.url)
    paths = [p.strip().strip("/") for p in args.pages.split(",")] if args.pages is not None else page_paths()
    problem = check_health(base, resolve=resolve)
    if problem:
        print(f"FAIL  {problem}", file=sys.stderr)
        return 1
    if not Path(args.chromium).exists():
        print(f"No Chromium at {args.chromium}: run scripts/ensure-chromium (as root) or pass --chromium.",
              file=sys.stderr)
        return 2

    start = time.monotonic()
    results = run(base, paths, timeout_s=args.timeout, chromium=args.chromium, screenshots=args.screenshots,
                  echo=lambda line: print(line, flush=True), chromium_args=resolver_rules(resolve))
    passed = sum(r.ok for r in results)
    print(f"{passed}/{len(results)} pages OK in {time.monotonic() - start:.1f} s at {base}", flush=True)
    return 0 if results and passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
