"""The `welcomemat` command line: one console script, one subcommand per job.

The only package that composes the layers: `cli → {server, precompute, outbound} →
welcomemat`. Each subcommand is a module of `cli.commands` that registers its own parser
and handler; `main` parses, calls `args.handler(args)`, and maps the core's errors to exit
codes (`cli.exit_codes`). Heavy parts (server, precompute, outbound, redis clients) are
imported inside the handler that needs them, so `welcomemat --help` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from cli.commands import (
    admin,
    audit,
    conversions,
    delivered,
    demo,
    erase,
    experiment,
    explain,
    export,
    guidelines,
    init,
    link,
    mail,
    precompute,
    precompute_status,
    preview,
    qa,
    redis_server,
    report,
    review,
    schema,
    secret,
    serve,
    subject_export,
    sync,
    validate,
    voice,
    worker,
)
from cli.exit_codes import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK
from welcomemat import __version__
from welcomemat.errors import ConfigError, InputError, WelcomematError

__all__ = ["COMMANDS", "build_parser", "main"]

# In the order `welcomemat --help` lists them.
COMMANDS = (
    demo,
    init,
    validate,
    schema,
    precompute,
    worker,
    sync,
    precompute_status,
    qa,
    explain,
    review,
    guidelines,
    experiment,
    voice,
    redis_server,
    serve,
    link,
    secret,
    export,
    mail,
    preview,
    report,
    conversions,
    delivered,
    audit,
    admin,
    erase,
    subject_export,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="welcomemat",
        description="Account-aware website personalization: precompute page zones, serve them safely.",
    )
    parser.add_argument("--version", action="version", version=f"welcomemat {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        return int(args.handler(args))
    except (InputError, ConfigError) as exc:
        print(f"welcomemat: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except WelcomematError as exc:
        print(f"welcomemat: failed: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except BrokenPipeError:  # e.g. `welcomemat demo | head`: the reader left; not an error
        sys.stderr.close()
        return EXIT_OK
    except KeyboardInterrupt:
        print("welcomemat: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    raise SystemExit(main())
