"""The precompute run end to end against a real Redis: Dymaxa, hostile rows, reruns, resume, review."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import redis

from precompute.explain import format_explain
from precompute.policy import build_policy
from precompute.providers.base import GenerationRequest, GenerationResult, ProviderUsage, ZoneDraft
from precompute.providers.offline import OfflineComposer
from precompute.qa import run_qa
from precompute.run import PrecomputeRun
from tests.corpora import REPO_ROOT
from tests.example_accounts import committed_today
from welcomemat import keys
from welcomemat.campaign.contract import Campaign
from welcomemat.reasons import ZoneReason
from welcomemat.records.audit import AuditAction, Auditor, Via, read_entries
from welcomemat.security.markup import render_text
from welcomemat.zones.contract import ZoneContract
from welcomemat.zones.review import decide, list_queue
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import Rung, ZoneSetMode, ZoneSetStatus

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)  # a Sunday; the Series A was "last Thursday"
LANDING = ("hero_headline", "hero_support", "proof", "cta")


TODAY = NOW.date()


def dymaxa(today: date = TODAY, *, funding_age: int | None = None, tier: int = 1) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(
        (REPO_ROOT / "examples" / "accounts.jsonl").read_text().splitlines()[0]
    )
    shift = today - committed_today(record)
    for fact in record["facts"]:
        fact["published_at"] = (date.fromisoformat(fact["published_at"]) + shift).isoformat()
    if funding_age is not None:
        record["facts"][0]["published_at"] = (today - timedelta(days=funding_age)).isoformat()
    record["tier"] = tier
    return record


def write(tmp_path: Path, rows: list[dict[str, Any] | str], name: str = "accounts.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def run(
    client: redis.Redis,
    campaign: Campaign,
    zones: dict[str, ZoneContract],
    path: Path,
    now: datetime = NOW,
    **kw: Any,
) -> Any:
    policy = build_policy(campaign, None)
    return PrecomputeRun(
        client=client,
        campaign=campaign,
        zones=zones,
        policy=policy,
        provider=OfflineComposer(),
        now=now,
        **kw,
    ).run(path)


def test_dymaxa_zones_speak_of_the_series_a_and_the_four_sdr_roles(
    tmp_path: Path, redis_client: redis.Redis, campaign: Campaign, zones: dict[str, ZoneContract]
) -> None:
    report = run(redis_client, campaign, zones, write(tmp_path, [dymaxa(tier=2)]))
    assert report.published == 1 and not report.failed and not report.check_failures
    zs = ZoneSetStore(redis_client).get("acme", "q4-pipeline", "acct_dymaxa")
    # Every line names a specific of its facts but the CTA, an approved label: segment copy.
    assert zs is not None and zs.mode is ZoneSetMode.DEGRADED and zs.status is ZoneSetStatus.PUBLISHED
    landing = [zs.zone(z) for z in LANDING]
    assert {z.zone_id: z.rung for z in landing if z} == {
        "hero_headline": Rung.PERSONAL,
        "hero_support": Rung.PERSONAL,
        "proof": Rung.PERSONAL,
        "cta": Rung.SEGMENT,
    }
    text = " ".join(z.text for z in landing if z)
    assert "Series A" in text and "Dymaxa" in text
    assert "four new sdrs" in text.lower()
    cited = {f.fact_id for z in landing if z for f in z.facts}
    assert "dymaxa-series-a" in cited and {f"dymaxa-sdr-{n}" for n in range(1, 5)} <= cited
    for zone in landing:
        assert zone is not None
        for fact in zone.facts:
            assert fact.source_url.startswith("https://dymaxa.com/") and fact.published_at <= NOW.date()
    cta = zs.zone("cta")
    assert cta is not None and cta.href == "https://meet.acmerevenue.example/ramp-review"
    assert cta.reason == "not_specific:funding" and [f.fact_id for f in cta.facts] == ["dymaxa-series-a"]
    # The renderer's IP identification index comes from the same run.
    ranges = redis_client.hgetall(keys.ip_ranges_key("acme", "q4-pipeline"))
    assert {k: json.loads(v) for k, v in ranges.items()} == {  # type: ignore[union-attr]
        b"acct_dymaxa": ["203.0.113.0/24", "2001:db8:d1a::/48"]
    }
    assert redis_client.ttl(keys.ip_ranges_key("acme", "q4-pipeline")) > 0
    # The page lives two weeks at least: its date phrase ("in November") does not end it sooner.
    assert zs.valid_until is not None and zs.valid_until >= NOW + timedelta(days=14)


def test_funding_45_days_old_is_not_claimed_and_stale_hiring_falls_back_fully(
    tmp_path: Path, redis_client: redis.Redis, campaign: Campaign, zones: dict[str, ZoneContract]
) -> None:
    old_funding = dymaxa(funding_age=45, tier=2)
    run(redis_client, campaign, zones, write(tmp_path, [old_funding]))
    store = ZoneSetStore(redis_client)
    zs = store.get("acme", "q4-pipeline", "acct_dymaxa")
    assert zs is not None
    assert all("dymaxa-series-a" not in {f.fact_id for f in z.facts} for z in zs.zones)
    assert "Series A" not in " ".join(z.text for z in zs.zones if z.rung is Rung.PERSONAL)
    explain = json.loads(redis_client.get(keys.explain_key("acme", "q4-pipeline", "acct_dymaxa")) or b"{}")
    funding = next(f for f in explain["facts"] if f["id"] == "dymaxa-series-a")
    assert funding["reason"] == "stale" and "30 days" in funding["detail"]
    # a reviewer sees what the rejected fact said, where and when
    raw = next(f for f in old_funding["facts"] if f["id"] == "dymaxa-series-a")
    assert (funding["statement"], funding["source_url"], funding["published_at"]) == (
        raw["statement"],
        raw["source_url"],
        raw["published_at"],
    )

    all_old = dymaxa(funding_age=45, tier=2)
    for fact in all_old["facts"][1:]:
        fact["published_at"] = (NOW.date() - timedelta(days=60)).isoformat()
    run(redis_client, campaign, zones, write(tmp_path, [all_old], "old.jsonl"))
    zs = store.get("acme", "q4-pipeline", "acct_dymaxa")
    assert zs is not None and zs.mode is ZoneSetMode.FALLBACK
    assert {z.rung for z in zs.zones} == {Rung.SEGMENT}
    headline = zs.zone("hero_headline")
    assert headline is not None
    assert headline.text == campaign.segments["saas-mid"].zones["hero_headline"].text
    assert headline.reason == "no_trusted_fact"


def test_malformed_and_hostile_rows_are_reported_and_nothing_hostile_is_published(
    tmp_path: Path, redis_client: redis.Redis, campaign: Campaign, zones: dict[str, ZoneContract]
) -> None:
    hostile = dymaxa(tier=2)
    hostile.update(account_id="acct_hostile", name="<script>alert(1)</script> B.V.")
    hostile["facts"][0]["statement"] = "Dymaxa raised a <img src=x onerror=alert(1)> Series A"
    hostile["facts"][0]["round"] = "<b>Series A</b>"
    js = dymaxa(tier=2)
    js.update(account_id="acct_js", name="Jsco Ltd", domain="jsco.com")
    for fact in js["facts"]:
        fact["subject"] = "Jsco"
        fact["source_url"] = "javascript:alert(document.cookie)"
    future = dymaxa(tier=2)
    future.update(account_id="acct_future", name="Futuro GmbH", domain="futuro.de")
    for fact in future["facts"]:
        fact["subject"] = "Futuro"
        fact["published_at"] = (NOW.date() + timedelta(days=10)).isoformat()
    unknown_segment = dict(dymaxa(tier=2), account_id="acct_unknownseg", segment="aerospace")
    rows: list[dict[str, Any] | str] = [
        dymaxa(tier=2),
        "{not json",
        {"name": "No Id", "domain": "noid.com", "segment": "saas-mid"},
        dict(dymaxa(tier=2), account_id="acct_badcidr", ip_ranges=["10.0.0.0/33"]),
        hostile,
        js,
        future,
        unknown_segment,
    ]
    report = run(redis_client, campaign, zones, write(tmp_path, rows))
    assert [(m.line, m.field) for m in report.malformed] == [(2, None), (3, "account_id"), (4, "ip_ranges.0")]
    assert report.accounts == 5 and report.published == 5 and not report.failed
    store = ZoneSetStore(redis_client)
    for account_id in ("acct_hostile", "acct_js", "acct_future", "acct_unknownseg", "acct_dymaxa"):
        zs = store.get("acme", "q4-pipeline", account_id)
        assert zs is not None, account_id
        for zone in zs.zones:
            assert "<" not in zone.text and "javascript" not in zone.text.lower(), (account_id, zone.text)
            assert zone.markup is None
    js_set, future_set = (
        store.get("acme", "q4-pipeline", "acct_js"),
        store.get("acme", "q4-pipeline", "acct_future"),
    )
    assert js_set is not None and js_set.mode is ZoneSetMode.FALLBACK
    assert future_set is not None and future_set.mode is ZoneSetMode.FALLBACK
    unknown = store.get("acme", "q4-pipeline", "acct_unknownseg")
    assert unknown is not None
    # Zones on fallback copy take the default; a written line that is not specific (the CTA's
    # label) is the draft itself, on the segment rung.
    fallen = [z for z in unknown.zones if not z.reason.startswith(("personal", "not_specific"))]
    assert all(z.rung is Rung.DEFAULT and "unknown_segment" in z.reason for z in fallen)
    assert all(z.rung is Rung.SEGMENT for z in unknown.zones if z.reason.startswith("not_specific"))


def test_rerun_is_idempotent_and_an_expired_set_is_rebuilt(
    tmp_path: Path, redis_client: redis.Redis, campaign: Campaign, zones: dict[str, ZoneContract]
) -> None:
    path = write(tmp_path, [dymaxa(tier=2), dict(dymaxa(tier=2), account_id="acct_other", facts=[])])
    first = run(redis_client, campaign, zones, path)
    assert first.published == 2
    store = ZoneSetStore(redis_client)
    before = store.get_many("acme", "q4-pipeline", ["acct_dymaxa", "acct_other"])
    again = run(redis_client, campaign, zones, path, now=NOW + timedelta(hours=2))
    assert again.published == 0 and again.unchanged == 2 and again.model_calls == 0
    assert store.get_many("acme", "q4-pipeline", ["acct_dymaxa", "acct_other"]) == before
    # Past valid_until (the round's window ends), the same inputs are rebuilt.
    dymaxa_set = before["acct_dymaxa"]
    assert dymaxa_set is not None and dymaxa_set.valid_until is not None
    later = run(redis_client, campaign, zones, path, now=dymaxa_set.valid_until + timedelta(hours=1))
    assert later.published == 1 and later.unchanged == 1
    rebuilt = store.get("acme", "q4-pipeline", "acct_dymaxa")
    assert rebuilt is not None and rebuilt.version == 2
    assert rebuilt.valid_until is not None and rebuilt.valid_until > dymaxa_set.valid_until
    # New inputs make a new version; rollback restores what was published before it.
    changed = write(tmp_path, [dict(dymaxa(tier=2), employee_count=61)], "changed.jsonl")
    assert run(redis_client, campaign, zones, changed, now=dymaxa_set.valid_until).published == 1
    rolled = store.rollback("acme", "q4-pipeline", "acct_dymaxa")
    assert rolled is not None and rolled.input_hash == rebuilt.input_hash and rolled.version == 4


def test_tier_one_waits_for_review_until_approved(
    tmp_path: Path, redis_client: redis.Redis, campaign: Campaign, zones: dict[str, ZoneContract]
) -> None:
    report = run(redis_client, campaign, zones, write(tmp_path, [dymaxa(tier=1)]))
    assert report.pending_review == 1
    store = ZoneSetStore(redis_client)
    zs = store.get("acme", "q4-pipeline", "acct_dymaxa")
    assert zs is not None and zs.status is ZoneSetStatus.PENDING_REVIEW
    assert not zs.is_servable_as_personal(NOW)
    queue = list_queue(redis_client, "acme", "q4-pipeline")
    assert [(i.account_id, i.queue) for i in queue if i.queue == "approval"] == [("acct_dymaxa", "approval")]
    qa = run_qa(store, campaign, zones, now=NOW)
    assert qa.verdict == "GO WITH FIXES" and qa.findings_by_code.get("pending_review") == 1

    reviewer = Auditor("rita", Via.CLI, lambda: NOW)
    stale = decide(
        redis_client,
        "acme",
        "q4-pipeline",
        "acct_dymaxa",
        approve=True,
        auditor=reviewer,
        expected_version=99,
    )
    assert not stale.applied
    approved = decide(
        redis_client,
        "acme",
        "q4-pipeline",
        "acct_dymaxa",
        approve=True,
        auditor=reviewer,
        expected_version=zs.version,
    )
    assert approved.applied
    now_set = store.get("acme", "q4-pipeline", "acct_dymaxa")
    assert now_set is not None and now_set.is_servable_as_personal(NOW)
    assert not [i for i in list_queue(redis_client, "acme", "q4-pipeline") if i.queue == "approval"]
    # A rerun with the same inputs keeps the approval (no new pending version).
    assert run(redis_client, campaign, zones, write(tmp_path, [dymaxa(tier=1)])).published == 0
    kept = store.get("acme", "q4-pipeline", "acct_dymaxa")
    assert kept is not None and kept.status is ZoneSetStatus.PUBLISHED
    # The audit log: the version precompute published, the reviewer's approval; the rerun, nothing.
    assert [(e.action, e.actor, e.version, e.detail) for e in read_entries(redis_client, "acme")] == [
        (AuditAction.PUBLISH, "precompute", 1, "pending_review, degraded"),  # the CTA: segment
        (AuditAction.APPROVE, "rita", 2, "reviewed v1"),
    ]


def test_qa_says_no_go_when_a_published_link_is_off_the_allowlist(
    tmp_path: Path, redis_client: redis.Redis, campaign: Campaign, zones: dict[str, ZoneContract]
) -> None:
    run(redis_client, campaign, zones, write(tmp_path, [dymaxa(tier=2)]))
    key = keys.zone_set_key("acme", "q4-pipeline", "acct_dymaxa")
    data = json.loads(redis_client.get(key) or b"{}")
    for zone in data["zones"]:
        if zone["zone_id"] == "cta":
            zone["href"] = "https://evil.example/phish"
    redis_client.set(key, json.dumps(data))
    qa = run_qa(ZoneSetStore(redis_client), campaign, zones, now=NOW)
    assert qa.verdict == "NO GO"
    assert qa.findings_by_code["link_off_allowlist"] == 1


def test_a_zone_the_composer_cannot_write_says_why_in_the_zone_set_explain_and_qa(
    tmp_path: Path, redis_client: redis.Redis, campaign: Campaign, zones: dict[str, ZoneContract]
) -> None:
    record = dymaxa(tier=2)
    record["facts"] = [record["facts"][0]]  # the Series A only ...
    record["facts"][0].pop("round")  # ... without the round its headline pattern names
    run(redis_client, campaign, zones, write(tmp_path, [record]))
    zs = ZoneSetStore(redis_client).get("acme", "q4-pipeline", "acct_dymaxa")
    assert zs is not None
    reasons = {z.zone_id: z.reason for z in zs.zones if z.rung is not Rung.PERSONAL}
    # Without the round nothing names a specific of the fact: the lines written are segment copy.
    assert reasons == {
        "hero_headline": "no_pattern_filled",
        "continuation_headline": "no_pattern_filled",
        "hero_support": "not_specific:funding",
        "proof": "not_specific:library",
        "cta": "not_specific:funding",
    }
    explain = json.loads(redis_client.get(keys.explain_key("acme", "q4-pipeline", "acct_dymaxa")) or b"{}")
    headline = next(z for z in explain["zones"] if z["zone_id"] == "hero_headline")
    assert headline["note"] == "no funding pattern fits the trusted facts and the zone's limits"
    assert next(z for z in explain["zones"] if z["zone_id"] == "cta")["note"] is None  # written, not declined
    text = format_explain(explain)
    assert "hero_headline: segment (no_pattern_filled)" in text
    assert f"why: {ZoneReason.NO_PATTERN_FILLED.doc}" in text
    assert "note: no funding pattern fits" in text
    qa = run_qa(ZoneSetStore(redis_client), campaign, zones, now=NOW)
    assert qa.fallback_reasons == {
        "no_pattern_filled": 2,
        "not_specific:funding": 2,
        "not_specific:library": 1,
    }


def test_a_reason_written_by_an_older_version_is_read_and_shown_as_it_is(
    tmp_path: Path, redis_client: redis.Redis, campaign: Campaign, zones: dict[str, ZoneContract]
) -> None:
    record = dymaxa(tier=2)
    record["facts"] = [record["facts"][0]]
    record["facts"][0].pop("round")
    run(redis_client, campaign, zones, write(tmp_path, [record]))
    # What an older version stored: "declined" for every missing draft, and no notes.
    key = keys.zone_set_key("acme", "q4-pipeline", "acct_dymaxa")
    data = json.loads(redis_client.get(key) or b"{}")
    for zone in data["zones"]:
        if zone["reason"] == "no_pattern_filled":
            zone["reason"] = "declined"
    redis_client.set(key, json.dumps(data))
    explain_key = keys.explain_key("acme", "q4-pipeline", "acct_dymaxa")
    explain = json.loads(redis_client.get(explain_key) or b"{}")
    for zone in explain["zones"]:
        zone.pop("note")
        zone["reason"] = "declined" if zone["reason"] == "no_pattern_filled" else zone["reason"]

    zs = ZoneSetStore(redis_client).get("acme", "q4-pipeline", "acct_dymaxa")
    assert zs is not None and zs.zone("hero_headline") is not None
    qa = run_qa(ZoneSetStore(redis_client), campaign, zones, now=NOW)
    assert qa.fallback_reasons == {"declined": 2, "not_specific:funding": 2, "not_specific:library": 1}
    text = format_explain(explain)
    assert "hero_headline: segment (declined)" in text
    declined = text.split("hero_headline: segment (declined)")[1].split("\n    hero_support:")[0]
    assert "why:" not in declined and "note:" not in declined  # an unknown code has no meaning to show


class InlineMarkupWriter:
    """A provider whose draft uses the inline markup the zone contract allows."""

    name = "inline-markup"

    def fingerprint(self) -> str:
        return "inline-markup-1"

    def usage(self) -> ProviderUsage:
        return ProviderUsage()

    def generate(self, request: GenerationRequest) -> GenerationResult:
        roles = tuple(f.id for f in request.context.facts if f.type == "hiring")
        text = "Onboarding <em>four</em> new SDRs is a lot of work."
        return GenerationResult(
            drafts={
                "hero_support": ZoneDraft(zone_id="hero_support", text=text, fact_ids=roles, confidence=0.9)
            }
        )


def test_allowed_inline_markup_is_published_beside_plain_text_and_renders(
    tmp_path: Path, redis_client: redis.Redis, campaign: Campaign, zones: dict[str, ZoneContract]
) -> None:
    PrecomputeRun(
        client=redis_client,
        campaign=campaign,
        zones=zones,
        policy=build_policy(campaign, None),
        provider=InlineMarkupWriter(),
        now=NOW,
    ).run(write(tmp_path, [dymaxa(tier=2)]))
    zs = ZoneSetStore(redis_client).get("acme", "q4-pipeline", "acct_dymaxa")
    assert zs is not None
    support = zs.zone("hero_support")
    assert support is not None and support.rung is Rung.PERSONAL and support.markup is not None
    assert support.text == "Onboarding four new SDRs is a lot of work."  # plain, for JSON and exports
    rendered = str(render_text(support.text, support.markup, zones["hero_support"].markup))
    assert rendered == "Onboarding <em>four</em> new SDRs is a lot of work."
    # The writer left the other zones out without a word: no answer for them.
    assert {z.reason for z in zs.zones if z.zone_id != "hero_support"} == {"no_answer"}


def test_zone_sets_record_the_guideline_version_and_hash_and_qa_breaks_them_down(
    tmp_path: Path, redis_client: redis.Redis, campaign: Campaign, zones: dict[str, ZoneContract]
) -> None:
    from welcomemat.campaign.guidelines import guideline_hash

    run(redis_client, campaign, zones, write(tmp_path, [dymaxa(tier=2)]))
    zs = ZoneSetStore(redis_client).get("acme", "q4-pipeline", "acct_dymaxa")
    assert zs is not None
    assert (zs.guideline_version, zs.guideline_hash) == (campaign.guideline_version, guideline_hash(campaign))
    qa = run_qa(ZoneSetStore(redis_client), campaign, zones, now=NOW)
    [figures] = qa.by_guideline_version
    assert figures.guideline_version == campaign.guideline_version
    assert figures.guideline_hash == zs.guideline_hash
    assert figures.accounts == 1 and figures.personal_zones == qa.zones_by_rung.get("personal", 0)
