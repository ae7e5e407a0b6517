"""A candidate guideline version replayed in-process: the report's figures and its recommendation."""

from __future__ import annotations

import shutil
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from precompute.guideline_replay import (
    NOT_READY,
    READY,
    CandidateReport,
    read_account_sets,
    replay_candidate,
    replay_day,
)
from precompute.inputs import CampaignInputs, load_campaign_inputs
from precompute.providers.offline import OfflineComposer
from tests.corpora import REPO_ROOT
from welcomemat.errors import ContractProblems, InputError

EXAMPLES = REPO_ROOT / "examples"
ZONES = str(REPO_ROOT / "zones")


def inputs(path: Path) -> CampaignInputs:
    return load_campaign_inputs(path, ZONES, None)


def replay(candidate: Path) -> CandidateReport:
    active = EXAMPLES / "campaign.yaml"
    sets = read_account_sets(active)
    return replay_candidate(
        inputs(active),
        inputs(candidate),
        sets,
        provider=OfflineComposer(),
        as_of=replay_day(sets),
        files=(active, candidate),
        created_at=datetime(2026, 12, 1, tzinfo=UTC),
    )


def edited(tmp_path: Path, *edits: tuple[str, str]) -> Path:
    """The example candidate with edits, beside a copy of the theme it names."""
    text = (EXAMPLES / "campaign.candidate.yaml").read_text()
    for old, new in edits:
        assert old in text
        text = text.replace(old, new, 1)
    path = tmp_path / "candidate.yaml"
    path.write_text(text)
    shutil.copytree(EXAMPLES / "theme", tmp_path / "theme")  # a symlinked theme folder is refused
    return path


def test_the_sets_are_replayed_as_of_the_day_after_their_newest_fact() -> None:
    assert replay_day(read_account_sets(EXAMPLES / "campaign.yaml")) == date(2026, 11, 27)


def test_the_example_candidate_fixes_the_replay_set_and_breaks_nothing() -> None:
    report = replay(EXAMPLES / "campaign.candidate.yaml")
    assert report.recommendation == READY and report.reasons == ()
    replay_set, held_out, regression = report.sets
    assert (replay_set.accounts, replay_set.passed_before, replay_set.passed_after) == (3, 3, 3)
    assert {c.account_id for c in replay_set.changes} == {"acct_00015", "acct_00072", "acct_00079"}
    # Held out: the launch that is about another company, and the one without a source, stay generic.
    assert {c.account_id for c in held_out.changes} == {"acct_00171"}
    assert regression.changes == () and regression.new_blockers == ()
    assert report.active.version == "2026-11-01" and report.candidate.version == "2026-12-01"
    assert report.active.hash != report.candidate.hash


def test_a_candidate_that_does_not_touch_the_replay_set_is_not_ready(tmp_path: Path) -> None:
    # The new lines are for leadership facts instead: product launches keep no window, no pattern.
    leadership = (
        (EXAMPLES / "campaign.candidate.yaml").read_text().split("  leadership:\n    hero_support:\n", 1)
    )
    old_lines = "  leadership:\n    hero_support:\n" + leadership[1].split("\n", 1)[0] + "\n"
    candidate = edited(
        tmp_path,
        ("  product_launch: 60         # 2026-12-01: with patterns below\n", ""),
        (old_lines, ""),
        ("  product_launch:\n", "  leadership:\n"),
    )
    report = replay(candidate)
    assert report.recommendation == NOT_READY
    assert any(r.startswith("replay:") for r in report.reasons)


def test_a_banned_line_let_through_is_a_new_blocker_naming_its_account(tmp_path: Path) -> None:
    # "synergy" is banned by this campaign only (no shipped claim class refuses it).
    drop, pattern = '  - "synergy"\n', "Congrats on the {round} {when}: real synergy, {account}"
    candidate = edited(tmp_path, (drop, ""), ('"Congrats on the {round} {when}, {account}"', f'"{pattern}"'))
    report = replay(candidate)
    assert report.recommendation == NOT_READY
    regression = report.sets[2]
    assert regression.broken_accounts == ("acct_dymaxa",)
    assert [b.code for b in regression.new_blockers] == ["banned_line:banned_phrase"]
    assert "refused by guidelines 2026-11-01" in regression.new_blockers[0].detail


def test_a_candidate_pattern_a_shipped_class_always_refuses_is_refused_at_its_line(tmp_path: Path) -> None:
    # Dropping "game-changer" from the campaign's list does not let it through: flattery is
    # refused by the product itself, so the candidate is bad input, named at its line.
    candidate = edited(
        tmp_path,
        ('  - "game-changer"\n', ""),
        ('"Congrats on the {round} {when}, {account}"', '"{account}, your {round} is a game-changer"'),
    )
    with pytest.raises(
        ContractProblems, match=r"candidate.yaml:\d+, field 'patterns.funding.hero_headline.0'.*flattery"
    ):
        replay(candidate)


def test_a_regression_case_that_changes_is_not_ready_unless_named_as_intended(tmp_path: Path) -> None:
    # Every funding pattern deleted: Dymaxa (regression set) loses its Series A headline.
    text = (EXAMPLES / "campaign.candidate.yaml").read_text().replace("  funding: 30\n", "", 1)
    start = text.index("  funding:\n    hero_headline:")
    text = text[:start] + text[text.index("  hiring:\n    hero_headline:") :]
    candidate = tmp_path / "candidate.yaml"
    candidate.write_text(text)
    shutil.copytree(EXAMPLES / "theme", tmp_path / "theme")
    active = EXAMPLES / "campaign.yaml"
    sets = read_account_sets(active)

    def replayed(intended: tuple[str, ...]) -> CandidateReport:
        return replay_candidate(
            inputs(active), inputs(candidate), sets, provider=OfflineComposer(), as_of=replay_day(sets),
            files=(active, candidate), created_at=datetime(2026, 12, 1, tzinfo=UTC), intended=intended,
        )  # fmt: skip

    unnamed = replayed(())
    assert unnamed.recommendation == NOT_READY
    assert unnamed.sets[2].passed_after == unnamed.sets[2].passed_before  # every case still passes
    [reason] = unnamed.reasons
    assert reason.startswith("regression: acct_dymaxa changed without being named")
    assert "'Congrats on the Series A in November, Dymaxa' -> personal 'Hiring four SDRs" in reason
    named = replayed(("acct_dymaxa",))
    assert named.recommendation == READY and named.intended_changes == ("acct_dymaxa",)
    with pytest.raises(InputError, match="'acct_nobody' is not a case of the regression set"):
        replayed(("acct_nobody",))
