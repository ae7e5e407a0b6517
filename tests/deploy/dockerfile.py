"""The Dockerfile read as Docker reads it: instructions (continuations joined, comments dropped)
grouped into stages, and the commands its header documents between `<!-- marker -->` lines."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from tests.corpora import REPO_ROOT

__all__ = ["DOCKERFILE", "Instruction", "Stage", "header_commands", "parse_stages"]

DOCKERFILE = REPO_ROOT / "Dockerfile"


@dataclass(frozen=True)
class Instruction:
    keyword: str  # upper case: FROM, RUN, COPY...
    args: str  # the rest, continuation lines joined with a space

    def words(self) -> list[str]:
        """The arguments split as a shell would (JSON form left as one string each)."""
        return shlex.split(self.args)


@dataclass
class Stage:
    base: str  # the image or earlier stage it starts from
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def of(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def env(self) -> dict[str, str]:
        """The variables its ENV instructions set (`NAME=value` form)."""
        values: dict[str, str] = {}
        for instruction in self.of("ENV"):
            for word in instruction.words():
                name, sep, value = word.partition("=")
                if sep:
                    values[name] = value
        return values


def _instructions(text: str) -> list[Instruction]:
    found: list[Instruction] = []
    pending = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#") or not stripped:
            continue  # comments (and parser directives) end no instruction, even inside one
        if stripped.endswith("\\"):
            pending += stripped[:-1].strip() + " "
            continue
        full = pending + stripped
        pending = ""
        keyword, _, args = full.partition(" ")
        found.append(Instruction(keyword.upper(), args.strip()))
    return found


def parse_stages(text: str) -> list[Stage]:
    """Every stage in order; the last is the image that runs."""
    stages: list[Stage] = []
    for instruction in _instructions(text):
        if instruction.keyword == "FROM":
            words = [w for w in instruction.words() if not w.startswith("--")]
            name = words[2] if len(words) >= 3 and words[1].lower() == "as" else None
            stages.append(Stage(base=words[0], name=name))
        elif stages:
            stages[-1].instructions.append(instruction)
    return stages


def header_commands(marker: str, path: Path = DOCKERFILE) -> list[str]:
    """The commands between `# <!-- marker -->` and `# <!-- /marker -->` in the header."""
    text = path.read_text()
    block = text.split(f"# <!-- {marker} -->\n", 1)[1].split(f"# <!-- /{marker} -->", 1)[0]
    return [re.sub(r"^#\s*", "", line) for line in block.splitlines() if line.strip("# ")]
