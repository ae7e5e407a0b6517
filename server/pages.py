"""`GET /c/{campaign}` and `GET /c/{campaign}/continue`: the server-rendered pages.

A request: find the campaign ▸ identify the visitor ▸ assign the arm ▸ get the zone set
(cache, else one guarded Redis read) ▸ render (cache, else Jinja2) ▸ log a `view`
event (queued) ▸ set the identification cookie if a link just identified the visitor.
A returning visitor's tokens skip the middle steps while nothing they depend on has
changed (`server.known_visitors`).

Nothing here can turn a Redis fault into an error: a campaign that cannot be loaded is
the plain page (200), a zone set that cannot be read is the fallback copy. An unknown
or malformed campaign id is 404: it names nothing we publish.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from server.cookies import identity_cookie, set_identity_cookie, tracking_refused
from server.events import EngagementEvent, EventType
from server.faults import NO_STORE, fail_closed
from server.identify import Identity, IdentityMethod
from server.random_ids import url_token
from server.redis_guard import RedisUnavailable
from server.render import PLAIN_RUNG, RenderedPage
from server.renderer import Renderer
from server.security import csp_nonce
from server.visitor import identify_visitor
from welcomemat.arms import Arm
from welcomemat.campaign_view import CampaignView
from welcomemat.errors import StoredValueError
from welcomemat.ids import is_valid_id
from welcomemat.tokens import DEFAULT_COOKIE_TTL_S, TokenClaims

__all__ = ["PageResponse", "continuation_page", "landing_page", "new_view_id"]

log = logging.getLogger(__name__)

LANDING_ROUTE = "/c/{campaign}"
CONTINUATION_ROUTE = "/c/{campaign}/continue"


_CONTENT_TYPE = (b"content-type", b"text/html; charset=utf-8")
_NO_STORE = (b"cache-control", b"private, no-store")


class PageResponse(HTMLResponse):
    """An HTML page no shared cache may keep (it is personal), headers built without a loop."""

    def init_headers(self, headers: Mapping[str, str] | None = None) -> None:
        self.raw_headers = [(b"content-length", str(len(self.body)).encode()), _CONTENT_TYPE, _NO_STORE]


def new_view_id() -> str:
    """16 URL-safe characters (96 random bits): ties a page's later beacons to this view."""
    return url_token(12)


@fail_closed(LANDING_ROUTE)
async def landing_page(request: Request) -> Response:
    """
    summary: The campaign's landing page, personalised when the visitor is identified.
    description: >
      Identifies the visitor by the signed `wm` link token, the signed cookie, or the IP
      range of a known account, in that order; anything invalid is treated as anonymous.
      Always 200 for a published campaign, also when Redis is unavailable (fallback copy).
    parameters:
      - {name: campaign, in: path, required: true, schema: {type: string}}
      - {name: wm, in: query, required: false, schema: {type: string}, description: signed link token}
    responses:
      200: {description: "The page (personal, segment or default copy)."}
      404: {description: "No such campaign."}
    """
    return await _page(request, "landing", LANDING_ROUTE)


@fail_closed(CONTINUATION_ROUTE)
async def continuation_page(request: Request) -> Response:
    """
    summary: The continuation page a direct-mail QR code lands on (after /q/{token}).
    parameters:
      - {name: campaign, in: path, required: true, schema: {type: string}}
    responses:
      200: {description: "The page."}
      404: {description: "No such campaign, or it has no continuation page."}
    """
    return await _page(request, "continuation", CONTINUATION_ROUTE)


def _not_found(renderer: Renderer, what: str) -> Response:
    return HTMLResponse(renderer.pages.error(404, what), status_code=404, headers=NO_STORE)


def _plain(renderer: Renderer, request: Request, route: str, started: float) -> Response:
    renderer.metrics.pages.count_page(
        route, Arm.ANONYMOUS.value, PLAIN_RUNG, (), None, time.perf_counter() - started
    )
    return PageResponse(renderer.pages.plain().finish(csp_nonce(request.scope), ""))


