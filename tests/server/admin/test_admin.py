"""`/admin/...`: explain JSON, preview-as-account, the review queue — what an operator sees and can do."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.testclient import TestClient

from precompute.policy import build_policy
from precompute.providers.offline import OfflineComposer
from precompute.run import PrecomputeRun
from server.admin.payloads import parse_explain_record
from server.admin.preview import personal_refusal, read_page_zones
from server.redis_guard import renderer_redis_client
from server.render import template_environment
from tests.corpora import corpus_lines
from tests.event_stream import event_count
from tests.llm_server import LLMTestServer
from tests.precompute.test_openai_provider import example_rows, provider_for
from tests.precompute.test_pipeline import NOW, dymaxa
from tests.server.conftest import (
    BASE_URL,
    CAMPAIGN,
    HOLDOUT_ACCOUNT,
    TENANT,
    example_inputs,
    make_zone_set,
    publish_config,
    renderer_app,
    renderer_settings,
    signer,
    tuning_for_tests,
)
from tests.server.pagetools import parse, text_of, zones
from welcomemat import keys
from welcomemat.arms import Arm
from welcomemat.campaign.view import ResolvedZone
from welcomemat.errors import StoredValueError
from welcomemat.reasons import ZoneReason
from welcomemat.records.audit import AuditAction, Auditor, Via, append_entry, read_entries
from welcomemat.security.credentials import Credential
from welcomemat.security.markup import render_text
from welcomemat.security.tokens import TokenKind
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import Rung, ZoneSetStatus

TOKEN = "admin-token-for-tests-0123456789abcdef"
AUTH = {"authorization": f"Bearer {TOKEN}"}
DYMAXA = "acct_dymaxa"

ROUTES = [
    ("GET", f"/admin/explain/{CAMPAIGN}/{DYMAXA}"),
    ("GET", f"/admin/preview/{CAMPAIGN}/{DYMAXA}"),
    ("GET", f"/admin/review/{CAMPAIGN}"),
    ("POST", f"/admin/review/{CAMPAIGN}/{DYMAXA}/approve"),
    ("POST", f"/admin/review/{CAMPAIGN}/{DYMAXA}/reject"),
    ("POST", f"/admin/review/{CAMPAIGN}/{DYMAXA}/rollback"),
]


def _app(client: redis.Redis, **settings: Any) -> Starlette:
    return renderer_app(
        renderer_settings(**{"admin_token": TOKEN, **settings}),
        redis_client=client,
        clock=NOW.timestamp,
        tuning=tuning_for_tests(watcher_poll_s=0.05),
    )


@pytest.fixture
def precomputed(tmp_path: Path, redis_client: redis.Redis) -> redis.Redis:
    """Dymaxa (tier 1) precomputed with the offline composer: published `pending_review`, queued."""
    campaign, zone_contracts = example_inputs()
    accounts = tmp_path / "accounts.jsonl"
    accounts.write_text(json.dumps(dymaxa(NOW.date())) + "\n")
    PrecomputeRun(
        client=redis_client,
        campaign=campaign,
        zones=zone_contracts,
        policy=build_policy(campaign, None),
        provider=OfflineComposer(),
        now=NOW,
    ).run(accounts)
    return redis_client


@pytest.fixture
def admin(precomputed: redis.Redis) -> Iterator[TestClient]:
    with TestClient(_app(precomputed), base_url=BASE_URL) as client:
        yield client


def link_token(account: str) -> str:
    """A link token signed at the apps' clock (NOW)."""
    return signer(clock=NOW.timestamp).sign(
        TokenKind.LINK, tenant=TENANT, campaign=CAMPAIGN, account=account, contact=None, ttl_s=3600
    )


def _events(client: redis.Redis) -> int:
    return event_count(client, TENANT)


# -- the bearer check ---------------------------------------------------------------------


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_admin_routes_do_not_exist_without_an_admin_token(
    precomputed: redis.Redis, method: str, path: str
) -> None:
    with TestClient(_app(precomputed, admin_token=None), base_url=BASE_URL) as client:
        answer = client.request(method, path, headers=AUTH, json={"version": 1})
        unknown = client.request(method, "/admin/no-such-route", headers=AUTH)
    assert answer.status_code == 404
    assert (answer.headers["content-type"], answer.text) == (unknown.headers["content-type"], unknown.text)
    assert ZoneSetStore(precomputed).get(TENANT, CAMPAIGN, DYMAXA).status is ZoneSetStatus.PENDING_REVIEW  # type: ignore[union-attr]


@pytest.mark.parametrize(("method", "path"), ROUTES)
@pytest.mark.parametrize("header", [None, f"Bearer {TOKEN}x", f"Basic {TOKEN}"])
def test_admin_routes_need_the_bearer_token(
    admin: TestClient, method: str, path: str, header: str | None
) -> None:
    headers = {} if header is None else {"authorization": header}
    answer = admin.request(method, path, headers=headers, json={"version": 1})
    assert answer.status_code == 401 and answer.headers["www-authenticate"] == "Bearer"
    assert "Dymaxa" not in answer.text


# -- explain -----------------------------------------------------------------------------


