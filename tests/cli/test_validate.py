"""`welcomemat validate`: every problem of every input in one run, and it agrees with precompute."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cli.main import main
from cli.validate import format_problem, validate_inputs
from precompute.inputs import load_campaign_inputs
from tests.corpora import REPO_ROOT
from tests.example_accounts import committed_today
from welcomemat.errors import ContractProblems, InputError

EXAMPLE_CAMPAIGN = (REPO_ROOT / "examples" / "campaign.yaml").read_text()
EXAMPLE_ACCOUNTS = (REPO_ROOT / "examples" / "accounts.jsonl").read_text().splitlines()


@dataclass(frozen=True)
class Inputs:
    campaign: Path
    tenant: Path
    zones: Path
    accounts: Path


def write_inputs(root: Path, *, campaign: str = EXAMPLE_CAMPAIGN, tenant: str | None = None) -> Inputs:
    """A copy of the examples: campaign/campaign.yaml (+ tenant.yaml, theme/), zones/, accounts.jsonl."""
    (root / "campaign").mkdir()
    inputs = Inputs(
        root / "campaign" / "campaign.yaml",
        root / "campaign" / "tenant.yaml",
        root / "zones",
        root / "a.jsonl",
    )
    inputs.campaign.write_text(campaign)
    if tenant is not None:
        inputs.tenant.write_text(tenant)
    shutil.copytree(REPO_ROOT / "zones", inputs.zones)
    shutil.copytree(REPO_ROOT / "examples" / "theme", root / "campaign" / "theme")
    inputs.accounts.write_text("\n".join(EXAMPLE_ACCOUNTS[:3]) + "\n")
    return inputs


def replace(text: str, old: str, new: str) -> str:
    assert text.count(old) >= 1, old
    return text.replace(old, new, 1)


def line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), start=1) if needle in line)


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["validate", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


# -- everything at once ---------------------------------------------------------------------------


def test_every_mistake_in_every_input_is_reported_in_one_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    campaign = EXAMPLE_CAMPAIGN
    campaign = replace(campaign, "holdout_fraction: 0.10", "holdout_fraction: 0.9")
    campaign = replace(campaign, "min_confidence: medium\n", 'min_confidence: medium\nname: "Again"\n')
    campaign = replace(campaign, "https://meet.acmerevenue.example/ramp-review", "https://evil.example/a")
    campaign = replace(campaign, "https://www.acmerevenue.example/contact", "https://evil.example/b")
    campaign = replace(campaign, '      proof: "Seed-stage teams', '      prooof: "Seed-stage teams')
    campaign = replace(campaign, '      proof: "Fintech sales teams', '      prooof: "Fintech sales teams')
    campaign = replace(campaign, "in {location}?", "in {locaton}?")
    tenant = "tenant: acme\nbanned_phrase: [synergy]\nmax_signal_windows_days:\n  funding: 0\n"
    inputs = write_inputs(tmp_path, campaign=campaign, tenant=tenant)
    contract = inputs.zones / "hero_support.yaml"
    contract.write_text(replace(contract.read_text(), "max_words: 32", "max_words: 0"))
    broken = EXAMPLE_ACCOUNTS[0].replace('"acct_dymaxa"', '"acct dymaxa"', 1)
    inputs.accounts.write_text(
        "\n".join([*EXAMPLE_ACCOUNTS[:2], "{oops", broken, EXAMPLE_ACCOUNTS[1]]) + "\n"
    )

    c, t, a = str(inputs.campaign), str(inputs.tenant), str(inputs.accounts)
    expected = [
        (str(contract), line_of(contract, "max_words"), "max_words", "greater than or equal to 1"),
        (c, line_of(inputs.campaign, "holdout_fraction"), "holdout_fraction", "less than or equal to 0.5"),
        (c, line_of(inputs.campaign, 'name: "Again"'), "name", "duplicate key 'name' (first on line 4)"),
        (c, line_of(inputs.campaign, "evil.example/a"), "ctas.0.href", "'https://evil.example/a' is refused"),
        (c, line_of(inputs.campaign, "evil.example/b"), "ctas.2.href", "'https://evil.example/b' is refused"),
        (c, line_of(inputs.campaign, "saas-smb:") + 3, "segments.saas-smb.zones", "no copy for zone 'proof'"),
        (c, line_of(inputs.campaign, "fintech:") + 3, "segments.fintech.zones", "no copy for zone 'proof'"),
        (
            c,
            line_of(inputs.campaign, "{locaton}"),
            "patterns.hiring.hero_headline.0",
            "did you mean {location}?",
        ),
        (t, 2, "banned_phrase", "Extra inputs are not permitted"),
        (t, 4, "max_signal_windows_days.funding", "maximum window 0 days is outside 1..730"),
        (a, 3, None, "not valid JSON"),
        (a, 4, "account_id", "should match pattern"),
        (a, 5, "account_id", "duplicate account_id"),
    ]

    code, out, err = run_cli(capsys, c, a, "--zones", str(inputs.zones), "--json")
    assert code == 2
    report = json.loads(out)
    got = [(p["file"], p["line"], p["field"]) for p in report["problems"]]
    assert got == [(file, line, field) for file, line, field, _ in expected]
    for problem, (*_, words) in zip(report["problems"], expected, strict=True):
        assert words in problem["message"], (problem, words)
    assert report["ok"] is False and report["accounts"]["skipped"] == 3

    code, out, err = run_cli(capsys, c, a, "--zones", str(inputs.zones))
    assert code == 2
    lines = err.splitlines()
    assert lines[-1] == "13 problems in 4 files"
    for line, (file, number, field, words) in zip(lines, expected, strict=False):
        prefix = f"{file}:{number}: " + (f"{field}: " if field else "")
        assert line.startswith(prefix) and words in line, (line, prefix)


def test_a_tenant_that_tries_to_unban_a_shipped_opener_fails_validate_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tenant = 'tenant: acme\nallowed_openers: ["Quick question"]\n'
    inputs = write_inputs(tmp_path, tenant=tenant)
    code, _, err = run_cli(capsys, str(inputs.campaign), "--zones", str(inputs.zones))
    assert code == 2
    assert f"{inputs.tenant}:2: allowed_openers: 'allowed_openers' cannot change the banned openers" in err
    assert "shipped with Welcomemat" in err and "always apply" in err


def test_patterns_no_fact_of_their_type_could_let_through_fail_validate_at_their_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    headline = '      - "Congrats on the {round} {when}, {account}"\n'
    campaign = replace(
        EXAMPLE_CAMPAIGN,
        headline,
        headline
        + '      - "Amazing work on the {round}, {account}"\n'
        + '      - "Loved your recent post about the {round}"\n'
        + '      - "Hope this email finds you well, {account}"\n',
    )
    campaign = replace(
        campaign,
        "  expansion:\n",
        '  quote:\n    hero_headline:\n      - "Loved your {medium} about {topic}"\n  expansion:\n',
    )
    inputs = write_inputs(tmp_path, campaign=campaign)
    code, out, _ = run_cli(capsys, str(inputs.campaign), "--zones", str(inputs.zones), "--json")
    assert code == 2
    problems = {p["field"]: (p["line"], p["message"]) for p in json.loads(out)["problems"]}
    assert set(problems) == {
        "patterns.funding.hero_headline.1",
        "patterns.funding.hero_headline.2",
        "patterns.funding.hero_headline.3",
    }  # the quote pattern of a quote fact is fine
    line, message = problems["patterns.funding.hero_headline.1"]
    assert line == line_of(inputs.campaign, "Amazing work") and "flattery: amazing" in message
    assert "only a quote fact backs it, not a funding fact" in problems["patterns.funding.hero_headline.2"][1]
    assert "banned_opener: Hope this email finds you well" in problems["patterns.funding.hero_headline.3"][1]


def test_precedence_problems_are_reported_with_the_campaign_file_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    campaign = replace(EXAMPLE_CAMPAIGN, "  - guaranteed_outcome", "  - vibes")
    tenant = "tenant: acme\nmax_signal_windows_days:\n  funding: 14\n  hiring: 20\nmin_confidence: high\n"
    inputs = write_inputs(tmp_path, campaign=campaign, tenant=tenant)
    code, out, err = run_cli(capsys, str(inputs.campaign), "--zones", str(inputs.zones), "--json")
    assert code == 2
    got = {(p["line"], p["field"]) for p in json.loads(out)["problems"]}
    assert got == {
        (line_of(inputs.campaign, "min_confidence:"), "min_confidence"),
        (line_of(inputs.campaign, "funding: 30"), "signal_windows_days.funding"),
        (line_of(inputs.campaign, "hiring: 45"), "signal_windows_days.hiring"),
        (line_of(inputs.campaign, "- vibes"), "prohibited_claims.2"),
    }
    assert all(p["file"] == str(inputs.campaign) for p in json.loads(out)["problems"])


def test_a_tenant_policy_named_on_the_command_line_is_used_and_must_exist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = write_inputs(tmp_path)
    other = tmp_path / "brand.yaml"
    other.write_text("tenant: globex\n")
    code, out, err = run_cli(
        capsys, str(inputs.campaign), "--zones", str(inputs.zones), "--tenant-policy", str(other)
    )
    assert code == 2 and "field: tenant" not in err
    assert (
        f"{inputs.campaign}:2: tenant: campaign tenant 'acme' does not match the tenant policy's 'globex'"
        in err
    )

    missing = tmp_path / "nope.yaml"
    code, _, err = run_cli(
        capsys, str(inputs.campaign), "--zones", str(inputs.zones), "--tenant-policy", str(missing)
    )
    assert code == 2 and f"{missing}: --tenant-policy: tenant policy file not found" in err


# -- exit codes -----------------------------------------------------------------------------------


def test_the_examples_are_well_formed_and_precompute_loads_them(capsys: pytest.CaptureFixture[str]) -> None:
    campaign, accounts = (
        str(REPO_ROOT / "examples" / "campaign.yaml"),
        str(REPO_ROOT / "examples" / "accounts.jsonl"),
    )
    code, out, err = run_cli(capsys, campaign, accounts, "--json", "--as-of", committed_today().isoformat())
    # Nothing malformed; the example research is a realistic mix, so some facts will not be used.
    assert (code, err) == (1, "")
    report = json.loads(out)
    assert report["problems"] == [] and report["campaign"]["qr_links"] is True
    facts = report["facts"]
    assert facts["checked"] > facts["used"] > 0 and {"stale", "wrong_subject"} <= set(facts["by_reason"])
    # Every fact type the examples carry has a window and patterns, or neither.
    assert not {"no_window_for_type", "missing_field", "unknown_field"} & set(facts["by_reason"])
    assert load_campaign_inputs(Path(campaign), None, None).campaign.campaign == "q4-pipeline"


def test_exit_2_for_any_bad_input_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inputs = write_inputs(tmp_path)
    zones = ["--zones", str(inputs.zones)]
    day = ["--as-of", committed_today().isoformat()]  # the day the examples' facts are all good
    assert run_cli(capsys, str(inputs.campaign), str(inputs.accounts), *zones, *day)[0] == 0

    inputs.accounts.write_text(EXAMPLE_ACCOUNTS[0] + "\n" + EXAMPLE_ACCOUNTS[0] + "\n")
    code, out, err = run_cli(capsys, str(inputs.campaign), str(inputs.accounts), *zones)
    assert code == 2 and f"{inputs.accounts}:2: account_id: duplicate account_id 'acct_dymaxa'" in err
    assert "campaign acme/q4-pipeline: ok" in out

    code, _, err = run_cli(capsys, str(inputs.campaign), str(tmp_path / "none.jsonl"), *zones)
    assert code == 2 and f"{tmp_path / 'none.jsonl'}: file not found" in err

    code, _, err = run_cli(capsys, str(tmp_path / "none.yaml"), *zones)
    assert code == 2 and f"{tmp_path / 'none.yaml'}: file not found" in err

    code, _, err = run_cli(capsys, str(inputs.campaign), "--zones", str(tmp_path / "nozones"))
    assert code == 2 and "zone contract folder not found" in err


def test_a_campaign_without_a_continuation_page_is_valid_and_noted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    campaign = replace(EXAMPLE_CAMPAIGN, "  continuation:\n    template: continuation.html\n", "")
    campaign = replace(campaign, "    zones: [continuation_headline, hero_support, cta]\n", "")
    inputs = write_inputs(tmp_path, campaign=campaign)
    code, out, _ = run_cli(capsys, str(inputs.campaign), "--zones", str(inputs.zones))
    assert code == 0 and "cannot issue QR links" in out


def test_precompute_refuses_at_the_first_problem_and_says_how_many_more(tmp_path: Path) -> None:
    campaign = replace(EXAMPLE_CAMPAIGN, "holdout_fraction: 0.10", "holdout_fraction: 0.9")
    campaign = replace(campaign, "in {location}?", "in {locaton}?")
    inputs = write_inputs(tmp_path, campaign=campaign)
    with pytest.raises(ContractProblems) as refused:
        load_campaign_inputs(inputs.campaign, str(inputs.zones), None)
    assert refused.value.field == "holdout_fraction" and len(refused.value.problems) == 2
    assert "(and 1 more problem: `welcomemat validate` lists them all)" in str(refused.value)


def test_every_line_of_fallback_copy_that_fails_its_checks_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Segment and default copy go through the checks a run would put them through, all at once."""
    campaign = replace(
        EXAMPLE_CAMPAIGN,
        "New sellers, productive in weeks",
        "Revolutionary: new sellers, productive in weeks",
    )
    campaign = replace(
        campaign, "Ramp sellers fast in a regulated market", "A game-changer in a regulated market"
    )
    inputs = write_inputs(tmp_path, campaign=campaign)
    code, _, err = run_cli(capsys, str(inputs.campaign), "--zones", str(inputs.zones))
    assert code == 2
    default_line = line_of(inputs.campaign, "Revolutionary: new sellers")
    segment_line = line_of(inputs.campaign, "A game-changer in")
    assert f"{inputs.campaign}:{default_line}: default_copy.hero_headline: default copy" in err
    assert f"{inputs.campaign}:{segment_line}: segments.fintech.zones.hero_headline: segment copy" in err
    assert "banned_phrase" in err and "2 problems in 1 file" in err
    with pytest.raises(ContractProblems) as refused:  # precompute refuses the same, before any work
        load_campaign_inputs(inputs.campaign, str(inputs.zones), None)
    assert [p.field for p in refused.value.problems] == [
        "default_copy.hero_headline",
        "segments.fintech.zones.hero_headline",
    ]


