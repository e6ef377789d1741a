"""A per-terminal Gemini CLI home that is the user's own, plus Baton's hooks and role.

Gemini CLI 0.61 reads its user settings from `<home>/.gemini/settings.json`, where home
is `GEMINI_CLI_HOME` or the user's HOME. A system settings file
(`GEMINI_CLI_SYSTEM_SETTINGS_PATH`) would add settings without touching the user's, but
the CLI skips it unless every directory above it is writable by its owner alone, which
no directory under `/tmp` is. So each terminal gets `<runtime>/gemini-home/.gemini`:

- every entry of the user's `~/.gemini` (login, session files under `tmp/`, extensions,
  commands, trusted folders…) appears there as a symlink, so the CLI reads and writes
  the user's own files;
- `settings.json` is the user's, with Baton's hooks added to the user's own hooks, and
  auto-update, update notices, usage statistics and telemetry switched off (an unattended
  loop must neither restart itself nor reach any network but its model);
- the global memory file (`GEMINI.md`, or the first `context.fileName`) is the user's
  text followed by the role profile: Gemini CLI puts it in the system instruction, under
  its own system prompt, which stays as it is.

The user's files are only ever read; the shared parts are in `cli_home`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from baton.private import private_dir, write_private
from baton.providers.cli_home import (
    add_hooks,
    add_mcp_servers,
    apply_overrides,
    hook_command,
    link_entries,
    read_json,
)
from baton.providers.gemini_hooks import HOOK_EVENTS

__all__ = [
    "HOOK_NAME",
    "build_home",
    "exclude_tools",
    "offer_mcp_servers",
    "user_gemini_dir",
]

HOOK_NAME = "baton-turns"
_SETTINGS = "settings.json"
_OWN = (_SETTINGS,)
_OFF: dict[str, dict[str, Any]] = {
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
}


def user_gemini_dir(env: Mapping[str, str], own_home: Path | None = None) -> Path:
    """The user's `.gemini` directory, as the CLI would find it with `env`.

    A GEMINI_CLI_HOME that is `own_home` (an environment read back from a running CLI
    after a server restart) is Baton's, not the user's: HOME is used instead.
    """
    home = env.get("GEMINI_CLI_HOME")
    if not home or (own_home is not None and Path(home) == own_home):
        home = env.get("HOME") or str(Path.home())
    return Path(home) / ".gemini"


def _memory_file_name(settings: Mapping[str, Any]) -> str:
    names = (settings.get("context") or {}).get("fileName")
    if isinstance(names, str) and names:
        return Path(names).name
    if isinstance(names, list) and names and isinstance(names[0], str) and names[0]:
        return Path(names[0]).name
    return "GEMINI.md"


def merged_settings(user: Mapping[str, Any], hook_log: Path) -> dict[str, Any]:
    """The user's settings with Baton's hooks appended and the network extras off."""
    settings: dict[str, Any] = json.loads(json.dumps(user))
    add_hooks(settings, HOOK_EVENTS, hook_command(hook_log), HOOK_NAME)
    hooks_config = settings.get("hooksConfig")
    if not isinstance(hooks_config, dict):
        hooks_config = settings["hooksConfig"] = {}
    hooks_config["enabled"] = True
    disabled = hooks_config.get("disabled")
    if isinstance(disabled, list):
        hooks_config["disabled"] = [name for name in disabled if name != HOOK_NAME]
    apply_overrides(settings, _OFF)
    return settings


def build_home(
    runtime_dir: Path, env: Mapping[str, str], instructions: str, hook_log: Path
) -> Path:
    """Write the terminal's Gemini home under `runtime_dir`; returns it (GEMINI_CLI_HOME)."""
    home = runtime_dir / "gemini-home"
    dot = private_dir(private_dir(home) / ".gemini")
    user = user_gemini_dir(env, own_home=home)
    user_settings = read_json(user / _SETTINGS)
    memory_name = _memory_file_name(user_settings)
    link_entries(user, dot, keep={*_OWN, memory_name})
    settings = merged_settings(user_settings, hook_log)
    write_private(dot / _SETTINGS, json.dumps(settings, indent=2) + "\n")
    parts = []
    with contextlib.suppress(OSError, UnicodeDecodeError):
        parts.append((user / memory_name).read_text(encoding="utf-8").strip())
    if instructions.strip():
        parts.append(instructions.strip())
    write_private(dot / memory_name, "\n\n".join(part for part in parts if part) + "\n")
    return home


def exclude_tools(home: Path, tools: Sequence[str]) -> None:
    """Add `tools` to `tools.exclude` in the settings of the terminal's home (`home`, as
    `build_home` returned it), after the user's own exclusions: the CLI never offers them."""
    if not tools:
        return
    path = home / ".gemini" / _SETTINGS
    settings = read_json(path)
    section = settings.get("tools")
    if not isinstance(section, dict):
        section = settings["tools"] = {}
    current = section.get("exclude")
    kept = [name for name in current if isinstance(name, str)] if isinstance(current, list) else []
    section["exclude"] = [*kept, *(name for name in tools if name not in kept)]
    write_private(path, json.dumps(settings, indent=2) + "\n")


def offer_mcp_servers(home: Path, servers: Mapping[str, Mapping[str, Any]]) -> None:
    """Add `servers` (Gemini CLI's `mcpServers` entries) to the settings of the terminal's
    home (`home`, as `build_home` returned it)."""
    if not servers:
        return
    path = home / ".gemini" / _SETTINGS
    settings = read_json(path)
    add_mcp_servers(settings, servers)
    write_private(path, json.dumps(settings, indent=2) + "\n")
