"""`GET /r/{token}`: a hosted page's CTA click, counted, then 303 to the CTA's own URL.

The renderer's pages run no script, so only the server can see a click on their CTA. Each
page view links its CTAs to `/r/<click token>` (signed per request, `server.pages`): the
view's claims (tenant, campaign, view id, arm, rung, account, contact, zone-set version,
copy variant) and the zone and CTA id of the link (`welcomemat.security.tokens`, "Click tokens").

The answer is a 303 (`Cache-Control: private, no-store`) whose `Location` is read from what
was published, never from the request nor from the token (which names only ids):

1. a token that verifies for the campaign's owner goes to the CTA it names: the zone's href
   in the account's published zone set when the token names that zone set's version, the
   zone still names the same CTA and its href passes the URL gate (`welcomemat.security.urlgate`)
   against the campaign's allowlist as published now; else the campaign's CTA of that id
   (the segment or default copy the view was served), through the same gate;
2. anything else (a malformed, tampered, expired or other tenant's token; a CTA gone from the
   campaign, or whose URL the gate now refuses) goes to the campaign's default CTA (the first
   link zone of its default copy), else to its `site_base_url`, both gated;
3. a campaign that cannot be loaded now (Redis down and not yet loaded here) goes to its
   landing page, `WELCOMEMAT_PUBLIC_URL/c/<campaign>` (which serves its fallback); a token
   that names no published campaign is a 404 page, as `/q/{token}`'s.

A verified token's click is written as a `click` event (the token's arm, account, contact,
rung, zone-set version and variant; the account left out when it was erased since, as for
beacons) with the beacons' de-duplication key (`keys.beacon_view_key`: once per view and
zone, whoever replays it to whichever renderer, shared with the snippet's click beacons).
Obvious bots (`server.bots`), the mail preflight and a HEAD are redirected but not counted. When
Redis is down the event waits in the writer's bounded queue (beyond it, dropped and
counted); the visitor is redirected all the same. Results: `welcomemat_cta_redirects`.
"""

from __future__ import annotations

import logging

from prometheus_client import Counter
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from server.bots import is_obvious_bot, is_preflight
from server.campaigns import CampaignState
from server.engagement.events import EventType, token_event
from server.faults import NO_STORE
from server.identify import token_failure_reason
from server.qr import see_other
from server.redis_guard import RedisUnavailable
from server.renderer_state import RendererState
from server.scope_headers import header_value
from welcomemat.campaign.view import CampaignView
from welcomemat.errors import StoredValueError, TokenError
from welcomemat.security.tokens import MAX_VIEW_TOKEN_CHARS, ClickClaims, claimed_scope
from welcomemat.security.urlgate import safe_href

__all__ = ["CLICK_ROUTE", "ClickRedirect", "default_cta_href"]

log = logging.getLogger(__name__)

CLICK_ROUTE = "/r/{token}"


def default_cta_href(view: CampaignView) -> str | None:
    """Where a click goes when its own CTA cannot be: the campaign default copy's first CTA (in
    page order), else `site_base_url`; through the URL gate. None when both are refused."""
    for zone_id in view.campaign.page_zone_ids():
        zone = view.default_zones.get(zone_id)
        href = safe_href(zone.href, view.allowlist) if zone is not None else None
        if href is not None:
            return href
    return safe_href(view.campaign.site_base_url, view.allowlist)


