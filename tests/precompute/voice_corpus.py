"""The voice check measured: false positives on the example campaign, catches per dimension, rerun with

    .venv/bin/python -m tests.precompute.voice_corpus -v

False positives (all must be zero): the example campaign's own good lines (its
`voice_examples`, segment, default and proof copy) held to its voice profile, and every zone
the offline composer writes for examples/accounts.jsonl on the day the file was made for (and
every pattern filled on its own) that fails `off_voice`. Catches: each line of
voice_lines/off_voice.txt must fail on its dimension. tests/precompute/test_voice.py asserts both.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from precompute.checks import CheckInput, check_voice
from precompute.context_builder import build_context
from tests.corpora import REPO_ROOT
from tests.example_accounts import committed_today
from tests.precompute.claims.claim_corpus import (
    CAMPAIGN,
    OTHERS,
    POLICY,
    VOCABULARY,
    ZONES,
    every_pattern_alone,
    example_assembler,
    exit_for,
)
from welcomemat.campaign.voice import VOICE_DIMENSIONS, VoiceProfile, voice_failures
from welcomemat.reasons import OFF_VOICE
from welcomemat.records.accounts import read_accounts

__all__ = ["OFF_VOICE_LINES", "VoiceMeasured", "main", "measure", "off_voice_lines", "profile"]

OFF_VOICE_LINES = Path(__file__).parent / "voice_lines" / "off_voice.txt"


def profile() -> VoiceProfile:
    assert CAMPAIGN.voice_profile is not None, "examples/campaign.yaml has no voice_profile"
    return CAMPAIGN.voice_profile


def off_voice_lines() -> list[tuple[str, str, str]]:
    """(dimension, text, file:line) of each off-voice line."""
    found = []
    for number, raw in enumerate(OFF_VOICE_LINES.read_text(encoding="utf-8").splitlines(), start=1):
        if raw.strip() and not raw.startswith("#"):
            dimension, text = (p.strip() for p in raw.split(" | ", 1))
            assert dimension in VOICE_DIMENSIONS, raw
            found.append((dimension, text, f"off_voice.txt:{number}"))
    return found


@cache
def _composed() -> tuple[int, tuple[str, ...]]:
    """How many composed zones were checked, and each that failed off_voice (where: reason: text)."""
    as_of = committed_today()
    accounts = read_accounts(REPO_ROOT / "examples" / "accounts.jsonl").accounts
    assembler = example_assembler(as_of, accounts)
    checked, refused = 0, []
    for account in accounts:
        for zone in assembler.assemble(account, "input-hash").zones:
            if zone.draft is None:
                continue
            checked += 1
            refused += [
                f"{account.account_id} {zone.content.zone_id}: {f.reason}: {zone.draft.text}"
                for f in zone.failures
                if f.reason.startswith(OFF_VOICE)
            ]
    for where, draft, account in every_pattern_alone(accounts, as_of):
        checked += 1
        inp = CheckInput(
            draft=draft,
            contract=ZONES[draft.zone_id],
            context=build_context(account, CAMPAIGN, POLICY, as_of),
            campaign=CAMPAIGN,
            policy=POLICY,
            vocabulary=VOCABULARY,
            other_companies=OTHERS,
        )
        failure = check_voice(inp)
        if failure is not None:
            refused.append(f"{where}: {failure.reason}: {draft.text}")
    return checked, tuple(refused)


def good_lines() -> list[str]:
    """The example campaign's own good lines: its voice examples and its approved copy."""
    lines = list(CAMPAIGN.voice_examples)
    lines += [c.text for c in CAMPAIGN.default_copy.values() if c.cta is None]
    lines += [c.text for s in CAMPAIGN.segments.values() for c in s.zones.values() if c.cta is None]
    return lines + [p.text for p in CAMPAIGN.proof_library]


@dataclass(frozen=True)
class VoiceMeasured:
    good: int
    good_refused: list[str]
    composed: int
    composed_refused: list[str]
    caught: Counter[str]
    lines: Counter[str]
    missed: list[str]


def measure() -> VoiceMeasured:
    voice = profile()
    good = good_lines()
    good_refused = [f"{f.dimension}: {text}" for text in good for f in voice_failures(text, voice)[:1]]
    composed, composed_refused = _composed()
    caught: Counter[str] = Counter()
    lines: Counter[str] = Counter()
    missed = []
    for dimension, text, where in off_voice_lines():
        lines[dimension] += 1
        if dimension in {f.dimension for f in voice_failures(text, voice)}:
            caught[dimension] += 1
        else:
            missed.append(f"{where}: {dimension}: {text}")
    return VoiceMeasured(len(good), good_refused, composed, list(composed_refused), caught, lines, missed)


def main(argv: Sequence[str] = ()) -> int:
    """Print the figures; `-v` also every false positive and miss. Exit 1 unless FPs are 0 and all caught."""
    m = measure()
    print(
        f"false positives: {len(m.good_refused)} of {m.good} good lines, "
        f"{len(m.composed_refused)} of {m.composed} composed zones"
    )
    print(f"{'dimension':<18}{'caught':>8}")
    for dimension in VOICE_DIMENSIONS:
        print(f"{dimension:<18}{m.caught[dimension]:>4}/{m.lines[dimension]:<3}")
    return exit_for([*m.good_refused, *m.composed_refused, *m.missed], argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
