"""Seller alerts go to the account's owner: `seller_alerts.owners` maps a `crm_owner` to a chat webhook.

Real precompute (the owner comes from the accounts file through the shared record), events through
the renderer's writer, the real sync fold, real Redis, and real HTTP receivers on loopback ports:
one standing in for the owner's webhook, one for the campaign's channel and the CRM.
"""

from __future__ import annotations

import json
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from outbound.alert_sender import AlertSender
from outbound.seller_alerts import SellerAlertProducer
from outbound.sync import Syncer, SyncOptions
from server.engagement.events import EventType
from tests.corpora import REPO_ROOT
from tests.example_accounts import write_example_accounts
from tests.outbound.sync_helpers import emit
from tests.outbound.test_seller_alerts import (
    CAMPAIGN,
    NOW,
    PUBLIC_URL,
    RUN_AT,
    TENANT,
    TIER_1,
    TIER_1_UNAPPROVED,
    WELCOMEMAT,
    Receiver,
    channel,
    crm_config,
    event,
    precompute,
    serve,
)
from welcomemat import keys
from welcomemat.campaign.contract import load_campaign
from welcomemat.campaign.sections import SellerAlerts
from welcomemat.records.audit import Auditor, Via
from welcomemat.security.urlgate import webhook_href
from welcomemat.zones.contract import load_zone_contracts
from welcomemat.zones.review import decide

SAM = "sam@acmerevenue.example"  # Dymaxa's owner in the example accounts: mapped below
LEE, LEES_ACCOUNT = "lee@acmerevenue.example", "acct_00003"  # an owner the campaign does not map
SECRET_PATH = "T0SECRET/B0SECRET/abcdefSECRET"
REFUSED = (
    "must be an https URL with a host name (http only to 127.0.0.1, localhost or [::1]), "
    "without a user name or password"
)


def publish(tmp_path: Path, client: redis.Redis, owners: dict[str, str]) -> None:
    """The example campaign with `owners`, for 12 example accounts; Lee's account made tier 1 and
    given an owner; Dymaxa approved (`acct_00001`, tier 1 with no owner, waits for review)."""
    accounts = write_example_accounts(tmp_path / "accounts.jsonl", 12, today=RUN_AT.date())
    rows = [json.loads(line) for line in accounts.read_text().splitlines()]
    for row in rows:
        if row["account_id"] == LEES_ACCOUNT:
            row.update(tier=1, crm_owner=LEE)
        assert row["account_id"] == TIER_1 or "crm_owner" not in row or row["account_id"] == LEES_ACCOUNT
    accounts.write_text("".join(json.dumps(row) + "\n" for row in rows))
    campaign = load_campaign(
        REPO_ROOT / "examples" / "campaign.yaml", dict(load_zone_contracts(REPO_ROOT / "zones"))
    )
    assert campaign.seller_alerts is not None
    alerts = campaign.seller_alerts.model_copy(update={"owners": owners})
    precompute(client, accounts, campaign.model_copy(update={"seller_alerts": alerts}))
    auditor = Auditor("test", Via.CLI, lambda: RUN_AT)
    assert decide(client, TENANT, CAMPAIGN, TIER_1, approve=True, auditor=auditor).applied


def sync(client: redis.Redis, destinations: tuple[str, ...]) -> SellerAlertProducer:
    producer = SellerAlertProducer(
        client, destinations=destinations, public_url=PUBLIC_URL, clock=lambda: NOW, log=lambda _: None
    )
    options = SyncOptions(name="s1", tenants=(TENANT,), once=True, block_ms=50, batch=7)
    Syncer(client, options, log=lambda _: None, alerts=producer).run()
    return producer


def visits(client: redis.Redis) -> None:
    at = NOW - timedelta(hours=1)
    emit(
        client,
        [
            event(EventType.VIEW, TIER_1, at, n=1, contact="c_joram"),
            event(EventType.VIEW, TIER_1_UNAPPROVED, at, n=2),
            event(EventType.VIEW, LEES_ACCOUNT, at, n=3),
        ],
    )


