"""Role profiles: markdown with front matter, from a user directory, CAO's store or built in.

A profile named `x` is `x.md`. The user directory (`--profiles-dir`) is searched first,
then CAO's agent store (`$CAO_HOME_DIR/agent-store`, where `cao install` puts profiles),
then Baton's built-in set: a team can reword a role without touching Baton, and a profile
installed for CAO launches under `baton serve` as it would under `cao-server`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import yaml

from baton.errors import BadRequestError
from baton.providers.base import AgentProfile
from baton.server.skills import SkillStore

__all__ = ["ProfileSource", "ProfileStore", "cao_agent_store", "cao_home", "parse_profile"]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def cao_home(env: Mapping[str, str]) -> Path:
    """CAO's data directory: `$CAO_HOME_DIR`, else CAO's default under HOME."""
    home = env.get("CAO_HOME_DIR", "").strip()
    if home:
        return Path(home).expanduser().resolve()
    return Path(env.get("HOME") or Path.home()) / ".aws" / "cli-agent-orchestrator"


def cao_agent_store(env: Mapping[str, str]) -> Path:
    """CAO's local agent store, where `cao install` puts profiles."""
    return cao_home(env) / "agent-store"


def parse_profile(text: str, *, fallback_name: str) -> AgentProfile:
    """Split `---` front matter (YAML, as CAO's; plain `key: value` lines) from the body."""
    meta: dict[str, Any] = {}
    body = text
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":
        for index, line in enumerate(lines[1:], start=1):
            if line.strip() == "---":
                meta = _front_matter(lines[1:index])
                body = "\n".join(lines[index + 1 :])
                break
        else:
            raise BadRequestError(f"profile {fallback_name!r} has unterminated front matter")
    name = str(meta.get("name") or fallback_name)
    if not _NAME.fullmatch(name):
        # The name becomes the tmux window's name: a plain alphabet, never `#(…)` or `;`.
        raise BadRequestError(
            f"profile {fallback_name!r} has an invalid name {name!r} "
            "(letters, digits, '_', '.' and '-' only)"
        )
    return AgentProfile(
        name=name,
        description=str(meta.get("description") or ""),
        instructions=body.strip() + "\n",
        provider=str(meta["provider"]) if meta.get("provider") else None,
        allowed_tools=_strings(meta.get("allowedtools"), fallback_name, "allowedTools"),
        mcp_servers=_servers(meta.get("mcpservers"), fallback_name),
        skills=_strings(meta.get("skills"), fallback_name, "skills"),
    )


def _front_matter(lines: list[str]) -> dict[str, Any]:
    """Keys lower-cased. YAML first; lines YAML refuses (`a: b: c`) are read as `key: value`."""
    try:
        loaded = yaml.safe_load("\n".join(lines))
    except yaml.YAMLError:
        loaded = None
    if isinstance(loaded, dict):
        return {str(key).lower(): value for key, value in loaded.items()}
    meta: dict[str, Any] = {}
    for line in lines:
        key, sep, value = line.partition(":")
        if sep:
            meta[key.strip().lower()] = value.strip().strip("\"'")
    return meta


def _strings(value: object, profile: str, key: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise BadRequestError(f"profile {profile!r}: {key} must be a list of strings")
    return tuple(value)


def _servers(value: object, profile: str) -> dict[str, dict[str, Any]] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(
        isinstance(spec, dict) and isinstance(spec.get("command"), str) for spec in value.values()
    ):
        raise BadRequestError(
            f"profile {profile!r}: mcpServers must map names to {{command, args, env}}"
        )
    return {str(name): dict(spec) for name, spec in value.items()}


@dataclass(frozen=True)
class ProfileSource:
    """Where a listed profile was found, in CAO's words: `custom` (`--profiles-dir`),
    `local` (CAO's agent store) or `built-in` (Baton's roles)."""

    name: str
    source: str
    description: str


class ProfileStore:
    """Finds profiles by name: the user directory, CAO's agent store, the built-in set."""

    def __init__(
        self,
        user_dir: Path | None = None,
        cao_store: Path | None = None,
        skills: SkillStore | None = None,
    ) -> None:
        self.user_dir = user_dir
        self.cao_store = cao_store
        self.skills = skills or SkillStore(None)

    def load(self, name: str) -> AgentProfile:
        """The profile called `name`, or BadRequestError naming it."""
        if not _NAME.fullmatch(name):
            raise BadRequestError(f"invalid agent_profile {name!r}")
        text = self._read(name)
        if text is None:
            known = ", ".join(self.names()) or "none"
            raise BadRequestError(f"unknown agent_profile {name!r} (known: {known})")
        return self.skills.with_catalog(parse_profile(text, fallback_name=name))

    def names(self) -> list[str]:
        return sorted({entry.name for entry in self.sources()})

    def sources(self) -> list[ProfileSource]:
        """Every profile name once, from the place that wins, sorted by name."""
        found: dict[str, ProfileSource] = {}
        for label, directory in (("custom", self.user_dir), ("local", self.cao_store)):
            if directory is not None and directory.is_dir():
                for path in sorted(directory.glob("*.md")):
                    if _NAME.fullmatch(path.stem) and path.stem not in found:
                        found[path.stem] = ProfileSource(path.stem, label, _description(path))
        for entry in _builtin_dir().iterdir():
            stem = entry.name[:-3]
            if entry.name.endswith(".md") and stem not in found:
                text = entry.read_text(encoding="utf-8")
                found[stem] = ProfileSource(stem, "built-in", _described(text, stem))
        return [found[name] for name in sorted(found)]

    def _read(self, name: str) -> str | None:
        for directory in (self.user_dir, self.cao_store):
            if directory is not None:
                candidate = directory / f"{name}.md"
                if candidate.is_file():
                    return candidate.read_text(encoding="utf-8")
        builtin = _builtin_dir() / f"{name}.md"
        if builtin.is_file():
            return str(builtin.read_text(encoding="utf-8"))
        return None


def _description(path: Path) -> str:
    try:
        return _described(path.read_text(encoding="utf-8"), path.stem)
    except OSError:
        return ""


def _described(text: str, name: str) -> str:
    """A profile's description, or empty when its file does not parse (listing never fails)."""
    try:
        return parse_profile(text, fallback_name=name).description
    except BadRequestError:
        return ""


def _builtin_dir() -> Traversable:
    return resources.files("baton.profiles")