def test_explain_is_the_stored_record_as_json(admin: TestClient) -> None:
    answer = admin.get(f"/admin/explain/{CAMPAIGN}/{DYMAXA}", headers=AUTH)
    assert answer.status_code == 200 and answer.headers["cache-control"] == "no-store"
    record = answer.json()
    assert (record["account_id"], record["name"], record["tier"]) == (DYMAXA, "Dymaxa B.V.", 1)
    assert (record["status"], record["version"]) == ("pending_review", 1)
    assert record["identity"]["registrable_domain"] == "dymaxa.com"
    facts = {f["id"]: f for f in record["facts"]}
    assert facts["dymaxa-series-a"]["trusted"] and facts["dymaxa-series-a"]["type"] == "funding"
    headline = next(z for z in record["zones"] if z["zone_id"] == "hero_headline")
    assert headline["rung"] == "personal" and "Series A" in headline["text"]
    assert headline["facts"] == ["dymaxa-series-a"]
    # Voice, relevance to the fact and value to the reader's role, each its own score.
    assert headline["scores"] == {"voice": 1.0, "relevance": 1.0, "role_value": 0.0, "role": "sales"}


def test_explain_says_the_live_status_after_a_review(admin: TestClient) -> None:
    approved = admin.post(f"/admin/review/{CAMPAIGN}/{DYMAXA}/approve", headers=AUTH, json={"version": 1})
    assert approved.status_code == 200
    record = admin.get(f"/admin/explain/{CAMPAIGN}/{DYMAXA}", headers=AUTH).json()
    assert (record["status"], record["version"]) == ("published", 2)


def test_explain_passes_on_only_named_fields_and_gated_links(redis_client: redis.Redis) -> None:
    campaign, zone_contracts = example_inputs()
    publish_config(redis_client, campaign, zone_contracts)
    record = {
        "account_id": DYMAXA,
        "name": "Dymaxa B.V.",
        "evidence": "raw research text",
        "provider_metadata": {"model": "x"},
        "facts": [
            {"id": "f1", "trusted": True, "source_url": "javascript:alert(1)", "evidence": "secret"},
            {"id": "f2", "trusted": True, "source_url": "HTTPS://Dymaxa.com/press", "statement": "Raised"},
        ],
        "zones": [{"zone_id": "cta", "rung": "personal", "text": "Book", "href": "http://evil.example/"}],
    }
    redis_client.set(keys.explain_key(TENANT, CAMPAIGN, DYMAXA), json.dumps(record))
    with TestClient(_app(redis_client), base_url=BASE_URL) as client:
        answer = client.get(f"/admin/explain/{CAMPAIGN}/{DYMAXA}", headers=AUTH)
    assert answer.status_code == 200
    body = answer.json()
    assert "evidence" not in answer.text and "provider_metadata" not in answer.text
    assert [f["source_url"] for f in body["facts"]] == [None, "https://dymaxa.com/press"]
    assert body["facts"][1]["statement"] == "Raised"
    assert body["zones"][0]["href"] is None


@pytest.mark.parametrize(
    ("path", "needle"),
    [
        (f"/admin/explain/{CAMPAIGN}/acct_nobody", "no explain record"),
        ("/admin/explain/no-such-campaign/acct_dymaxa", "no published campaign"),
        (f"/admin/explain/{CAMPAIGN}/bad%3Aid", "not a valid id"),
        (f"/admin/explain/{CAMPAIGN}/%7Bx%7D", "not a valid id"),
    ],
)
def test_explain_unknown_or_invalid_is_404_json(admin: TestClient, path: str, needle: str) -> None:
    answer = admin.get(path, headers=AUTH)
    assert answer.status_code == 404 and needle in answer.json()["error"]
    assert answer.headers["cache-control"] == "no-store"


def test_a_record_that_does_not_decode_is_503_and_counted(
    admin: TestClient, precomputed: redis.Redis
) -> None:
    precomputed.set(keys.explain_key(TENANT, CAMPAIGN, DYMAXA), b"{not json")
    answer = admin.get(f"/admin/explain/{CAMPAIGN}/{DYMAXA}", headers=AUTH)
    assert answer.status_code == 503 and "does not decode" in answer.json()["error"]
    assert "welcomemat_stored_value_errors_total 1.0" in admin.get("/metrics").text


# -- preview -----------------------------------------------------------------------------


def _preview(client: TestClient, account: str = DYMAXA, **params: str) -> tuple[Any, dict[str, Any]]:
    answer = client.get(f"/admin/preview/{CAMPAIGN}/{account}", headers=AUTH, params=params)
    assert answer.status_code == 200, answer.text
    doc = parse(answer.text)
    frame = next(e for e in doc.iter() if e.tag == "iframe")
    rows = {e.get("data-admin-zone"): e for e in doc.iter() if e.get("data-admin-zone") is not None}
    facts = {e.get("data-admin"): text_of(e) for e in doc.iter() if e.get("data-admin") is not None}
    return answer, {"frame": frame, "page": zones(frame.get("srcdoc") or ""), "rows": rows, "facts": facts}


