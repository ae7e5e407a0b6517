"""Why an account sees what it sees: identity, every fact's trust decision, every zone's rung.

The record is written next to the zone set at publish time (internal: never served
publicly) so `welcomemat explain` and the admin pages explain what was actually published.
A zone the provider wrote no draft for carries the provider's `note` (the self-review's
own words, the malformed answer's problem, ...) beside its reason code; a zone whose draft
doubt kept off the page carries it as `held` (`welcomemat.zones.held`: the layer, its note, the
draft, the checks it fails), which a person may approve from the review queue. A draft the
offline composer filled carries `pattern`: which of the campaign's patterns won, which were
skipped and why, and how its `{when}` phrase was chosen (`precompute.pattern_choice`).
Records written before a field existed lack it, and still read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from precompute.assemble import AccountOutcome
from precompute.pattern_choice import PatternChoice
from welcomemat.bounded_time import ms_text
from welcomemat.reasons import CLAIM_REASON_DOCS, ClaimReason, off_voice_doc, parse_reason
from welcomemat.zones.held import held_drafts, one_line

__all__ = ["decode_explain_record", "explain_record", "format_explain"]


def _fact_provenance(outcome: AccountOutcome) -> dict[str, dict[str, str | None]]:
    """Statement, link and date per fact id, so a reviewer sees what each decision was about.

    A trusted fact gives its normalised link; an untrusted one what the file said (the
    admin pages gate every link again before showing it).
    """
    out: dict[str, dict[str, str | None]] = {
        f.id: {"statement": f.statement, "source_url": f.source_url, "published_at": f.published_at}
        for f in outcome.account.facts
    }
    for t in outcome.context.facts:
        out[t.id] = {
            "statement": t.statement,
            "source_url": t.source_url,
            "published_at": t.published_at.isoformat(),
        }
    return out


def explain_record(outcome: AccountOutcome, *, version: int | None) -> dict[str, Any]:
    ctx = outcome.context
    zs = outcome.zone_set
    provenance = _fact_provenance(outcome)
    unknown: dict[str, str | None] = {"statement": None, "source_url": None, "published_at": None}
    return {
        "account_id": outcome.account.account_id,
        "name": outcome.account.name,
        "segment": outcome.account.segment,
        "tier": outcome.account.tier,
        "as_of": ctx.as_of.isoformat(),
        "version": version,
        "status": zs.status.value,
        "mode": zs.mode.value,
        "valid_until": zs.valid_until.isoformat() if zs.valid_until else None,
        "input_hash": zs.input_hash,
        "identity": {
            "registrable_domain": ctx.identity.registrable_domain,
            "confidence": ctx.identity.confidence.value,
            "claims_allowed": ctx.identity.claims_allowed,
            "reason": ctx.identity.reason.value,
        },
        "firmographics_hidden": list(ctx.firmographics.hidden),
        "facts": [
            {
                "id": d.fact_id,
                "type": d.fact_type,
                "trusted": d.trusted,
                "reason": d.reason.value,
                "detail": d.detail,
                **provenance.get(d.fact_id, unknown),
            }
            for d in ctx.decisions
        ],
        "zones": [
            {
                "zone_id": z.content.zone_id,
                "rung": z.content.rung.value,
                "reason": z.content.reason,
                "text": z.content.text,
                "href": z.content.href,
                "facts": [f.fact_id for f in z.content.facts],
                # The channels its text may reach; any other shows the zone's fallback there.
                "surfaces": [s.value for s in z.content.surfaces],
                "draft": z.draft.text if z.draft is not None else None,
                "draft_facts": list(z.draft.fact_ids) if z.draft is not None else [],
                "pattern": _pattern_record(z.draft.composed if z.draft is not None else None),
                "checks": [{"check": f.check, "reason": f.reason, "detail": f.detail} for f in z.failures],
                "scores": z.scores.as_record() if z.scores is not None else None,
                "note": (z.decline.note or None) if z.decline is not None else None,
                "held": z.held.model_dump(mode="json") if z.held is not None else None,
            }
            for z in outcome.zones
        ],
        "model_calls": outcome.model_calls,
    }


def _pattern_record(choice: PatternChoice | None) -> dict[str, Any] | None:
    return choice.model_dump(mode="json") if choice is not None else None


def _pattern_lines(choice: Mapping[str, Any]) -> list[str]:
    """How the composer chose the zone's pattern: "pattern 2 of 3 (hiring); 1 skipped: ..."."""
    skipped = choice.get("skipped") or []
    line = f"      pattern {choice['index']} of {choice['of']} ({choice['fact_type']}): “{choice['pattern']}”"
    lines = [line]
    if skipped:
        why = "; ".join(f"{s['fact_type']} {s['index']}: {s['reason']}" for s in skipped)
        lines.append(f"        {len(skipped)} skipped before it: {why}")
    if choice.get("when"):
        lines.append(f"        {{when}}: {choice['when']}")
    return lines


