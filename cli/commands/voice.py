"""`welcomemat voice build`: a voice profile from the campaign's example lines (`cli.voice_profile`)."""

from __future__ import annotations

import argparse

__all__ = ["register", "run_build"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    voice = sub.add_parser("voice", help="the campaign's voice profile, derived from its example lines")
    actions = voice.add_subparsers(dest="voice", metavar="ACTION", required=True)
    build = actions.add_parser(
        "build",
        help="derive voice_profile from voice_examples (5 to 30 lines) and write it into campaign.yaml",
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
