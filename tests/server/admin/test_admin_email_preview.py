"""`POST /admin/preview/{campaign}/{account}`: the page, and a sequencer template filled for every branch."""

from __future__ import annotations

from typing import Any

from starlette.testclient import TestClient

from tests.server.admin import test_admin
from tests.server.conftest import CAMPAIGN
from tests.server.pagetools import parse, text_of
from welcomemat.outreach.email_template import MAX_TEMPLATE_BYTES

TEMPLATE = 'Hi {{ first_name | default: "there" }} at {{ company }},\n{{ hero_headline }}\n{{ fact }}\n'
AUTH, DYMAXA = test_admin.AUTH, test_admin.DYMAXA
URL = f"/admin/preview/{CAMPAIGN}/{DYMAXA}"
# Dymaxa (tier 1) precomputed, pending review, and an app with the admin token.
precomputed = test_admin.precomputed
admin = test_admin.admin


def _emails(answer: Any) -> dict[str, dict[str, Any]]:
    assert answer.status_code == 200, answer.text
    doc = parse(answer.text)
    found = {}
    for article in (e for e in doc.iter() if e.get("data-admin-email") is not None):
        pre = next(e for e in article.iter() if e.tag == "pre")
        issues = [e.get("data-admin-issue") for e in article.iter() if e.get("data-admin-issue")]
        found[article.get("data-admin-email") or ""] = {
            "head": text_of(article),
            "text": text_of(pre),
            "issues": issues,
        }
    assert next(e for e in doc.iter() if e.tag == "iframe") is not None  # beside the page
    return found


def _post(admin: TestClient, body: bytes | str, content_type: str = "text/plain") -> Any:
    return admin.post(URL, headers={**AUTH, "content-type": content_type}, content=body)


def test_the_three_branches_sit_beside_the_page_and_follow_the_review(admin: TestClient) -> None:
    pending = _emails(_post(admin, TEMPLATE))
    assert list(pending) == ["personal", "segment", "holdout"]
    # Waiting for review: every branch is a fallback, and the personal one says why.
    assert "status pending_review" in pending["personal"]["head"]
    assert all("Series A" not in e["text"] for e in pending.values())
    assert all(e["issues"] == ["fact"] for e in pending.values())

    assert admin.post(
        f"/admin/review/{CAMPAIGN}/{DYMAXA}/approve", headers=AUTH, json={"version": 1}
    ).is_success
    approved = _emails(_post(admin, TEMPLATE))
    personal = approved["personal"]
    assert personal["text"].startswith("Hi Joram at Dymaxa B.V.,\n") and "Series A" in personal["text"]
    assert personal["issues"] == [] and "rung personal, status ok" in personal["head"]
    assert approved["segment"]["text"] == approved["holdout"]["text"] != personal["text"]
    assert approved["holdout"]["issues"] == ["fact"]


def test_an_html_template_gets_escaped_values_and_the_page_shows_them_as_text(admin: TestClient) -> None:
    answer = _post(admin, "<p>{{ company }} &amp; {{ firstName }}</p>", "text/html; charset=utf-8")
    emails = _emails(answer)
    assert emails["personal"]["text"] == "<p>Dymaxa B.V. &amp; </p>"  # shown as text, not run
    assert emails["personal"]["issues"] == ["firstName"]
    assert "<p>Dymaxa" not in answer.text  # the filled template is escaped into the admin page


def test_a_bad_template_is_400_naming_the_line_and_a_large_one_413(admin: TestClient) -> None:
    bad = _post(admin, "Hi\n{{ first_name | there }}")
    assert bad.status_code == 400 and "template:2, field" in bad.text and "unsupported filter" in bad.text
    assert _post(admin, b"\xff").status_code == 400
    assert _post(admin, "x" * (MAX_TEMPLATE_BYTES + 1)).status_code == 413
    assert admin.post(URL, content=TEMPLATE).status_code == 401


def test_an_account_without_a_record_still_previews_its_page_and_says_why(
    admin: TestClient,
) -> None:
    answer = admin.post(f"/admin/preview/{CAMPAIGN}/acct_nobody", headers=AUTH, content=TEMPLATE)
    assert answer.status_code == 200 and not _emails(answer)
    assert "No e-mail preview: field &#39;ACCOUNT&#39;: no account record for" in answer.text
