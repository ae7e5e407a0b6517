"""Bad `?wm=` tokens in Chromium: the page is 200 with the campaign default in every zone.

Tampered, expired, signed with a key the renderer does not hold, of another kind, for
another tenant or another campaign (each of which has a personal zone set for the same
account id, which must never show): the visitor is anonymous, every zone says
`data-wm-rung="default"`, and the browser keeps no identification cookie. A genuine
token, the control, gets the personal page.
"""

from __future__ import annotations

import pytest
import redis

from tests.browser.badtokens import BAD_TOKEN_NAMES, OTHER_CAMPAIGN, OTHER_TENANT, bad_token
from tests.browser.conftest import PageWatch
from tests.browser.dom import zones_in
from tests.server.conftest import (
    CAMPAIGN,
    PERSONAL_ACCOUNT,
    example_inputs,
    link_token,
    make_zone_set,
    publish_config,
)
from welcomemat.zones.store import ZoneSetStore

pytestmark = pytest.mark.browser

PERSONAL_HEADLINE = "Congrats on the Series A, Dymaxa"
LEAKS = ("Globex-only headline", "Other-campaign-only headline")


@pytest.fixture
def landing(redis_client: redis.Redis, renderer_url: str) -> str:
    campaign, zones = example_inputs()
    publish_config(redis_client, campaign, zones)
    other = campaign.model_dump(mode="json") | {"campaign": OTHER_CAMPAIGN}
    publish_config(redis_client, other, zones)
    store = ZoneSetStore(redis_client)
    store.publish(make_zone_set(texts={"hero_headline": PERSONAL_HEADLINE}))
    store.publish(make_zone_set(texts={"hero_headline": LEAKS[0]}, tenant=OTHER_TENANT))
    store.publish(make_zone_set(texts={"hero_headline": LEAKS[1]}, campaign=OTHER_CAMPAIGN))
    return f"{renderer_url}/c/{CAMPAIGN}"


def test_a_genuine_token_gets_the_personal_page(watch: PageWatch, landing: str) -> None:
    response = watch.page.goto(f"{landing}?wm={link_token()}")
    assert response is not None and response.status == 200
    found = zones_in(watch.page)
    assert found["hero_headline"].rung == "personal"
    assert found["hero_headline"].text == PERSONAL_HEADLINE
    assert watch.page.evaluate("() => document.body.dataset.wmArm") == "personal"
    # The link identified the visitor: the browser keeps the signed cookie for later visits.
    assert [cookie["name"] for cookie in watch.page.context.cookies()] == [f"wm_{CAMPAIGN}"]


@pytest.mark.parametrize("name", BAD_TOKEN_NAMES)
def test_a_bad_token_gets_the_default_page(name: str, watch: PageWatch, landing: str) -> None:
    default_headline = example_inputs()[0].default_copy["hero_headline"].text
    response = watch.page.goto(f"{landing}?wm={bad_token(name, CAMPAIGN, PERSONAL_ACCOUNT)}")
    assert response is not None and response.status == 200
    found = zones_in(watch.page)
    assert {zone.rung for zone in found.values()} == {"default"}, found
    assert found["hero_headline"].text == default_headline
    body = watch.page.evaluate("() => document.body.innerText")
    assert PERSONAL_HEADLINE not in body and not any(leak in body for leak in LEAKS)
    assert watch.page.evaluate("() => document.body.dataset.wmArm") == "anonymous"
    assert watch.page.context.cookies() == []