def test_preview_of_a_pending_account_shows_the_fallback_it_gets_and_why(admin: TestClient) -> None:
    answer, seen = _preview(admin)
    assert answer.headers["cache-control"] == "no-store"
    assert "script-src" not in answer.headers["content-security-policy"]  # no script runs on admin pages
    assert seen["frame"].get("sandbox") == ""
    assert {z.rung for z in seen["page"].values()} == {"segment"}
    assert "Series A" not in seen["page"]["hero_headline"].text
    assert seen["facts"]["arm"].startswith("personal")
    assert seen["facts"]["zone-set"].startswith("v1 pending_review")
    assert seen["facts"]["personal"] == "not served: zone set v1 is pending_review"
    headline = text_of(seen["rows"]["hero_headline"])
    assert "Published as personal (personal:funding), not served" in headline


def test_preview_after_approval_is_the_personal_page_with_sources_and_checks(
    admin: TestClient, precomputed: redis.Redis
) -> None:
    assert admin.post(
        f"/admin/review/{CAMPAIGN}/{DYMAXA}/approve", headers=AUTH, json={"version": 1}
    ).is_success
    before = _events(precomputed)
    _, seen = _preview(admin)
    page = seen["page"]
    assert list(page) == ["hero_headline", "hero_support", "proof", "cta"]
    assert page["hero_headline"].rung == "personal" and "Series A" in page["hero_headline"].text
    # The same page a visitor with Dymaxa's link gets.
    visitor = zones(admin.get(f"/c/{CAMPAIGN}", params={"wm": link_token(DYMAXA)}).text)
    assert {z: (e.rung, e.text) for z, e in visitor.items()} == {z: (e.rung, e.text) for z, e in page.items()}
    row = seen["rows"]["hero_headline"]
    assert row.get("data-admin-rung") == "personal"
    links = [a.get("href") for a in row.iter() if a.tag == "a"]
    assert links == ["https://dymaxa.com/press/series-a"]
    assert "published 2026-11-26" in text_of(row) and "All checks passed" in text_of(row)
    assert seen["facts"]["personal"] == "served" and seen["facts"]["zone-set"].startswith("v2 published")
    admin.app.state.renderer.events.close()  # type: ignore[attr-defined]  # flush what was queued
    assert _events(precomputed) == before + 1  # the visitor's view only; the preview logs none


def test_preview_of_the_continuation_page(admin: TestClient) -> None:
    _, seen = _preview(admin, page="continuation")
    assert list(seen["page"]) == ["continuation_headline", "hero_support", "cta"]


def test_preview_of_a_holdout_account_and_its_personal_copy(redis_client: redis.Redis) -> None:
    campaign, zone_contracts = example_inputs()
    publish_config(redis_client, campaign, zone_contracts)
    ZoneSetStore(redis_client).publish(
        make_zone_set(HOLDOUT_ACCOUNT, texts={"hero_headline": "Hello, holdout account"})
    )
    with TestClient(_app(redis_client), base_url=BASE_URL) as client:
        _, held = _preview(client, HOLDOUT_ACCOUNT)
        _, personal = _preview(client, HOLDOUT_ACCOUNT, arm="personal")
        _, anonymous = _preview(client, HOLDOUT_ACCOUNT, arm="anonymous")
        bad = client.get(f"/admin/preview/{CAMPAIGN}/{HOLDOUT_ACCOUNT}", headers=AUTH, params={"arm": "x"})
        no_page = client.get(
            f"/admin/preview/{CAMPAIGN}/{HOLDOUT_ACCOUNT}", headers=AUTH, params={"page": "x"}
        )
    assert held["facts"]["arm"] == "holdout (the account's arm)"
    assert held["page"]["hero_headline"].rung == "segment"
    assert held["facts"]["personal"] == "not served: holdout arm: the account sees its segment's copy"
    assert personal["facts"]["arm"] == "personal (previewed; the account's arm is holdout)"
    assert personal["page"]["hero_headline"].text == "Hello, holdout account"
    assert personal["page"]["hero_headline"].rung == "personal"
    assert {z.rung for z in anonymous["page"].values()} == {"default"}
    assert bad.status_code == 400 and no_page.status_code == 404
    assert "text/html" in bad.headers["content-type"]


def test_preview_shows_what_a_reason_means_and_the_self_reviews_note(
    tmp_path: Path, redis_client: redis.Redis, llm_server: LLMTestServer
) -> None:
    """Dymaxa through the model; its self-review rejects the support line, in its own words."""
    note = "Implies <b>growth</b> the facts do not state"
    _through_the_model(tmp_path, redis_client, llm_server, review_reject=["hero_support"], review_note=note)
    with TestClient(_app(redis_client), base_url=BASE_URL) as client:
        _, seen = _preview(client)
        explained = client.get(f"/admin/explain/{CAMPAIGN}/{DYMAXA}", headers=AUTH).json()
    assert seen["page"]["hero_support"].rung == "segment" and seen["page"]["hero_headline"].rung == "personal"
    row = seen["rows"]["hero_support"]
    shown = " ".join(text_of(row).split())
    assert f"Reason: self_review_rejected — {ZoneReason.SELF_REVIEW_REJECTED.doc}" in shown
    assert f"Provider's note: “{note}”" in shown  # as text: the model's markup is not markup here
    assert not [e for e in row.iter() if e.tag == "b"]
    assert "Provider's note" not in text_of(seen["rows"]["hero_headline"])
    zone = next(z for z in explained["zones"] if z["zone_id"] == "hero_support")
    assert (zone["reason"], zone["note"]) == ("self_review_rejected", note)


