"""A seller alert: what a tier-1 account just did, and its two public forms (chat message, CRM task).

`SellerAlert` is what `welcomemat sync` queues on the tenant's alert outbox (built once, when the
engagement is folded, so a resend says exactly what the first attempt said). It leaves only
through the two explicit serializers below, field by field:

- `slack_message`: a Slack-compatible incoming-webhook body, `{"text": ..., "blocks": [...]}`,
  every value escaped for mrkdwn by the one escaper (`outbound.slack_mrkdwn`);
- `crm_task`: the task the CRM webhook receives (`CrmTask`), plain text, signed like a CRM change.

Links in it (the page, a fact's source, the next step's) passed the URL gate when the alert was
built (`outbound.seller_alerts`); evidence, confidence and provider metadata never enter it.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from outbound.slack_mrkdwn import escape_mrkdwn, mrkdwn_link

__all__ = [
    "AlertAction",
    "AlertClaim",
    "AlertContact",
    "AlertFact",
    "AlertSubject",
    "CrmTask",
    "SellerAlert",
    "crm_task",
    "slack_message",
    "task_idempotency_key",
]

AlertAction = Literal["visit", "qr_scan", "cta_click"]
# Longest value an alert quotes (a statement, a line of copy), in characters: Slack refuses a
# section over 3,000 characters, and escaping may make a value up to five times longer.
_QUOTE_MAX_CHARS = 500
_STRICT = ConfigDict(frozen=True, extra="forbid")


class AlertContact(BaseModel):
    """The person the link or QR code was made for, when the visit names one."""

    model_config = _STRICT
    contact_id: str
    name: str | None = None
    email: str | None = None
    title: str | None = None


class AlertFact(BaseModel):
    """A fact the claim cites: what it says and where it comes from."""

    model_config = _STRICT
    type: str
    statement: str
    source_url: str | None  # through the URL gate; None when the source is not a plain https link
    published_at: date


class AlertClaim(BaseModel):
    """The personal line the account saw, and the facts it rests on."""

    model_config = _STRICT
    zone_id: str
    text: str
    facts: tuple[AlertFact, ...]


class AlertSubject(BaseModel):
    """Who an alert is about: the account (and the contact, when known) in one campaign."""

    model_config = _STRICT
    tenant: str
    campaign: str
    account_id: str
    account_name: str | None
    domain: str | None
    tier: int
    contact: AlertContact | None
    # The account's owner in the CRM (its `crm_owner`): the seller this alert is for, to whose
    # chat webhook it went when `seller_alerts.owners` maps them. None: no owner named.
    owner: str | None = None


class SellerAlert(AlertSubject):
    """One alert: who engaged, what they did, where, what they saw, and what the seller does next."""

    action: AlertAction
    zone: str | None  # the clicked zone, for a click
    occurred_at: datetime
    day: date  # the UTC day this alert stands for: one per account, campaign and day
    page_id: str
    page_url: str
    # The most personal rung the page served: `personal`, `segment` or `default`; None: not known.
    rung: str | None
    claim: AlertClaim | None
    # The page's personal line cites a fact the research did not clear for sellers (`surfaces`):
    # the alert says so instead of quoting it.
    claim_withheld: bool = False
    next_step: str
    next_step_url: str | None


class CrmTask(AlertSubject):
    """The CRM webhook body of a seller alert (`X-Welcomemat-Event: seller_task`)."""

    type: Literal["seller_task"] = "seller_task"
    subject: str
    body: str
    due_on: date
    action: AlertAction
    occurred_at: datetime
    page_url: str
    claim: AlertClaim | None
    next_step: str
    next_step_url: str | None


def task_idempotency_key(alert: SellerAlert) -> str:
    """One key per alert: a resend of the same task carries the same key."""
    return f"seller_task.{alert.tenant}.{alert.campaign}.{alert.account_id}.{alert.day.isoformat()}"


# -- plain wording, shared by both forms ----------------------------------------------------------


def _company(alert: SellerAlert) -> str:
    return alert.account_name or alert.domain or alert.account_id


def _page_label(alert: SellerAlert) -> str:
    return "the continuation page" if alert.page_id == "continuation" else f"the {alert.page_id} page"


def _did(alert: SellerAlert) -> str:
    """What they did, as a verb phrase ending where the page link goes."""
    if alert.action == "qr_scan":
        return "scanned the mailer's QR code, landing on"
    if alert.action == "cta_click":
        return "clicked the call to action on"
    return "visited"


def _who(contact: AlertContact | None) -> str:
    if contact is None:
        return "contact not known (the visit named no person)"
    parts = [contact.name or contact.contact_id]
    if contact.title:
        parts.append(contact.title)
    if contact.email:
        parts.append(contact.email)
    return ", ".join(parts)


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _QUOTE_MAX_CHARS else text[: _QUOTE_MAX_CHARS - 1] + "…"


def _fact_line(fact: AlertFact) -> str:
    return f"{_quote(fact.statement)} ({fact.type}, {fact.published_at.isoformat()})"


def _seen_plain(alert: SellerAlert) -> str:
    if alert.claim_withheld:
        return "personal copy citing facts not cleared for sellers (not quoted here)"
    if alert.claim is None:
        copy = alert.rung or "campaign"
        return f"{copy} copy: no account-specific claim"
    lines = [f'"{_quote(alert.claim.text)}"']
    for fact in alert.claim.facts:
        lines.append(f"source: {_fact_line(fact)} {fact.source_url or '(no public link)'}")
    return "\n".join(lines)


def _when(alert: SellerAlert) -> str:
    return alert.occurred_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


# -- the chat message -----------------------------------------------------------------------------


def slack_message(alert: SellerAlert) -> dict[str, Any]:
    """The incoming-webhook body: `text` (notifications, clients without blocks) and `blocks`."""
    company = escape_mrkdwn(_company(alert))
    page = mrkdwn_link(alert.page_url, _page_label(alert))
    headline = f"*{company}* (tier {alert.tier}) {_did(alert)} {page}"
    if alert.claim is None:
        seen = escape_mrkdwn(_seen_plain(alert))
    else:
        lines = [f"“{escape_mrkdwn(_quote(alert.claim.text))}”"]
        for fact in alert.claim.facts:
            lines.append(f"source: {escape_mrkdwn(_fact_line(fact))} {mrkdwn_link(fact.source_url, 'link')}")
        seen = "\n".join(lines)
    step = escape_mrkdwn(_quote(alert.next_step))
    if alert.next_step_url:
        step += " " + mrkdwn_link(alert.next_step_url, "open")
    context = escape_mrkdwn(f"{alert.tenant}/{alert.campaign} · {alert.account_id} · {_when(alert)}")
    return {
        "text": f"{company} {_did(alert)} {escape_mrkdwn(_page_label(alert))}. Next step: {step}",
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": headline}},
            {
                "type": "section",
                "fields": [
                    {"type": "mrkdwn", "text": f"*Who*\n{escape_mrkdwn(_who(alert.contact))}"},
                    {"type": "mrkdwn", "text": f"*Page*\n{page}"},
                ],
            },
            {"type": "section", "text": {"type": "mrkdwn", "text": f"*What they saw*\n{seen}"}},
            {"type": "section", "text": {"type": "mrkdwn", "text": f"*Next step*\n{step}"}},
            {"type": "context", "elements": [{"type": "mrkdwn", "text": context}]},
        ],
    }


# -- the CRM task ---------------------------------------------------------------------------------


def crm_task(alert: SellerAlert) -> CrmTask:
    """The task body, field by field: what is not named here never leaves."""
    subject = f"Follow up: {_company(alert)} {_did(alert)} {_page_label(alert)}"
    body = "\n".join(
        [
            f"Who: {_company(alert)} (tier {alert.tier}); {_who(alert.contact)}",
            *([f"Owner: {alert.owner}"] if alert.owner else []),
            f"What: {_did(alert)} {_page_label(alert)} ({alert.page_url}) at {_when(alert)}",
            f"Saw: {_seen_plain(alert)}",
            f"Next step: {alert.next_step}" + (f" {alert.next_step_url}" if alert.next_step_url else ""),
        ]
    )
    return CrmTask(
        tenant=alert.tenant,
        campaign=alert.campaign,
        account_id=alert.account_id,
        account_name=alert.account_name,
        domain=alert.domain,
        tier=alert.tier,
        contact=alert.contact,
        owner=alert.owner,
        subject=subject,
        body=body,
        due_on=alert.day,
        action=alert.action,
        occurred_at=alert.occurred_at,
        page_url=alert.page_url,
        claim=alert.claim,
        next_step=alert.next_step,
        next_step_url=alert.next_step_url,
    )
