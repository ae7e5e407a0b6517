"""`/v1/zones` leaves default-rung zones out unless the campaign sets `snippet.replace_default`.

The snippet writes only the zones the answer lists, so what is left out here is what the
customer's page keeps in its own words (issue 26). Checked over HTTP for each visitor the
browser tests load, and as a property of the one serializer.
"""

from __future__ import annotations

from collections.abc import Iterator

import markupsafe
import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from tests.server.conftest import (
    BASE_URL,
    TENANT,
    link_token,
    make_zone_set,
    publish_config,
    renderer_app,
    signer,
)
from tests.site_copy_campaign import (
    CTA_HREF,
    DEFAULT_COPY,
    SEGMENT,
    SEGMENT_COPY,
    SITE_COPY_CAMPAIGN,
    site_copy_campaign,
    site_copy_zone_contracts,
)
from welcomemat.arms import Arm
from welcomemat.campaign.view import ResolvedZone
from welcomemat.zones.payload import public_zone, zones_payload
from welcomemat.zones.resolution import best_rung
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import Rung

HEADLINE = "Congrats on the Series A, Dymaxa: ramp your new SDRs in weeks"
# `None`: the campaign leaves `snippet` out, which must behave as `false`.
KEEPS_SITE_COPY = [None, False]


def zones_client(redis_client: redis.Redis, replace_default: bool | None) -> Iterator[TestClient]:
    publish_config(
        redis_client, site_copy_campaign(replace_default=replace_default), site_copy_zone_contracts()
    )
    ZoneSetStore(redis_client).publish(
        make_zone_set(
            "acct_dymaxa", texts={"z_headline": HEADLINE}, segment=SEGMENT, campaign=SITE_COPY_CAMPAIGN
        )
    )
    with TestClient(renderer_app(redis_client=redis_client), base_url=BASE_URL) as client:
        yield client


@pytest.fixture
def keeps(redis_client: redis.Redis, request: pytest.FixtureRequest) -> Iterator[TestClient]:
    yield from zones_client(redis_client, request.param)


@pytest.fixture
def replaces(redis_client: redis.Redis) -> Iterator[TestClient]:
    yield from zones_client(redis_client, True)


def answer(client: TestClient, account: str | None = None) -> dict:  # type: ignore[type-arg]
    params = {"campaign": SITE_COPY_CAMPAIGN}
    if account is not None:
        params["wm"] = link_token(account, campaign=SITE_COPY_CAMPAIGN)
    response = client.get("/v1/zones", params=params)
    assert response.status_code == 200, response.text
    data: dict = response.json()  # type: ignore[type-arg]
    return data


def view_rung(data: dict) -> str:  # type: ignore[type-arg]
    return signer().verify_view(data["view"], tenant=TENANT, campaign=SITE_COPY_CAMPAIGN).rung


@pytest.mark.parametrize("keeps", KEEPS_SITE_COPY, indirect=True, ids=["unset", "false"])
def test_an_anonymous_visitor_gets_no_zones_to_write(keeps: TestClient) -> None:
    data = answer(keeps)
    assert (data["arm"], data["zones"]) == ("anonymous", {})
    assert data["links"] == ["www.acmerevenue.example"]
    assert view_rung(data) == "default"  # a view is still signed, and says what the ladder decided


@pytest.mark.parametrize("keeps", KEEPS_SITE_COPY, indirect=True, ids=["unset", "false"])
def test_a_personal_headline_is_written_and_the_default_proof_point_left_out(keeps: TestClient) -> None:
    data = answer(keeps, "acct_dymaxa")
    assert data["arm"] == "personal"
    assert data["zones"] == {
        "z_headline": {"text": HEADLINE, "rung": "personal"},
        "z_cta": {"text": SEGMENT_COPY["z_cta"], "rung": "segment", "href": CTA_HREF},
    }
    assert view_rung(data) == "personal"


@pytest.mark.parametrize("keeps", KEEPS_SITE_COPY, indirect=True, ids=["unset", "false"])
def test_an_account_without_a_zone_set_gets_no_zones_but_a_view_bound_to_it(keeps: TestClient) -> None:
    data = answer(keeps, "acct_nozoneset")
    assert (data["arm"], data["zones"]) == ("personal", {})
    claims = signer().verify_view(data["view"], tenant=TENANT, campaign=SITE_COPY_CAMPAIGN)
    assert (claims.account, claims.rung) == ("acct_nozoneset", "default")


def test_with_replace_default_an_anonymous_visitor_gets_the_default_copy(replaces: TestClient) -> None:
    data = answer(replaces)
    assert {z: v["text"] for z, v in data["zones"].items()} == DEFAULT_COPY
    assert {v["rung"] for v in data["zones"].values()} == {"default"}
    assert data["zones"]["z_cta"]["href"] == CTA_HREF


def test_with_replace_default_the_proof_point_gets_the_default_copy(replaces: TestClient) -> None:
    data = answer(replaces, "acct_dymaxa")
    assert data["zones"] == {
        "z_headline": {"text": HEADLINE, "rung": "personal"},
        "z_proof": {"text": DEFAULT_COPY["z_proof"], "rung": "default"},
        "z_cta": {"text": SEGMENT_COPY["z_cta"], "rung": "segment", "href": CTA_HREF},
    }


# -- the serializer ------------------------------------------------------------------------------

zone_lists = st.lists(
    st.tuples(st.sampled_from(["z1", "z2", "z3", "z4"]), st.sampled_from(list(Rung)), st.text(max_size=20)),
    max_size=8,
)


@settings(deadline=None)  # timing is not the property; a loaded machine must not fail it
@given(items=zone_lists, replace_default=st.booleans())
def test_the_serializer_writes_default_zones_only_when_asked(
    items: list[tuple[str, Rung, str]], replace_default: bool
) -> None:
    zones = [ResolvedZone(z, markupsafe.Markup(""), text, None, rung) for z, rung, text in items]
    payload = zones_payload("c1", Arm.PERSONAL, zones, [], replace_default=replace_default)
    first: dict[str, ResolvedZone] = {}
    for zone in zones:
        first.setdefault(zone.zone_id, zone)
    expected = {
        z: public_zone(zone) for z, zone in first.items() if replace_default or zone.rung is not Rung.DEFAULT
    }
    assert payload.as_dict("v", None)["zones"] == expected
    # What the ladder decided is reported the same either way (metrics, the view token's rung).
    assert payload.best_rung == best_rung(zones)
    other = zones_payload("c1", Arm.PERSONAL, zones, [], replace_default=not replace_default)
    assert (other.best_rung, other.zone_rungs) == (payload.best_rung, payload.zone_rungs)