def test_preview_of_a_reason_an_older_version_wrote_shows_it_as_it_is(redis_client: redis.Redis) -> None:
    campaign, zone_contracts = example_inputs()
    publish_config(redis_client, campaign, zone_contracts)
    from tests.server.conftest import PERSONAL_ACCOUNT

    zone_set = make_zone_set(PERSONAL_ACCOUNT)
    legacy = zone_set.zones[0].model_copy(
        update={"rung": Rung.SEGMENT, "reason": "declined;unknown_segment", "facts": ()}
    )
    ZoneSetStore(redis_client).publish(zone_set.model_copy(update={"zones": (legacy,)}))
    record = {
        "account_id": PERSONAL_ACCOUNT,
        "zones": [{"zone_id": "hero_headline", "rung": "segment", "reason": "declined;unknown_segment"}],
    }
    redis_client.set(keys.explain_key(TENANT, CAMPAIGN, PERSONAL_ACCOUNT), json.dumps(record))
    with TestClient(_app(redis_client), base_url=BASE_URL) as client:
        _, seen = _preview(client, PERSONAL_ACCOUNT)
        explained = client.get(f"/admin/explain/{CAMPAIGN}/{PERSONAL_ACCOUNT}", headers=AUTH).json()
    shown = " ".join(text_of(seen["rows"]["hero_headline"]).split())
    assert "Reason: declined;unknown_segment" in shown and " — " not in shown and "note" not in shown
    assert (
        explained["zones"][0]["reason"] == "declined;unknown_segment"
        and explained["zones"][0]["note"] is None
    )


XSS = corpus_lines("xss/IntrudersXSS.txt")[:40] + corpus_lines("xss/XSS_Polyglots.txt")[:10]


def test_nothing_from_records_reaches_the_admin_page_unescaped(redis_client: redis.Redis) -> None:
    campaign, zone_contracts = example_inputs()
    publish_config(redis_client, campaign, zone_contracts)
    from tests.server.conftest import PERSONAL_ACCOUNT

    payload = " ".join(XSS)
    ZoneSetStore(redis_client).publish(make_zone_set(PERSONAL_ACCOUNT, texts={"hero_headline": payload}))
    record = {
        "account_id": PERSONAL_ACCOUNT,
        "name": payload,
        "facts": [{"id": "f1", "trusted": True, "statement": payload, "detail": payload, "type": payload}],
        "zones": [
            {
                "zone_id": "hero_headline",
                "rung": "personal",
                "text": payload,
                "reason": payload,
                "draft": payload,
                "checks": [{"check": payload, "reason": payload, "detail": payload}],
                "note": payload,
            }
        ],
    }
    redis_client.set(keys.explain_key(TENANT, CAMPAIGN, PERSONAL_ACCOUNT), json.dumps(record))
    with TestClient(_app(redis_client), base_url=BASE_URL) as client:
        page = client.get(f"/admin/preview/{CAMPAIGN}/{PERSONAL_ACCOUNT}", headers=AUTH)
        queue = client.get(f"/admin/review/{CAMPAIGN}", headers={**AUTH, "accept": "text/html"})
    for answer in (page, queue):
        assert answer.status_code == 200
        for element in parse(answer.text).iter():
            assert element.tag not in {"script", "img", "svg", "object", "embed", "style", "base", "form"}
            assert not [name for name in element.attrib if name.lower().startswith("on")], element.attrib
    doc = parse(page.text)
    frame = next(e for e in doc.iter() if e.tag == "iframe")
    # The payload is shown to the operator as text, exactly (escaped twice: page, then srcdoc).
    assert zones(frame.get("srcdoc") or "")["hero_headline"].text == payload
    for element in parse(frame.get("srcdoc") or "").iter():
        assert element.tag not in {"script", "img", "svg"}


def test_the_preview_shows_the_accounts_audit_entries_escaped(
    admin: TestClient, precomputed: redis.Redis
) -> None:
    payload = " ".join(" ".join(XSS).split())[:480]  # a reason is one line of at most 500 characters
    rejected = admin.post(
        f"/admin/review/{CAMPAIGN}/{DYMAXA}/reject", headers=AUTH, json={"version": 1, "reason": payload}
    )
    assert rejected.status_code == 200
    append_entry(
        precomputed,
        Auditor(payload[:100], Via.CLI, lambda: NOW).entry(
            AuditAction.APPROVE, tenant=TENANT, campaign="another-campaign", account=DYMAXA, version=4
        ),
    )
    append_entry(  # another account's entry is not this page's
        precomputed,
        Auditor("sam", Via.CLI, lambda: NOW).entry(AuditAction.APPROVE, tenant=TENANT, account="acct_x"),
    )
    page = admin.get(f"/admin/preview/{CAMPAIGN}/{DYMAXA}", headers=AUTH)
    assert page.status_code == 200
    doc = parse(page.text)
    items = [e for e in doc.iter() if e.get("data-admin-audit")]
    texts = [text_of(e) for e in items]
    assert len(items) == 3  # newest first: the approval in another campaign, the rejection, the publish
    assert "approve v4 in another-campaign by" in texts[0]
    assert (
        texts[1].startswith(NOW.isoformat(timespec="seconds"))
        and f"reject v2 by admin (http): “{payload}”" in texts[1]
    )
    assert "publish v1 by precompute (precompute) — pending_review, degraded" in texts[2]
    for element in doc.iter():
        assert element.tag not in {"script", "img", "svg", "object", "embed", "style", "base", "form"}
        assert not [name for name in element.attrib if name.lower().startswith("on")], element.attrib


