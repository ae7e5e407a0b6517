"""`GET /v1/zones?campaign=…[&wm=…]`: the snippet's JSON, one visitor's zones.

The same steps as a page, written once in `server.visit`: find the campaign ▸ identify the
visitor (signed `wm` link token ▸ signed cookie, if one arrives ▸ IP range ▸ anonymous) ▸
arm ▸ zone set (cache, else one guarded Redis read), or a returning visitor's remembered
answer (`server.known_visitors`); their answer here is `zone_resolution` (the pages' ladder)
▸ `zones_payload` (the one serializer, which leaves default-rung zones out unless the
campaign sets `snippet.replace_default`: the site keeps its own copy there), cached per
(campaign config, arm, segment or zone-set version) like rendered pages; then a fresh view
id and a signed view token the beacons send back.

No view event is logged here: the snippet sends its `view` beacon once it has shown the
zones (written, or kept as the site wrote them), so a view is counted once, and only when the
page really showed them.

Faults: an unknown or malformed campaign is 404 / 400 (JSON). Redis down: the zone set
cannot be read, so the fallback is served (200): its default rung means no zones (the site
keeps its copy) unless `snippet.replace_default`; a campaign whose config was never loaded
is answered with no zones (200), and the snippet leaves the page's own copy. Anything
unforeseen is logged, counted and answered the same way: never a 5xx.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from server.cors import VARY_ORIGIN, allowed_origins, cors_headers, preflight_response, request_origin
from server.identify import Identity
from server.known_visitors import KnownAddresses, KnownVisitors
from server.pages import new_view_id
from server.prepared_response import PreparedResponse
from server.problems import HTTPProblem, problem_response
from server.query import query_values
from server.redis_guard import RedisUnavailable
from server.renderer_state import RendererState
from server.visit import CampaignMiss, VisitResolver
from server.visitor import Visitor
from welcomemat.arms import Arm
from welcomemat.campaign.view import CampaignView
from welcomemat.errors import StoredValueError
from welcomemat.ids import is_valid_id
from welcomemat.security.tokens import ViewTokenTemplate
from welcomemat.surfaces import Surface
from welcomemat.zones.payload import ZonesPayload, zones_payload
from welcomemat.zones.resolution import PLAIN_RUNG, choose_variant, resolve_zones

__all__ = ["ZONES_ROUTE", "ZonesApi", "ZonesResponse"]

log = logging.getLogger(__name__)

ZONES_ROUTE = "/v1/zones"
# Payloads kept (a few hundred bytes to a few KB each), like the rendered-page cache.
_PAYLOAD_CACHE_ENTRIES = 4_000

_CONTENT_TYPE = (b"content-type", b"application/json")
_NO_STORE = (b"cache-control", b"private, no-store")
_VARY_ORIGIN = {"vary": "Origin"}


class ZonesResponse(PreparedResponse):
    """A JSON body already encoded (the hot path)."""

    media_type = "application/json"

    def __init__(self, body: bytes, extra: list[tuple[bytes, bytes]]) -> None:
        super().__init__(body, [(b"content-length", b"%d" % len(body)), _CONTENT_TYPE, _NO_STORE, *extra])


@dataclass(frozen=True, slots=True)
class _Answer:
    """What a visitor's answers share: the payload, and their view token but for view id and time."""

    payload: ZonesPayload
    view_token: ViewTokenTemplate | None  # None: no secret configured, no view token


