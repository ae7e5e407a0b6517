#!/usr/bin/env python3
"""Simulated copy experiments: does the lift report find a planted lift, and stay honest without one?

    .venv/bin/python -m bench.lift_simulation [--runs 200] [--peek-runs 2000] [--seed 18]

Three questions, each on populations drawn with a fixed seed (the same figures on every run):

1. Detection. A campaign of `--accounts` accounts, 10% holdout, two copy variants; the second
   variant's CTA click rate is 20% higher (relative) than the control's. Arms and variants are
   the real hash assignment (`welcomemat.arms`, `welcomemat.campaign.experiments`) of simulated account
   ids, and the report is the real one (`welcomemat.lift.groups.build_grouped_report`). Figure:
   the share of populations where the variant-vs-control always-valid 95% interval excludes
   zero (power), and the same for the fixed interval.
2. Peeking. No effect; a marketer reads the report every day for `--days` days as accounts
   arrive. Figure: the share of experiments where any daily look shows an interval excluding
   zero (a false positive), for the fixed 95% interval (inflated) and the always-valid one
   (at most 5% by construction).
3. Sample-ratio mismatch. How often the chi-square check fires on an honest assignment (false
   alarms; nominal 0.1%), and how often it catches a bug that loses 5% of one variant's
   accounts (say, zone sets that failed to publish).

`tests/welcomemat/lift/test_lift_simulation.py` runs small versions of each; the figures in
`bench/README.md` come from this script's defaults.
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass
from datetime import UTC, datetime

from welcomemat.arms import Arm, assign_arm
from welcomemat.campaign.experiments import CopyVariant, Experiment, assign_variant
from welcomemat.lift.comparison import AccountOutcome, Metric, newcombe_difference
from welcomemat.lift.groups import GroupedLiftReport, LiftDimension, build_grouped_report
from welcomemat.lift.stats import sample_ratio_mismatch, sequential_difference

TENANT = "sim"
CAMPAIGN = "sim-campaign"
EXPERIMENT = Experiment(
    id="headline-angle", zone="hero_headline", variants=(CopyVariant(id="control"), CopyVariant(id="direct"))
)
HOLDOUT_FRACTION = 0.1
REACH_RATE = 0.9
BASE_CLICK_RATE = 0.10
PLANTED_RELATIVE_LIFT = 0.20
NOW = datetime(2026, 12, 1, tzinfo=UTC)


def simulate_population(
    seed: int,
    accounts: int,
    lifts: dict[str, float],
    *,
    base_rate: float = BASE_CLICK_RATE,
    lose_share: dict[str, float] | None = None,
) -> list[AccountOutcome]:
    """Accounts with their real arm and variant; each reached with REACH_RATE, clicking with
    base_rate × (1 + its variant's relative lift). `lose_share`: a share of a variant's
    accounts dropped from the population (a simulated publishing bug)."""
    rng = random.Random(seed)
    lost = lose_share or {}
    outcomes: list[AccountOutcome] = []
    for i in range(accounts):
        account = f"s{seed}-{i}"
        arm = assign_arm(TENANT, CAMPAIGN, account, HOLDOUT_FRACTION)
        variant = assign_variant(CAMPAIGN, EXPERIMENT, account).id if arm is Arm.PERSONAL else None
        if variant is not None and rng.random() < lost.get(variant, 0.0):
            continue
        reached = rng.random() < REACH_RATE
        rate = base_rate * (1.0 + lifts.get(variant or "", 0.0))
        clicked = reached and rng.random() < rate
        outcomes.append(
            AccountOutcome(
                account_id=account,
                arm=arm,
                views=1 if reached else 0,
                cta_clicks=1 if clicked else 0,
                variant=variant,
            )
        )
    return outcomes


def variant_report(outcomes: list[AccountOutcome]) -> GroupedLiftReport:
    return build_grouped_report(
        outcomes,
        LiftDimension.VARIANT,
        tenant=TENANT,
        campaign=CAMPAIGN,
        holdout_fraction=HOLDOUT_FRACTION,
        generated_at=NOW,
        variants=[v.id for v in EXPERIMENT.variants],
    )


@dataclass(frozen=True)
class Detection:
    runs: int
    sequential: float  # share of runs whose always-valid interval excludes zero
    fixed: float  # same, fixed-sample interval


def detection(runs: int, accounts: int, seed: int) -> Detection:
    """Question 1: the planted lift found, per run, by each interval."""
    sequential = fixed = 0
    for run in range(runs):
        outcomes = simulate_population(seed + run, accounts, {"direct": PLANTED_RELATIVE_LIFT})
        report = variant_report(outcomes)
        contrast = next(c for c in report.contrasts if c.metric is Metric.CTA_CLICK_RATE)
        sequential += contrast.sequential_low > 0
        fixed += contrast.difference_low > 0
    return Detection(runs, sequential / runs, fixed / runs)


def _binomial(rng: random.Random, n: int, p: float) -> int:
    return sum(rng.random() < p for _ in range(n))


@dataclass(frozen=True)
class Peeking:
    runs: int
    days: int
    per_day: int
    sequential: float  # share of experiments with a false positive at any daily look
    fixed: float


def peeking(runs: int, days: int, per_day: int, seed: int, rate: float = BASE_CLICK_RATE) -> Peeking:
    """Question 2: two variants with the same click rate, read every day."""
    rng = random.Random(seed)
    sequential = fixed = 0
    for _ in range(runs):
        xa = xb = n = 0
        hit_sequential = hit_fixed = False
        for _day in range(days):
            xa += _binomial(rng, per_day, rate)
            xb += _binomial(rng, per_day, rate)
            n += per_day
            low, high = sequential_difference(xa, n, xb, n)
            hit_sequential |= low > 0 or high < 0
            interval = newcombe_difference(xa, n, xb, n)
            hit_fixed |= interval.low > 0 or interval.high < 0
        sequential += hit_sequential
        fixed += hit_fixed
    return Peeking(runs, days, per_day, sequential / runs, fixed / runs)


@dataclass(frozen=True)
class RatioCheck:
    runs: int
    false_alarms: float  # honest assignment, mismatch reported
    caught: float  # 5% of one variant's accounts lost, mismatch reported


def ratio_checks(runs: int, accounts: int, seed: int) -> RatioCheck:
    """Question 3: the sample-ratio check on honest and broken assignments (counts only)."""
    alarms = caught = 0
    shares = [HOLDOUT_FRACTION, (1 - HOLDOUT_FRACTION) / 2, (1 - HOLDOUT_FRACTION) / 2]
    for run in range(runs):
        for lose, _ in ((0.0, "honest"), (0.05, "broken")):
            counts = {"holdout": 0, "control": 0, "direct": 0}
            rng = random.Random(seed + run)
            for i in range(accounts):
                account = f"r{seed + run}-{i}"
                arm = assign_arm(TENANT, CAMPAIGN, account, HOLDOUT_FRACTION)
                group = "holdout" if arm is Arm.HOLDOUT else assign_variant(CAMPAIGN, EXPERIMENT, account).id
                if group == "direct" and rng.random() < lose:
                    continue
                counts[group] += 1
            mismatch = sample_ratio_mismatch(list(counts.values()), shares).mismatch
            if lose:
                caught += mismatch
            else:
                alarms += mismatch
    return RatioCheck(runs, alarms / runs, caught / runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=200, help="populations for detection and SRM")
    parser.add_argument("--accounts", type=int, default=25_000, help="accounts per population")
    parser.add_argument("--peek-runs", type=int, default=2_000, help="experiments for the peeking figure")
    parser.add_argument("--days", type=int, default=30, help="daily looks per experiment")
    parser.add_argument("--per-day", type=int, default=200, help="reached accounts per variant per day")
    parser.add_argument("--seed", type=int, default=18)
    args = parser.parse_args()
    found = detection(args.runs, args.accounts, args.seed)
    print(
        f"detection: {args.runs} populations of {args.accounts} accounts, 10% holdout, 2 variants, "
        f"CTA click rate {BASE_CLICK_RATE:.0%} vs {BASE_CLICK_RATE * (1 + PLANTED_RELATIVE_LIFT):.0%} "
        f"(+{PLANTED_RELATIVE_LIFT:.0%} relative)"
    )
    print(f"  always-valid 95% interval excludes zero: {found.sequential:.1%}")
    print(f"  fixed 95% interval excludes zero:        {found.fixed:.1%}")
    peeks = peeking(args.peek_runs, args.days, args.per_day, args.seed)
    print(
        f"peeking: {args.peek_runs} experiments with no effect, {args.days} daily looks, "
        f"{args.per_day} reached accounts per variant per day"
    )
    print(f"  false positives, always-valid interval:  {peeks.sequential:.1%} (nominal at most 5%)")
    print(f"  false positives, fixed interval:         {peeks.fixed:.1%}")
    ratio = ratio_checks(args.runs, args.accounts, args.seed)
    print(f"sample-ratio check: {args.runs} populations (holdout, control, direct; p < 0.001 fires)")
    print(f"  false alarms on an honest assignment:    {ratio.false_alarms:.1%}")
    print(f"  caught when 5% of one variant is lost:   {ratio.caught:.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
