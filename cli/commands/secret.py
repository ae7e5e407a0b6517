"""`welcomemat secret rotate [--check]`: a new signing key and the steps to rotate to it (`cli/secret.py`)."""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    secret = sub.add_parser(
        "secret",
        help="rotate WELCOMEMAT_SECRET, the key that signs links, QR codes and cookies",
        description="WELCOMEMAT_SECRET holds the keys that sign links, QR codes and cookies, "
        "comma-separated: the first signs, all verify. `rotate` prints a new key and the steps to move to "
        "it.",
    )
    verbs = secret.add_subparsers(dest="secret_command", metavar="VERB", required=True)
    rotate = verbs.add_parser(
        "rotate",
        help="print a new strong key and the exact steps to rotate to it; --check: check the environment",
        description="Prints a new signing key (43 random URL-safe characters) and the exact steps to "
        "rotate WELCOMEMAT_SECRET to it without breaking a link, QR code or cookie already out. --check "
        "checks this environment instead (each key 32+ characters, the previous key differs from the new "
        "one, bearer tokens 32+ characters and their own values), naming positions and lengths, never "
        "values; exit 2 on a problem.",
    )
    rotate.add_argument(
        "--check",
        action="store_true",
        help="check WELCOMEMAT_SECRET and the bearer tokens of this environment instead (lengths, a "
        "previous key that differs); exit 2 on a problem, values never printed",
    )
    rotate.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from cli.secret import check_secrets, print_rotation

    return check_secrets() if args.check else print_rotation()