def test_a_problem_prints_as_file_line_field_message() -> None:
    assert format_problem(InputError("bad", file="c.yaml", line=3, field="a.b")) == "c.yaml:3: a.b: bad"
    assert format_problem(InputError("bad", file="c.yaml", line=3)) == "c.yaml:3: bad"
    assert format_problem(InputError("bad", file="c.yaml", field="a")) == "c.yaml: a: bad"


# -- validate passing means precompute's loader accepts ---------------------------------------------

Mutation = Callable[[Inputs], None]


def edit(path_of: Callable[[Inputs], Path], old: str, new: str) -> Mutation:
    def apply(inputs: Inputs) -> None:
        path = path_of(inputs)
        text = path.read_text() if path.exists() else "tenant: acme\n"
        path.write_text(replace(text, old, new) if old else text + new)

    return apply


def campaign_file(i: Inputs) -> Path:
    return i.campaign


def tenant_file(i: Inputs) -> Path:
    return i.tenant


MUTATIONS: dict[str, tuple[Mutation, bool]] = {  # name -> (change, whether it is a problem)
    "holdout": (edit(campaign_file, "holdout_fraction: 0.10", "holdout_fraction: 0.7"), True),
    "cta_href": (edit(campaign_file, "https://meet.acmerevenue.example/", "https://evil.example/"), True),
    "alert_step_url": (
        edit(
            campaign_file,
            "next_step_url: https://www.acmerevenue.example/",
            "next_step_url: https://evil.example/",
        ),
        True,
    ),
    "slot_typo": (edit(campaign_file, "{round} {when}", "{rond} {when}"), True),
    "bad_pattern": (edit(campaign_file, "in {location}?", "in {location!r}?"), True),
    "duplicate_key": (edit(campaign_file, "voice: >", "name: twice\nvoice: >"), True),
    "missing_copy": (edit(campaign_file, '      proof: "Seed-stage', '      proofs: "Seed-stage'), True),
    "claim_class": (edit(campaign_file, "  - partnership ", "  - friendship "), True),
    "zone_contract": (edit(lambda i: i.zones / "cta.yaml", "max_chars: 40", "max_chars: -1"), True),
    "tenant_window": (edit(tenant_file, "", "max_signal_windows_days:\n  hiring: 30\n"), True),
    "tenant_other": (edit(tenant_file, "", "surprise: 1\n"), True),
    "tenant_claim_class": (edit(tenant_file, "", "prohibited_claims: [friendship]\n"), True),
    "campaign_name": (edit(campaign_file, "Q4 pipeline:", "Q4 pipeline, renamed:"), False),
    "tenant_phrase": (edit(tenant_file, "", "banned_phrases: [Unlock your potential]\n"), False),
    "banned_copy": (edit(campaign_file, "Ramp sellers fast in", "A game-changer for sellers in"), True),
    "tenant_bans_copy": (edit(tenant_file, "", "banned_phrases: [consistent onboarding]\n"), True),
    "no_continuation": (
        edit(
            campaign_file,
            "  continuation:\n    template: continuation.html\n    zones: "
            "[continuation_headline, hero_support, cta]\n",
            "",
        ),
        False,
    ),
}