async def _page(request: Request, page_id: str, route: str) -> Response:
    started = time.perf_counter()
    renderer: Renderer = request.app.state.renderer
    campaign_id = request.path_params["campaign"]
    state = renderer.campaigns.cached(campaign_id)  # a loaded campaign: no coroutine to run
    if state is None:
        if not is_valid_id(campaign_id):
            return _not_found(renderer, "No such campaign.")
        try:
            state = await renderer.campaigns.resolve(campaign_id)
        except RedisUnavailable:
            return _plain(renderer, request, route, started)
        except StoredValueError as exc:
            renderer.metrics.stored_value_errors.inc()
            log.error("%s", exc)
            return _plain(renderer, request, route, started)
        if state is None:
            return _not_found(renderer, "No such campaign.")
    view = state.view
    if view.page(page_id) is None:
        return _not_found(renderer, "This campaign has no such page.")
    link_token = request.query_params.get("wm") if request.scope["query_string"] else None
    cookie_token = identity_cookie(request, campaign_id)
    key = None
    if link_token is not None or cookie_token is not None:
        key = (campaign_id, page_id, link_token, cookie_token)
        known = renderer.known_pages.get(key, view)
        if known is not None:  # a returning visitor, and nothing changed since: the same page
            renderer.metrics.pages.known_visitors["hit"] += 1
            identity, cookie_claims, arm = known.identity, known.cookie_claims, known.arm
            return _respond(
                renderer, request, view, identity, cookie_claims, arm, known.result, route, started
            )
        renderer.metrics.pages.known_visitors["miss"] += 1
    changes = renderer.zone_cache.changes  # read before any look-up: a change meanwhile voids the entry
    visitor = await identify_visitor(renderer, request, state, link_token, cookie_token)
    page = renderer.pages.render(view, page_id, visitor.arm, visitor.zone_set, renderer.now())
    if key is not None:
        renderer.known_pages.remember(key, view, changes, visitor, page)
    identity, cookie_claims, arm = visitor.identity, visitor.cookie_claims, visitor.arm
    return _respond(renderer, request, view, identity, cookie_claims, arm, page, route, started)


def _respond(
    renderer: Renderer,
    request: Request,
    view: CampaignView,
    identity: Identity,
    cookie_claims: TokenClaims | None,
    arm: Arm,
    page: RenderedPage,
    route: str,
    started: float,
) -> Response:
    tenant, campaign_id = view.tenant, view.campaign_id
    arm_value, method_value = arm.value, identity.method.value
    view_id = new_view_id()
    response = PageResponse(page.finish(csp_nonce(request.scope), view_id))

    if (
        identity.method is IdentityMethod.LINK
        and identity.account is not None
        and (
            cookie_claims is None
            or (cookie_claims.account, cookie_claims.contact) != (identity.account, identity.contact)
        )
        and not tracking_refused(request.headers)
    ):
        token = renderer.cookie_token(
            tenant, campaign_id, identity.account, identity.contact, DEFAULT_COOKIE_TTL_S
        )
        set_identity_cookie(response, campaign_id, token, DEFAULT_COOKIE_TTL_S)

    if request.method == "GET":  # a HEAD (link checkers, prefetchers) is not a view
        renderer.events.emit(
            EngagementEvent(
                type=EventType.VIEW,
                tenant=tenant,
                campaign=campaign_id,
                view_id=view_id,
                ts_ms=renderer.now_ms(),
                arm=arm_value,
                account=identity.account,
                contact=identity.contact,
                rung=page.best_rung,
                zone_set_version=page.zone_set_version,
                identified_by=method_value,
            )
        )
    renderer.metrics.pages.count_page(
        route, arm_value, page.best_rung, page.zone_rungs, method_value, time.perf_counter() - started
    )
    return response
