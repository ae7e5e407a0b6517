"""`GET /q/{token}`: a direct-mail QR code's entry point.

Verify the QR token ▸ set the identification cookie (unless the visitor sent GPC or DNT)
▸ log `qr_scan` (with the arm, and the zone-set version and copy variant the continuation
page will serve, read as the pages read them) ▸ 303 to the campaign's continuation page.
The redirect target is `WELCOMEMAT_PUBLIC_URL` + `/c/<campaign>/continue`: built from
configuration and a verified (or published) campaign id, never from the request, so it
cannot be an open redirect.

The path carries only the token, and a token verifies only against its tenant and
campaign, so `welcomemat.security.tokens.claimed_scope`
reads which campaign the token *claims* — a routing hint,
never trusted: `TokenSigner.verify` then checks the signature, kind, binding and expiry.
A mailer that sat on a desk past its token's expiry still deserves the story it
promised: when the token does not verify but names a published campaign, the visitor
is sent, anonymous and without a cookie, to that campaign's continuation page. So is the
holder of a code whose account or contact was erased since it was printed (revoked,
`welcomemat.records.erasure`); and when the campaign cannot be loaded to check that, no cookie
is set (a cookie made now would outlive the revocation it could not check).

The mail preflight's own requests (`welcomemat.security.links.PREFLIGHT_USER_AGENT`) get the cookie,
to see the page the account will see, but log no scan.

A scan is never redirected into a 404: a campaign id that is not the token's tenant's (ids
are unique per deployment, `welcomemat.campaign.owner`), not published, or without a
continuation page answers 404 here, with no cookie and no event.
"""

from __future__ import annotations

import functools
import logging
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from server.bots import is_preflight
from server.campaigns import CampaignState
from server.cookies import set_identity_cookie, tracking_refused
from server.engagement.events import EngagementEvent, EventType
from server.faults import NO_STORE, fail_closed
from server.identify import IdentityMethod
from server.pages import new_view_id
from server.prepared_response import PreparedResponse
from server.redis_guard import RedisUnavailable
from server.renderer_state import RendererState
from server.scope_headers import header_value
from welcomemat.arms import assign_arm
from welcomemat.campaign.contract import CONTINUATION_PAGE_ID
from welcomemat.errors import StoredValueError
from welcomemat.security.tokens import TokenClaims, TokenKind, claimed_scope
from welcomemat.zones.resolution import choose_variant

__all__ = ["qr_entry", "see_other"]

log = logging.getLogger(__name__)

_NO_STORE = (b"cache-control", NO_STORE["cache-control"].encode("latin-1"))
_EMPTY = (b"content-length", b"0")
# What `RedirectResponse` leaves unquoted in a Location.
_URL_SAFE = ":/%#?=@[]!$&'()*+,;"


def _invalid(renderer: RendererState) -> Response:
    html = renderer.pages.error(404, "This code is not valid. Please check the address and try again.")
    return HTMLResponse(html, status_code=404, headers=NO_STORE)


def _not_served(renderer: RendererState) -> Response:
    html = renderer.pages.error(404, "The campaign behind this code is not available any more.")
    return HTMLResponse(html, status_code=404, headers=NO_STORE)


@functools.lru_cache(maxsize=1024)
def _location_header(location: str) -> tuple[bytes, bytes]:
    # Remembered: every scan of a campaign goes to the same continuation URL.
    return b"location", quote(location, safe=_URL_SAFE).encode("latin-1")


def see_other(location: str) -> Response:
    """303 to `location`: the headers Starlette's `RedirectResponse` writes for it (tests compare),
    listed directly (`Set-Cookie` is appended to them)."""
    return PreparedResponse(b"", [_NO_STORE, _EMPTY, _location_header(location)], status_code=303)