def chat_accounts(receiver: Receiver, path: str) -> list[str]:
    """The account each chat message at `path` is about (its context line names it)."""
    found = []
    for body in receiver.bodies(path):
        context = body["blocks"][-1]["elements"][0]["text"]
        found.append(next(a for a in (TIER_1, TIER_1_UNAPPROVED, LEES_ACCOUNT) if a in context))
    return sorted(found)


def test_a_mapped_owner_alone_gets_the_alert_and_everyone_else_goes_to_the_campaign_channel(
    tmp_path: Path, redis_client: redis.Redis
) -> None:
    owner, campaign_side = Receiver(), Receiver()
    with serve(owner) as owner_url, serve(campaign_side) as url:
        # Mapped in another case than the accounts file spells it: owners match without case.
        publish(tmp_path, redis_client, {SAM.upper(): f"{owner_url}/sam/{SECRET_PATH}"})
        visits(redis_client)
        assert sync(redis_client, ("slack", "crm")).stats.queued == 3
        logged: list[str] = []
        sender = AlertSender(
            redis_client, name="a1", channel=channel(url), crm=crm_config(url), log=logged.append
        )
        assert sender.run_pass([TENANT]) == 6  # three chat messages, three CRM tasks
        sender.close()

    # The owner's webhook got Dymaxa's alert, and only it; the campaign's channel never saw it.
    assert [path for path, _, _ in owner.accepted] == [f"/sam/{SECRET_PATH}"]
    assert chat_accounts(owner, f"/sam/{SECRET_PATH}") == [TIER_1]
    (message,) = owner.bodies(f"/sam/{SECRET_PATH}")
    assert "Dymaxa B.V." in message["text"]
    # No owner, or an owner the campaign does not map: the campaign's channel.
    assert chat_accounts(campaign_side, "/slack") == sorted([TIER_1_UNAPPROVED, LEES_ACCOUNT])
    # The CRM task names the owner, whoever got the chat message.
    tasks = {task["account_id"]: task for task in campaign_side.bodies("/crm")}
    assert {a: t["owner"] for a, t in tasks.items()} == {
        TIER_1: SAM,
        LEES_ACCOUNT: LEE,
        TIER_1_UNAPPROVED: None,
    }
    assert f"Owner: {SAM}" in tasks[TIER_1]["body"] and f"Owner: {LEE}" in tasks[LEES_ACCOUNT]["body"]
    assert "Owner:" not in tasks[TIER_1_UNAPPROVED]["body"]
    assert not any(SECRET_PATH in line for line in logged)


def test_an_owners_alert_goes_out_even_when_the_process_has_no_chat_channel(
    tmp_path: Path, redis_client: redis.Redis
) -> None:
    owner, crm_side = Receiver(), Receiver()
    with serve(owner) as owner_url, serve(crm_side) as url:
        publish(tmp_path, redis_client, {SAM: f"{owner_url}/sam"})
        visits(redis_client)
        assert sync(redis_client, ("crm",)).stats.queued == 3
        sender = AlertSender(redis_client, name="a1", channel=None, crm=crm_config(url), log=lambda _: None)
        assert sender.run_pass([TENANT]) == 4  # Dymaxa's message to Sam, three CRM tasks
        sender.close()
    assert chat_accounts(owner, "/sam") == [TIER_1]
    assert [path for path, _, _ in crm_side.accepted] == ["/crm"] * 3  # no channel: no other chat message


