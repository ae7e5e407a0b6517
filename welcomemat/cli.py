"""The `welcomemat` command line: one console script, one subcommand per job.

Heavy parts (server, precompute, outbound, redis clients) are imported inside the
subcommand that needs them, so `welcomemat --help` stays fast.

Exit codes: 0 success; 1 the job ran and its verdict is NO GO or it failed; 2 bad usage
or bad input (the message names the file, line and field).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import UTC, datetime

from welcomemat import __version__
from welcomemat.errors import ConfigError, InputError, WelcomematError

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"{text} must be more than 0")
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port (0 to 65535)")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="welcomemat",
        description="Account-aware website personalization: precompute page zones, serve them safely.",
    )
    parser.add_argument("--version", action="version", version=f"welcomemat {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = sub.add_parser(
        "demo",
        help="precompute the bundled examples, then serve them on 127.0.0.1 with a demo customer site",
        description="Embedded Redis, the bundled example campaign and accounts, precompute (offline), QA; "
        "then the renderer and a demo customer site that embeds the snippet. On a terminal it serves "
        "until Ctrl-C; otherwise it fetches every printed link, reports, stops and exits (1 if a check "
        "failed).",
    )
    demo.add_argument("--examples", default=None, help="examples folder (default: the repository's)")
    demo.add_argument("--keep-redis", action="store_true", help="leave the embedded Redis running")
    demo.add_argument(
        "--port", type=_port, default=8000, help="renderer port on 127.0.0.1 (default: 8000; 0: any)"
    )
    demo.add_argument(
        "--site-port", type=_port, default=None, help="demo customer site port (default: --port + 1; 0: any)"
    )
    demo.add_argument(
        "--serve",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="keep serving until Ctrl-C after the checks (default: only when stdout is a terminal)",
    )

    init = sub.add_parser(
        "init",
        help="scaffold a new campaign folder: commented campaign.yaml, tenant.yaml, zones/, sample accounts",
        description="Write a campaign to start from into DIR (new, or an empty folder; never overwrites): "
        "campaign.yaml with every section commented, tenant.yaml, the zone contracts it uses in zones/, and "
        "five sample accounts dated from today, each showing a different outcome. Prints what it wrote and "
        "the commands to run next.",
    )
    init.add_argument("directory", metavar="DIR", help="the folder to create (must not exist, or be empty)")

    validate = sub.add_parser(
        "validate",
        help="check a campaign, its zone contracts, tenant policy and accounts: every problem at once",
        description="Loads the inputs exactly as `welcomemat precompute` does (zone contracts, campaign, "
        "tenant.yaml, policy precedence), then reads every accounts line. Prints every problem, one per "
        "line on stderr as `file:line: field: message`. Exit 0 when nothing is wrong, 2 when anything is.",
    )
    validate.add_argument("campaign", help="path to campaign.yaml")
    validate.add_argument("accounts", nargs="?", help="path to accounts.jsonl")
    validate.add_argument(
        "--zones",
        default=None,
        help="zone contracts folder (default: zones/ beside the campaign, else ./zones, else its parent's)",
    )
    validate.add_argument(
        "--tenant-policy", default=None, help="tenant.yaml (default: tenant.yaml beside the campaign)"
    )
    validate.add_argument("--json", action="store_true", help="print the report (and its problems) as JSON")

    # Kinds mirror welcomemat.reference.FORMATS (not imported here: `--help` stays fast).
    schema = sub.add_parser(
        "schema",
        help="print the JSON Schema of an input format, for editors that validate as you type",
        description="The JSON Schema (draft 2020-12) of campaign.yaml, tenant.yaml, a zone contract or one "
        "line of accounts.jsonl, built from the models the loaders use. Save it "
        "(`welcomemat schema campaign > campaign.schema.json`) and point the YAML file at it with "
        "`# yaml-language-server: $schema=./campaign.schema.json`; docs/campaign.md documents every field.",
    )
    schema.add_argument("kind", choices=["campaign", "tenant", "zone", "accounts"], help="the input format")

    pre = sub.add_parser("precompute", help="build, check and publish every account's zone set; QA verdict")
    pre.add_argument("campaign", help="path to campaign.yaml")
    pre.add_argument("accounts", help="path to accounts.jsonl")
    pre.add_argument(
        "--provider", default="offline", choices=["offline", "openai"], help="zone writer (default: offline)"
    )
    pre.add_argument("--concurrency", type=_positive_int, default=1, help="accounts assembled at once")
    pre.add_argument("--resume", action="store_true", help="skip accounts a previous run already published")
    pre.add_argument(
        "--self-review",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="model providers: a second call per account that may drop a zone, never add one (default: on)",
    )
    pre.add_argument(
        "--deadline",
        type=_positive_float,
        default=None,
        metavar="SECONDS",
        help="model providers: stop calling the model after this long; the rest get the fallback (deferred)",
    )
    pre.add_argument(
        "--zones",
        default=None,
        help="zone contracts folder (default: zones/ beside the campaign, else ./zones, else its parent's)",
    )
    pre.add_argument(
        "--tenant-policy", default=None, help="tenant.yaml (default: tenant.yaml beside the campaign)"
    )
    pre.add_argument("--json", action="store_true", help="print the run report as JSON")
    pre.add_argument(
        "--enqueue",
        action="store_true",
        help="validate, then put the accounts on the campaign's Redis Stream for `welcomemat worker` "
        "processes (any machine) instead of processing here; prints the run id",
    )

    # Defaults mirror precompute.worker's constants (not imported here: `--help` stays fast).
    worker = sub.add_parser(
        "worker",
        help="process enqueued precompute runs from Redis (any number, any machine); SIGTERM: finish, exit",
        description="Consume `precompute --enqueue` runs from the campaigns' Redis Streams through one "
        "consumer group: at-least-once, entries of dead workers claimed back, dead-lettered after "
        "--max-deliveries, idempotent publish. Follow a run with `welcomemat precompute-status CAMPAIGN`.",
    )
    worker.add_argument(
        "--campaign", default=None, help="tenant/campaign or a campaign id (default: every enqueued run)"
    )
    worker.add_argument("--name", default=None, help="consumer name in the group (default: host:pid)")
    worker.add_argument(
        "--once", action="store_true", help="drain the streams (claiming dead workers' entries), then exit 0"
    )
    worker.add_argument(
        "--block-ms", type=_positive_int, default=2000, help="wait for new work per read, ms (default: 2000)"
    )
    worker.add_argument(
        "--claim-idle-ms",
        type=_positive_int,
        default=60_000,
        help="take over entries unacknowledged this long on another worker, ms (default: 60000)",
    )
    worker.add_argument(
        "--max-deliveries",
        type=_positive_int,
        default=5,
        help="deliveries before an entry goes to the dead-letter stream (default: 5)",
    )

    # Defaults mirror outbound.sync's constants (not imported here: `--help` stays fast).
    sync = sub.add_parser(
        "sync",
        help="fold engagement events into the shared account records; push changes to the CRM webhook",
        description="A consumer group on each tenant's events stream: every event folded into its "
        "account's record exactly once (first and last seen, views, CTA clicks by zone, QR scans, last "
        "arm, zone-set version and facts shown); entries of stopped consumers claimed back; an entry "
        "dead-lettered after --max-deliveries. With WELCOMEMAT_CRM_WEBHOOK_URL set, each changed record "
        "is POSTed, signed, to that URL. Exit 1 when events were dead-lettered.",
    )
    sync.add_argument(
        "--once", action="store_true", help="drain the streams and the webhook outbox, then exit"
    )
    sync.add_argument("--consumer", default=None, help="consumer name in the group (default: host:pid)")
    sync.add_argument(
        "--tenant",
        action="append",
        default=[],
        help="a tenant to sync (repeatable; default: every tenant with a published campaign)",
    )
    sync.add_argument(
        "--block-ms",
        type=_positive_int,
        default=2000,
        help="wait for new events per read, ms (default: 2000)",
    )
    sync.add_argument(
        "--claim-idle-ms",
        type=_positive_int,
        default=60_000,
        help="take over entries unacknowledged this long on another consumer, ms (default: 60000)",
    )
    sync.add_argument(
        "--max-deliveries",
        type=_positive_int,
        default=5,
        help="deliveries before an event goes to the dead-letter stream (default: 5)",
    )

    status = sub.add_parser(
        "precompute-status",
        help="progress of an enqueued run (processed/total, by outcome, by worker); QA verdict when complete",
    )
    status.add_argument("campaign", help="tenant/campaign, a campaign id, or campaign.yaml")
    status.add_argument("--run", default=None, help="run id (default: the campaign's latest)")
    status.add_argument("--zones", default=None, help=argparse.SUPPRESS)
    status.add_argument("--json", action="store_true", help="print progress and report as JSON")

    qa = sub.add_parser("qa", help="population QA of what is published: verdict and findings")
    qa.add_argument("campaign", help="campaign.yaml, tenant/campaign, or a published campaign id")
    qa.add_argument("--zones", default=None, help=argparse.SUPPRESS)
    qa.add_argument("--json", action="store_true", help="print the QA report as JSON")

    explain = sub.add_parser("explain", help="why an account sees what it sees")
    explain.add_argument("campaign", help="campaign.yaml, tenant/campaign, or a published campaign id")
    explain.add_argument("account", help="account id")
    explain.add_argument("--zones", default=None, help=argparse.SUPPRESS)
    explain.add_argument("--json", action="store_true", help="print the explanation as JSON")

    review = sub.add_parser(
        "review", help="approve or reject zone sets waiting for a person; roll an account back"
    )
    review.add_argument("action", choices=["list", "show", "approve", "reject", "rollback"])
    review.add_argument("campaign", help="campaign.yaml, tenant/campaign, or a published campaign id")
    review.add_argument("account", nargs="?", help="account id (show, approve, reject, rollback)")
    review.add_argument("--version", type=_positive_int, default=None, help="the version you reviewed")
    review.add_argument("--zones", default=None, help=argparse.SUPPRESS)

    redis_cmd = sub.add_parser("redis", help="the embedded Redis used when REDIS_URL is unset")
    redis_cmd.add_argument("action", choices=["start", "stop", "status"])

    serve = sub.add_parser("serve", help="the renderer: landing pages, QR continuations, /metrics")
    serve.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=_positive_int, default=8000, help="port (default: 8000)")
    serve.add_argument("--workers", type=_positive_int, default=1, help="worker processes (default: 1)")

    link = sub.add_parser("link", help="print a signed personal link, or a QR continuation URL with --qr")
    link.add_argument("campaign", help="tenant/campaign, campaign.yaml, or a published campaign id")
    link.add_argument("account", help="account id")
    link.add_argument("--contact", default=None, help="contact id (the person the link is for)")
    link.add_argument("--qr", action="store_true", help="a /q/ URL for a direct-mail QR code")
    link.add_argument(
        "--ttl", type=_positive_int, default=None, metavar="DAYS", help="lifetime (default: link 30, QR 120)"
    )
    link.add_argument(
        "--qr-image",
        default=None,
        metavar="FILE",
        help="also write the QR code to FILE, .svg or .png (implies --qr)",
    )

    export = sub.add_parser(
        "export",
        help="sequencer export: one row per contact, the copy the page serves, every cell filled",
        description="One row per contact of every account with a published zone set: stable lowercase "
        "columns (lemlist / Smartlead variables), each zone's copy for the account's arm, the fact for "
        "the rep, a signed personal page link. Needs WELCOMEMAT_SECRET.",
    )
    export.add_argument("campaign", help="tenant/campaign, campaign.yaml, or a published campaign id")
    export.add_argument("--format", default="csv", choices=["csv", "jsonl"], help="csv (default) or jsonl")
    export.add_argument("--out", default=None, metavar="FILE", help="write FILE atomically (default: stdout)")

    report = sub.add_parser("report", help="reports on a campaign's outcomes")
    report_sub = report.add_subparsers(dest="report", metavar="REPORT", required=True)
    lift = report_sub.add_parser(
        "lift", help="personal vs holdout: reach, CTA clicks, conversions, with 95%% intervals"
    )
    lift.add_argument("campaign", help="tenant/campaign, campaign.yaml, or a published campaign id")
    lift.add_argument("--json", action="store_true", help="print the report as JSON")
    lift.add_argument(
        "--type",
        action="append",
        default=None,
        choices=["meeting_booked", "opportunity", "closed_won"],
        help="count only these conversion types (repeatable; default: every type)",
    )

    conversions = sub.add_parser("conversions", help="CRM outcomes per account, for the lift report")
    conversions_sub = conversions.add_subparsers(dest="conversions", metavar="ACTION", required=True)
    conversions_import = conversions_sub.add_parser(
        "import", help="record conversions from a JSON Lines file (one POST /v1/conversions body a line)"
    )
    conversions_import.add_argument("file", help="conversions.jsonl")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        if args.command == "demo":
            from welcomemat.commands.demo import run_demo

            return run_demo(
                examples=args.examples,
                keep_redis=args.keep_redis,
                port=args.port,
                site_port=args.site_port,
                serve=args.serve,
            )
        if args.command == "init":
            from welcomemat.commands.init import run_init

            # The one place the clock is read: the sample accounts are dated from this day.
            return run_init(args.directory, today=datetime.now(UTC).date())
        if args.command == "validate":
            from welcomemat.commands.validate import run_validate

            return run_validate(
                args.campaign,
                args.accounts,
                zones=args.zones,
                tenant_policy=args.tenant_policy,
                as_json=args.json,
            )
        if args.command == "schema":
            from welcomemat.reference import print_schema

            return print_schema(args.kind)
        if args.command == "precompute":
            from precompute.commands import run_precompute
            from server.render import check_campaign_theme

            return run_precompute(
                args.campaign,
                args.accounts,
                provider=args.provider,
                concurrency=args.concurrency,
                as_json=args.json,
                resume=args.resume,
                zones=args.zones,
                tenant=args.tenant_policy,
                self_review=args.self_review,
                deadline_s=args.deadline,
                enqueue=args.enqueue,
                check_theme=check_campaign_theme,
            )
        if args.command == "worker":
            from precompute.commands import run_worker

            return run_worker(
                campaign=args.campaign,
                name=args.name,
                once=args.once,
                block_ms=args.block_ms,
                claim_idle_ms=args.claim_idle_ms,
                max_deliveries=args.max_deliveries,
            )
        if args.command == "sync":
            from outbound.sync_command import run_sync

            return run_sync(
                once=args.once,
                consumer=args.consumer,
                tenants=args.tenant,
                block_ms=args.block_ms,
                claim_idle_ms=args.claim_idle_ms,
                max_deliveries=args.max_deliveries,
            )
        if args.command == "precompute-status":
            from precompute.commands import run_precompute_status

            return run_precompute_status(args.campaign, run_id=args.run, as_json=args.json, zones=args.zones)
        if args.command == "qa":
            from precompute.commands import run_qa_command

            return run_qa_command(args.campaign, as_json=args.json, zones=args.zones)
        if args.command == "explain":
            from precompute.commands import run_explain

            return run_explain(args.campaign, args.account, as_json=args.json, zones=args.zones)
        if args.command == "review":
            from precompute.commands import run_review

            return run_review(
                args.action, args.campaign, args.account, version=args.version, zones=args.zones
            )
        if args.command == "redis":
            from welcomemat.commands.redis_admin import run_redis

            return run_redis(args.action)
        if args.command == "serve":
            from server.serve import run_serve

            return run_serve(host=args.host, port=args.port, workers=args.workers)
        if args.command == "link":
            from server.link import run_link

            return run_link(
                args.campaign,
                args.account,
                contact=args.contact,
                qr=args.qr,
                ttl_days=args.ttl,
                qr_image=args.qr_image,
            )
        if args.command == "export":
            from outbound.export import run_export

            return run_export(args.campaign, args.format, args.out)
        if args.command == "report":
            from outbound.lift_report import run_report_lift

            return run_report_lift(args.campaign, as_json=args.json, types=args.type)
        if args.command == "conversions":
            from outbound.conversions_import import run_conversions_import

            return run_conversions_import(args.file)
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
        return 130
    parser.error(f"unknown command {args.command!r}")
    return EXIT_BAD_INPUT  # unreachable: parser.error exits


if __name__ == "__main__":
    raise SystemExit(main())