def loader_accepts(inputs: Inputs) -> tuple[bool, list[tuple[str | None, int | None, str | None, str]]]:
    try:
        load_campaign_inputs(inputs.campaign, str(inputs.zones), None)
    except ContractProblems as refused:
        return False, [(p.file, p.line, p.field, p.message) for p in refused.problems]
    return True, []


@settings(max_examples=40, deadline=None)
@given(st.sets(st.sampled_from(sorted(MUTATIONS)), max_size=4))
def test_validate_passes_exactly_when_precompute_loads(names: Iterable[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        inputs = write_inputs(Path(folder))
        for name in sorted(names):
            MUTATIONS[name][0](inputs)
        report = validate_inputs(inputs.campaign, None, zones=str(inputs.zones), tenant_policy=None)
        accepted, refused = loader_accepts(inputs)
        assert report.ok == accepted
        assert report.ok == (not any(MUTATIONS[n][1] for n in names))
        assert [(p.file, p.line, p.field, p.message) for p in report.problems] == refused


@pytest.mark.parametrize("name", sorted(n for n, (_, bad) in MUTATIONS.items() if bad))
def test_each_mutation_alone_is_one_problem_found_by_both(tmp_path: Path, name: str) -> None:
    inputs = write_inputs(tmp_path)
    MUTATIONS[name][0](inputs)
    report = validate_inputs(inputs.campaign, None, zones=str(inputs.zones), tenant_policy=None)
    assert len(report.problems) == 1, [format_problem(p) for p in report.problems]
    assert report.problems[0].line is not None and report.problems[0].file is not None
    assert loader_accepts(inputs)[0] is False


# -- hostile values: exit 2 naming file, line and field, for validate and precompute alike -------------


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("1" + "0" * 5000, "5001 digits; at most 40 accepted"),
        ("[" * 20_000 + "]" * 20_000, "nested deeper than 32 levels"),
        (".nan", "must be a finite number, got .nan"),
    ],
)
def test_a_hostile_holdout_fraction_is_exit_2_with_file_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, words: str
) -> None:
    campaign = replace(EXAMPLE_CAMPAIGN, "holdout_fraction: 0.10", f"holdout_fraction: {value}")
    inputs = write_inputs(tmp_path, campaign=campaign)
    where = f"{inputs.campaign}:{line_of(inputs.campaign, 'holdout_fraction')}: holdout_fraction: "
    code, _, err = run_cli(capsys, str(inputs.campaign), str(inputs.accounts), "--zones", str(inputs.zones))
    assert code == 2 and where in err and words in err and "Traceback" not in err
    code = main(["precompute", str(inputs.campaign), str(inputs.accounts), "--zones", str(inputs.zones)])
    err = capsys.readouterr().err
    assert code == 2 and where.replace(": holdout_fraction: ", "") in err and words in err