def test_an_owner_url_the_gate_refuses_in_the_outbox_is_dead_lettered_without_quoting_it(
    redis_client: redis.Redis,
) -> None:
    """A tampered outbox entry never makes the sender post to a URL the gate refuses."""
    alert = {
        "tenant": TENANT,
        "campaign": CAMPAIGN,
        "account_id": TIER_1,
        "account_name": "Dymaxa B.V.",
        "domain": "dymaxa.com",
        "tier": 1,
        "contact": None,
        "owner": SAM,
        "action": "visit",
        "zone": None,
        "occurred_at": NOW.isoformat(),
        "day": NOW.date().isoformat(),
        "page_id": "landing",
        "page_url": f"{PUBLIC_URL}/c/{CAMPAIGN}",
        "rung": None,
        "claim": None,
        "next_step": "Call.",
        "next_step_url": None,
    }
    refused = f"http://evil.example/{SECRET_PATH}"
    fields = {"dest": "owner", "account": TIER_1, "url": refused, "alert": json.dumps(alert)}
    redis_client.xadd(keys.seller_alert_outbox_key(TENANT), fields)  # type: ignore[arg-type]
    logged: list[str] = []
    sender = AlertSender(redis_client, name="a1", channel=None, crm=None, log=logged.append)
    assert sender.run_pass([TENANT]) == 0
    sender.close()
    dead = redis_client.xrange(keys.seller_alert_dead_letter_key(TENANT))
    assert len(dead) == 1
    text = json.dumps({k.decode(): v.decode() for k, v in dead[0][1].items() if k != b"url"})
    assert "URL gate" in text and SECRET_PATH not in text
    assert not any(SECRET_PATH in line for line in logged)


def test_validate_names_file_line_and_owner_and_never_prints_the_webhook(tmp_path: Path) -> None:
    (tmp_path / "theme").symlink_to(REPO_ROOT / "examples" / "theme")
    text = (REPO_ROOT / "examples" / "campaign.yaml").read_text()
    owners = f'  tiers: [1]\n  owners:\n    "{SAM}": "http://chat.acmerevenue.example/{SECRET_PATH}"\n'
    edited = text.replace("  tiers: [1]\n", owners, 1)
    assert edited != text
    (tmp_path / "campaign.yaml").write_text(edited)
    line = edited.splitlines().index(f'    "{SAM}": "http://chat.acmerevenue.example/{SECRET_PATH}"') + 1
    result = subprocess.run(
        [WELCOMEMAT, "validate", str(tmp_path / "campaign.yaml"), "--zones", str(REPO_ROOT / "zones")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    output = result.stdout + result.stderr
    assert f"campaign.yaml:{line}: seller_alerts.owners.{SAM}: must be an https URL" in output
    assert SECRET_PATH not in output and "Traceback" not in output


def test_two_spellings_of_one_owner_are_refused() -> None:
    with pytest.raises(ValidationError, match="names the owner 'sam@acmerevenue.example' twice"):
        SellerAlerts(
            next_step="Call.", owners={SAM: "https://a.example/x", SAM.upper(): "https://b.example/y"}
        )


# Hosts and schemes the gate tells apart: named hosts, loopback, IP literals, userinfo, ports.
URLS = st.builds(
    "{}://{}/{}".format,
    st.sampled_from(["https", "http", "ftp", "javascript", "HTTPS"]),
    st.sampled_from(
        [
            "chat.acmerevenue.example",
            "127.0.0.1:8080",
            "localhost",
            "[::1]",
            "203.0.113.9",
            "u:p@chat.example",
            "chat.example:8443",
            "",
            "exa mple.com",
        ]
    ),
    st.text(alphabet="abcXYZ019/-_%?#", max_size=20),
)


@given(st.one_of(st.text(max_size=60), URLS))
def test_an_owner_destination_is_accepted_exactly_when_the_webhook_gate_accepts_it(raw: str) -> None:
    try:
        alerts = SellerAlerts(next_step="Call.", owners={SAM: raw})
    except ValidationError as exc:
        assert webhook_href(raw) is None
        # One fixed message, whatever the value: the URL (a credential) is never quoted.
        assert [e["msg"] for e in exc.errors()] == [f"Value error, {REFUSED}"]
        return
    assert alerts.owner_destination(f" {SAM.title()} ") == webhook_href(raw) is not None
    assert alerts.owner_destination(LEE) is None and alerts.owner_destination(None) is None
