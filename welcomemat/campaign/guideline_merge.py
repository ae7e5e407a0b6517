"""The guideline bundle of a candidate written into the active `campaign.yaml`, the rest kept.

Promotion changes only the bundle (`welcomemat.campaign.guidelines.GUIDELINE_FIELDS` and its
`guideline_version`): a candidate is a whole file, often copied from an older one, and
writing it over `campaign.yaml` would drop whatever was added since (a `seller_alerts`
block, say). So the active file is kept line for line, and only the top-level blocks of
bundle fields are taken from the candidate, each with the comment lines directly above it:
a bundle field the candidate drops is dropped, one it adds goes after the field it follows
in the candidate.

That works on a block-style mapping whose keys start at column 0 (every example and every
`welcomemat init` file). For anything else (a flow-style document, anchors across fields)
`merge_bundle_data` merges the parsed values and the file is written again without its
comments; the caller checks either result by loading it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from welcomemat.campaign.guidelines import BUNDLE_LABEL, GUIDELINE_FIELDS

__all__ = ["BUNDLE_KEYS", "merge_bundle_data", "merge_bundle_text"]

BUNDLE_KEYS = frozenset({*GUIDELINE_FIELDS, BUNDLE_LABEL})


@dataclass(frozen=True)
class _Block:
    key: str
    text: str  # its comment lines above, the key's line, its value's lines, blank lines after


def _blocks(text: str) -> tuple[str, list[_Block]] | None:
    """The text before the first field, and one block per top-level field; None when the file
    is not a block mapping with its keys at column 0 (or repeats a key)."""
    try:
        tree = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    if not isinstance(tree, yaml.MappingNode) or tree.flow_style:
        return None
    # Character offsets, not line numbers: YAML also breaks lines at NEL and U+2028, str.split("\n") does not.
    starts: list[tuple[str, int]] = []
    for key, _ in tree.value:
        if not isinstance(key, yaml.ScalarNode) or key.start_mark.column != 0:
            return None
        start = key.start_mark.index
        while start > 0:
            above = text.rfind("\n", 0, start - 1) + 1
            if not text.startswith("#", above):
                break
            start = above  # the comment directly above a field is about it
        starts.append((str(key.value), start))
    names = [name for name, _ in starts]
    if len(set(names)) != len(names) or any(
        b <= a for (_, a), (_, b) in zip(starts, starts[1:], strict=False)
    ):
        return None
    ends = [offset for _, offset in starts[1:]] + [len(text)]
    blocks = [_Block(name, _ended(text[start:end])) for (name, start), end in zip(starts, ends, strict=True)]
    preamble = text[: starts[0][1]] if starts else text
    return preamble, blocks


def _ended(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


def _spaced_like(new: str, old: str) -> str:
    """`new` with the blank lines that followed `old`, so the file keeps its spacing."""
    trailing = len(old) - len(old.rstrip("\n")) - 1
    return new.rstrip("\n") + "\n" + "\n" * trailing


def merge_bundle_text(active: str, candidate: str) -> str | None:
    """`active` with its bundle blocks replaced by the candidate's; None when either file is not
    laid out as this can rewrite (then use `merge_bundle_data`)."""
    parsed_active, parsed_candidate = _blocks(active), _blocks(candidate)
    if parsed_active is None or parsed_candidate is None:
        return None
    preamble, blocks = parsed_active
    theirs = {b.key: b for b in parsed_candidate[1]}
    merged: list[_Block] = []
    for block in blocks:
        if block.key not in BUNDLE_KEYS:
            merged.append(block)
        elif block.key in theirs:
            merged.append(_Block(block.key, _spaced_like(theirs[block.key].text, block.text)))
    present = {b.key for b in merged}
    previous: str | None = None
    for block in parsed_candidate[1]:
        if block.key in BUNDLE_KEYS and block.key not in present:
            at = next((i + 1 for i, b in enumerate(merged) if b.key == previous), 0)
            merged.insert(at, block)
            present.add(block.key)
        if block.key in present:
            previous = block.key
    return preamble + "".join(b.text for b in merged)


def merge_bundle_data(active: dict[str, Any], candidate: dict[str, Any]) -> str:
    """The parsed active file with the candidate's bundle fields, as YAML (without comments)."""
    merged = {k: v for k, v in active.items() if k not in BUNDLE_KEYS or k in candidate}
    for key, value in candidate.items():
        if key in BUNDLE_KEYS:
            merged[key] = value
    return yaml.safe_dump(merged, sort_keys=False, allow_unicode=True, width=100)
