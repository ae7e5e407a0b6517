"""`welcomemat validate CAMPAIGN ACCOUNTS` judges the facts the way precompute will, and one problem
never hides another; a campaign's own fact type is written by the offline composer end to end."""

from __future__ import annotations

import json
import re
import shutil
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any

import pytest
import redis

from cli.main import main
from precompute.inputs import load_campaign_inputs
from precompute.providers.offline import OfflineComposer
from precompute.run import PrecomputeRun
from tests.acquisition_campaign import with_acquisition
from tests.corpora import REPO_ROOT
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import Rung

AS_OF = date(2026, 11, 29)  # every date below is relative to it: the tests hold on any day


def fact(n: int, **changes: Any) -> dict[str, Any]:
    """A good expansion fact about Frostline, changed as given (None drops a field)."""
    base: dict[str, Any] = {
        "id": f"f{n}",
        "type": "expansion",
        "statement": "Frostline Logistics opened a hub in Rotterdam",
        "subject": "Frostline Logistics",
        "location": "Rotterdam",
        "source_url": f"https://frostlinelogistics.com/news/{n}",
        "published_at": "2026-11-20",
        "confidence": "high",
        "surfaces": ["web", "email", "seller"],
    }
    base.update(changes)
    return {k: v for k, v in base.items() if v is not None}


ACQUIRED = fact(
    8,
    type="acquisition",
    location=None,
    statement="Frostline Logistics acquired Coldline",
    company="Coldline",
    published_at="2026-11-24",
)
# Every way a fact goes wrong, one each; the last is good (its headline is tested end to end).
FACTS = [
    fact(0, published_at="last week"),
    fact(1, published_at="2027-01-10"),
    fact(
        2,
        type="funding",
        round="Series B",
        location=None,
        statement="Frostline Logistics raised a Series B",
        published_at="2025-01-01",
    ),  # fmt: skip
    fact(3, subject="Northwind"),
    fact(
        4,
        subject=None,
        statement="Frostline Logistics Solutions Inc opened a new hub in Dallas, Texas",
        location="Dallas",
        source_url="https://news.example.com/frostline-solutions-dallas",
    ),  # fmt: skip
    fact(5, type="partnership", location=None, statement="Frostline Logistics partnered with Acme"),
    fact(6, location=None, locaton="Rotterdam"),
    fact(
        7,
        type="acquisition",
        location=None,
        statement="Frostline Logistics acquired Coldline",
        acquirer="Frostline",
    ),
    ACQUIRED,
]
# (field, reason) of every problem, in fact order.
EXPECTED = [
    ("facts[0].published_at", "bad_date"),
    ("facts[1].published_at", "future_date"),
    ("facts[2].published_at", "stale"),
    ("facts[3].subject", "wrong_subject"),
    ("facts[4].statement", "other_company"),
    ("facts[5].type", "no_patterns_for_type"),
    ("facts[6].location", "missing_field"),
    ("facts[6].locaton", "unknown_field"),
    ("facts[7].company", "missing_field"),
    ("facts[7].acquirer", "unknown_field"),
]


def account(account_id: str, name: str, domain: str, facts: list[dict[str, Any]]) -> str:
    contact = {"contact_id": f"c_{account_id}", "email": f"ana@{domain}", "first_name": "Ana"}
    record = {
        "account_id": account_id,
        "name": name,
        "domain": domain,
        "segment": "saas-mid",
        "tier": 2,
        "contacts": [contact],
        "facts": facts,
    }
    return json.dumps(record)


FROSTLINE = account("acct_frostline", "Frostline Logistics B.V.", "frostlinelogistics.com", FACTS)
CLEAN = account("acct_clean", "Frostline Logistics B.V.", "frostlinelogistics.com", [ACQUIRED])


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """campaign/campaign.yaml (with theme/ and zones/ beside it)."""
    target = tmp_path / "campaign"
    target.mkdir()
    (target / "campaign.yaml").write_text(with_acquisition())
    shutil.copytree(REPO_ROOT / "examples" / "theme", target / "theme")
    shutil.copytree(REPO_ROOT / "zones", target / "zones")
    return target


