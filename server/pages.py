"""`GET /c/{campaign}` and `GET /c/{campaign}/continue`: the server-rendered pages.

A request: the steps `/v1/zones` shares (`server.visit`: find the campaign ▸ identify the
visitor ▸ arm ▸ zone set, or a returning visitor's remembered answer), their answer the
rendered page (cache, else Jinja2), its CTAs linked to the click redirect with a click token
signed for this view (`server.engagement.click_redirect`; their own URL when no secret is configured) ▸
log a `view` event naming the page (queued; not for a HEAD or the mail preflight,
`welcomemat.security.links.PREFLIGHT_USER_AGENT`) ▸ set the identification cookie if a link just
identified the visitor.

Nothing here can turn a Redis fault into an error: a campaign that cannot be loaded is
the plain page (200), a zone set that cannot be read is the fallback copy. An unknown
or malformed campaign id is 404: it names nothing we publish.
"""

from __future__ import annotations

import time

from starlette.requests import Request
from starlette.responses import Response

from server.bots import is_preflight
from server.cookies import set_identity_cookie, tracking_refused
from server.engagement.events import EngagementEvent, EventType
from server.faults import NO_STORE, fail_closed
from server.identify import IdentityMethod
from server.prepared_response import PreparedResponse
from server.problems import HTTPProblem, problem_response
from server.query import query_values
from server.random_ids import url_token
from server.render import PLAIN_RUNG, RenderedPage
from server.renderer_state import RendererState
from server.scope_headers import header_value
from server.security import csp_nonce
from server.visit import CampaignMiss
from server.visitor import Visit
from welcomemat.arms import Arm
from welcomemat.campaign.contract import CONTINUATION_PAGE_ID, LANDING_PAGE_ID
from welcomemat.errors import InputError
from welcomemat.security.tokens import PageClickTemplates, TokenKind, TokenSigner, ViewTokenTemplate

__all__ = ["PageResponse", "continuation_page", "landing_page", "new_view_id"]


LANDING_ROUTE = "/c/{campaign}"
CONTINUATION_ROUTE = "/c/{campaign}/continue"
_NOT_FOUND = {
    CampaignMiss.NOT_FOUND: "No such campaign.",
    CampaignMiss.NO_PAGE: "This campaign has no such page.",
}


_CONTENT_TYPE = (b"content-type", b"text/html; charset=utf-8")
_NO_STORE = (b"cache-control", b"private, no-store")


class PageResponse(PreparedResponse):
    """An HTML page no shared cache may keep (it is personal)."""

    media_type = "text/html"

    def __init__(self, html: str) -> None:
        body = html.encode("utf-8")
        super().__init__(body, [(b"content-length", b"%d" % len(body)), _CONTENT_TYPE, _NO_STORE])


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
      - {name: campaign, in: path, required: true, schema: {$ref: "#/components/schemas/Id"}}
      - {name: wm, in: query, required: false, schema: {type: string}, description: signed link token}
    responses:
      200:
        description: "The page (personal, segment or default copy; the plain page if nothing can be read)."
        content: {text/html: {schema: {type: string}}}
      404: {$ref: "#/components/responses/NotFoundPage", description: "No such campaign."}
    """
    return await _serve(request, LANDING_ROUTE, LANDING_PAGE_ID)


@fail_closed(CONTINUATION_ROUTE)
async def continuation_page(request: Request) -> Response:
    """
    summary: The continuation page a direct-mail QR code lands on (after /q/{token}).
    parameters:
      - {name: campaign, in: path, required: true, schema: {$ref: "#/components/schemas/Id"}}
    responses:
      200: {description: "The page.", content: {text/html: {schema: {type: string}}}}
      404:
        $ref: "#/components/responses/NotFoundPage"
        description: "No such campaign, or it has no continuation page."
    """
    return await _serve(request, CONTINUATION_ROUTE, CONTINUATION_PAGE_ID)


def _not_found(renderer: RendererState, request: Request, what: str) -> Response:
    # Answered, not raised: the hot routes bypass Starlette's handlers (`server.hot_routes`).
    return problem_response(request, HTTPProblem(404, what, headers=NO_STORE), renderer.pages)


def _plain(renderer: RendererState, request: Request, route: str, started: float) -> Response:
    renderer.metrics.pages.count_page(
        route, Arm.ANONYMOUS.value, PLAIN_RUNG, (), None, time.perf_counter() - started
    )
    return PageResponse(renderer.pages.plain().finish(csp_nonce(request.scope), ""))


async def _serve(request: Request, route: str, page_id: str) -> Response:
    """The page `page_id` of the path's campaign for this visitor (both page routes)."""
    started = time.perf_counter()
    renderer: RendererState = request.app.state.renderer
    campaign_id, link_token = request.path_params["campaign"], _link_token(request)
    visit = await renderer.page_visits.resolve(request, campaign_id, page_id, link_token, True)
    return _respond(renderer, request, visit, link_token, route, page_id, started)