async def _copy_served(
    renderer: RendererState, state: CampaignState, claims: TokenClaims
) -> tuple[str, int | None, str | None]:
    """The arm, zone-set version and copy variant of the page a scan leads to, read as the pages
    read them (`server.visitor`): the zone-set cache, else one guarded read that never raises
    (a fault: no zone set, so no version)."""
    assigned = assign_arm(
        claims.tenant, claims.campaign, claims.account, state.view.campaign.holdout_fraction
    )
    reader = renderer.zone_set_reader
    lookup = reader.cached(claims.tenant, claims.campaign, claims.account)
    if lookup is None:
        lookup = await reader.get(claims.tenant, claims.campaign, claims.account)
    served = choose_variant(assigned, lookup.zone_set, renderer.now())
    return assigned.value, served.zone_set_version, served.copy_variant


@fail_closed("/q/{token}")
async def qr_entry(request: Request) -> Response:
    """
    summary: Direct-mail QR entry; sets the identification cookie and redirects.
    parameters:
      - {name: token, in: path, required: true, schema: {type: string}}
    responses:
      303:
        description: "To the campaign's continuation page (identified when the token verified)."
        headers:
          Location:
            required: true
            description: "`WELCOMEMAT_PUBLIC_URL` + `/c/<campaign>/continue`, never built from the request."
            schema: {type: string, format: uri}
      404:
        $ref: "#/components/responses/NotFoundPage"
        description: "The code names no campaign served with a continuation page."
    """
    renderer: RendererState = request.app.state.renderer
    token = request.path_params["token"]
    hint = claimed_scope(token)
    if hint is None:
        renderer.metrics.token_rejections.labels(TokenKind.QR.value, "malformed").inc()
        return _invalid(renderer)
    tenant, campaign_id = hint

    unavailable = False
    state = renderer.campaigns.cached(campaign_id)  # a loaded campaign: no coroutine to run
    if state is None:
        try:
            state = await renderer.campaigns.resolve(campaign_id)
        except (RedisUnavailable, StoredValueError) as exc:
            unavailable = True
            log.info("qr: campaign %s/%s not loadable now (%s)", tenant, campaign_id, exc)
    if state is not None and state.tenant != tenant:
        state = None  # the id is another tenant's campaign
    # Checked against the tenant's revocations when its campaign is loaded; without them (not
    # loadable, or not the tenant's) no cookie is set below, whatever the claims.
    claims = renderer.identifier.verify(
        TokenKind.QR,
        token,
        tenant=tenant,
        campaign=campaign_id,
        revocations=None if state is None else state.revocations,
    )
    if claims is None and state is None:
        return _invalid(renderer)
    # Never a redirect into a 404: only to a continuation page the campaign serves, or, while
    # its config cannot be read, to the plain page the continuation then answers.
    if not unavailable and (state is None or state.view.page(CONTINUATION_PAGE_ID) is None):
        return _not_served(renderer)

    response = see_other(f"{renderer.settings.public_url}/c/{campaign_id}/continue")
    if claims is None:
        return response
    preflight = is_preflight(header_value(request.scope, b"user-agent"))
    if state is not None and not tracking_refused(request.scope):
        cookie = renderer.identifier.arrival_cookie(
            TokenKind.QR, token, claims.account, claims.contact, tenant=tenant, campaign=campaign_id
        )
        set_identity_cookie(response, cookie)
    if preflight:  # `welcomemat mail` checking its codes: the cookie lets it see the page, no scan
        return response
    # Unknown while the campaign cannot be loaded: the continuation page's view event says them.
    arm, version, variant = (
        (None, None, None) if state is None else await _copy_served(renderer, state, claims)
    )
    renderer.events.emit(
        EngagementEvent(
            type=EventType.QR_SCAN,
            tenant=tenant,
            campaign=campaign_id,
            view_id=new_view_id(),
            ts_ms=renderer.now_ms(),
            arm=arm,
            account=claims.account,
            contact=claims.contact,
            zone_set_version=version,
            identified_by=IdentityMethod.QR.value,
            variant=variant,
        )
    )
    renderer.metrics.pages.count_identification(IdentityMethod.QR.value)
    return response
