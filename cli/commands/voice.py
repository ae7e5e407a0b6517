"""`welcomemat voice build`: a voice profile from the campaign's example lines (`cli.voice_profile`)."""

from __future__ import annotations

import argparse

__all__ = ["register", "run_build"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    voice = sub.add_parser(
        "voice",
        help="the campaign's voice profile, derived from its example lines",
        description="The campaign's voice profile (sentence length, openers, hedging, person, punctuation, "
        "reading level), derived from its `voice_examples`; part of the guideline bundle.",
    )
    actions = voice.add_subparsers(dest="voice", metavar="ACTION", required=True)
    build = actions.add_parser(
        "build",
        help="derive voice_profile from voice_examples (5 to 30 lines) and write it into campaign.yaml",
        description="Derives the campaign's voice profile from its `voice_examples` (5 to 30 lines) and "
        "writes it into the file as `voice_profile` (the rest of the file, comments included, unchanged); "
        "prints the profile. --check writes nothing and exits 1 when `voice_profile` was not built from the "
        "current examples. A bad example list (fewer than 5, more than 30, a line with no words) is exit 2 "
        "naming file, line and field; the campaign's other problems do not stop it (they are listed on "
        "stderr after the profile).",
    )
    build.add_argument("campaign", help="the campaign's campaign.yaml")
    build.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 when voice_profile is not current"
    )
    build.add_argument("--json", action="store_true", help="print the profile as JSON")
    build.set_defaults(handler=run_build)


def run_build(args: argparse.Namespace) -> int:
    from cli import voice_profile as voice

    return voice.run_build(args.campaign, check=args.check, as_json=args.json)
