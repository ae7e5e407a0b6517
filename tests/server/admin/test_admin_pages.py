"""The admin's browser pages: campaigns, a campaign's accounts, one account, the audit log."""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import redis
from starlette.applications import Starlette
from starlette.testclient import TestClient

from tests.corpora import corpus_lines
from tests.precompute.test_pipeline import NOW
from tests.server.conftest import (
    BASE_URL,
    CAMPAIGN,
    TENANT,
    example_inputs,
    make_zone_set,
    publish_config,
    renderer_app,
    renderer_settings,
    tuning_for_tests,
)
from tests.server.pagetools import parse, text_of
from welcomemat import keys
from welcomemat.records.audit import AuditAction, Auditor, Via, append_entry
from welcomemat.records.subject_requests import Subject, erase
from welcomemat.security.credentials import parse_admin_tokens
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import ZoneSetStatus

TOKEN = "admin-token-for-tests-0123456789abcdef"
SCOPED = "scoped-token-for-tests-0123456789abcdef"
AUTH = {"authorization": f"Bearer {TOKEN}"}
SCOPED_AUTH = {"authorization": f"Bearer {SCOPED}"}
JSON = {**AUTH, "accept": "application/json"}
OTHER_TENANT, OTHER_CAMPAIGN = "globex", "globex-launch"
ACCOUNTS = [f"acct_{name}" for name in ("alpha", "beta", "bravo", "charlie", "delta", "echo", "foxtrot")]
XSS = corpus_lines("xss/IntrudersXSS.txt")[:30] + corpus_lines("xss/XSS_Polyglots.txt")[:10]
REDIRECTS = corpus_lines("open-redirect/Open-Redirect-payloads.txt")[:20]
PAGES = [
    "/admin/",
    f"/admin/campaigns/{CAMPAIGN}",
    f"/admin/campaigns/{CAMPAIGN}/accounts/acct_alpha",
    "/admin/audit",
]


def _app(client: redis.Redis) -> Starlette:
    settings = renderer_settings(admin_token=TOKEN, admin_tokens=parse_admin_tokens(f"sam@{TENANT}:{SCOPED}"))
    return renderer_app(settings, redis_client=client, clock=NOW.timestamp, tuning=tuning_for_tests())


@pytest.fixture
def published(redis_client: redis.Redis) -> redis.Redis:
    """Two tenants' campaigns; seven accounts in acme's, one pending review, one rejected."""
    campaign, zone_contracts = example_inputs()
    publish_config(redis_client, campaign, zone_contracts)
    other = {**campaign.model_dump(mode="json"), "tenant": OTHER_TENANT, "campaign": OTHER_CAMPAIGN}
    publish_config(redis_client, other, zone_contracts)
    store = ZoneSetStore(redis_client)
    for account in ACCOUNTS:
        store.publish(make_zone_set(account))
    store.set_status(TENANT, CAMPAIGN, "acct_beta", ZoneSetStatus.PENDING_REVIEW)
    store.set_status(TENANT, CAMPAIGN, "acct_echo", ZoneSetStatus.REJECTED)
    store.publish(make_zone_set("acct_secret", tenant=OTHER_TENANT, campaign=OTHER_CAMPAIGN))
    auditor = Auditor("rita", Via.HTTP, lambda: NOW)
    for i in range(5):
        append_entry(
            redis_client,
            auditor.entry(
                AuditAction.APPROVE, tenant=TENANT, campaign=CAMPAIGN, account="acct_alpha", version=i + 1
            ),
        )
    append_entry(redis_client, auditor.entry(AuditAction.APPROVE, tenant=OTHER_TENANT, account="acct_secret"))
    return redis_client


@pytest.fixture
def admin(published: redis.Redis) -> Iterator[TestClient]:
    with TestClient(_app(published), base_url=BASE_URL) as client:
        yield client


def rows(html: str) -> list[str]:
    return [e.get("data-admin-account") or "" for e in parse(html).iter() if e.get("data-admin-account")]


def assert_accessible(doc: ET.Element) -> None:
    """Every form control has a label; every header cell a scope; no script anywhere."""
    labelled = {e.get("for") for e in doc.iter() if e.tag == "label"}
    for element in doc.iter():
        assert element.tag != "script"
        if element.tag in {"input", "select"}:
            assert element.get("id") in labelled, element.attrib
        if element.tag == "th":
            assert element.get("scope") in {"col", "row"}, text_of(element)