class ZonesApi:
    """The `/v1/zones` endpoints of one app, with their payload cache."""

    def __init__(self, renderer: RendererState, *, cache_entries: int = _PAYLOAD_CACHE_ENTRIES) -> None:
        self.renderer = renderer
        self._max = cache_entries
        self._cache: OrderedDict[Hashable, ZonesPayload] = OrderedDict()
        known: KnownVisitors[_Answer] = KnownVisitors(
            renderer.identifier,
            renderer.zone_cache,
            max_entries=renderer.tuning.known_visitor_entries,
            clock=renderer.clock,
        )
        addresses: KnownAddresses[_Answer] = KnownAddresses(
            renderer.zone_cache, max_entries=renderer.tuning.known_visitor_entries, clock=renderer.clock
        )
        self._visits = VisitResolver(renderer, known, addresses, self._build)

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
          zone's plain text, its rung (personal, segment; default only when the campaign
          sets `snippet.replace_default`, else a default-rung zone is left out and the site
          keeps its own copy) and, for a link zone, its allowlisted https href; `links`
          lists the allowlisted hosts; `view` is a signed view token the `/v1/events`
          beacons send back (null when no secret is configured or the campaign could not be
          loaded). CORS: `Access-Control-Allow-Origin` only for the campaign's
          `snippet_origins`, never credentials, `Vary: Origin` always. When Redis is
          unavailable the answer is the fallback (often no zones), still 200.
        parameters:
          - {name: campaign, in: query, required: true, schema: {$ref: "#/components/schemas/Id"}}
          - {name: wm, in: query, required: false, schema: {type: string}, description: signed link token}
        responses:
          200:
            description: "The zones: {campaign, arm, view_id, view, zones: {id: {text, rung, href?}}, links}."
            content: {application/json: {schema: {$ref: "#/components/schemas/Zones"}}}
          400:
            $ref: "#/components/responses/Problem"
            description: "Missing or malformed campaign parameter."
          404: {$ref: "#/components/responses/Problem", description: "No such campaign."}
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
        origin = request_origin(request.scope)
        params = query_values(request.scope["query_string"])
        campaign_values = params.get("campaign", [])
        vary = [VARY_ORIGIN]
        if len(campaign_values) != 1 or not campaign_values[0]:
            return self._refuse(
                request, 400, "give exactly one campaign parameter: /v1/zones?campaign=<campaign id>"
            )
        campaign_id = campaign_values[0]
        if not is_valid_id(campaign_id):
            return self._refuse(
                request,
                400,
                "campaign must be an id: 1-64 characters of A-Z a-z 0-9 _ . -, "
                "starting with a letter or digit",
            )
        link_tokens = params.get("wm")
        link_token = link_tokens[-1] if link_tokens else None
        visit = await self._visits.resolve(request, campaign_id, ZONES_ROUTE, link_token, False)
        if isinstance(visit, CampaignMiss):
            if visit is CampaignMiss.UNAVAILABLE:
                return self._plain(campaign_id, vary, started)
            return self._refuse(request, 404, "No such campaign.")
        extra = cors_headers(origin, allowed_origins(visit.view.campaign.snippet_origins))
        return self._answer(visit.identity, visit.arm, visit.result, extra, started)

    def _build(self, view: CampaignView, route: str, visitor: Visitor) -> _Answer:
        """A visitor's answer on the full path: the payload (cached per variant) and its view token."""
        renderer = self.renderer
        tenant, campaign_id = view.tenant, view.campaign_id
        arm = visitor.arm
        variant = choose_variant(arm, visitor.zone_set, renderer.now())
        cache_key = (tenant, campaign_id, view.fingerprint, *variant.key)
        payload = self._cache.get(cache_key)
        if payload is None:
            zones = resolve_zones(view, view.campaign.page_zone_ids(), variant, Surface.WEB)
            payload = zones_payload(
                campaign_id,
                arm,
                zones,
                view.allowlist.hosts,
                replace_default=view.campaign.snippet.replace_default,
            )
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
                variant=variant.copy_variant,
            )
        return _Answer(payload, view_token)

    def _refuse(self, request: Request, status: int, message: str) -> Response:
        # Answered, not raised: this hot route bypasses Starlette's handlers (`server.hot_routes`).
        problem = HTTPProblem(status, message, headers=_VARY_ORIGIN)
        return problem_response(request, problem, self.renderer.pages)

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