def format_explain(record: dict[str, Any]) -> str:
    """The record as a person reads it in a terminal."""
    ident = record["identity"]
    lines = [
        f"{record['name']} ({record['account_id']}), segment {record['segment']}, tier {record['tier']}",
        f"  zone set v{record['version']}: {record['status']}, mode {record['mode']}, "
        f"valid until {record['valid_until'] or 'no expiry'} (as of {record['as_of']})",
        f"  identity: {ident['confidence']} ({ident['reason']}), domain {ident['registrable_domain']}, "
        f"account claims {'allowed' if ident['claims_allowed'] else 'NOT allowed'}",
        "  facts:",
    ]
    if not record["facts"]:
        lines.append("    (none)")
    for fact in record["facts"]:
        mark = "trusted " if fact["trusted"] else "rejected"
        detail = f" — {fact['detail']}" if fact["detail"] else ""
        lines.append(f"    {mark} {fact['id']} [{fact['type']}] {fact['reason']}{detail}")
        if fact.get("statement"):  # records written before provenance was kept lack it
            lines.append(f"      “{fact['statement']}” ({fact['published_at']}, {fact['source_url']})")
    lines.append("  zones:")
    held = held_drafts(record)
    for zone in record["zones"]:
        cites = f" cites {', '.join(zone['facts'])}" if zone["facts"] else ""
        if zone["facts"] and zone.get("surfaces") is not None:  # kept since surfaces were recorded
            cites += f", shown on {', '.join(zone['surfaces']) or 'no channel'}"
        lines.append(f"    {zone['zone_id']}: {zone['rung']} ({zone['reason']}){cites}")
        lines.append(f"      “{zone['text']}”" + (f" -> {zone['href']}" if zone["href"] else ""))
        doc = parse_reason(zone["reason"]).doc  # None for a code this version does not know
        if doc is not None and zone["rung"] != "personal":
            lines.append(f"      why: {doc}")
        if zone.get("note"):  # records written before notes were kept lack it
            lines.append(f"      note: {zone['note']}")
        if zone.get("pattern"):  # records written before patterns were kept lack it
            lines += _pattern_lines(zone["pattern"])
        if zone["checks"] and zone["draft"]:
            lines.append(f"      draft was: “{zone['draft']}”")
        for check in zone["checks"]:
            lines.append(f"      draft failed {check['check']}: {check['reason']} — {check['detail']}")
            if check["reason"] in CLAIM_REASON_DOCS:  # a claim class: say what it refuses
                lines.append(f"        ({CLAIM_REASON_DOCS[ClaimReason(check['reason'])]})")
            voice_doc = off_voice_doc(check["reason"])
            if voice_doc is not None:  # off the campaign's voice: say on which dimension, and how
                lines.append(f"        (off the campaign's voice profile: {voice_doc})")
        scores = zone.get("scores")  # records written before scores were kept lack them
        if scores:
            voice = "no profile" if scores["voice"] is None else f"{scores['voice']:g}"
            lines.append(
                f"      scores: voice {voice}, relevance to the fact {scores['relevance']:g}, "
                f"value to the reader's role ({scores['role']}) {scores['role_value']:g}"
            )
        kept = held.get(zone["zone_id"])
        if kept is not None:
            lines.append(f"      held by {kept.layer.value}: {kept.note or '(no note)'}")
            lines.append(f"      held draft: “{one_line(kept.draft, 500)}”")
            if kept.failures:
                lines.append(f"      not approvable: fails {', '.join(kept.failures)}")
            else:
                lines.append(
                    f"      approvable: welcomemat review approve CAMPAIGN {record['account_id']}"
                    f" --held {kept.zone_id} --version {record['version']}"
                )
    workflow = record.get("workflow")
    if workflow is not None:  # added by `welcomemat explain` from the live records
        lines.append(
            "  workflow per contact (precomputed → exported → delivered → engaged → converted;"
            " printed → scanned):"
        )
        for contact in workflow:
            steps = [_workflow_step(state, mark) for state, mark in contact["states"].items()]
            lines.append(f"    {contact['contact_id']}: {' · '.join(steps) or 'nothing yet'}")
        if not workflow:
            lines.append("    no contact with an e-mail address")
    return "\n".join(lines)


def _workflow_step(state: str, mark: dict[str, Any]) -> str:
    at = ms_text(mark.get("at_ms"))  # a time stored before marks were bounded reads "unreadable time"
    detail = ", ".join(f"{k} {v}" for k, v in mark["detail"].items() if v not in (None, ""))
    return f"{state} {at}" + (f" ({detail})" if detail else "")


def decode_explain_record(raw: object) -> Mapping[str, Any]:
    """A stored explain record, or {} when it is missing or unreadable (readers then go without it)."""
    if not isinstance(raw, bytes | str):
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
