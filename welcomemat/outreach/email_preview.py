"""Every branch of a sequencer e-mail, filled for one contact before a send.

An account's contacts receive one of three versions of a campaign e-mail: the personal copy
(the personal arm, where the ladder serves it on the `email` surface), its segment fallback
(the personal arm when the personal copy is refused: review, expiry, a refused cell) and the
holdout's segment copy. `branch_previews` builds the export's own row for each
(`welcomemat.outreach.sequencer_row`, the builder `welcomemat export` uses) and fills the template
with it, so a variable the file would not carry shows up here as unknown or empty.
`welcomemat preview email` and the admin preview both call it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

import redis

from welcomemat.campaign.view import CampaignView
from welcomemat.errors import InputError
from welcomemat.outreach.email_template import EmailTemplate, RenderedEmail
from welcomemat.outreach.sequencer_row import Branch, LinkMaker, SequencerRowBuilder
from welcomemat.records.account_records import read_account_record
from welcomemat.zones.published import zone_set_batch
from welcomemat.zones.store import ZoneSetStore

__all__ = ["BranchPreview", "branch_previews", "preview_email"]


@dataclass(frozen=True, slots=True)
class BranchPreview:
    """One branch's export row for the contact, and the template filled with it."""

    branch: Branch
    row: dict[str, str]
    rendered: RenderedEmail

    def as_json(self) -> dict[str, object]:
        return {
            "branch": self.branch.value,
            "rung": self.row.get("rung", ""),
            "status": self.row.get("status", ""),
            "text": self.rendered.text,
            "issues": [
                {"line": i.line, "variable": i.variable, "kind": i.kind.value} for i in self.rendered.issues
            ],
        }


def branch_previews(
    client: redis.Redis,
    view: CampaignView,
    account_id: str,
    template: EmailTemplate,
    link_for: LinkMaker,
    *,
    now: datetime,
    contact_id: str | None = None,
    fill: Mapping[str, str] | None = None,
) -> list[BranchPreview]:
    """The personal, segment and holdout renderings for a contact (default: the account's first).

    `InputError` when the account has no record or no such contact; `StoredValueError`
    when its record does not decode.
    """
    record = read_account_record(client, view.tenant, account_id)
    if record is None:
        raise InputError(f"no account record for {account_id!r} in tenant {view.tenant!r}", field="ACCOUNT")
    contacts = [c for c in record.contacts if contact_id is None or c.contact_id == contact_id]
    if not contacts:
        missing = f"no contact {contact_id!r}" if contact_id else "no contact with an e-mail address"
        raise InputError(f"account {account_id!r} has {missing}", field="--contact")
    record = record.model_copy(update={"contacts": contacts[:1]})
    found, unreadable = zone_set_batch(ZoneSetStore(client), view.tenant, view.campaign_id, [account_id])
    zone_set = found.get(account_id)
    if zone_set is None and account_id not in unreadable:
        raise InputError(f"account {account_id!r} has no zone set in {view.tenant}/{view.campaign_id}")
    builder = SequencerRowBuilder(view, link_for, now, fill)
    previews = []
    for branch in Branch:
        rows = builder.account_rows(record, zone_set, unreadable.get(account_id), branch)
        row = rows.rows[0]
        previews.append(BranchPreview(branch, row, template.render(row)))
    return previews


def preview_email(previews: list[BranchPreview]) -> str:
    """The three renderings as text, each under a header naming its branch, rung and status."""
    blocks = []
    for preview in previews:
        head = f"=== {preview.branch.value} (rung {preview.row['rung']}, status {preview.row['status']}) ==="
        issues = "".join(f"!! {issue}\n" for issue in preview.rendered.issues)
        blocks.append(f"{head}\n{preview.rendered.text.rstrip()}\n{issues}")
    return "\n".join(blocks)
