"""`welcomemat voice build`: a campaign's voice profile, derived from its example lines.

The profile (`welcomemat.campaign.voice`) is written into `campaign.yaml` itself, as the last
top-level field, so every guideline version (`guidelines/<version>.yaml`) carries the
profile its zones were checked against, and the bundle's hash covers it. Only the
`voice_profile` block is rewritten (with the comment line above it); the rest of the file,
comments included, stays as the person wrote it.

It needs only readable `voice_examples`: a campaign that still has other problems (a pattern,
a CTA link, a window) gets its profile all the same, and those problems are listed after it,
so a first `validate` that shows a missing profile among others is fixed one step at a time.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

from cli.guideline_versions import write_atomically
from welcomemat.campaign.contract import Campaign, check_campaign
from welcomemat.campaign.voice import VoiceProfile, derive_profile, longest_sentence_allowed
from welcomemat.errors import ContractProblems, InputError
from welcomemat.yamlfile import read_yaml, valid_fields

__all__ = ["PROFILE_COMMENT", "format_profile", "replace_profile_block", "run_build"]

PROFILE_COMMENT = "# Written by `welcomemat voice build` from voice_examples: rebuild it, never edit it."
_FIELD = "voice_profile:"


def replace_profile_block(text: str, profile: VoiceProfile) -> str:
    """`text` with its top-level `voice_profile` block (and our comment above it) replaced by
    `profile`'s, placed last in the file."""
    kept: list[str] = []
    lines = text.splitlines()
    skipping = False
    for line in lines:
        if line.startswith(_FIELD):
            skipping = True
            if kept and kept[-1] == PROFILE_COMMENT:
                kept.pop()
            continue
        if skipping and line[:1] in (" ", "\t"):
            continue  # the old block's own (indented) lines; what follows it is kept
        skipping = False
        kept.append(line)
    while kept and not kept[-1].strip():
        kept.pop()
    body = yaml.safe_dump(
        {"voice_profile": profile.model_dump(mode="json")},
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=None,
        width=100,
    )
    return "\n".join([*kept, "", PROFILE_COMMENT, body.rstrip("\n")]) + "\n"


def format_profile(profile: VoiceProfile) -> str:
    """The profile as a person reads it."""
    s = profile.sentence_words
    kinds = ", ".join(f"{k} {v:.0%}" for k, v in profile.opener_kinds.items())
    person = ", ".join(f"{p} {n}" for p, n in profile.person.items())
    marks = (
        f"! {profile.exclamations_per_line.max:g}, ? {profile.questions_per_line.max:g}, "
        f"dashes {profile.dashes_per_line.max:g}, colons {profile.colons_per_line.max:g} a line at most; "
        f"commas {profile.commas_per_sentence.median:g} a sentence "
        f"(at most {profile.commas_per_sentence.max:g})"
    )
    return "\n".join(
        [
            f"voice profile of {profile.examples} example lines ({profile.examples_sha256[:12]})",
            f"  sentence length: {s.min:g}-{s.max:g} words, median {s.median:g} "
            f"(off voice past {longest_sentence_allowed(profile)})",
            f"  openers: {', '.join(profile.openers)}; kinds: {kinds}",
            f"  hedging: {profile.hedges_per_line.max:g} hedge words a line at most",
            f"  person: {person}",
            f"  punctuation: {marks}",
            f"  reading grade: {profile.reading_grade.min:g}-{profile.reading_grade.max:g}, "
            f"median {profile.reading_grade.median:g}",
        ]
    )


def run_build(campaign_arg: str, *, check: bool = False, as_json: bool = False) -> int:
    """Derive the profile from `voice_examples` and write it into the file (`check`: only say
    whether the file's profile is current; exit 1 if not)."""
    path = Path(campaign_arg)
    if not path.is_file():
        raise InputError("voice build needs the campaign's campaign.yaml", file=path, field="CAMPAIGN")
    _, problems = check_campaign(path)
    stale = [p for p in problems if (p.field or "").startswith("voice_profile") or _missing_profile(p)]
    # What stops a build: the file unreadable as a whole, or its examples themselves refused.
    blocking = [p for p in problems if p not in stale and _blocks_build(p)]
    if blocking:
        raise ContractProblems(blocking)
    others = [p for p in problems if p not in stale]
    data = read_yaml(path).data  # the one bounded loader, as check_campaign read it
    checked = valid_fields(Campaign, data, frozenset(), None) if isinstance(data, dict) else {}
    examples = tuple(checked.get("voice_examples") or ())
    if not examples:
        raise InputError("no voice_examples to build a voice profile from", file=path, field="voice_examples")
    profile = derive_profile(examples)
    if check:
        if stale:
            print(
                f"{path}: voice_profile is not built from voice_examples: run `welcomemat voice build {path}`"
            )
            _print_others(others)
            return 1
        print(f"{path}: voice_profile is current")
        _print_others(others)
        return 0
    text = path.read_text(encoding="utf-8")
    write_atomically(path, replace_profile_block(text, profile).encode("utf-8"))
    print(json.dumps(profile.model_dump(mode="json"), indent=2) if as_json else format_profile(profile))
    if not as_json:
        print(f"written to {path} (voice_profile): a guideline change, propose it like any other")
    _print_others(others)
    return 0


def _missing_profile(problem: InputError) -> bool:
    return problem.field == "voice_examples" and "without a voice_profile" in problem.message


def _blocks_build(problem: InputError) -> bool:
    """A problem of the file as a whole (no field) or of `voice_examples` itself."""
    field = problem.field or ""
    return not field or field == "voice_examples" or field.startswith("voice_examples.")


def _print_others(problems: Sequence[InputError]) -> None:
    """The campaign's other problems, on stderr: the profile does not fix them."""
    if not problems:
        return
    from cli.validate import print_problems

    noun = "problem" if len(problems) == 1 else "problems"
    print(
        f"{len(problems)} other {noun} in {problems[0].file} (the profile is built all the same; "
        "`welcomemat validate` checks everything):",
        file=sys.stderr,
    )
    print_problems(problems)
