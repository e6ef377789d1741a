"""A per-terminal settings directory over the user's own, for CLIs of the Gemini CLI line.

Gemini CLI and Qwen Code read their user settings, hooks, login and session files from
one directory (`~/.gemini`, `~/.qwen`) that an environment variable can move. Neither
takes extra settings on the command line, so each terminal gets its own directory
instead: every entry of the user's is a symlink to the user's (the CLI reads and writes
the user's own files), and `settings.json` is the user's with Baton's hooks added to the
user's own hooks and a few settings Baton must have. The user's files are only read.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from baton.providers import hook_recorder

__all__ = [
    "add_hooks",
    "add_mcp_servers",
    "apply_overrides",
    "hook_command",
    "link_entries",
    "read_json",
]


def read_json(path: Path) -> dict[str, Any]:
    """The JSON object in `path`; an empty one when it is missing, unreadable or not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def link_entries(user: Path, own: Path, keep: Iterable[str]) -> None:
    """Make every entry of `user` a symlink in `own`, but the names in `keep` (Baton's).

    Symlinks left from an earlier launch are removed first, so an entry the user has
    since deleted is gone here too.
    """
    kept = set(keep)
    for stale in own.iterdir():
        if stale.is_symlink():
            stale.unlink()
    if not user.is_dir() or user.resolve() == own.resolve():
        return
    for entry in user.iterdir():
        if entry.name not in kept:
            with contextlib.suppress(OSError):
                (own / entry.name).symlink_to(entry)


def hook_command(hook_log: Path) -> str:
    """The hook command: the standard-library recorder appending each event to `hook_log`."""
    recorder = Path(hook_recorder.__file__).resolve()
    return shlex.join([sys.executable, "-I", "-S", str(recorder), str(hook_log)])


def _is_ours(group: Any, name: str) -> bool:
    """A hook group Baton added (found again in settings read back from its own home)."""
    if not isinstance(group, dict):
        return False
    inner = group.get("hooks")
    return isinstance(inner, list) and any(
        isinstance(hook, dict) and hook.get("name") == name for hook in inner
    )


def add_hooks(settings: dict[str, Any], events: Iterable[str], command: str, name: str) -> None:
    """Append Baton's hook (`command`, called `name`) to the user's hooks of each event."""
    entry = {"hooks": [{"type": "command", "name": name, "command": command}]}
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        hooks = settings["hooks"] = {}
    for event in events:
        existing = hooks.get(event)
        kept = [
            group
            for group in (existing if isinstance(existing, list) else [])
            if not _is_ours(group, name)
        ]
        hooks[event] = [*kept, entry]


def apply_overrides(settings: dict[str, Any], overrides: Mapping[str, Mapping[str, Any]]) -> None:
    """Set each `section.key` of `overrides`, keeping the rest of the user's section."""
    for section, values in overrides.items():
        current = settings.get(section)
        settings[section] = {**(current if isinstance(current, dict) else {}), **values}


def add_mcp_servers(settings: dict[str, Any], servers: Mapping[str, Mapping[str, Any]]) -> None:
    """Put `servers` into the settings' `mcpServers` (a user's server of the same name is
    replaced), off the user's `mcp.excluded` list and onto an `mcp.allowed` list the user
    keeps: either list would otherwise keep the CLI from starting them."""
    current = settings.get("mcpServers")
    settings["mcpServers"] = {
        **(current if isinstance(current, dict) else {}),
        **{name: dict(entry) for name, entry in servers.items()},
    }
    section = settings.get("mcp")
    if not isinstance(section, dict):
        return
    excluded = section.get("excluded")
    if isinstance(excluded, list):
        section["excluded"] = [name for name in excluded if name not in servers]
    allowed = section.get("allowed")
    if isinstance(allowed, list):
        section["allowed"] = [*allowed, *(name for name in servers if name not in allowed)]
