"""`GET /v1/zones?campaign=…[&wm=…]`: the snippet's JSON, one visitor's zones.

The same flow as a page: find the campaign ▸ identify the visitor (signed `wm` link
token ▸ signed cookie, if one arrives ▸ IP range ▸ anonymous) ▸ arm ▸ zone set (cache,
else one guarded Redis read) ▸ `zone_resolution` (the pages' ladder) ▸ `zones_payload`
(the one serializer), cached per (campaign config, arm, segment or zone-set version) like
rendered pages ▸ a fresh view id and a signed view token the beacons send back. A
returning visitor's tokens skip from the campaign to the payload while nothing it depends on
has changed (`server.known_visitors`).

No view event is logged here: the snippet sends its `view` beacon once it has shown the
zones, so a view is counted once, and only when the page really showed them.

Faults: an unknown or malformed campaign is 404 / 400 (JSON). Redis down: the zone set
cannot be read, so the segment or default copy is served (200); a campaign whose config
was never loaded is answered with no zones (200), and the snippet leaves the page's own
copy. Anything unforeseen is logged, counted and answered the same way: never a 5xx.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from urllib.parse import unquote_plus

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from server.campaigns import CampaignState
from server.cookies import identity_cookie
from server.cors import VARY_ORIGIN, allowed_origins, cors_headers, preflight_response, request_origin
from server.identify import Identity
from server.known_visitors import KnownVisitors
from server.pages import new_view_id
from server.redis_guard import RedisUnavailable
from server.renderer import Renderer
from server.visitor import identify_visitor
from welcomemat.arms import Arm
from welcomemat.errors import StoredValueError
from welcomemat.ids import is_valid_id
from welcomemat.tokens import ViewTokenTemplate
from welcomemat.zone_resolution import PLAIN_RUNG, choose_variant, resolve_zones
from welcomemat.zones_payload import ZonesPayload, zones_payload

__all__ = ["ZONES_ROUTE", "ZonesApi", "ZonesResponse", "query_values"]

log = logging.getLogger(__name__)

ZONES_ROUTE = "/v1/zones"
# Payloads kept (a few hundred bytes to a few KB each), like the rendered-page cache.
_PAYLOAD_CACHE_ENTRIES = 4_000

_CONTENT_TYPE = (b"content-type", b"application/json")
_NO_STORE = (b"cache-control", b"private, no-store")


class ZonesResponse(Response):
    """A JSON body already encoded, with headers built without a loop (the hot path)."""

    media_type = "application/json"

    def __init__(self, body: bytes, extra: list[tuple[bytes, bytes]]) -> None:
        self._extra = extra
        super().__init__(body)

    def init_headers(self, headers: Mapping[str, str] | None = None) -> None:
        self.raw_headers = [
            (b"content-length", str(len(self.body)).encode()),
            _CONTENT_TYPE,
            _NO_STORE,
            *self._extra,
        ]


def _error(status: int, message: str, extra: list[tuple[bytes, bytes]]) -> Response:
    response = JSONResponse({"error": message}, status_code=status, headers={"cache-control": "no-store"})
    response.raw_headers.extend(extra)
    return response


def query_values(query_string: bytes) -> dict[str, list[str]]:
    """Parameters as `parse_qsl(keep_blank_values=True)` reads them (UTF-8, undecodable bytes
    replaced), without the cost of Starlette's multidict on this hot path."""
    found: dict[str, list[str]] = {}
    for part in query_string.decode("latin-1").split("&"):
        if not part:
            continue
        name, _, value = part.partition("=")
        if "%" in name or "+" in name:
            name = unquote_plus(name)
        if "%" in value or "+" in value:
            value = unquote_plus(value)
        elif not value.isascii():
            value = value.encode("latin-1").decode("utf-8", "replace")
        found.setdefault(name, []).append(value)
    return found


@dataclass(frozen=True, slots=True)
class _Answer:
    """What a visitor's answers share: the payload, and their view token but for view id and time."""

    payload: ZonesPayload
    view_token: ViewTokenTemplate | None  # None: no secret configured, no view token