# -- review queue --------------------------------------------------------------------------


def test_review_queue_lists_the_pending_account(admin: TestClient) -> None:
    answer = admin.get(f"/admin/review/{CAMPAIGN}", headers=AUTH)
    assert answer.status_code == 200 and answer.headers["cache-control"] == "no-store"
    body = answer.json()
    assert (body["tenant"], body["campaign"]) == (TENANT, CAMPAIGN)
    [item] = body["items"]
    assert (item["account_id"], item["queue"], item["version"], item["status"]) == (
        DYMAXA,
        "approval",
        1,
        "pending_review",
    )
    html = admin.get(f"/admin/review/{CAMPAIGN}", headers={**AUTH, "accept": "text/html,*/*;q=0.8"})
    assert html.headers["content-type"].startswith("text/html")
    [row] = [e for e in parse(html.text).iter() if e.get("data-admin-account") == DYMAXA]
    assert "pending_review" in text_of(row)
    assert [a.get("href") for a in row.iter() if a.tag == "a"] == [
        f"/admin/preview/{CAMPAIGN}/{DYMAXA}",
        f"/admin/explain/{CAMPAIGN}/{DYMAXA}",
    ]


def test_approving_the_version_read_puts_it_live(admin: TestClient) -> None:
    stale = admin.post(f"/admin/review/{CAMPAIGN}/{DYMAXA}/approve", headers=AUTH, json={"version": 7})
    assert stale.status_code == 409 and stale.json()["current_version"] == 1
    assert "no longer current" in stale.json()["error"]
    before = zones(admin.get(f"/c/{CAMPAIGN}", params={"wm": link_token(DYMAXA)}).text)
    assert before["hero_headline"].rung == "segment"

    approved = admin.post(f"/admin/review/{CAMPAIGN}/{DYMAXA}/approve", headers=AUTH, json={"version": 1})
    assert approved.status_code == 200
    assert approved.json() | {"detail": ""} == {
        "account_id": DYMAXA,
        "changed": True,
        "version": 2,
        "status": "published",
        "detail": "",
    }
    assert admin.get(f"/admin/review/{CAMPAIGN}", headers=AUTH).json()["items"] == []
    # The store announced the change: a visitor's next page (fresh app: no cache) is personal.
    with TestClient(_app(admin.app.state.renderer.client), base_url=BASE_URL) as fresh:  # type: ignore[attr-defined]
        after = zones(fresh.get(f"/c/{CAMPAIGN}", params={"wm": link_token(DYMAXA)}).text)
    assert after["hero_headline"].rung == "personal" and "Series A" in after["hero_headline"].text
    again = admin.post(f"/admin/review/{CAMPAIGN}/{DYMAXA}/approve", headers=AUTH, json={"version": 2})
    assert again.status_code == 200 and again.json()["changed"] is False


def test_rejecting_keeps_the_fallback(admin: TestClient, precomputed: redis.Redis) -> None:
    answer = admin.post(
        f"/admin/review/{CAMPAIGN}/{DYMAXA}/reject", headers=AUTH, json={"version": 1, "reason": "off-brand"}
    )
    assert answer.status_code == 200 and answer.json()["status"] == "rejected"
    assert ZoneSetStore(precomputed).get(TENANT, CAMPAIGN, DYMAXA).status is ZoneSetStatus.REJECTED  # type: ignore[union-attr]
    page = zones(admin.get(f"/c/{CAMPAIGN}", params={"wm": link_token(DYMAXA)}).text)
    assert page["hero_headline"].rung == "segment"


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        (b"", 400, "version"),
        (b"not json", 400, "version"),
        (b'{"version": "1"}', 400, "version"),
        (b'{"version": 0}', 400, "version"),
        (b'{"version": 1, "extra": true}', 400, "extra"),
        (b'{"version": 1}' + b" " * 2000, 413, "1024 bytes"),
    ],
)
def test_a_bad_decision_body_changes_nothing(
    admin: TestClient, precomputed: redis.Redis, body: bytes, status: int, needle: str
) -> None:
    answer = admin.post(
        f"/admin/review/{CAMPAIGN}/{DYMAXA}/approve",
        headers={**AUTH, "content-type": "application/json"},
        content=body,
    )
    assert answer.status_code == status and needle in answer.json()["error"]
    assert ZoneSetStore(precomputed).get(TENANT, CAMPAIGN, DYMAXA).version == 1  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "body", [{"version": 1}, {"version": 1, "reason": " \n "}, {"version": 1, "reason": None}]
)
def test_a_rejection_without_a_reason_is_400_and_changes_nothing(
    admin: TestClient, precomputed: redis.Redis, body: dict[str, Any]
) -> None:
    answer = admin.post(f"/admin/review/{CAMPAIGN}/{DYMAXA}/reject", headers=AUTH, json=body)
    assert answer.status_code == 400 and "reject needs a reason" in answer.json()["error"]
    assert ZoneSetStore(precomputed).get(TENANT, CAMPAIGN, DYMAXA).version == 1  # type: ignore[union-attr]
    assert [e.action for e in read_entries(precomputed, TENANT, account=DYMAXA)] == [AuditAction.PUBLISH]