class ClickRedirect:
    """The `/r/{token}` endpoint of one app, with its counter."""

    def __init__(self, renderer: RendererState) -> None:
        self.renderer = renderer
        self.results = Counter(
            "welcomemat_cta_redirects",
            "Hosted-page CTA clicks (GET /r/{token}), by result (counted, bot, bad_token, "
            "cta_refused, unavailable, unknown_campaign).",
            ["result"],
            registry=renderer.metrics.registry,
        )

    async def redirect(self, request: Request) -> Response:
        """
        summary: A hosted page's CTA click; counted, then redirected to the CTA's URL.
        description: >
          The token is the signed click token the page's CTA links to (view, zone, CTA id).
          The redirect goes to that CTA's allowlisted URL, read from the published zone set or
          the campaign's copy, never from the request; a token that does not verify goes to
          the campaign's default CTA. Obvious bots are redirected but not counted.
        parameters:
          - {name: token, in: path, required: true, schema: {type: string}}
        responses:
          303:
            description: >
              To the CTA's URL (or the campaign's default CTA; its landing page while it cannot be
              loaded).
            headers:
              Location:
                required: true
                description: >
                  An allowlisted https URL of the published campaign, or
                  `WELCOMEMAT_PUBLIC_URL/c/<campaign>`.
                schema: {type: string, format: uri}
          404:
            $ref: "#/components/responses/NotFoundPage"
            description: "The token names no published campaign."
        """
        token = request.path_params["token"]
        hint = claimed_scope(token, max_chars=MAX_VIEW_TOKEN_CHARS)
        try:
            return await self._answer(request, token, hint)
        except Exception:
            # A bug must not cost the visitor a 5xx: their click is lost, logged and counted.
            log.exception("unhandled error on %s", CLICK_ROUTE)
            self.renderer.metrics.faults.labels(CLICK_ROUTE).inc()
            if hint is None:
                return self._not_found()
            return see_other(f"{self.renderer.settings.public_url}/c/{hint[1]}")

    async def _answer(self, request: Request, token: str, hint: tuple[str, str] | None) -> Response:
        renderer = self.renderer
        if hint is None:
            renderer.metrics.token_rejections.labels("click", "malformed").inc()
            self.results.labels("unknown_campaign").inc()
            return self._not_found()
        tenant, campaign_id = hint
        try:
            state = await renderer.campaigns.resolve(campaign_id)
        except (RedisUnavailable, StoredValueError) as exc:
            log.info("click: campaign %s not loadable now (%s)", campaign_id, exc)
            self.results.labels("unavailable").inc()
            return see_other(f"{renderer.settings.public_url}/c/{campaign_id}")
        if state is None:
            self.results.labels("unknown_campaign").inc()
            return self._not_found()
        claims = self._verify(token, state, tenant)
        target = await self._target(state, claims) if claims is not None else None
        if target is None:
            target = default_cta_href(state.view)
            if claims is not None:
                self.results.labels("cta_refused").inc()
        if target is None:  # nothing of the campaign passes the gate now: its own landing page
            target = f"{renderer.settings.public_url}/c/{campaign_id}"
        if claims is not None:
            self._count(request, state, claims)
        return see_other(target)

    def _verify(self, token: str, state: CampaignState, tenant: str) -> ClickClaims | None:
        renderer = self.renderer
        signer = renderer.signer
        if signer is None:
            return None
        try:
            # The campaign's owner, not the tenant the token claims: another tenant's token fails here.
            return signer.verify_click(token, tenant=state.tenant, campaign=state.campaign_id)
        except TokenError as exc:
            renderer.metrics.token_rejections.labels("click", token_failure_reason(exc)).inc()
            self.results.labels("bad_token").inc()
            return None

    async def _target(self, state: CampaignState, claims: ClickClaims) -> str | None:
        """The URL of the CTA the token names, as published (None: not servable any more)."""
        view = state.view
        contract = view.zones.get(claims.zone)
        if contract is None or not contract.link or claims.zone not in view.campaign.page_zone_ids():
            return None
        if claims.account is not None and claims.zone_set_version is not None:
            reader = self.renderer.zone_set_reader
            lookup = reader.cached(state.tenant, state.campaign_id, claims.account)
            if lookup is None:  # one guarded read; a fault is no zone set (the campaign's CTA below)
                lookup = await reader.get(state.tenant, state.campaign_id, claims.account)
            zone_set = lookup.zone_set
            if zone_set is not None and zone_set.version == claims.zone_set_version:
                content = zone_set.zone(claims.zone)
                href = safe_href(content.href, view.allowlist) if content is not None else None
                if href is not None and content is not None and content.cta_id == claims.cta:
                    return href
        cta = view.campaign.cta(claims.cta)
        return safe_href(cta.href, view.allowlist) if cta is not None else None

    def _count(self, request: Request, state: CampaignState, claims: ClickClaims) -> None:
        renderer = self.renderer
        agent = header_value(request.scope, b"user-agent")
        # A HEAD (link checkers) is not a click, as it is not a page view.
        if request.scope["method"] != "GET" or is_obvious_bot(agent) or is_preflight(agent):
            self.results.labels("bot").inc()
            return
        revoked = claims.account is not None and state.revocations.revoked(
            claims.account, claims.contact, claims.issued_at
        )
        if revoked:
            # Served before the account (or contact) was erased: the click counts, anonymously.
            renderer.metrics.token_rejections.labels("click", "revoked").inc()
        renderer.events.emit(
            token_event(
                EventType.CLICK,
                tenant=state.tenant,
                campaign=state.campaign_id,
                claims=claims,
                zone=claims.zone,
                ts_ms=renderer.now_ms(),
                revoked=revoked,
            )
        )
        self.results.labels("counted").inc()

    def _not_found(self) -> Response:
        html = self.renderer.pages.error(
            404, "This link is not valid. Please check the address and try again."
        )
        return HTMLResponse(html, status_code=404, headers=NO_STORE)