def test_the_pages_need_the_bearer_token(admin: TestClient) -> None:
    for path in PAGES:
        assert admin.get(path).status_code == 401
        assert admin.get(path, headers={"authorization": "Bearer wrong"}).status_code == 401


def test_the_pages_do_not_exist_without_an_admin_token(published: redis.Redis) -> None:
    app = renderer_app(renderer_settings(), redis_client=published, clock=NOW.timestamp)
    with TestClient(app, base_url=BASE_URL) as client:
        for path in PAGES:
            assert client.get(path, headers=AUTH).status_code == 404


def test_the_campaigns_page_lists_what_the_credential_may_see(admin: TestClient) -> None:
    every = admin.get("/admin/", headers=JSON).json()["campaigns"]
    assert every == [
        {"tenant": TENANT, "campaign": CAMPAIGN, "accounts_indexed": len(ACCOUNTS)},
        {"tenant": OTHER_TENANT, "campaign": OTHER_CAMPAIGN, "accounts_indexed": 1},
    ]
    scoped = admin.get("/admin/", headers={**SCOPED_AUTH, "accept": "application/json"}).json()["campaigns"]
    assert [c["campaign"] for c in scoped] == [CAMPAIGN]
    page = admin.get("/admin/", headers=SCOPED_AUTH)
    assert page.status_code == 200 and page.headers["cache-control"] == "no-store"
    assert OTHER_CAMPAIGN not in page.text and OTHER_TENANT not in page.text
    doc = parse(page.text)
    assert_accessible(doc)
    links = {e.get("href") for e in doc.iter() if e.tag == "a"}
    assert {
        f"/admin/campaigns/{CAMPAIGN}",
        f"/admin/review/{CAMPAIGN}",
        f"/admin/results/{CAMPAIGN}",
    } <= links


def test_the_overview_filters_searches_and_pages(admin: TestClient) -> None:
    page = admin.get(f"/admin/campaigns/{CAMPAIGN}", headers=AUTH)
    assert page.status_code == 200
    assert rows(page.text) == sorted(ACCOUNTS)
    doc = parse(page.text)
    assert_accessible(doc)
    (form,) = [e for e in doc.iter() if e.tag == "form"]
    assert form.get("method") == "get" and form.get("action") == f"/admin/campaigns/{CAMPAIGN}"
    assert "form-action 'self'" in page.headers["content-security-policy"]

    status = admin.get(f"/admin/campaigns/{CAMPAIGN}?status=pending_review", headers=JSON).json()
    assert [r["account_id"] for r in status["rows"]] == ["acct_beta"] and status["matched"] == 1
    assert status["counts"]["status"] == {"published": 5, "pending_review": 1, "rejected": 1}
    search = admin.get(f"/admin/campaigns/{CAMPAIGN}?q=acct_b&status=", headers=JSON).json()
    assert [r["account_id"] for r in search["rows"]] == ["acct_beta", "acct_bravo"]
    (row,) = admin.get(f"/admin/campaigns/{CAMPAIGN}?q=acct_alpha", headers=JSON).json()["rows"]
    assert row["zones"] == [{"zone_id": "hero_headline", "rung": "personal", "reason": "personal:funding"}]
    assert (row["status"], row["version"], row["arm"]) == ("published", 1, row["arm"])

    seen: list[str] = []
    link: str | None = f"/admin/campaigns/{CAMPAIGN}?limit=3"
    while link is not None:
        answer = admin.get(link, headers=AUTH)
        seen += rows(answer.text)
        found = [e.get("href") for e in parse(answer.text).iter() if e.tag == "a" and e.get("rel") == "next"]
        link = found[0] if found else None
    assert seen == sorted(ACCOUNTS)
    back = admin.get(f"/admin/campaigns/{CAMPAIGN}?limit=3&before=acct_delta", headers=JSON).json()
    assert [r["account_id"] for r in back["rows"]] == ["acct_beta", "acct_bravo", "acct_charlie"]
    assert back["previous"] == f"/admin/campaigns/{CAMPAIGN}?before=acct_beta&limit=3"


