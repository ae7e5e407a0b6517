"""`welcomemat demo`: the bundled examples precomputed, checked and served on 127.0.0.1 (`cli/demo.py`)."""

from __future__ import annotations

import argparse

from cli.arg_types import port

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    demo = sub.add_parser(
        "demo",
        help="precompute the bundled examples, then serve them on 127.0.0.1 with a demo customer site",
        description="Starts the embedded Redis, validates zones/ and the bundled examples, precomputes "
        "freshly dated example accounts with the offline composer, prints the run, the QA verdict and "
        "Dymaxa's page, approves Dymaxa (tier 1) as a reviewer would, then serves the renderer and a demo "
        "customer site that embeds the snippet on 127.0.0.1 and prints their links (a personal link, a QR "
        "continuation link and its image, an anonymous link, the customer site, the admin URLs). On a "
        "terminal it serves until Ctrl-C; otherwise it fetches every printed link, reports, stops and exits "
        "(1 if a check failed).",
    )
    demo.add_argument("--examples", default=None, help="examples folder (default: the repository's)")
    demo.add_argument("--keep-redis", action="store_true", help="leave the embedded Redis running")
    demo.add_argument(
        "--port", type=port, default=8000, help="renderer port on 127.0.0.1 (default: 8000; 0: any)"
    )
    demo.add_argument(
        "--site-port", type=port, default=None, help="demo customer site port (default: --port + 1; 0: any)"
    )
    demo.add_argument(
        "--serve",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="keep serving until Ctrl-C after the checks (default: only when stdout is a terminal)",
    )
    demo.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from cli.demo import run_demo

    return run_demo(
        examples=args.examples,
        keep_redis=args.keep_redis,
        port=args.port,
        site_port=args.site_port,
        serve=args.serve,
    )
