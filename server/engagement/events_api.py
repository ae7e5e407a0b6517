"""`POST /v1/events`: the snippet's `view` and `click` beacons.

A beacon is `{"campaign", "view", "event_id", "type": "view"|"click", "zone"?}` sent as
`text/plain` (what `navigator.sendBeacon` sends without a CORS preflight) or
`application/json`, at most `MAX_BODY_BYTES`. In order, each step refusing early:

1. media type `text/plain` or `application/json` (UTF-8), else 415;
2. a declared `Content-Length` over the limit is 413 before anything is read, and the
   body is read only up to the limit (413 past it, whatever the header said), by
   `server.bodies` (the one body reader: the connection is closed after a refusal);
3. rate limit per client (`server.rate_limit`), 429 with `Retry-After` (and
   `Connection: close`: the body is left unread);
4. obvious bots (`server.bots`) are answered 204 and counted, never written (their body is
   read first, bounded like any other, so no answer leaves a body half-read);
5. the body must be UTF-8 JSON within the limits of `welcomemat.bounded_json` (nesting,
   numbers, no NaN, no repeated key) that `BeaconBody` accepts, else 400 naming the field;
6. the view token must verify (`TokenSigner.verify_view`) for the body's campaign, and
   name the tenant that owns it when this renderer has it loaded, else 400: the event's
   tenant, account, contact, arm, rung, zone-set version and view id all come from the
   token, never from the client, so no one can attribute an event to an account it was not
   served, nor to a tenant that does not own the campaign id; a token issued before its
   account (or contact) was erased (`welcomemat.records.erasure`, as the loaded campaign knows it)
   is written without them;
7. a `zone` must be one of the campaign's (the zones of its pages, as this renderer has it
   loaded), else 400 naming the field: each would otherwise become a field of the account
   record, counted as a click (the engagement sync drops such clicks too, for a campaign
   this renderer had not loaded);
8. a view token counts its view once and a click once per zone: a beacon whose view (or
   click on that zone) was written before, whatever its event id and from whatever address
   it is replayed (this process's memory, then `SET NX` on `keys.beacon_view_key` in the
   event writer's batch across every renderer), is answered 204 and not written again.

Then the event goes to the tenant's stream through the bounded `EventWriter` queue: when
Redis is down the events wait there (bounded; beyond, dropped and counted), and the
client still gets 204. Nothing on this path reads Redis: the tenant is the one the token
names (verified by its signature), not looked up.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from typing import Annotated, Literal

from prometheus_client import Counter
from pydantic import BaseModel, ConfigDict, StringConstraints, ValidationError, model_validator
from starlette.requests import Request
from starlette.responses import Response

from server.bodies import BodyRefused, declared_length, read_bounded_body
from server.bots import is_obvious_bot
from server.cors import VARY_ORIGIN, allowed_origins, cors_headers, preflight_response, request_origin
from server.engagement.events import EventType, token_event
from server.identify import client_address, token_failure_reason
from server.problems import HTTPProblem
from server.rate_limit import RateLimiter, client_key
from server.renderer_state import RendererState
from server.scope_headers import joined_header
from welcomemat.bounded_json import decode_json
from welcomemat.errors import InputError, TokenError
from welcomemat.ids import ID_PATTERN
from welcomemat.limits import BEACON_BODY_MAX_BYTES
from welcomemat.security.tokens import MAX_VIEW_TOKEN_CHARS, ViewClaims, claimed_scope
from welcomemat.validation_errors import dotted, first_problem

__all__ = ["EVENTS_ROUTE", "MAX_BODY_BYTES", "BeaconBody", "BeaconRefused", "EventsApi"]

log = logging.getLogger(__name__)

EVENTS_ROUTE = "/v1/events"
#: The largest beacon body accepted, in bytes (a real one is about 400).
MAX_BODY_BYTES = BEACON_BODY_MAX_BYTES
_MEDIA_TYPES = frozenset({"text/plain", "application/json"})
# Per client: a page sends one view and a few clicks; an office behind one address sends
# many pages' worth. Beyond this, a flood.
_RATE_PER_S = 10.0
_BURST = 50
_MAX_CLIENTS = 100_000
# Views and clicks (view id, zone) remembered in this process, in front of the writer's SET NX.
_SEEN_ENTRIES = 100_000

_Id = Annotated[str, StringConstraints(strict=True, pattern=ID_PATTERN)]


class BeaconBody(BaseModel):
    """A beacon as the snippet sends it. Unknown fields and types are refused."""

    # The click rule below, said in the JSON Schema `server.openapi` publishes for this body.
    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        json_schema_extra={
            "if": {"properties": {"type": {"const": "click"}}},
            "then": {"required": ["zone"], "properties": {"zone": {"type": "string"}}},
        },
    )

    campaign: _Id
    view: Annotated[str, StringConstraints(strict=True, min_length=1, max_length=MAX_VIEW_TOKEN_CHARS)]
    event_id: _Id
    type: Literal["view", "click"]
    zone: _Id | None = None

    @model_validator(mode="after")
    def _click_names_its_zone(self) -> BeaconBody:
        if self.type == "click" and self.zone is None:
            raise ValueError("a click names the zone that was clicked (field zone)")
        return self


class BeaconRefused(HTTPProblem):
    """A beacon refused: its status and message, and `result`, the beacon counter's label."""

    def __init__(self, status: int, result: str, message: str, headers: dict[str, str] | None = None) -> None:
        # Every answer of this route varies by Origin (CORS), its refusals included.
        super().__init__(status, message, headers={**(headers or {}), "vary": "Origin"})
        self.result = result