@pytest.mark.parametrize(
    "name", ["q", "status", "rung", "reason", "variant", "arm", "after", "before", "limit"]
)
def test_hostile_query_values_are_refused_with_4xx(admin: TestClient, name: str) -> None:
    for value in [*XSS, *REDIRECTS, "a" * 5000, "1" * 30, "-1", "\x00"]:
        for headers in (AUTH, JSON):
            answer = admin.get(f"/admin/campaigns/{CAMPAIGN}", params={name: value}, headers=headers)
            assert answer.status_code in {200, 400}, (name, value, answer.status_code)
            if headers is AUTH:
                for element in parse(answer.text).iter():
                    assert element.tag != "script"
                    assert not [a for a in element.attrib if a.lower().startswith("on")]
    for value in [*XSS[:10], "9" * 25 + "-1", "1-2-3"]:
        answer = admin.get("/admin/audit", params={"before": value, "tenant": value}, headers=AUTH)
        assert answer.status_code == 400, value


def test_a_scoped_credential_sees_only_its_tenant(admin: TestClient) -> None:
    assert admin.get(f"/admin/campaigns/{OTHER_CAMPAIGN}", headers=SCOPED_AUTH).status_code == 404
    path = f"/admin/campaigns/{OTHER_CAMPAIGN}/accounts/acct_secret"
    assert admin.get(path, headers=SCOPED_AUTH).status_code == 404
    assert admin.get(path, headers=AUTH).status_code == 200
    assert admin.get(f"/admin/audit?tenant={OTHER_TENANT}", headers=SCOPED_AUTH).status_code == 404
    log = admin.get("/admin/audit", headers={**SCOPED_AUTH, "accept": "application/json"}).json()
    assert log["tenants"] == [TENANT] and {e["tenant"] for e in log["entries"]} == {TENANT}
    assert "acct_secret" not in admin.get("/admin/audit", headers=SCOPED_AUTH).text
    other = admin.get(f"/admin/audit?tenant={OTHER_TENANT}", headers=JSON).json()
    assert [e["account"] for e in other["entries"]] == ["acct_secret"]


def test_the_audit_log_pages_newest_first(admin: TestClient) -> None:
    versions: list[int] = []
    link: str | None = f"/admin/audit?tenant={TENANT}&limit=2"
    while link is not None:
        answer = admin.get(link, headers=JSON).json()
        versions += [e["version"] for e in answer["entries"]]
        link = answer["older"]
    assert versions == [5, 4, 3, 2, 1]
    page = admin.get(f"/admin/audit?tenant={TENANT}", headers=AUTH)
    assert_accessible(parse(page.text))
    assert f"/admin/campaigns/{CAMPAIGN}/accounts/acct_alpha" in page.text


def test_the_account_page_shows_its_page_history_and_audit(admin: TestClient, published: redis.Redis) -> None:
    ZoneSetStore(published).publish(
        make_zone_set("acct_alpha", texts={"hero_headline": "Version two"}, input_hash="input-hash-0002")
    )
    page = admin.get(f"/admin/campaigns/{CAMPAIGN}/accounts/acct_alpha", headers=AUTH)
    assert page.status_code == 200
    doc = parse(page.text)
    assert_accessible(doc)
    history = {e.get("data-admin-history"): text_of(e) for e in doc.iter() if e.get("data-admin-history")}
    assert history["current"].startswith("currentv2") and history["previous"].startswith("previousv1")
    frame = next(e for e in doc.iter() if e.tag == "iframe")
    assert frame.get("sandbox") == "" and "Version two" in (frame.get("srcdoc") or "")
    assert len([e for e in doc.iter() if e.get("data-admin-audit")]) == 5
    assert [e.get("data-admin-zone") for e in doc.iter() if e.get("data-admin-zone")]
    data = admin.get(f"/admin/campaigns/{CAMPAIGN}/accounts/acct_alpha", headers=JSON).json()
    assert (data["current"]["version"], data["previous"]["version"]) == (2, 1)
    assert [e["version"] for e in data["audit"]] == [5, 4, 3, 2, 1]
    assert admin.get(f"/admin/campaigns/{CAMPAIGN}/accounts/acct_nobody", headers=AUTH).status_code == 404