class ZonesApi:
    """The `/v1/zones` endpoints of one app, with their payload cache."""

    def __init__(self, renderer: Renderer, *, cache_entries: int = _PAYLOAD_CACHE_ENTRIES) -> None:
        self.renderer = renderer
        self._max = cache_entries
        self._cache: OrderedDict[Hashable, ZonesPayload] = OrderedDict()
        self._known: KnownVisitors[_Answer] = KnownVisitors(
            renderer.identifier,
            renderer.zone_cache,
            max_entries=renderer.tuning.known_visitor_entries,
            clock=renderer.clock,
        )

    async def preflight(self, request: Request) -> Response:
        """`OPTIONS /v1/zones?campaign=…`: the CORS grant for the campaign's origins only."""
        origin = request_origin(request.scope)
        campaign_id = request.query_params.get("campaign")
        state = self.renderer.campaigns.cached(campaign_id) if campaign_id else None
        if state is None and is_valid_id(campaign_id):
            try:
                state = await self.renderer.campaigns.resolve(campaign_id)
            except (RedisUnavailable, StoredValueError):
                state = None
        allowed = allowed_origins(state.view.campaign.snippet_origins) if state is not None else frozenset()
        return preflight_response(origin, allowed, ("GET",))

    async def zones(self, request: Request) -> Response:
        """
        summary: The visitor's zones for the embeddable snippet (JSON).
        description: >
          Identifies the visitor like the landing page (signed `wm` link token, signed
          cookie if sent, IP range of a known account, else anonymous) and answers each
          zone's plain text, its rung (personal, segment, default) and, for a link zone, its
          allowlisted https href; `links` lists the allowlisted hosts; `view` is a signed view
          token the `/v1/events` beacons send back (null when no secret is configured or the
          campaign could not be loaded). CORS: `Access-Control-Allow-Origin` only for the
          campaign's `snippet_origins`, never credentials, `Vary: Origin` always. When Redis
          is unavailable the answer is the segment or default copy (or no zones), still 200.
        parameters:
          - {name: campaign, in: query, required: true, schema: {type: string}}
          - {name: wm, in: query, required: false, schema: {type: string}, description: signed link token}
        responses:
          200:
            description: "The zones: {campaign, arm, view_id, view, zones: {id: {text, rung, href?}}, links}."
          400: {description: "Missing or malformed campaign parameter."}
          404: {description: "No such campaign."}
        """
        started = time.perf_counter()
        try:
            return await self._zones(request, started)
        except Exception:
            log.exception("unhandled error on %s", ZONES_ROUTE)
            self.renderer.metrics.faults.labels(ZONES_ROUTE).inc()
            campaign_id = request.query_params.get("campaign", "")
            return self._empty(campaign_id if is_valid_id(campaign_id) else "", [VARY_ORIGIN])

    async def _zones(self, request: Request, started: float) -> Response:
        renderer = self.renderer
        origin = request_origin(request.scope)
        params = query_values(request.scope["query_string"])
        campaign_values = params.get("campaign", [])
        vary = [VARY_ORIGIN]
        if len(campaign_values) != 1 or not campaign_values[0]:
            return _error(400, "give exactly one campaign parameter: /v1/zones?campaign=<campaign id>", vary)
        campaign_id = campaign_values[0]
        if not is_valid_id(campaign_id):
            return _error(
                400,
                "campaign must be an id: 1-64 characters of A-Z a-z 0-9 _ . -, "
                "starting with a letter or digit",
                vary,
            )
        state = renderer.campaigns.cached(campaign_id)
        if state is None:
            try:
                state = await renderer.campaigns.resolve(campaign_id)
            except RedisUnavailable:
                return self._plain(campaign_id, vary, started)
            except StoredValueError as exc:
                renderer.metrics.stored_value_errors.inc()
                log.error("%s", exc)
                return self._plain(campaign_id, vary, started)
            if state is None:
                return _error(404, "No such campaign.", vary)
        extra = cors_headers(origin, allowed_origins(state.view.campaign.snippet_origins))
        link_tokens = params.get("wm")
        return await self._serve(request, state, link_tokens[-1] if link_tokens else None, extra, started)

    async def _serve(
        self,
        request: Request,
        state: CampaignState,
        link_token: str | None,
        extra: list[tuple[bytes, bytes]],
        started: float,
    ) -> Response:
        renderer = self.renderer
        view = state.view
        tenant, campaign_id = view.tenant, view.campaign_id
        cookie_token = identity_cookie(request, campaign_id)
        key = None
        if link_token is not None or cookie_token is not None:
            key = (campaign_id, ZONES_ROUTE, link_token, cookie_token)
            known = self._known.get(key, view)
            if known is not None:  # a returning visitor, and nothing changed since
                renderer.metrics.pages.known_visitors["hit"] += 1
                return self._answer(known.identity, known.arm, known.result, extra, started)
            renderer.metrics.pages.known_visitors["miss"] += 1
        changes = renderer.zone_cache.changes  # read before any look-up: a change meanwhile voids the entry
        visitor = await identify_visitor(renderer, request, state, link_token, cookie_token)
        arm = visitor.arm
        variant = choose_variant(arm, visitor.zone_set, renderer.now())
        cache_key = (tenant, campaign_id, view.fingerprint, *variant.key)
        payload = self._cache.get(cache_key)
        if payload is None:
            zones = resolve_zones(view, view.campaign.page_zone_ids(), variant)
            payload = zones_payload(campaign_id, arm, zones, view.allowlist.hosts)
            self._cache[cache_key] = payload
            while len(self._cache) > self._max:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(cache_key)
        view_token = None
        if renderer.signer is not None:
            view_token = renderer.signer.view_template(
                tenant=tenant,
                campaign=campaign_id,
                arm=arm,
                rung=payload.best_rung,
                account=visitor.identity.account,
                contact=visitor.identity.contact,
                zone_set_version=variant.zone_set_version,
            )
        answer = _Answer(payload, view_token)
        if key is not None:
            self._known.remember(key, view, changes, visitor, answer)
        return self._answer(visitor.identity, arm, answer, extra, started)

    def _answer(
        self, identity: Identity, arm: Arm, answer: _Answer, extra: list[tuple[bytes, bytes]], started: float
    ) -> Response:
        """The payload with a fresh view id and its signed view token."""
        payload = answer.payload
        view_id = new_view_id()
        token = answer.view_token.sign(view_id) if answer.view_token is not None else None
        self.renderer.metrics.pages.count_page(
            ZONES_ROUTE,
            arm.value,
            payload.best_rung,
            payload.zone_rungs,
            identity.method.value,
            time.perf_counter() - started,
        )
        return ZonesResponse(payload.encode(view_id, token), extra)

    def _plain(self, campaign_id: str, extra: list[tuple[bytes, bytes]], started: float) -> Response:
        """No campaign config to serve from: no zones (the page keeps its own copy), counted."""
        self.renderer.metrics.pages.count_page(
            ZONES_ROUTE, Arm.ANONYMOUS.value, PLAIN_RUNG, (), None, time.perf_counter() - started
        )
        return self._empty(campaign_id, extra)

    @staticmethod
    def _empty(campaign_id: str, extra: list[tuple[bytes, bytes]]) -> Response:
        body = zones_payload(campaign_id, Arm.ANONYMOUS, (), ()).encode(new_view_id(), None)
        return ZonesResponse(body, extra)
