"""CAO's skills: folders `<name>/SKILL.md` in its skill store (`$CAO_HOME_DIR/skills`).

An agent reads one through CAO's `load_skill` MCP tool (`GET /skills/{name}`), and learns
which exist from the catalog CAO appends to its instructions. Baton appends the catalog
to the agents whose profile asks for CAO's skills: one that lists `skills` (patterns,
as CAO filters them) or runs CAO's MCP server (the catalog then names every skill).

Such an agent's pane opens with the catalog too (`pane_preface`, printed before the CLI
starts), where CAO's launch line used to show it: a person attaching, or a CAO client
reading the scrollback, sees which skills the agent was given. It is printed as text:
a control character in a skill's description shows as its stand-in, never acts.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from baton.delivery import neutralize
from baton.errors import BadRequestError, NotFoundError
from baton.providers.base import AgentProfile

__all__ = ["CATALOG_INSTRUCTION", "Skill", "SkillStore", "pane_preface", "wants_catalog"]

# CAO's own words (utils/skills.py), so an agent reads the same catalog under either.
CATALOG_INSTRUCTION = (
    "The following skills are available exclusively in this CAO orchestration context. "
    "To load a skill's full content, use the `mcp__cao-mcp-server__load_skill` tool "
    "(NOT the Skill command). These skills are not accessible through provider-native "
    "skill commands or directories."
)
_CAO_MCP_SERVER = "cao-mcp-server"
_PREFACE_INTRO = "baton serve: CAO's skill catalog, given to this agent with its instructions"


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    content: str


def wants_catalog(profile: AgentProfile) -> bool:
    """Whether the profile asks for CAO's skills (see the module's docstring)."""
    if profile.skills is not None:
        return True
    servers = profile.mcp_servers or {}
    return any(
        name == _CAO_MCP_SERVER or Path(str(spec.get("command", ""))).name == _CAO_MCP_SERVER
        for name, spec in servers.items()
    )


def pane_preface(profile: AgentProfile) -> str:
    """What the pane shows before the CLI starts: the catalog the agent got, as text
    ("" for a profile that got none)."""
    if not profile.skill_catalog:
        return ""
    return neutralize(f"{_PREFACE_INTRO}\n\n{profile.skill_catalog}\n\n")


class SkillStore:
    """The skills under `root` (none when it is None or missing)."""

    def __init__(self, root: Path | None) -> None:
        self.root = root

    def get(self, name: str) -> Skill:
        """The skill called `name`: BadRequestError for an unsafe name, NotFound if absent."""
        name = name.strip()
        if not name or "/" in name or "\\" in name or ".." in name:
            raise BadRequestError(f"Invalid skill name: {name}")
        skill = self._load(name)
        if skill is None:
            raise NotFoundError(f"Skill not found: {name}")
        return skill

    def skills(self) -> list[Skill]:
        """Every valid skill, sorted by name (a broken folder is left out, as CAO does)."""
        if self.root is None or not self.root.is_dir():
            return []
        found = (self._load(entry.name) for entry in sorted(self.root.iterdir()))
        return [skill for skill in found if skill is not None]

    def catalog(self, patterns: Sequence[str] | None) -> str:
        """CAO's `## Available Skills` block for skills matching `patterns` (None: all)."""
        chosen = [
            skill
            for skill in self.skills()
            if patterns is None or any(fnmatch.fnmatchcase(skill.name, p) for p in patterns)
        ]
        if not chosen:
            return ""
        lines = [f"- **{skill.name}**: {skill.description}" for skill in chosen]
        return "\n".join(["## Available Skills", "", CATALOG_INSTRUCTION, "", *lines])

    def with_catalog(self, profile: AgentProfile) -> AgentProfile:
        """`profile` with the catalog after its instructions, when it asks for one."""
        if not wants_catalog(profile):
            return profile
        catalog = self.catalog(profile.skills)
        if not catalog:
            return profile
        instructions = f"{profile.instructions.rstrip()}\n\n{catalog}\n"
        return replace(profile, instructions=instructions, skill_catalog=catalog)

    def _load(self, name: str) -> Skill | None:
        if self.root is None:
            return None
        path = self.root / name / "SKILL.md"
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            return None
        parts = text.split("---", 2) if text.startswith("---") else []
        if len(parts) != 3:
            return None
        try:
            meta = yaml.safe_load(parts[1])
        except yaml.YAMLError:
            return None
        if not isinstance(meta, dict) or meta.get("name") != name:
            return None
        description = str(meta.get("description") or "").strip()
        if not description:
            return None
        return Skill(name=name, description=description, content=parts[2].strip())