def test_an_erased_account_vanishes_from_the_pages(admin: TestClient, published: redis.Redis) -> None:
    auditor = Auditor("dpo", Via.CLI, lambda: NOW + timedelta(minutes=1))
    erase(published, Subject(TENANT, "acct_charlie"), auditor=auditor, reason="request")
    overview = admin.get(f"/admin/campaigns/{CAMPAIGN}", headers=JSON).json()
    assert "acct_charlie" not in json.dumps(overview["rows"]) and overview["total"] == len(ACCOUNTS) - 1
    assert admin.get(f"/admin/campaigns/{CAMPAIGN}/accounts/acct_charlie", headers=AUTH).status_code == 404


def test_pages_escape_hostile_account_data(redis_client: redis.Redis) -> None:
    campaign, zone_contracts = example_inputs()
    publish_config(redis_client, campaign, zone_contracts)
    payload = " ".join(XSS)
    zone_set = make_zone_set("acct_alpha", texts={"hero_headline": payload})
    hostile = zone_set.model_copy(
        update={
            "segment": payload,
            "zones": tuple(z.model_copy(update={"reason": payload}) for z in zone_set.zones),
        }
    )
    ZoneSetStore(redis_client).publish(hostile)
    record: dict[str, Any] = {"account_id": "acct_alpha", "name": payload, "facts": [], "zones": []}
    redis_client.set(keys.explain_key(TENANT, CAMPAIGN, "acct_alpha"), json.dumps(record))
    line = " ".join(payload.split())[:480]  # an audit reason is one line of at most 500 characters
    append_entry(
        redis_client,
        Auditor(line[:100], Via.CLI, lambda: NOW).entry(
            AuditAction.REJECT, tenant=TENANT, campaign=CAMPAIGN, account="acct_alpha", reason=line
        ),
    )
    with TestClient(_app(redis_client), base_url=BASE_URL) as client:
        answers = [
            client.get(f"/admin/campaigns/{CAMPAIGN}", headers=AUTH),
            client.get(f"/admin/campaigns/{CAMPAIGN}/accounts/acct_alpha", headers=AUTH),
            client.get("/admin/audit", headers=AUTH),
        ]
    for answer in answers:
        assert answer.status_code == 200
        for element in parse(answer.text).iter():
            assert element.tag not in {"script", "img", "svg", "object", "embed", "style", "base"}
            assert not [name for name in element.attrib if name.lower().startswith("on")], element.attrib
    overview, account, audit = (parse(a.text) for a in answers)
    assert payload in text_of(overview)  # shown as text, exactly
    assert line in text_of(audit) and line[:100] in text_of(audit)
    assert payload in text_of(account)


def test_accounts_published_before_the_index_appear_once_it_is_built(
    admin: TestClient, published: redis.Redis
) -> None:
    for key in published.scan_iter(match=f"{keys.campaign_prefix(TENANT, CAMPAIGN)}:ov:*"):
        published.delete(key)
    first = admin.get(f"/admin/campaigns/{CAMPAIGN}", headers=JSON)
    assert first.status_code == 200
    for _ in range(200):  # the renderer builds it on a thread of its own
        answer = admin.get(f"/admin/campaigns/{CAMPAIGN}", headers=JSON).json()
        if not answer["building"]:
            break
        time.sleep(0.05)
    assert [r["account_id"] for r in answer["rows"]] == sorted(ACCOUNTS)
    assert answer["counts"]["status"] == {"published": 5, "pending_review": 1, "rejected": 1}


@pytest.mark.parametrize(
    "path",
    [
        "/admin/?x=1",
        f"/admin/campaigns/{CAMPAIGN}?stauts=pending_review",
        f"/admin/campaigns/{CAMPAIGN}?status=published&status=rejected",
        f"/admin/campaigns/{CAMPAIGN}/accounts/acct_alpha?=1",
        "/admin/audit?before=1-0&=1",
    ],
)
def test_a_misspelt_or_repeated_parameter_is_refused(admin: TestClient, path: str) -> None:
    answer = admin.get(path, headers=JSON)
    assert answer.status_code == 400 and "parameter" in answer.json()["error"]
