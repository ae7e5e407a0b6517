"""`welcomemat voice build`: the profile written into campaign.yaml, versioned with the guidelines.

A campaign's example lines make its voice profile; the profile is written into the file the
person keeps (comments and all), `validate` refuses examples the profile was not built from
and a wrong number of examples (file, line, field), and a change of examples changes the
guideline bundle's hash, so it goes through `guidelines propose` like any other change.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from cli.main import main
from cli.voice_profile import PROFILE_COMMENT, replace_profile_block
from tests.cli.test_validate import EXAMPLE_CAMPAIGN, line_of, write_inputs
from welcomemat.campaign.contract import load_campaign
from welcomemat.campaign.guidelines import guideline_bundle, guideline_hash
from welcomemat.campaign.voice import derive_profile

NEW_LINE = '  - "Your new reps, on your best rep\'s calls from week one."\n'


def voice(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["voice", "build", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def validate(capsys: pytest.CaptureFixture[str], campaign: Path) -> tuple[int, str]:
    code = main(["validate", str(campaign)])
    return code, capsys.readouterr().err


def with_examples(text: str, examples: list[str]) -> str:
    """The campaign text with its example list replaced (no profile: `voice build` writes it)."""
    head, rest = text.split("voice_examples:", 1)
    body = rest.split("\n", 1)[1]
    kept = [line for line in body.splitlines(keepends=True) if not line.startswith("  - ")]
    items = "".join(f"  - {json.dumps(e)}\n" for e in examples)
    without_profile = "".join(kept).split("# Written by `welcomemat voice build`", 1)[0]
    return head + "voice_examples:\n" + items + without_profile


def test_build_writes_the_profile_into_the_file_and_keeps_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = write_inputs(tmp_path)
    text = inputs.campaign.read_text()
    text = text.replace("voice_examples:", "voice_examples:\n" + NEW_LINE.rstrip("\n"), 1)
    inputs.campaign.write_text(text)
    code, err = validate(capsys, inputs.campaign)
    assert code == 2
    assert re.search(
        rf"campaign.yaml:{line_of(inputs.campaign, 'voice_profile:') + 1}: voice_profile: voice_profile was "
        "built from other voice_examples: run `welcomemat voice build` on this file",
        err,
    ), err
    assert voice(capsys, str(inputs.campaign), "--check")[0] == 1

    code, out, err = voice(capsys, str(inputs.campaign))
    assert code == 0, err
    assert "voice profile of 11 example lines" in out and "sentence length: 2-16 words" in out
    written = inputs.campaign.read_text()
    # Everything but the profile block is as the person wrote it, comments included.
    assert (
        written.split("# Written by `welcomemat voice build`")[0].rstrip()
        == text.split("# Written by `welcomemat voice build`")[0].rstrip()
    )
    assert (
        written.count("voice_profile:") == 1 and "# The offline composer's human-written patterns" in written
    )
    data = yaml.safe_load(written)
    assert data["voice_profile"] == derive_profile(data["voice_examples"]).model_dump(mode="json")
    assert validate(capsys, inputs.campaign)[0] == 0
    assert voice(capsys, str(inputs.campaign), "--check")[0] == 0
    # Built again from the same lines: the same bytes.
    assert voice(capsys, str(inputs.campaign))[0] == 0 and inputs.campaign.read_text() == written


@pytest.mark.parametrize("count", [4, 31])
def test_too_few_or_too_many_examples_are_refused_at_their_line(
    count: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = write_inputs(tmp_path)
    examples = [f"Line {n} of our voice, for your team." for n in range(count)]
    inputs.campaign.write_text(with_examples(EXAMPLE_CAMPAIGN, examples))
    code, out, err = voice(capsys, str(inputs.campaign))
    assert code == 2 and out == ""
    line = line_of(inputs.campaign, "voice_examples:") + 1  # the list's first line
    assert f"campaign.yaml:{line}, field 'voice_examples': needs 5 to 30 example lines, got {count}" in err
    assert "Traceback" not in err
    code, err = validate(capsys, inputs.campaign)
    assert (
        code == 2 and f"campaign.yaml:{line}: voice_examples: needs 5 to 30 example lines, got {count}" in err
    )


def test_an_example_with_no_words_and_a_profile_without_examples_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = write_inputs(tmp_path)
    examples = [
        "We ramp sellers.",
        "Your team, ramped.",
        "New reps, fast.",
        "Hiring SDRs?",
        "...",
        "Ramp in weeks.",
    ]
    inputs.campaign.write_text(with_examples(EXAMPLE_CAMPAIGN, examples))
    code, _, err = voice(capsys, str(inputs.campaign))
    assert code == 2
    line = line_of(inputs.campaign, '- "..."')
    assert f"campaign.yaml:{line}, field 'voice_examples.4': an example line needs words" in err

    inputs.campaign.write_text(re.sub(r"voice_examples:.*?(?=\napproval:)", "", EXAMPLE_CAMPAIGN, flags=re.S))
    code, err = validate(capsys, inputs.campaign)
    assert code == 2 and "voice_profile: voice_profile without voice_examples to build it from" in err


def test_new_examples_are_a_guideline_change(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inputs = write_inputs(tmp_path)
    before = guideline_hash(load_campaign(inputs.campaign))
    inputs.campaign.write_text(
        inputs.campaign.read_text().replace("voice_examples:", "voice_examples:\n" + NEW_LINE.rstrip("\n"), 1)
    )
    assert voice(capsys, str(inputs.campaign))[0] == 0
    after = load_campaign(inputs.campaign)
    assert (
        guideline_hash(after) != before
        and after.voice_profile is not None
        and after.voice_profile.examples == 11
    )
    # A campaign without examples hashes without the two fields: as it did before they existed.
    plain = re.sub(r"voice_examples:.*?(?=\napproval:)", "", EXAMPLE_CAMPAIGN, flags=re.S)
    plain = plain.split("# Written by `welcomemat voice build`", 1)[0]
    inputs.campaign.write_text(plain)
    bundle_free = load_campaign(inputs.campaign)
    assert bundle_free.voice_profile is None
    assert "voice_examples" not in guideline_bundle(bundle_free) and "voice_profile" not in guideline_bundle(
        bundle_free
    )


def test_a_profile_moved_up_the_file_is_rewritten_at_the_end_and_nothing_else_is_lost() -> None:
    profile = derive_profile([f"Line {n}: we ramp your new sellers." for n in range(5)])
    text = (
        "voice: Plain.\n"
        f"{PROFILE_COMMENT}\n"
        "voice_profile: {version: 1}\n"
        "# --- the pages ---\n"
        "pages:\n"
        "  landing: {template: landing.html}\n"
        "voice_profile:\n"
        "  version: 1\n"
        "  examples: 5\n"
        "theme: ./theme\n"
    )
    written = replace_profile_block(text, profile)
    assert written.startswith(
        "voice: Plain.\n# --- the pages ---\npages:\n  landing: {template: landing.html}\n"
    )
    assert "theme: ./theme\n\n" + PROFILE_COMMENT + "\nvoice_profile:\n" in written
    assert yaml.safe_load(written)["voice_profile"] == profile.model_dump(mode="json")
    assert replace_profile_block(written, profile) == written


def test_build_works_on_a_campaign_that_still_has_other_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stale profile among other problems: the build fixes the profile and lists the rest."""
    inputs = write_inputs(tmp_path)
    text = inputs.campaign.read_text()
    text = text.replace("voice_examples:", "voice_examples:\n" + NEW_LINE.rstrip("\n"), 1)
    text = text.replace("in {location}?", "in {locaton}?", 1)  # a pattern slot nothing fills
    text = text.replace("https://meet.acmerevenue.example/ramp-review", "https://evil.example/", 1)
    inputs.campaign.write_text(text)
    zones = ["--zones", str(inputs.zones)]
    code = main(["validate", str(inputs.campaign), *zones])
    err = capsys.readouterr().err
    assert code == 2 and "voice_profile: voice_profile was built from other voice_examples" in err
    assert "{locaton}" in err and "ctas.0.href" in err

    code, out, err = voice(capsys, str(inputs.campaign))
    assert code == 0, err
    assert out.startswith("voice profile of 11 example lines") and "written to" in out
    assert "2 other problems in" in err and "Traceback" not in err
    assert (
        f"{inputs.campaign}:{line_of(inputs.campaign, '{locaton}')}: patterns.hiring.hero_headline.0: " in err
    )
    assert ": ctas.0.href: " in err
    assert load_campaign_profile_examples(inputs.campaign) == 11

    code = main(["validate", str(inputs.campaign), *zones])
    err = capsys.readouterr().err
    assert code == 2 and "voice_profile" not in err and "2 problems in 1 file" in err


def load_campaign_profile_examples(path: Path) -> int:
    data = yaml.safe_load(path.read_text())
    return int(data["voice_profile"]["examples"])
