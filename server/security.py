"""The trusted-hosts check and the response security headers, in one plain ASGI middleware.

Requests for a Host not allowed (the public URL's, loopback names, `WELCOMEMAT_ALLOWED_HOSTS`)
get 400 with a body naming the settings to change, except the operations
endpoints, which load balancers and orchestrators probe by IP address. No www redirect:
a redirect built from the Host header is exactly what the renderer never does.

Every response gets a Content-Security-Policy with a fresh nonce (`csp_nonce(scope)`
hands it to the page that renders a `<script nonce=…>`); the JSON API under `/v1/` gets
the strictest one instead, `default-src 'none'` and `frame-ancestors`, with no nonce to
draw (nothing there is a document). Every response also gets `X-Content-Type-Options:
nosniff`, `Referrer-Policy: strict-origin-when-cross-origin` (an email link's `?wm=`
token never leaves in a Referer to another origin) and `frame-ancestors` from
configuration. Styles, images and fonts only from our own origin (a campaign's theme files
are served from it too): zones reserve their space with classes, never inline styles.

One plain ASGI layer for both jobs: every layer costs a page a few microseconds (and
`BaseHTTPMiddleware` a task and a stream), a measurable share of a cached page's time.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server.random_ids import url_token

__all__ = [
    "API_PREFIX",
    "OPS_PATHS",
    "SecurityMiddleware",
    "api_content_security_policy",
    "content_security_policy",
    "csp_nonce",
    "host_allowed",
]

OPS_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
# The JSON API (`/v1/...`): no document, no script, so no nonce: the strictest policy.
API_PREFIX = "/v1/"
_NONCE_KEY = "welcomemat.csp_nonce"
# Names the settings to change, never the refused Host (an attacker's text has no place in it).
_BAD_HOST_BODY = (
    b"Invalid host header: this renderer answers for the host of WELCOMEMAT_PUBLIC_URL, localhost, "
    b"127.0.0.1 and the hosts in WELCOMEMAT_ALLOWED_HOSTS. Open it at its public URL, or add this "
    b"host to WELCOMEMAT_ALLOWED_HOSTS (comma-separated; *.example.com for subdomains).\n"
)
_HOST_VERDICTS = 256


def csp_nonce(scope: Scope) -> str:
    """This request's CSP nonce (set by `SecurityMiddleware`)."""
    nonce = scope.get(_NONCE_KEY)
    return nonce if isinstance(nonce, str) else ""


def api_content_security_policy(frame_ancestors: str) -> str:
    """The policy of JSON answers: nothing may load, nothing may frame them but `frame_ancestors`."""
    return f"default-src 'none'; frame-ancestors {frame_ancestors}"


def content_security_policy(nonce: str, frame_ancestors: str) -> str:
    return (
        f"default-src 'none'; script-src 'nonce-{nonce}' 'strict-dynamic'; style-src 'self'; "
        f"img-src 'self' data:; font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; "
        f"object-src 'none'; frame-ancestors {frame_ancestors}"
    )


def _host_name(header: bytes) -> str | None:
    """The host of a Host header without its port (IPv6 literals keep their brackets)."""
    try:
        host = header.decode("ascii").strip().lower()
    except UnicodeDecodeError:
        return None
    if host.startswith("["):
        end = host.find("]")
        return host[: end + 1] if end > 0 else None
    name, _, port = host.partition(":")
    if not name or (port and not port.isdigit()):
        return None
    return name


def host_allowed(header: bytes | None, allowed: Sequence[str]) -> bool:
    """Exact names, `*.domain` (subdomains only) or `*`, case-insensitively."""
    if "*" in allowed:
        return True
    host = _host_name(header) if header is not None else None
    if host is None:
        return False
    return any(
        host == pattern or (pattern.startswith("*.") and host.endswith(pattern[1:])) for pattern in allowed
    )


class SecurityMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        *,
        allowed_hosts: Sequence[str],
        frame_ancestors: str = "'none'",
        hsts: bool = False,
    ) -> None:
        self.app = app
        self._allowed = tuple(h.lower() for h in allowed_hosts)
        self._frame_ancestors = frame_ancestors
        # Only headers that do a job: each costs the HTTP layer (h11 validates every one)
        # a few microseconds per response. frame-ancestors (CSP 2, every current browser)
        # makes X-Frame-Options redundant.
        static = [
            (b"x-content-type-options", b"nosniff"),
            (b"referrer-policy", b"strict-origin-when-cross-origin"),
        ]
        if hsts:
            static.append((b"strict-transport-security", b"max-age=31536000"))
        self._static = static
        # The policy around its nonce, encoded once: a request only joins three byte strings.
        head, tail = content_security_policy("\0", frame_ancestors).encode().split(b"\0")
        self._csp_head, self._csp_tail = head, tail
        self._api_csp = api_content_security_policy(frame_ancestors).encode()
        # Host header -> verdict: a site is reached under a handful of names. Bounded
        # (cleared when full), so random Host headers cannot grow it.
        self._host_verdicts: dict[bytes | None, bool] = {}

    def _host_ok(self, host: bytes | None) -> bool:
        verdict = self._host_verdicts.get(host)
        if verdict is None:
            verdict = host_allowed(host, self._allowed)
            if len(self._host_verdicts) >= _HOST_VERDICTS:
                self._host_verdicts.clear()
            self._host_verdicts[host] = verdict
        return verdict

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["path"].startswith(API_PREFIX):
            policy = self._api_csp  # csp_nonce(scope) is "" there: nothing renders a script
        else:
            nonce = url_token(18)
            scope[_NONCE_KEY] = nonce
            policy = self._csp_head + nonce.encode("ascii") + self._csp_tail

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = message.get("headers")
                if not isinstance(headers, list):
                    headers = message["headers"] = list(headers or ())
                for name, _ in headers:  # a loop, not any(genexpr): this runs for every response
                    if name == b"content-security-policy":
                        break  # the route set its own (admin pages)
                else:
                    headers.append((b"content-security-policy", policy))
                headers.extend(self._static)
            await send(message)

        if scope.get("path") not in OPS_PATHS:
            host = None
            for name, value in scope["headers"]:
                if name == b"host":
                    host = value
                    break
            if not self._host_ok(host):
                await send_with_headers(
                    {
                        "type": "http.response.start",
                        "status": 400,
                        "headers": [
                            (b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(_BAD_HOST_BODY)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": _BAD_HOST_BODY})
                return
        await self.app(scope, receive, send_with_headers)