def _media_type_ok(header: str | None) -> bool:
    if header is None:
        return False
    media, _, params = header.partition(";")
    if media.strip().lower() not in _MEDIA_TYPES:
        return False
    for param in params.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip('"').lower() not in ("utf-8", "utf8"):
            return False
    return True


class EventsApi:
    """The `/v1/events` endpoints of one app: rate limiter, seen ids, beacon counters."""

    def __init__(
        self,
        renderer: RendererState,
        *,
        rate_per_s: float = _RATE_PER_S,
        burst: int = _BURST,
        max_clients: int = _MAX_CLIENTS,
        seen_entries: int = _SEEN_ENTRIES,
    ) -> None:
        self.renderer = renderer
        self.limiter = RateLimiter(
            rate_per_s=rate_per_s, burst=burst, max_clients=max_clients, clock=renderer.clock
        )
        self._seen: OrderedDict[tuple[str, str, str | None], None] = OrderedDict()
        self._seen_max = seen_entries
        self.beacons = Counter(
            "welcomemat_beacons",
            "Beacons received on POST /v1/events, by result (accepted, duplicate, bot, rate_limited, "
            "too_large, bad_media_type, bad_request, bad_token).",
            ["result"],
            registry=renderer.metrics.registry,
        )

    async def preflight(self, request: Request) -> Response:
        """`OPTIONS /v1/events`: granted to origins some loaded campaign lists (`?campaign=`
        narrows it to that campaign's). A preflight carries no body, so no campaign."""
        origin = request_origin(request.scope)
        campaign_id = request.query_params.get("campaign")
        states = self.renderer.campaigns.loaded()
        if campaign_id:
            states = [s for s in states if s.campaign_id == campaign_id]
        allowed: set[str] = set()
        for state in states:
            allowed |= allowed_origins(state.view.campaign.snippet_origins)
        return preflight_response(origin, allowed, ("POST",))

    async def events(self, request: Request) -> Response:
        """
        summary: An engagement beacon from the snippet (view or click).
        description: >
          Body (text/plain or application/json, at most 4096 bytes):
          `{"campaign", "view": <view token from /v1/zones>, "event_id", "type": "view"|"click",
          "zone"?}`. The view token decides the tenant, account, arm and rung the event is
          written with; `zone` must be one of the campaign's. Rate-limited per client; obvious
          bots and repeats (a view token counts its view once, a click once per zone) are
          answered 204 and not written. Written to the tenant's event stream from a bounded
          queue (also while Redis is unavailable).
        requestBody:
          required: true
          content:
            text/plain:
              schema:
                type: string
                contentMediaType: application/json
                contentSchema: {$ref: "#/components/schemas/BeaconBody"}
            application/json: {schema: {$ref: "#/components/schemas/BeaconBody"}}
        responses:
          204: {description: "Accepted (or ignored: bot, duplicate)."}
          400:
            $ref: "#/components/responses/Problem"
            description: "Malformed body, unknown type, field or zone, bad or expired view token."
          408: {$ref: "#/components/responses/Problem", description: "The body did not arrive in time."}
          413: {$ref: "#/components/responses/Problem", description: "Body over 4096 bytes."}
          415:
            $ref: "#/components/responses/Problem"
            description: "Not text/plain or application/json in UTF-8."
          429: {$ref: "#/components/responses/RateLimited", description: "Too many beacons from this client."}
        """
        started = time.perf_counter()
        origin = request_origin(request.scope)
        try:
            return await self._accept(request, origin, started)
        except BeaconRefused as refused:  # answered by `server.problems`, counted here
            self.beacons.labels(refused.result).inc()
            raise
        except Exception:
            # A bug must not cost the client a 5xx: the beacon is lost, logged and counted.
            log.exception("unhandled error on %s", EVENTS_ROUTE)
            self.renderer.metrics.faults.labels(EVENTS_ROUTE).inc()
            return Response(status_code=204, headers={"vary": "Origin"})

    async def _accept(self, request: Request, origin: str | None, started: float) -> Response:
        renderer = self.renderer
        if not _media_type_ok(request.headers.get("content-type")):
            raise BeaconRefused(
                415, "bad_media_type", "send the beacon as text/plain or application/json (UTF-8)"
            )
        try:
            declared_length(request.headers.get("content-length"), MAX_BODY_BYTES)
        except BodyRefused as refused:
            raise _beacon_refusal(refused) from None
        client = request.client
        peer = client.host if client else None
        if peer and not renderer.proxies and ":" not in peer:
            key = peer  # an IPv4 peer is its own key: no address parsing on the common path
        else:
            key = client_key(
                client_address(
                    peer, joined_header(request.scope, b"x-forwarded-for") or None, renderer.proxies
                )
            )
        if not self.limiter.allow(key):
            raise BeaconRefused(
                429,
                "rate_limited",
                "too many beacons from this client; retry later",
                # The body stays unread: closing the connection keeps a flood from sending it.
                {"retry-after": str(self.limiter.retry_after_s(key)), "connection": "close"},
            )
        body = await self._read_body(request)  # a bot's too: no answer leaves a body half-read
        if is_obvious_bot(request.headers.get("user-agent")):
            self.beacons.labels("bot").inc()
            return Response(status_code=204, headers={"vary": "Origin"})
        beacon = self._parse(body)
        tenant = self._verify_tenant(beacon)
        claims = self._verify(beacon, tenant)
        state = renderer.campaigns.cached(beacon.campaign)  # never a Redis read here
        if (
            beacon.zone is not None
            and state is not None
            and beacon.zone not in state.view.campaign.page_zone_ids()
        ):
            raise BeaconRefused(
                400, "bad_request", f"zone: {beacon.zone!r} is not a zone of campaign {beacon.campaign!r}"
            )
        extra = self._cors(origin, beacon.campaign)
        # A view once, a click once per zone: however often, from wherever, the token is replayed.
        counted_zone = beacon.zone if beacon.type == "click" else None
        seen_key = (tenant, claims.view_id, counted_zone)
        if seen_key in self._seen:
            self._seen.move_to_end(seen_key)
            self.beacons.labels("duplicate").inc()
            return _no_content(extra)
        self._seen[seen_key] = None
        if len(self._seen) > self._seen_max:
            self._seen.popitem(last=False)
        revoked = (
            claims.account is not None
            and state is not None
            and state.tenant == tenant
            and state.revocations.revoked(claims.account, claims.contact, claims.issued_at)
        )
        if revoked:
            # Served before the account (or contact) was erased: the beacon counts, anonymously.
            renderer.metrics.token_rejections.labels("view", "revoked").inc()
        renderer.events.emit(
            token_event(
                EventType(beacon.type),
                tenant=tenant,
                campaign=beacon.campaign,
                claims=claims,
                zone=beacon.zone,
                ts_ms=renderer.now_ms(),
                revoked=revoked,
                event_id=beacon.event_id,
            )
        )
        self.beacons.labels("accepted").inc()
        renderer.metrics.pages.count_page(
            EVENTS_ROUTE, claims.arm.value, claims.rung, (), None, time.perf_counter() - started
        )
        return _no_content(extra)

    async def _read_body(self, request: Request) -> bytes:
        try:
            return await read_bounded_body(request, MAX_BODY_BYTES, self.renderer.tuning.body_read_timeout_s)
        except BodyRefused as refused:
            raise _beacon_refusal(refused) from None

    @staticmethod
    def _parse(body: bytes) -> BeaconBody:
        try:
            data = decode_json(body, max_bytes=MAX_BODY_BYTES)
        except InputError as exc:
            raise BeaconRefused(400, "bad_request", f"{exc.field or 'body'}: {exc.message}") from None
        if not isinstance(data, dict):
            raise BeaconRefused(400, "bad_request", "body must be a JSON object")
        try:
            return BeaconBody.model_validate(data)
        except ValidationError as exc:
            loc, message = first_problem(exc)
            field = dotted(loc)
            raise BeaconRefused(400, "bad_request", f"{field}: {message}" if field else message) from None

    def _verify_tenant(self, beacon: BeaconBody) -> str:
        # The tenant the token claims is only a hint for which key to check it against:
        # verify_view below refuses it unless the signature covers that tenant.
        scope = claimed_scope(beacon.view, max_chars=MAX_VIEW_TOKEN_CHARS)
        if scope is None or scope[1] != beacon.campaign:
            self.renderer.metrics.token_rejections.labels("view", "malformed").inc()
            raise BeaconRefused(400, "bad_token", "view: not a view token of this campaign")
        # A campaign id is one tenant's: an event of another tenant under it is refused (checked
        # against the campaign when this renderer has it loaded: never a Redis read here).
        state = self.renderer.campaigns.cached(beacon.campaign)
        if state is not None and state.tenant != scope[0]:
            self.renderer.metrics.token_rejections.labels("view", "other_tenant").inc()
            raise BeaconRefused(400, "bad_token", "view: not a view token of this campaign")
        return scope[0]

    def _verify(self, beacon: BeaconBody, tenant: str) -> ViewClaims:
        signer = self.renderer.signer
        if signer is None:
            raise BeaconRefused(
                400, "bad_token", "view: this renderer verifies no tokens (no secret configured)"
            )
        try:
            return signer.verify_view(beacon.view, tenant=tenant, campaign=beacon.campaign)
        except TokenError as exc:
            reason = token_failure_reason(exc)
            self.renderer.metrics.token_rejections.labels("view", reason).inc()
            raise BeaconRefused(400, "bad_token", f"view: token refused ({reason})") from None

    def _cors(self, origin: str | None, campaign_id: str) -> list[tuple[bytes, bytes]]:
        state = self.renderer.campaigns.cached(campaign_id)  # never a Redis read here
        if state is None:
            return [VARY_ORIGIN]
        return cors_headers(origin, allowed_origins(state.view.campaign.snippet_origins))


def _beacon_refusal(refused: BodyRefused) -> BeaconRefused:
    """The body reader's refusal as the beacon counter counts it (413 too_large, else bad_request)."""
    result = "too_large" if refused.status == 413 else "bad_request"
    return BeaconRefused(refused.status, result, refused.public_message, dict(refused.headers or {}))


def _no_content(extra: list[tuple[bytes, bytes]]) -> Response:
    response = Response(status_code=204)
    response.raw_headers.extend(extra)
    return response