def accounts_file(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "accounts.jsonl"
    path.write_text("".join(f"{line}\n" for line in lines))
    return path


def validate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["validate", *args, "--as-of", AS_OF.isoformat()])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_one_run_prints_every_fact_problem_with_file_line_field_and_counts_per_reason(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    accounts = accounts_file(tmp_path, CLEAN, FROSTLINE)
    code, out, err = validate(capsys, str(folder / "campaign.yaml"), str(accounts))
    assert code == 1  # facts will not be used, nothing is malformed
    assert "campaign acme/q4-pipeline: ok" in out
    assert f"facts as of {AS_OF}: 10 checked, 4 used, 6 will not be used" in out
    problems = [line for line in err.splitlines() if line.startswith(f"{accounts}:")]
    found = [re.match(rf"{re.escape(str(accounts))}:(\d+): (\S+): (\w+): ", line) for line in problems]
    assert [(m.group(1), m.group(2), m.group(3)) for m in found if m] == [("2", f, r) for f, r in EXPECTED]
    assert len(problems) == len(EXPECTED)
    # What would pass, in the problem's own words.
    assert "published_at 'last week' is not an ISO date (YYYY-MM-DD)" in err
    assert "'Frostline Logistics Solutions Inc'" in err
    assert "expansion facts carry no 'locaton': did you mean 'location'?" in err
    assert "no 'company': the acquisition patterns that use {company} skip this fact" in err
    counts = err.split("fact problems by reason (10):\n", 1)[1].splitlines()
    assert counts == [
        "  missing_field: 2",
        "  unknown_field: 2",
        "  bad_date: 1",
        "  future_date: 1",
        "  no_patterns_for_type: 1",
        "  other_company: 1",
        "  stale: 1",
        "  wrong_subject: 1",
    ]
    assert "Traceback" not in err and " problems in " not in err


def test_json_lists_the_facts_problems_with_reason_account_and_fact(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    accounts = accounts_file(tmp_path, FROSTLINE)
    code, out, err = validate(capsys, str(folder / "campaign.yaml"), str(accounts), "--json")
    assert (code, err) == (1, "")
    report = json.loads(out)
    assert (report["ok"], report["exit"], report["problems"]) == (False, 1, [])
    facts = report["facts"]
    assert (facts["as_of"], facts["checked"], facts["used"]) == ("2026-11-29", 9, 3)
    assert [(p["field"], p["reason"]) for p in facts["problems"]] == EXPECTED
    assert {(p["file"], p["line"], p["account_id"]) for p in facts["problems"]} == {
        (str(accounts), 1, "acct_frostline")
    }
    assert facts["problems"][6]["fact_id"] == "f6" and facts["problems"][6]["fact_used"] is True
    assert facts["problems"][0]["fact_used"] is False
    assert facts["by_reason"]["missing_field"] == 2 and sum(facts["by_reason"].values()) == len(EXPECTED)


def test_exit_0_when_every_fact_is_used_and_2_when_a_line_is_malformed(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    campaign = str(folder / "campaign.yaml")
    code, out, err = validate(capsys, campaign, str(accounts_file(tmp_path, CLEAN)))
    assert (code, err) == (0, "") and "1 checked, 1 used, 0 will not be used" in out

    accounts = accounts_file(tmp_path, FROSTLINE, "{oops")
    code, out, err = validate(capsys, campaign, str(accounts))
    assert code == 2  # malformed input wins; the facts are reported all the same
    assert (
        f"{accounts}:2: not valid JSON" in err and f"{accounts}:1: facts[0].published_at: bad_date: " in err
    )
    assert err.rstrip().endswith("1 problem in 1 file") and "fact problems by reason (10):" in err

    # The day is the run's: the same fact is future on one day, fine the next month, stale later.
    day = ["--as-of"]
    december = fact(1, published_at="2026-12-10")
    later = accounts_file(
        tmp_path, account("acct_later", "Frostline Logistics B.V.", "frostlinelogistics.com", [december])
    )
    assert main(["validate", campaign, str(later), *day, "2026-11-29"]) == 1
    assert main(["validate", campaign, str(later), *day, "2027-01-01"]) == 0
    assert main(["validate", campaign, str(later), *day, "2027-06-01"]) == 1
    capsys.readouterr()


def test_the_campaigns_own_problems_and_the_facts_come_out_in_one_run(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = folder / "campaign.yaml"
    path.write_text(path.read_text().replace("in {location}?", "in {locaton}?", 1))
    accounts = accounts_file(tmp_path, FROSTLINE)
    code, out, err = validate(capsys, str(path), str(accounts))
    assert code == 2
    typo = next(i for i, line in enumerate(path.read_text().splitlines(), start=1) if "{locaton}" in line)
    assert f"{path}:{typo}: patterns.hiring.hero_headline.0: no hiring fact fills slot {{locaton}}" in err
    assert f"{accounts}:1: facts[3].subject: wrong_subject: " in err  # read as written: still judged
    assert "campaign acme/q4-pipeline: loads, with problems below" in out


def test_one_problem_never_hides_another(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A voice profile to rebuild, a theme error, a tenant error and a pattern no fact can back: one run."""
    path = folder / "campaign.yaml"
    text = path.read_text()
    text = text.replace("Every new seller, productive in weeks, not quarters.", "Every new seller, fast.", 1)
    headline = '      - "Congrats on the {round} {when}, {account}"\n'
    text = text.replace(headline, headline + '      - "Amazing work on the {round}, {account}"\n', 1)
    path.write_text(text)
    base = folder / "theme" / "base.html"
    base.write_text(base.read_text().replace("{% block content %}{% endblock %}", ""))
    (folder / "tenant.yaml").write_text("tenant: acme\nbanned_phrase: [synergy]\n")

    code, out, err = validate(capsys, str(path), "--json")
    assert code == 2
    found = {(p["file"], p["field"]): p["message"] for p in json.loads(out)["problems"]}
    assert "was built from other voice_examples" in found[(str(path), "voice_profile")]
    assert "flattery: amazing" in found[(str(path), "patterns.funding.hero_headline.1")]
    assert "has no {% block content %}" in found[(str(base), None)]
    assert "Extra inputs are not permitted" in found[(str(folder / "tenant.yaml"), "banned_phrase")]
    assert len(found) == 4, found


def test_a_declared_type_fills_its_pattern_end_to_end_with_the_offline_composer(
    folder: Path, tmp_path: Path, redis_client: redis.Redis
) -> None:
    inputs = load_campaign_inputs(folder / "campaign.yaml", None, None)
    everywhere = {**ACQUIRED, "surfaces": ["web", "email", "seller", "print"]}
    record = account("acct_frostline", "Frostline Logistics B.V.", "frostlinelogistics.com", [everywhere])
    PrecomputeRun(
        client=redis_client,
        campaign=inputs.campaign,
        zones=inputs.zones,
        policy=inputs.policy,
        provider=OfflineComposer(),
        now=datetime.combine(AS_OF, time(9), tzinfo=UTC),
    ).run(accounts_file(tmp_path, record))
    zone_set = ZoneSetStore(redis_client).get("acme", "q4-pipeline", "acct_frostline")
    assert zone_set is not None
    headline = zone_set.zone("hero_headline")
    assert headline is not None and headline.rung is Rung.PERSONAL, headline
    assert headline.text == "Congrats on bringing Coldline on board, Frostline Logistics"
    assert [f.fact_id for f in headline.facts] == ["f8"]
    # The declaration keeps acquisitions to the web and e-mail, whatever the research allows.
    assert set(headline.surfaces) == {"web", "email"}
