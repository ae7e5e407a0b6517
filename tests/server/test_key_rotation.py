"""Rotating `WELCOMEMAT_SECRET` as `welcomemat secret rotate` says: links and cookies signed
with the old key keep working while it is listed second, and stop when it is removed."""

from __future__ import annotations

import pytest
import redis
from starlette.testclient import TestClient

from server.cookies import cookie_name
from tests.server.conftest import (
    BASE_URL,
    CAMPAIGN,
    PERSONAL_ACCOUNT,
    SECRET,
    TENANT,
    make_zone_set,
    renderer_app,
    renderer_settings,
)
from tests.server.pagetools import zones
from welcomemat.campaign.contract import Campaign
from welcomemat.security.tokens import TokenKind, TokenSigner
from welcomemat.zones.store import ZoneSetStore

OLD = SECRET
NEW = "the-new-key-after-rotation-0123456789abcdef"
STAGED = f"{OLD},{NEW}"  # step 1: the old key still signs, the new one verifies
ROTATED = f"{NEW},{OLD}"  # step 2: the new key signs, the old one verifies
RETIRED = NEW  # step 4


def _client(redis_client: redis.Redis, secret: str) -> TestClient:
    app = renderer_app(renderer_settings(secret=secret), redis_client=redis_client)
    return TestClient(app, base_url=BASE_URL)


def _rung(client: TestClient, **kwargs: object) -> str:
    response = client.get(f"/c/{CAMPAIGN}", **kwargs)  # type: ignore[arg-type]
    assert response.status_code == 200
    return zones(response.text)["hero_headline"].rung


@pytest.fixture
def personal(published: Campaign, store: ZoneSetStore) -> None:
    store.publish(make_zone_set(texts={"hero_headline": "Congrats on the Series A, Dymaxa"}))


def _link(secret: str) -> str:
    return TokenSigner.from_setting(secret).sign(
        TokenKind.LINK, tenant=TENANT, campaign=CAMPAIGN, account=PERSONAL_ACCOUNT, ttl_s=3600
    )


def _cookie_from(redis_client: redis.Redis, secret: str) -> str:
    """The identification cookie a renderer keyed with `secret` sets after a personal link."""
    with _client(redis_client, secret) as client:
        response = client.get(f"/c/{CAMPAIGN}", params={"wm": _link(secret)})
        assert response.status_code == 200
        value = response.cookies.get(cookie_name(CAMPAIGN))
    assert value
    return value


def _rung_with_cookie(redis_client: redis.Redis, secret: str, cookie: str) -> str:
    with _client(redis_client, secret) as client:
        return _rung(client, headers={"cookie": f"{cookie_name(CAMPAIGN)}={cookie}"})


@pytest.mark.usefixtures("personal")
def test_a_link_signed_with_the_old_key_verifies_while_it_is_listed_and_not_after(
    redis_client: redis.Redis,
) -> None:
    old_link = _link(OLD)
    for secret, rung in [
        (OLD, "personal"),
        (STAGED, "personal"),
        (ROTATED, "personal"),
        (RETIRED, "default"),
    ]:
        with _client(redis_client, secret) as client:
            assert _rung(client, params={"wm": old_link}) == rung, secret


@pytest.mark.usefixtures("personal")
def test_a_cookie_set_before_the_rotation_verifies_while_the_old_key_is_listed(
    redis_client: redis.Redis,
) -> None:
    cookie = _cookie_from(redis_client, OLD)
    assert _rung_with_cookie(redis_client, ROTATED, cookie) == "personal"
    assert _rung_with_cookie(redis_client, RETIRED, cookie) == "default"


@pytest.mark.usefixtures("personal")
def test_during_a_rolling_restart_what_a_rotated_renderer_signs_verifies_on_a_staged_one(
    redis_client: redis.Redis,
) -> None:
    """Step 1 before step 2: a renderer already on `new,old` sets cookies that one still on
    `old,new` accepts, and the reverse; a renderer still on the old key alone would not."""
    rotated_cookie = _cookie_from(redis_client, ROTATED)
    assert _rung_with_cookie(redis_client, STAGED, rotated_cookie) == "personal"
    assert _rung_with_cookie(redis_client, OLD, rotated_cookie) == "default"
    assert _rung_with_cookie(redis_client, ROTATED, _cookie_from(redis_client, STAGED)) == "personal"