def test_decisions_are_audit_logged_as_the_named_token_that_made_them(precomputed: redis.Redis) -> None:
    rita, sam = "rita-token-0123456789-0123456789-xyz", "sam-token-0123456789-0123456789-xyzw"
    app = _app(precomputed, admin_tokens=(Credential("rita", rita), Credential("sam", sam, TENANT)))
    with TestClient(app, base_url=BASE_URL) as client:
        rita_auth = {"authorization": f"Bearer {rita}"}
        approved = client.post(
            f"/admin/review/{CAMPAIGN}/{DYMAXA}/approve",
            headers=rita_auth,
            json={"version": 1, "reason": "ok"},
        )
        assert approved.status_code == 200
        rolled = client.post(
            f"/admin/review/{CAMPAIGN}/{DYMAXA}/rollback", headers=AUTH, json={"reason": "  "}
        )
        assert rolled.status_code == 400 and "rollback needs a reason" in rolled.json()["error"]
        nothing = client.post(
            f"/admin/review/{CAMPAIGN}/{DYMAXA}/rollback", headers=AUTH, json={"reason": "wrong fact"}
        )
        assert nothing.status_code == 404 and "no previous version" in nothing.json()["error"]
        rejected = client.post(
            f"/admin/review/{CAMPAIGN}/{DYMAXA}/reject",
            headers={"authorization": f"Bearer {sam}"},  # scoped to the campaign's tenant
            json={"version": 2, "reason": "a rumour"},
        )
        assert rejected.status_code == 200
    entries = read_entries(precomputed, TENANT, account=DYMAXA, campaign=CAMPAIGN)
    assert [(e.action.value, e.actor, e.via.value, e.version, e.reason) for e in entries] == [
        ("publish", "precompute", "precompute", 1, None),
        ("approve", "rita", "http", 2, "ok"),
        ("reject", f"sam@{TENANT}", "http", 3, "a rumour"),
    ]
    assert entries[1].at == NOW  # the app's clock


def test_a_rollback_over_http_restores_the_previous_version(redis_client: redis.Redis) -> None:
    campaign, zone_contracts = example_inputs()
    publish_config(redis_client, campaign, zone_contracts)
    store = ZoneSetStore(redis_client)
    store.publish(make_zone_set(DYMAXA))
    store.publish(make_zone_set(DYMAXA, input_hash="another-hash-0002"))
    with TestClient(_app(redis_client), base_url=BASE_URL) as client:
        answer = client.post(
            f"/admin/review/{CAMPAIGN}/{DYMAXA}/rollback", headers=AUTH, json={"reason": "v2 is wrong"}
        )
    assert answer.status_code == 200 and answer.json()["version"] == 3
    [entry] = read_entries(redis_client, TENANT)
    assert (entry.action.value, entry.actor, entry.version, entry.reason) == (
        "rollback",
        "admin",
        3,
        "v2 is wrong",
    )


def test_a_decision_that_cannot_be_logged_stands_and_the_answer_says_so(
    admin: TestClient, precomputed: redis.Redis
) -> None:
    precomputed.delete(keys.audit_stream_key(TENANT))
    precomputed.set(keys.audit_stream_key(TENANT), b"not a stream")  # every XADD now fails
    answer = admin.post(f"/admin/review/{CAMPAIGN}/{DYMAXA}/approve", headers=AUTH, json={"version": 1})
    assert answer.status_code == 503
    body = answer.json()
    assert body["applied"] is True and body["audited"] is False and "decision stands" in body["error"]
    assert ZoneSetStore(precomputed).get(TENANT, CAMPAIGN, DYMAXA).status is ZoneSetStatus.PUBLISHED  # type: ignore[union-attr]


def test_deciding_on_an_account_without_a_zone_set_is_404(admin: TestClient) -> None:
    answer = admin.post(f"/admin/review/{CAMPAIGN}/acct_nobody/approve", headers=AUTH, json={"version": 1})
    assert answer.status_code == 404 and "no zone set" in answer.json()["error"]


# -- Redis down, OpenAPI -----------------------------------------------------------------------


def test_admin_routes_answer_503_not_500_when_redis_is_down() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    app = _app(renderer_redis_client(f"redis://127.0.0.1:{port}/0"))
    with TestClient(app, base_url=BASE_URL, raise_server_exceptions=False) as client:
        for method, path in ROUTES:
            answer = client.request(method, path, headers=AUTH, json={"version": 1})
            assert answer.status_code == 503, (path, answer.text)
            assert answer.headers["retry-after"] == "5" and answer.headers["cache-control"] == "no-store"
        assert client.get(f"/c/{CAMPAIGN}").status_code == 200  # visitors still get a page


def test_openapi_describes_the_admin_routes(admin: TestClient) -> None:
    schema = admin.get("/openapi.json").json()
    scheme = schema["components"]["securitySchemes"]["adminBearer"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer") and "NAME@TENANT:TOKEN" in scheme[
        "description"
    ]
    for method, path in ROUTES:
        templated = path.replace(CAMPAIGN, "{campaign}").replace(DYMAXA, "{account}")
        operation = schema["paths"][templated][method.lower()]
        assert operation["security"] == [{"adminBearer": []}, {"adminSession": []}]
        assert "401" in {str(k) for k in operation["responses"]}