def _link_token(request: Request) -> str | None:
    """The last `wm` parameter, as `request.query_params.get("wm")` reads it."""
    query_string = request.scope["query_string"]
    if not query_string:
        return None
    values = query_values(query_string).get("wm")
    return values[-1] if values else None


def _click_templates(signer: TokenSigner, visit: Visit[RenderedPage]) -> tuple[ViewTokenTemplate | None, ...]:
    """The click-token template of each CTA of the visit's page (None: an id a token cannot
    carry; ids are checked at input, so the CTA then keeps its own URL). Worked out once per
    remembered answer (`Visit.click_templates`): a returning visitor's views only sign them.
    What every visitor of the page shares is worked out once per page
    (`RenderedPage.click_templates`): a new visitor's view adds their ids."""
    templates = visit.click_templates
    if templates is None:
        page, identity, view = visit.result, visit.identity, visit.view
        key = (view.tenant, view.campaign_id, visit.arm._value_)
        known = page.click_templates.get(key)
        if known is None or known[0] is not signer:
            try:
                per_page: PageClickTemplates | None = signer.page_click_templates(
                    [(zone_id, cta_id) for _, zone_id, cta_id, _ in page.clicks],
                    tenant=view.tenant,
                    campaign=view.campaign_id,
                    arm=visit.arm,
                    rung=page.best_rung,
                    zone_set_version=page.zone_set_version,
                    variant=page.variant,
                )
            except InputError:
                per_page = None
            known = page.click_templates[key] = (signer, per_page)
        per_page, templates = known[1], (None,) * len(page.clicks)
        if per_page is not None:
            try:
                templates = per_page.for_visitor(identity.account, identity.contact)
            except InputError:
                pass  # ids are checked at input: their CTAs keep their own URLs
        visit.click_templates = templates
    return templates


def _respond(
    renderer: RendererState,
    request: Request,
    visit: Visit[RenderedPage] | CampaignMiss,
    link_token: str | None,
    route: str,
    page_id: str,
    started: float,
) -> Response:
    """The page for the visit (a view event logged, the cookie set), or 404, or the plain page."""
    if isinstance(visit, CampaignMiss):
        if visit is CampaignMiss.UNAVAILABLE:
            return _plain(renderer, request, route, started)
        return _not_found(renderer, request, _NOT_FOUND[visit])
    view, identity, page = visit.view, visit.identity, visit.result
    cookie_claims = visit.cookie_claims
    tenant, campaign_id = view.tenant, view.campaign_id
    # `_value_`: the members' values as stored (`.value` is a descriptor call on each read).
    arm_value, method_value = visit.arm._value_, identity.method._value_
    view_id = new_view_id()
    signer = renderer.signer
    # The click redirect a CTA of this view links to: `/r/<click token>` (same origin, relative).
    links = (
        [None if t is None else f"/r/{t.sign(view_id)}" for t in _click_templates(signer, visit)]
        if page.clicks and signer is not None
        else ()
    )
    response = PageResponse(page.finish(csp_nonce(request.scope), view_id, links))

    if (
        identity.method is IdentityMethod.LINK
        and identity.account is not None
        and link_token is not None
        and (
            cookie_claims is None
            or (cookie_claims.account, cookie_claims.contact) != (identity.account, identity.contact)
        )
        and not tracking_refused(request.scope)
    ):
        account, contact = identity.account, identity.contact
        cookie = renderer.identifier.arrival_cookie(
            TokenKind.LINK, link_token, account, contact, tenant=tenant, campaign=campaign_id
        )
        set_identity_cookie(response, cookie)

    # A HEAD (link checkers, prefetchers) is not a view, nor is the mail preflight's check.
    scope = request.scope
    if scope["method"] == "GET" and not is_preflight(header_value(scope, b"user-agent")):
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
                variant=page.variant,
                page=page_id,
            )
        )
    renderer.metrics.pages.count_page(
        route, arm_value, page.best_rung, page.zone_rungs, method_value, time.perf_counter() - started
    )
    return response
