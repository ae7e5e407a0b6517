"""Holdout assignment: stable, per account, at the campaign's fraction."""

from __future__ import annotations

from welcomemat.arms import Arm, assign_arm, holdout_position


def test_no_account_is_anonymous() -> None:
    assert assign_arm("acme", "q4", None, 0.5) is Arm.ANONYMOUS


def test_assignment_is_stable_and_depends_only_on_tenant_campaign_account() -> None:
    arms = {assign_arm("acme", "q4", "acct_1", 0.3) for _ in range(100)}
    assert len(arms) == 1
    assert holdout_position("acme", "q4", "acct_1") == holdout_position("acme", "q4", "acct_1")
    assert holdout_position("acme", "q4", "acct_1") != holdout_position("acme", "q5", "acct_1")


def test_fraction_is_respected_over_many_accounts() -> None:
    accounts = [f"acct_{i}" for i in range(20_000)]
    held = sum(assign_arm("acme", "q4", a, 0.10) is Arm.HOLDOUT for a in accounts)
    assert 0.09 < held / len(accounts) < 0.11


def test_zero_fraction_holds_out_no_one() -> None:
    assert all(assign_arm("acme", "q4", f"a{i}", 0.0) is Arm.PERSONAL for i in range(1000))


def test_holdout_is_not_the_same_accounts_in_every_campaign() -> None:
    accounts = [f"acct_{i}" for i in range(5000)]
    q4 = {a for a in accounts if assign_arm("acme", "q4", a, 0.1) is Arm.HOLDOUT}
    q1 = {a for a in accounts if assign_arm("acme", "q1", a, 0.1) is Arm.HOLDOUT}
    assert len(q4 & q1) < 0.3 * len(q4)
