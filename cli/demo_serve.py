"""`welcomemat demo`'s servers: the renderer and the customer site, and the check of every printed link.

Both run under uvicorn in threads of the demo's process, on sockets bound before any work
starts, so a taken port is a clear exit 2 at once rather than a failure after precompute.
The checks fetch each link the demo printed over real HTTP and say what it showed: the
same requests a person makes by clicking them.
"""

from __future__ import annotations

import errno
import html
import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.routing import BaseRoute, Route

from server.admin.preview import PageZone, read_page_zones
from welcomemat.errors import InputError

__all__ = [
    "DemoLinks",
    "LinkCheck",
    "ThreadedServer",
    "bind_port",
    "check_links",
]

HOST = "127.0.0.1"
_START_TIMEOUT_S = 15.0
_FETCH_TIMEOUT_S = 10.0


def bind_port(port: int, flag: str) -> socket.socket:
    """A listening socket on 127.0.0.1:`port` (0: any free port); `InputError` naming the flag if taken."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError as exc:
        sock.close()
        reason = "is taken by another program" if exc.errno == errno.EADDRINUSE else f"cannot be used ({exc})"
        raise InputError(
            f"port {port} on {HOST} {reason}; choose another with {flag} N", field=flag
        ) from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


class ThreadedServer:
    """One uvicorn server on an already bound socket, in a daemon thread."""

    def __init__(self, app: Starlette, sock: socket.socket, name: str) -> None:
        self.sock = sock
        self.port: int = sock.getsockname()[1]
        self.origin = f"http://{HOST}:{self.port}"
        config = uvicorn.Config(
            app, log_level="warning", proxy_headers=False, server_header=False, lifespan="on"
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name=name, daemon=True
        )

    def start(self) -> None:
        self._thread.start()
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"{self._thread.name} did not start on {self.origin}")
            time.sleep(0.02)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)
        self.sock.close()


@dataclass(frozen=True)
class DemoLinks:
    """Every URL the demo prints."""

    campaign: str
    account: str
    renderer: str
    site: str
    personal: str
    qr: str
    anonymous: str
    site_personal: str
    admin_token: str
    themed: bool = False  # the campaign has its own theme: its pages must show it

    @property
    def admin_preview(self) -> str:
        return f"{self.renderer}/admin/preview/{self.campaign}/{self.account}"

    @property
    def admin_explain(self) -> str:
        return f"{self.renderer}/admin/explain/{self.campaign}/{self.account}"

    @property
    def admin_review(self) -> str:
        return f"{self.renderer}/admin/review/{self.campaign}"


@dataclass(frozen=True)
class LinkCheck:
    name: str
    ok: bool
    status: int | None
    shown: str

    def line(self) -> str:
        status = str(self.status) if self.status is not None else "---"
        return f"  {'ok  ' if self.ok else 'FAIL'} {status}  {self.name:<18} {self.shown}"


def _zone(zones: list[PageZone], zone_id: str) -> PageZone | None:
    return next((z for z in zones if z.zone_id == zone_id), None)


def _describe(zone: PageZone | None) -> str:
    return f"{zone.zone_id} ({zone.rung}): “{zone.text}”" if zone is not None else "no such zone on the page"


def _has_route(app: Starlette, path: str) -> bool:
    def walk(routes: list[BaseRoute]) -> bool:
        return any(isinstance(r, Route) and r.path == path for r in routes)

    return walk(list(app.routes))


def check_links(links: DemoLinks, renderer_app: Starlette) -> list[LinkCheck]:
    """Fetch every printed link; one result per link, saying what it showed."""
    checks: list[LinkCheck] = []

    def attempt(name: str, fn: Callable[[httpx.Client], LinkCheck]) -> None:
        try:
            with httpx.Client(timeout=_FETCH_TIMEOUT_S, follow_redirects=False) as client:
                checks.append(fn(client))
        except httpx.HTTPError as exc:
            checks.append(LinkCheck(name, False, None, f"request failed: {exc}"))
        except ValueError as exc:  # an answer that is not what the link promised (e.g. not JSON)
            checks.append(LinkCheck(name, False, None, f"unexpected answer: {exc}"))

    def page(name: str, url: str, zone_id: str, rung: str, expect: str | None = None) -> None:
        def fetch(client: httpx.Client) -> LinkCheck:
            response = client.get(url)
            zone = _zone(read_page_zones(response.text), zone_id)
            ok = response.status_code == 200 and zone is not None and zone.rung == rung
            ok = ok and (expect is None or (zone is not None and expect in zone.text))
            return LinkCheck(name, ok, response.status_code, _describe(zone))

        attempt(name, fetch)

    page("personal link", links.personal, "hero_headline", "personal", "Series A")
    page("anonymous link", links.anonymous, "hero_headline", "default")

    def qr(client: httpx.Client) -> LinkCheck:
        response = client.get(links.qr)
        location = response.headers.get("location", "")
        expected = f"{links.renderer}/c/{links.campaign}/continue"
        ok = response.status_code == 303 and location == expected
        if not ok:
            return LinkCheck("QR link", False, response.status_code, f"redirects to {location or 'nowhere'}")
        # The identification cookie is `Secure`: browsers keep it for http://127.0.0.1 (a
        # trustworthy origin), httpx does not, so it is sent on as a browser would.
        cookie = response.headers.get("set-cookie", "").partition(";")[0]
        landed = client.get(location, headers={"cookie": cookie} if cookie else {})
        zone = _zone(read_page_zones(landed.text), "continuation_headline")
        ok = landed.status_code == 200 and zone is not None and zone.rung == "personal"
        return LinkCheck("QR link", ok, response.status_code, f"-> {location}: {_describe(zone)}")

    attempt("QR link", qr)

    if links.themed:

        def theme(client: httpx.Client) -> LinkCheck:
            response = client.get(links.anonymous)
            prefix = f"/c/{links.campaign}/theme/"
            found = re.findall(r'(?:href|src)="(' + re.escape(prefix) + r'[^"]+)"', response.text)
            files = sorted(set(found))
            served = []
            for path in files:
                answer = client.get(links.renderer + path)
                kind = answer.headers.get("content-type", "").split(";")[0]
                served.append((path.removeprefix(prefix), answer.status_code, kind))
            stylesheet = any(kind == "text/css" and status == 200 for _, status, kind in served)
            ok = response.status_code == 200 and stylesheet and "<footer" in response.text
            ok = ok and all(status == 200 for _, status, _ in served)
            shown = (
                ", ".join(f"{name} ({status} {kind})" for name, status, kind in served) or "no theme files"
            )
            footer = "a footer" if "<footer" in response.text else "no footer"
            return LinkCheck("theme", ok, response.status_code, f"page links {shown}; {footer}")

        attempt("theme", theme)

    def site(client: httpx.Client) -> LinkCheck:
        response = client.get(links.site_personal)
        tag = f'src="{links.renderer}/snippet.js"'
        ok = response.status_code == 200 and tag in response.text and "data-wm-zone" in response.text
        csp = response.headers.get("content-security-policy", "")
        ok = ok and f"script-src {links.renderer}" in csp
        return LinkCheck("customer site", ok, response.status_code, f"embeds {links.renderer}/snippet.js")

    attempt("customer site", site)

    if _has_route(renderer_app, "/snippet.js"):

        def snippet(client: httpx.Client) -> LinkCheck:
            response = client.get(f"{links.renderer}/snippet.js")
            ok = response.status_code == 200 and "javascript" in response.headers.get("content-type", "")
            return LinkCheck("snippet.js", ok, response.status_code, f"{len(response.content)} bytes")

        attempt("snippet.js", snippet)
    if _has_route(renderer_app, "/v1/zones"):

        def zones_api(client: httpx.Client) -> LinkCheck:
            token = httpx.URL(links.personal).params.get("wm", "")
            response = client.get(
                f"{links.renderer}/v1/zones",
                params={"campaign": links.campaign, "wm": token},
                headers={"origin": links.site},
            )
            allowed = response.headers.get("access-control-allow-origin") == links.site
            zone = (response.json().get("zones") or {}).get("hero_headline") if response.is_success else None
            text = zone.get("text", "") if isinstance(zone, dict) else ""
            ok = response.status_code == 200 and allowed and "Series A" in text
            shown = f"hero_headline for the site's Dymaxa visitor: “{text}”" + (
                "" if allowed else f" (CORS refused {links.site})"
            )
            return LinkCheck("snippet zones", ok, response.status_code, shown)

        attempt("snippet zones", zones_api)

    def admin(client: httpx.Client) -> LinkCheck:
        bearer = {"authorization": f"Bearer {links.admin_token}"}
        preview = client.get(links.admin_preview, headers=bearer)
        queue = client.get(links.admin_review, headers=bearer)
        explain = client.get(links.admin_explain, headers=bearer)
        ok = preview.status_code == queue.status_code == explain.status_code == 200
        rung = _zone(read_page_zones(_srcdoc(preview.text)), "hero_headline") if ok else None
        ok = ok and rung is not None and rung.rung == "personal"
        items = queue.json().get("items", []) if queue.is_success else []
        waiting = sum(1 for item in items if item.get("queue") == "approval")
        sampled = len(items) - waiting
        return LinkCheck(
            "admin",
            ok,
            preview.status_code,
            f"preview shows {_describe(rung)}; review queue: {waiting} waiting for approval, "
            f"{sampled} published and sampled for reading",
        )

    attempt("admin", admin)
    return checks


def _srcdoc(admin_html: str) -> str:
    """The previewed page inside the admin preview's frame (an attribute: quotes are escaped)."""
    found = re.search(r'srcdoc="([^"]*)"', admin_html)
    return html.unescape(found.group(1)) if found else ""
