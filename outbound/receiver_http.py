"""Posting to a receiver we do not control (the CRM webhook, a seller-alert channel): it cannot hurt us.

A receiver is somebody else's server, posted to by the process that folds every tenant's
events. Whatever it answers, one request costs a bounded amount of time and memory and goes
nowhere else:

- one deadline for the whole request, connect to last byte (`deadline_s`). httpx's timeouts
  are per read, so a receiver sending a byte every few seconds (headers or body) never trips
  them; here the request is a task on an event loop under `asyncio.timeout`, cancelled at the
  deadline wherever it is (connecting, TLS, headers, body);
- a stop (SIGTERM or Ctrl-C setting the `threading.Event` of `welcomemat.stop_signals`) cancels
  a request in flight within `STOP_POLL_S`: `ReceiverStopped`;
- the body is read raw, at most `RESPONSE_BODY_MAX_BYTES` of it: only the status matters. It is
  never decompressed (`Accept-Encoding: identity` is asked for, a `Content-Encoding` ignored), so
  a gzip bomb costs what its compressed bytes cost; a longer body (an endless chunked one) fails
  the attempt;
- redirects are never followed: a 3xx is a status like any other that is not 2xx;
- response headers are bounded by httpcore's h11 limit on an incomplete event (100 KiB).

Faults worth another attempt (deadline, body too long, connection refused or reset, a
malformed answer) raise `welcomemat.storage.resilience.RetryableError`, whose text never carries the
URL. The event loop runs in one daemon thread per client, so connections are kept alive
between requests as with a plain `httpx.Client`, and a process that forgets `close` still exits.

Around it, what both senders share: how hard to try a receiver (`ReceiverPolicy`,
`receiver_caller`: the one retry layer, whose waits end at a stop), what a status means
(`post_json`), and the receiver's URL, a credential (an incoming webhook's path, an `api_key`
query): `receiver_url` admits one through the one URL gate (`https` to a named host, `http`
only to a loopback host, never a user name or password) and `receiver_host` is all that is
ever printed of it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import random
import threading
import time
from collections.abc import AsyncGenerator, Callable, Coroutine, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar, cast

import httpx

from welcomemat.errors import ConfigError
from welcomemat.security.urlgate import browser_view, webhook_href
from welcomemat.storage.breaker import CircuitBreaker
from welcomemat.storage.resilience import ResilientCaller, RetryableError

__all__ = [
    "RECEIVER_DEADLINE_S",
    "RESPONSE_BODY_MAX_BYTES",
    "STOP_POLL_S",
    "ReceiverAnswer",
    "ReceiverClient",
    "ReceiverPolicy",
    "ReceiverStopped",
    "WebhookRejected",
    "post_json",
    "receiver_caller",
    "receiver_host",
    "receiver_url",
    "stoppable_sleep",
]

# Longest one request to a receiver may take, connect to last byte, in seconds (the default of
# WELCOMEMAT_RECEIVER_DEADLINE_S): past it the attempt failed and the delivery is retried later.
RECEIVER_DEADLINE_S = 10.0
_RETRYABLE_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
# Longest response body read from a receiver, in bytes, as it came over the wire (never
# decompressed). Receivers answer a status and a few bytes; a longer body fails the attempt.
RESPONSE_BODY_MAX_BYTES = 64 * 1024
# How often a request in flight looks at the stop event, in seconds: SIGTERM ends it this soon.
STOP_POLL_S = 0.1
_CLOSE_WAIT_S = 5.0  # how long `close` waits for the loop to close the client's connections

T = TypeVar("T")


class WebhookRejected(Exception):
    """The receiver answered with a status that retrying now will not change (e.g. 400, 401)."""


@dataclass(frozen=True, kw_only=True)
class ReceiverPolicy:
    """How hard to try one receiver: the CRM webhook (`WebhookConfig`) and the seller-alert
    chat channel (`outbound.alert_sender.AlertChannel`) alike."""

    timeout_s: float = RECEIVER_DEADLINE_S  # one request, connect to last byte (`ReceiverClient`)
    max_attempts: int = 3  # per delivery and pass
    backoff_base_s: float = 0.5
    backoff_cap_s: float = 8.0
    retry_after_cap_s: float = 30.0
    failure_threshold: int = 5  # consecutive failed attempts that open the breaker
    reset_after_s: float = 30.0  # how long the breaker stays open before one probe


def receiver_url(variable: str, raw: str) -> str:
    """The URL to post to, as the one URL gate normalised it (`welcomemat.security.urlgate.webhook_href`);
    ConfigError naming `variable`, never the value, when the gate refuses it."""
    href = webhook_href(raw)
    if href is None:
        raise ConfigError(
            f"{variable} must be an https URL with a host name (http only to 127.0.0.1, localhost "
            "or [::1]), without a user name or password"
        )
    return href


def receiver_host(url: str) -> str:
    """All of a receiver's URL that may be printed: its host (`?` when it does not parse)."""
    view = browser_view(url)
    return view[1] if view is not None and view[1] else "?"


def stoppable_sleep(stop: threading.Event) -> Callable[[float], None]:
    """A sleep that ends early when `stop` is set (the next attempt is then refused at once)."""

    def sleep(seconds: float) -> None:
        stop.wait(seconds)

    return sleep


