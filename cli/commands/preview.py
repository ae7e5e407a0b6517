"""`welcomemat preview email`: a sequencer template filled for each branch
(`welcomemat.outreach.email_preview`)."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path

from cli.arg_types import add_fill_empty

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    preview = sub.add_parser(
        "preview",
        help="preview what a contact receives, every branch",
        description="Preview what a contact receives in each branch: personal, segment and holdout.",
    )
    kinds = preview.add_subparsers(dest="kind", required=True, metavar="KIND")
    email = kinds.add_parser(
        "email",
        help="fill a sequencer template with the export's variables: personal, segment and holdout",
        description='Renders a sequencer template ({{ var }}, {{ var | default: "text" }}) with the '
        "export's own row for one contact of ACCOUNT (filled with --fill-empty as the export would) in the "
        "personal, segment and holdout branches and prints the three, flagging under its branch every "
        "variable the export has no column for (`unknown`) or leaves empty without a default (`empty`) "
        "(--json: `[{branch, rung, status, text, issues: [{line, variable, kind}]}]`). Exit 0 "
        "when every branch fills every variable, 1 when one does not, 2 on a bad template (file, line, "
        "field) or account. Needs WELCOMEMAT_SECRET (the rows' page_url).",
    )
    email.add_argument("campaign", help="tenant/campaign, campaign.yaml, or a published campaign id")
    email.add_argument("account", help="account id")
    email.add_argument(
        "--template", required=True, metavar="FILE", help="a .html template gets HTML-escaped values"
    )
    email.add_argument("--contact", default=None, help="the contact to fill for (default: the account's 1st)")
    email.add_argument("--json", action="store_true", help="print the three renderings as JSON")
    add_fill_empty(email)
    email.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from welcomemat.campaign.ref import resolve_campaign_ref
    from welcomemat.campaign.view import load_campaign_view
    from welcomemat.outreach.email_preview import branch_previews, preview_email
    from welcomemat.outreach.email_template import read_template
    from welcomemat.outreach.sequencer_row import parse_fill
    from welcomemat.security.links import contact_links
    from welcomemat.security.tokens import TokenSigner
    from welcomemat.settings import Settings
    from welcomemat.storage.connection import connect, resolve_redis

    fill = dict(parse_fill(spec) for spec in args.fill_empty)
    template = read_template(Path(args.template))
    settings = Settings.from_env()
    signer = TokenSigner.from_setting(settings.require_secret())
    client = connect(resolve_redis(settings))
    try:
        tenant, campaign = resolve_campaign_ref(args.campaign, client=client)
        view = load_campaign_view(client, tenant, campaign)
        link_for = contact_links(signer, settings.public_url, tenant=tenant, campaign=campaign)
        previews = branch_previews(
            client,
            view,
            args.account,
            template,
            link_for,
            now=datetime.now(UTC),
            contact_id=args.contact,
            fill=fill,
        )
    finally:
        client.close()
    if args.json:
        print(json.dumps([p.as_json() for p in previews], indent=2, ensure_ascii=False))
    else:
        print(preview_email(previews), end="")
    return 1 if any(p.rendered.issues for p in previews) else 0