# -- the pure parts: reading zones back from a page, the serializer --------------------------

LANDING = template_environment().get_template("landing.html")
ZONE_TEXT = st.text(
    st.characters(exclude_categories=["Cs", "Cc"]) | st.sampled_from(["<", ">", "&", '"', "\n"])
)


@settings(max_examples=100, deadline=None)
@given(
    texts=st.lists(ZONE_TEXT, min_size=1, max_size=4), rungs=st.lists(st.sampled_from(list(Rung)), min_size=4)
)
def test_zones_read_back_from_a_rendered_page_agree_with_a_browser_parser(
    texts: list[str], rungs: list[Rung]
) -> None:
    ids = ["hero_headline", "hero_support", "proof", "cta"][: len(texts)]
    zones_in = [
        ResolvedZone(
            z,
            render_text(t, None, frozenset()),
            t,
            "https://www.acmerevenue.example/x" if z == "cta" else None,
            r,
        )
        for z, t, r in zip(ids, texts, rungs, strict=False)
    ]
    html = (
        template_environment()
        .get_template("landing.html")
        .render(
            page_id="landing",
            campaign_id=CAMPAIGN,
            arm="personal",
            zones=zones_in,
            title="t",
            stylesheet="/s.css",
            csp_nonce="n",
            view_id="v",
        )
    )
    ours = read_page_zones(html)
    browser = zones(html)  # html5lib, as a browser parses it
    assert [z.zone_id for z in ours] == ids == list(browser)
    for zone in ours:
        seen = browser[zone.zone_id]
        assert (zone.rung, zone.text, zone.href) == (seen.rung, " ".join(seen.text.split()), seen.href)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(
    value=JSON
    | st.fixed_dictionaries({"account_id": st.text(max_size=10)}, optional={"facts": JSON, "zones": JSON})
)
def test_any_stored_value_is_an_explain_payload_or_a_stored_value_error(value: object) -> None:
    try:
        payload = parse_explain_record(json.dumps(value).encode(), "k", None)
    except StoredValueError as exc:
        assert exc.key == "k"
        return
    dumped = json.dumps(payload.model_dump(mode="json"))
    for fact in payload.facts:  # every link that leaves passed the gate
        assert fact.source_url is None or fact.source_url.startswith("https://")
    assert "evidence" not in json.loads(dumped)


def test_personal_refusal_says_why() -> None:
    zone_set = make_zone_set(valid_until=NOW - timedelta(days=1))
    assert personal_refusal(Arm.PERSONAL, zone_set, NOW) == f"zone set v0 expired at {zone_set.valid_until}"
    assert personal_refusal(Arm.PERSONAL, None, NOW) == "no zone set is published for this account"
    assert personal_refusal(Arm.PERSONAL, make_zone_set(), NOW - timedelta(days=1)) is None
    assert (
        personal_refusal(Arm.ANONYMOUS, make_zone_set(), NOW) == "anonymous visitors see the campaign default"
    )


# -- held drafts: doubt keeps a draft off the page until a person approves it ----------------


def _through_the_model(
    tmp_path: Path, client: redis.Redis, llm_server: LLMTestServer, mode: str = "well", **params: Any
) -> None:
    """Dymaxa (tier 2: published at once) precomputed by the model answering in `mode`."""
    campaign, zone_contracts = example_inputs()
    llm_server.reset()
    llm_server.set_mode(mode, **params)
    accounts = tmp_path / "accounts.jsonl"
    accounts.write_text(json.dumps(example_rows(NOW.date())[0]) + "\n")
    provider = provider_for(llm_server)
    try:
        PrecomputeRun(
            client=client,
            campaign=campaign,
            zones=zone_contracts,
            policy=build_policy(campaign, None),
            provider=provider,
            now=NOW,
        ).run(accounts)
    finally:
        provider.close()


def _page_zones(client: TestClient, want_rung: str) -> dict[str, Any]:
    """Dymaxa's landing page by its IP, once `hero_support` is served on `want_rung` (cache refresh)."""
    deadline = time.monotonic() + 3
    while True:
        page = client.get(f"/c/{CAMPAIGN}")
        assert page.status_code == 200
        seen = zones(page.text)
        if seen["hero_support"].rung == want_rung or time.monotonic() > deadline:
            return seen
        time.sleep(0.05)