def receiver_caller(
    policy: ReceiverPolicy,
    breaker: CircuitBreaker,
    *,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> ResilientCaller:
    """The one retry layer, set for a receiver: attempts, deadline per request, backoff, Retry-After cap."""
    return ResilientCaller(
        breaker,
        max_attempts=policy.max_attempts,
        timeout_s=policy.timeout_s,
        retry_after_cap_s=policy.retry_after_cap_s,
        backoff_base_s=policy.backoff_base_s,
        backoff_cap_s=policy.backoff_cap_s,
        sleep=sleep,
        rng=rng,
    )


class ReceiverStopped(Exception):
    """The process is stopping (SIGTERM, Ctrl-C): the request was not made, or was cancelled."""


@dataclass(frozen=True)
class ReceiverAnswer:
    """What a receiver answered: its status, and its Retry-After as sent (None when absent)."""

    status: int
    retry_after: str | None


class ReceiverClient:
    """POSTs to receivers under one deadline per request; thread-safe, one per sender."""

    def __init__(
        self,
        *,
        stop: threading.Event | None = None,
        body_max_bytes: int = RESPONSE_BODY_MAX_BYTES,
    ) -> None:
        self._stop = stop or threading.Event()
        self._body_max_bytes = body_max_bytes
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="wm-receiver-http", daemon=True)
        self._thread.start()
        self._client = self._run(self._open()).result()

    def post(self, url: str, body: bytes, headers: Mapping[str, str], deadline_s: float) -> ReceiverAnswer:
        """One POST, answered within `deadline_s` seconds or RetryableError; ReceiverStopped on stop."""
        if self._stop.is_set():
            raise ReceiverStopped("stopping: request not made")
        future = self._run(self._post(url, body, dict(headers), deadline_s))
        while True:
            try:
                return future.result(timeout=STOP_POLL_S)
            except concurrent.futures.TimeoutError:
                if self._stop.is_set():
                    future.cancel()  # cancels the task: its connection is closed, not reused
                    raise ReceiverStopped("stopping: request cancelled") from None

    def close(self) -> None:
        if self._loop.is_closed():
            return
        try:
            self._run(self._client.aclose()).result(timeout=_CLOSE_WAIT_S)
            self._run(self._loop.shutdown_asyncgens()).result(timeout=_CLOSE_WAIT_S)
        except (concurrent.futures.TimeoutError, RuntimeError):
            pass  # a connection that would not close goes with the process
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(_CLOSE_WAIT_S)
        if not self._thread.is_alive():
            self._loop.close()

    # -- on the loop's thread ------------------------------------------------------------------

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    async def _open(self) -> httpx.AsyncClient:
        # No client-wide timeout: the one deadline is the request's (`asyncio.timeout` below).
        return httpx.AsyncClient(timeout=None, follow_redirects=False)

    async def _post(
        self, url: str, body: bytes, headers: dict[str, str], deadline_s: float
    ) -> ReceiverAnswer:
        sent = {**headers, "Accept-Encoding": "identity"}
        try:
            async with asyncio.timeout(deadline_s):
                async with self._client.stream("POST", url, content=body, headers=sent) as response:
                    read = 0
                    # Closed here, not when collected: an abandoned generator's finalizer would
                    # be a task left pending on the loop.
                    raw = cast(AsyncGenerator[bytes, None], response.aiter_raw())  # an async generator
                    async with contextlib.aclosing(raw) as chunks:
                        async for chunk in chunks:
                            read += len(chunk)
                            if read > self._body_max_bytes:
                                raise RetryableError(
                                    detail=f"HTTP {response.status_code} with a body over "
                                    f"{self._body_max_bytes} bytes (not read further)"
                                )
                    return ReceiverAnswer(response.status_code, response.headers.get("Retry-After"))
        except TimeoutError:
            raise RetryableError(detail=f"no complete answer within the {deadline_s:g} s deadline") from None
        except httpx.HTTPError as exc:  # refused, reset, closed early, a malformed answer
            what = str(exc).replace(url, "the receiver") or "no detail"
            raise RetryableError(detail=f"{type(exc).__name__}: {what}") from None


def post_json(http: ReceiverClient, url: str, body: bytes, headers: dict[str, str], timeout_s: float) -> None:
    """One POST of a JSON body to a receiver (the CRM webhook, a seller-alert channel), whole
    within `timeout_s` seconds.

    Returns on a 2xx; RetryableError (with the receiver's Retry-After) for 408/425/429/5xx and
    faults (the deadline, a body over the cap, network errors), worth another attempt;
    WebhookRejected for any other status (a redirect included: it is never followed);
    ReceiverStopped when the process is stopping.
    """
    sent = {"Content-Type": "application/json", "User-Agent": "welcomemat-sync", **headers}
    answer = http.post(url, body, sent, timeout_s)
    if 200 <= answer.status < 300:
        return
    if answer.status in _RETRYABLE_STATUS:
        raise RetryableError(_retry_after(answer.retry_after), detail=f"HTTP {answer.status}")
    if 300 <= answer.status < 400:
        raise WebhookRejected(f"HTTP {answer.status} from the receiver: redirects are not followed")
    raise WebhookRejected(f"HTTP {answer.status} from the receiver")


def _retry_after(value: str | None) -> float | None:
    """Retry-After in seconds: delta-seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - datetime.now(UTC)).total_seconds()
