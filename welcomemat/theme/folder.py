"""A campaign's own branding: a theme folder, loaded and checked whole, published with the config.

A campaign may name a folder (`theme: ./theme` in campaign.yaml, relative to that file)
holding its own `base.html` (the page frame: header and logo, footer, the stylesheets it
links) and the files that frame links: stylesheets, images, web fonts. Nothing else: the
pages and zone partials stay the renderer's, so a theme cannot drop a zone or its
`data-wm-zone` / `data-wm-rung`.

The renderer never reads campaign files. Precompute publishes the theme inside the campaign
config (`Theme`: the template's source and each file's bytes, base64 in JSON), and the
renderer builds the theme's templates once per config version. Every load checks the file
rules (`welcomemat.theme.rules`): `welcomemat validate`, precompute, and the renderer's
decode. What a template's `{{ }}` and `{% %}` may do, and a render showing every zone,
need Jinja2 and are the renderer's (`server.theme.templates`); the command line runs them
through a `ThemeCheck` before anything is published.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Callable, Mapping
from pathlib import Path

from pydantic import Base64Bytes, BaseModel, ConfigDict, model_validator

from welcomemat.campaign.contract import Campaign
from welcomemat.errors import ContractError
from welcomemat.theme.rules import (
    MAX_ASSET_BYTES,
    MAX_TEMPLATE_BYTES,
    MAX_THEME_FILES,
    THEME_TEMPLATE,
    ThemeProblem,
    theme_problem,
)
from welcomemat.yamlfile import line_of_field
from welcomemat.zones.contract import ZoneContract

__all__ = [
    "Theme",
    "ThemeCheck",
    "load_campaign_theme",
    "load_theme",
]


class Theme(BaseModel):
    """A theme as published: `base.html`'s source and the files it links, by name.

    Validating one runs the file rules; a broken one raises `ThemeProblem` (file and line).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_html: str
    files: dict[str, Base64Bytes] = {}

    @model_validator(mode="after")
    def _keeps_the_rules(self) -> Theme:
        problem = theme_problem(self.base_html, self.files)
        if problem is not None:
            raise problem
        return self

    @classmethod
    def of(cls, base_html: str, files: Mapping[str, bytes]) -> Theme:
        """A theme from raw file bytes (the model holds base64 in and out of JSON)."""
        return cls(base_html=base_html, files={name: base64.b64encode(data) for name, data in files.items()})

    def digest(self) -> str:
        """A short hash of everything in the theme (its version, for caches and ETags)."""
        h = hashlib.sha256(self.base_html.encode("utf-8", "surrogatepass"))
        for name in sorted(self.files):
            h.update(b"\0" + name.encode() + b"\0" + hashlib.sha256(self.files[name]).digest())
        return h.hexdigest()[:16]


# Checks a loaded theme against a campaign with the renderer's templates (the rules that need
# Jinja2): `server.render.check_campaign_theme`, passed in by the command line, since the core
# and precompute do not import the renderer. Raises ContractError naming the file and line.
ThemeCheck = Callable[[Theme, Path, Campaign, Mapping[str, ZoneContract]], None]


def load_theme(folder: Path) -> Theme:
    """Read and check a theme folder. ContractError names the file (and line) of the first problem."""
    if not folder.is_dir():
        raise ContractError("theme folder not found", file=folder)
    base_html: str | None = None
    files: dict[str, bytes] = {}
    entries = sorted(e for e in folder.iterdir() if not e.name.startswith("."))  # .DS_Store and friends
    if len(entries) > MAX_THEME_FILES:
        raise ContractError(
            f"a theme holds at most {MAX_THEME_FILES} files, this one {len(entries)}", file=folder
        )
    for entry in entries:
        if entry.is_symlink() or not entry.is_file():
            raise ContractError("a theme is one folder of plain files: no subfolders or links", file=entry)
        limit = MAX_TEMPLATE_BYTES if entry.name == THEME_TEMPLATE else MAX_ASSET_BYTES
        size = entry.stat().st_size
        if size > limit:  # before reading it: a theme is small, whatever was dropped into it
            raise ContractError(f"is {size} bytes; at most {limit}", file=entry)
        data = entry.read_bytes()
        if entry.name != THEME_TEMPLATE:
            files[entry.name] = data
            continue
        try:
            base_html = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ContractError(f"not UTF-8 ({exc.reason} at byte {exc.start})", file=entry) from None
    if base_html is None:
        raise ContractError(f"a theme folder holds its own {THEME_TEMPLATE}; this one has none", file=folder)
    try:
        return Theme.of(base_html, files)
    except ThemeProblem as problem:
        raise ContractError(problem.message, file=folder / problem.file, line=problem.line) from None


def _outside_problem(theme: str, home: Path) -> str | None:
    """Why the `theme` folder is not a plain folder inside the campaign's own (None when it is).

    The campaign file's author names the folder, but its files are published and served to
    every visitor: an absolute path, a `..` step or a symlink could publish files from
    anywhere on the machine that runs precompute (a symlink in the folder is refused by
    `load_theme`).
    """
    path = Path(theme)
    if path.is_absolute() or theme.startswith(("/", "\\")) or ":" in theme:
        return f"theme folder {theme!r} is not a path inside the campaign's folder (write it like ./theme)"
    if any(part == ".." for part in path.parts):
        return (
            f"theme folder {theme!r} steps outside the campaign's folder (..); "
            "keep the theme beside campaign.yaml"
        )
    step = home
    for part in path.parts:
        step = step / part
        if step.is_symlink():
            return f"theme folder {theme!r} is or passes through a symlink ({step}): use a plain folder"
    if step.exists() and not step.resolve().is_relative_to(home.resolve()):
        return f"theme folder {theme!r} resolves outside the campaign's folder ({step.resolve()})"
    return None


def load_campaign_theme(
    campaign: Campaign,
    campaign_path: Path,
    zones: Mapping[str, ZoneContract],
    check: ThemeCheck | None = None,
) -> Theme | None:
    """The campaign's theme, checked (None when it names none); `check` adds the renderer's checks.

    A folder that is not there, or is not a plain folder inside the campaign's own (an
    absolute path, a `..` step, a symlink on the way), is the campaign file's problem (its
    `theme` line); a broken file in it is that file's.
    """
    if campaign.theme is None:
        return None

    def refused(message: str) -> ContractError:
        return ContractError(
            message, file=campaign_path, line=line_of_field(campaign_path, ("theme",)), field="theme"
        )

    problem = _outside_problem(campaign.theme, campaign_path.parent)
    if problem is not None:
        raise refused(problem)
    folder = Path(os.path.normpath(campaign_path.parent / campaign.theme))
    if not folder.is_dir():
        raise refused(f"theme folder {campaign.theme!r} not found (looked for {folder})")
    theme = load_theme(folder)
    if check is not None:
        check(theme, folder, campaign, zones)
    return theme