def test_a_self_review_rejection_is_held_queued_with_its_note_and_approved_as_personal(
    tmp_path: Path, redis_client: redis.Redis, llm_server: LLMTestServer
) -> None:
    note = "Implies <b>growth</b> the facts do not state"
    _through_the_model(tmp_path, redis_client, llm_server, review_reject=["hero_support"], review_note=note)
    store = ZoneSetStore(redis_client)
    held_in = store.get(TENANT, CAMPAIGN, DYMAXA)
    assert held_in is not None and held_in.status is ZoneSetStatus.PUBLISHED
    assert held_in.zone("hero_support").reason == "self_review_rejected"  # type: ignore[union-attr]
    approve = f"/admin/review/{CAMPAIGN}/{DYMAXA}/approve"
    with TestClient(_app(redis_client), base_url=BASE_URL, client=("203.0.113.7", 50000)) as client:
        explained = client.get(f"/admin/explain/{CAMPAIGN}/{DYMAXA}", headers=AUTH).json()
        held = next(z for z in explained["zones"] if z["zone_id"] == "hero_support")["held"]
        assert (held["layer"], held["note"], held["approvable"]) == ("self_review", note, True)
        assert held["draft"] and held["failures"] == []
        assert "content" not in held  # the serializer names what leaves

        # Served the fallback meanwhile: the held draft is nowhere on the page.
        before = _page_zones(client, "segment")
        assert before["hero_support"].rung == "segment" and before["hero_headline"].rung == "personal"
        assert held["draft"] not in before["hero_support"].text

        queue = client.get(f"/admin/review/{CAMPAIGN}", headers=AUTH).json()["items"]
        entry = next(e for e in queue if e["queue"] == "held")
        assert entry["account_id"] == DYMAXA and entry["version"] == held_in.version
        assert [(h["zone_id"], h["note"]) for h in entry["held"]] == [("hero_support", note)]
        listed = client.get(f"/admin/review/{CAMPAIGN}", headers={**AUTH, "accept": "text/html"})
        assert "&lt;b&gt;growth&lt;/b&gt;" in listed.text and "<b>growth" not in listed.text

        _, seen = _preview(client)
        row = seen["rows"]["hero_support"]
        shown = " ".join(text_of(row).split())
        assert f"Held by self_review: “{note}”" in shown and held["draft"] in shown
        assert not [e for e in row.iter() if e.tag == "b"]  # the note is text, never markup

        rejected = client.post(
            f"/admin/review/{CAMPAIGN}/{DYMAXA}/reject",
            headers=AUTH,
            json={"version": held_in.version, "held": "hero_support", "reason": "no"},
        )
        assert rejected.status_code == 400
        answer = client.post(approve, headers=AUTH, json={"version": held_in.version, "held": "hero_support"})
        assert answer.status_code == 200, answer.text
        assert answer.json()["version"] == held_in.version + 1
        after = _page_zones(client, "personal")
        again = client.post(
            approve, headers=AUTH, json={"version": held_in.version + 1, "held": "hero_support"}
        )
        queue_after = client.get(f"/admin/review/{CAMPAIGN}", headers=AUTH).json()["items"]
        explained_after = client.get(f"/admin/explain/{CAMPAIGN}/{DYMAXA}", headers=AUTH).json()

    assert after["hero_support"].rung == "personal" and after["hero_support"].text == held["draft"]
    published = store.get(TENANT, CAMPAIGN, DYMAXA)
    assert published is not None and published.version == held_in.version + 1
    support = published.zone("hero_support")
    assert support is not None and support.rung is Rung.PERSONAL and support.facts
    assert support.reason.startswith("approved:")
    assert again.status_code == 409  # nothing held any more
    assert not [e for e in queue_after if e["queue"] == "held"]
    zone = next(z for z in explained_after["zones"] if z["zone_id"] == "hero_support")
    assert (zone["rung"], zone["held"], zone["note"]) == ("personal", None, note)
    entries = read_entries(redis_client, TENANT, account=DYMAXA)
    decision = [e for e in entries if e.action is AuditAction.APPROVE]
    assert len(decision) == 1 and decision[0].version == held_in.version + 1
    assert decision[0].actor == "admin" and decision[0].via is Via.HTTP
    assert decision[0].detail == f"held draft of zone hero_support (self_review) from v{held_in.version}"
    # A rollback undoes it like any other decision: the held state is served again.
    restored = ZoneSetStore(redis_client).rollback(TENANT, CAMPAIGN, DYMAXA)
    assert restored is not None and restored.zone("hero_support").rung is Rung.SEGMENT  # type: ignore[union-attr]


def test_a_held_draft_that_fails_a_deterministic_check_cannot_be_approved(
    tmp_path: Path, redis_client: redis.Redis, llm_server: LLMTestServer
) -> None:
    """The model invents a number in the support line and its self-review rejects it: held and
    shown, never approvable (a person's approval overrides doubt, never a check)."""
    _through_the_model(
        tmp_path,
        redis_client,
        llm_server,
        "hallucinate",
        review_reject=["hero_support"],
        review_note="made up",
    )
    current = ZoneSetStore(redis_client).get(TENANT, CAMPAIGN, DYMAXA)
    assert current is not None
    with TestClient(_app(redis_client), base_url=BASE_URL) as client:
        explained = client.get(f"/admin/explain/{CAMPAIGN}/{DYMAXA}", headers=AUTH).json()
        held = next(z for z in explained["zones"] if z["zone_id"] == "hero_support")["held"]
        _, seen = _preview(client)
        answer = client.post(
            f"/admin/review/{CAMPAIGN}/{DYMAXA}/approve",
            headers=AUTH,
            json={"version": current.version, "held": "hero_support"},
        )
    assert held["layer"] == "self_review" and held["failures"] and not held["approvable"]
    assert "not approvable: fails" in text_of(seen["rows"]["hero_support"])
    assert answer.status_code == 409 and "approval never bypasses" in answer.text
    unchanged = ZoneSetStore(redis_client).get(TENANT, CAMPAIGN, DYMAXA)
    assert unchanged == current
    entries = read_entries(redis_client, TENANT, account=DYMAXA)
    assert not [e for e in entries if e.action is AuditAction.APPROVE]
