"""Role profiles: markdown with a small front matter, built in or from a user directory.

A profile named `x` is `x.md`; a file in the user directory wins over the built-in one,
so a team can reword a role without touching Baton.
"""

from __future__ import annotations

import re
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from baton.errors import BadRequestError
from baton.providers.base import AgentProfile

__all__ = ["ProfileStore", "parse_profile"]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def parse_profile(text: str, *, fallback_name: str) -> AgentProfile:
    """Split `---` front matter (`key: value` lines) from the markdown body."""
    meta: dict[str, str] = {}
    body = text
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":
        for index, line in enumerate(lines[1:], start=1):
            if line.strip() == "---":
                body = "\n".join(lines[index + 1 :])
                break
            key, sep, value = line.partition(":")
            if sep:
                meta[key.strip().lower()] = value.strip().strip("\"'")
        else:
            raise BadRequestError(f"profile {fallback_name!r} has unterminated front matter")
    name = meta.get("name") or fallback_name
    if not _NAME.fullmatch(name):
        # The name becomes the tmux window's name: a plain alphabet, never `#(…)` or `;`.
        raise BadRequestError(
            f"profile {fallback_name!r} has an invalid name {name!r} "
            "(letters, digits, '_', '.' and '-' only)"
        )
    return AgentProfile(
        name=name,
        description=meta.get("description", ""),
        instructions=body.strip() + "\n",
        provider=meta.get("provider") or None,
    )


class ProfileStore:
    """Finds profiles by name: the user directory first, then the built-in set."""

    def __init__(self, user_dir: Path | None = None) -> None:
        self.user_dir = user_dir

    def load(self, name: str) -> AgentProfile:
        """The profile called `name`, or BadRequestError naming it."""
        if not _NAME.fullmatch(name):
            raise BadRequestError(f"invalid agent_profile {name!r}")
        text = self._read(name)
        if text is None:
            known = ", ".join(self.names()) or "none"
            raise BadRequestError(f"unknown agent_profile {name!r} (known: {known})")
        return parse_profile(text, fallback_name=name)

    def names(self) -> list[str]:
        builtin = _builtin_dir().iterdir()
        found = {entry.name[:-3] for entry in builtin if entry.name.endswith(".md")}
        if self.user_dir is not None and self.user_dir.is_dir():
            found |= {path.stem for path in self.user_dir.glob("*.md")}
        return sorted(found)

    def _read(self, name: str) -> str | None:
        if self.user_dir is not None:
            candidate = self.user_dir / f"{name}.md"
            if candidate.is_file():
                return candidate.read_text(encoding="utf-8")
        builtin = _builtin_dir() / f"{name}.md"
        if builtin.is_file():
            return str(builtin.read_text(encoding="utf-8"))
        return None


def _builtin_dir() -> Traversable:
    return resources.files("baton.profiles")
