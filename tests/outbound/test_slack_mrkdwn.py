"""The one mrkdwn escaper, and the chat message of an alert whose every text is hostile."""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, date, datetime

from hypothesis import given
from hypothesis import strategies as st

from outbound.seller_alert import AlertClaim, AlertContact, AlertFact, SellerAlert, crm_task, slack_message
from outbound.slack_mrkdwn import escape_mrkdwn, mrkdwn_link

HOSTILE = "<!channel> <@U123> <https://evil.example|click> & &amp; > <"


@given(st.text())
def test_escaped_text_holds_no_angle_bracket_and_reads_back_as_written(text: str) -> None:
    escaped = escape_mrkdwn(text)
    assert "<" not in escaped and ">" not in escaped
    assert re.fullmatch(r"(?:[^&]|&(?:amp|lt|gt);)*", escaped, re.DOTALL)  # every & starts an entity
    assert html.unescape(escaped) == text or "&" in text  # html.unescape also reads entities in the input
    assert escaped.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&") == text


@given(st.text(), st.text())
def test_a_link_is_one_slack_link_or_plain_escaped_text(url: str, label: str) -> None:
    out = mrkdwn_link(url, label)
    if out.startswith("<"):
        # Slack splits at the first `|`: the URL before it, whole; the escaped label after it.
        target, _, shown = out[1:-1].partition("|")
        assert out.endswith(">") and out.count("<") == 1 and out.count(">") == 1
        assert target == url.replace("&", "&amp;") and shown == escape_mrkdwn(label)
    else:
        assert out == escape_mrkdwn(label)


def alert(text: str) -> SellerAlert:
    return SellerAlert(
        tenant="acme",
        campaign="q4",
        account_id="acct_x",
        account_name=text,
        domain="x.example",
        tier=1,
        contact=AlertContact(contact_id="c1", name=text, email="a@x.example", title=text),
        action="visit",
        zone=None,
        occurred_at=datetime(2026, 11, 30, 12, tzinfo=UTC),
        day=date(2026, 11, 30),
        page_id="landing",
        page_url="https://go.example/c/q4",
        rung="personal",
        claim=AlertClaim(
            zone_id="hero_headline",
            text=text,
            facts=(
                AlertFact(
                    type="funding",
                    statement=text,
                    source_url="https://x.example/a|b",
                    published_at=date(2026, 11, 26),
                ),
            ),
        ),
        next_step=text,
        next_step_url=None,
    )


def mrkdwn_texts(message: dict[str, object]) -> list[str]:
    found: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            if value.get("type") == "mrkdwn":
                found.append(str(value["text"]))
            for child in value.values():
                walk(child)
        elif isinstance(value, list):
            for child in value:
                walk(child)

    walk(message["blocks"])
    return [str(message["text"]), *found]


def test_no_hostile_text_becomes_a_mention_or_a_link_in_the_chat_message() -> None:
    message = slack_message(alert(HOSTILE))
    links = set()
    for text in mrkdwn_texts(message):
        assert "<!" not in text and "<@" not in text
        links |= set(re.findall(r"<([^>]*)>", text))
    # The only links: the page; the source with a `|` in it is shown as text, not a broken link.
    assert links == {"https://go.example/c/q4|the landing page"}
    assert json.loads(json.dumps(message)) == message


@given(st.text(max_size=2000))
def test_every_section_stays_within_slacks_limits(text: str) -> None:
    for block in slack_message(alert(text))["blocks"]:
        if "text" in block:
            assert len(block["text"]["text"]) <= 3000
        for item in block.get("fields", []):
            assert len(item["text"]) <= 2000


def test_the_crm_task_is_plain_text() -> None:
    task = crm_task(alert(HOSTILE))
    assert HOSTILE in task.body and "&lt;" not in task.body  # a CRM shows text: nothing to escape there
    assert task.due_on == date(2026, 11, 30) and task.type == "seller_task"
