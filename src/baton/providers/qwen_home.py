"""A per-terminal Qwen Code directory (QWEN_HOME) over the user's own `~/.qwen`.

Qwen Code 0.24 reads its user settings, hooks, `.env`, login, memory and session files
from one directory: `QWEN_HOME`, else `~/.qwen`. It takes no extra settings on the
command line (its system settings path would replace an administrator's file), so each
terminal gets `<runtime>/qwen-home` as its QWEN_HOME (`cli_home`, as for Gemini CLI):

- every entry of the user's directory is a symlink to the user's, so the CLI reads and
  writes the user's own `.env`, session files (`projects/`), extensions and skills;
- `settings.json` is the user's with Baton's hooks added to the user's own hooks and
  hooks switched on (`disableAllHooks: false`); auto-update, usage statistics and
  telemetry off (an unattended loop must neither restart itself nor reach any network
  but its model); the background memory and skill agents off (they send model requests
  and write files between two turns); followup suggestions off (they fill the input box
  with a guess of the next prompt, and ask the model for it after every answer).

The user's files are only ever read. The role profile is not put here: Qwen Code takes
it on the command line (`--append-system-prompt`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
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

__all__ = [
    "HOOK_EVENTS",
    "HOOK_NAME",
    "build_home",
    "merged_settings",
    "offer_mcp_servers",
    "user_qwen_dir",
]

HOOK_NAME = "baton-turns"
HOOK_EVENTS: tuple[str, ...] = (
    "SessionStart",
    "UserPromptSubmit",
    "Stop",
    "StopFailure",
    "Notification",
)
_SETTINGS = "settings.json"
_OVERRIDES: dict[str, dict[str, Any]] = {
    "general": {"enableAutoUpdate": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "memory": {
        "enableManagedAutoMemory": False,
        "enableManagedAutoDream": False,
        "enableAutoSkill": False,
    },
    "ui": {"enableFollowupSuggestions": False},
}


def user_qwen_dir(env: Mapping[str, str], own_home: Path | None = None) -> Path:
    """The user's Qwen Code directory, as the CLI would find it with `env`.

    A QWEN_HOME that is `own_home` (an environment read back from a running CLI after a
    server restart) is Baton's, not the user's: `~/.qwen` is used instead.
    """
    home = env.get("QWEN_HOME")
    if home and (own_home is None or Path(home) != own_home):
        return Path(home)
    return Path(env.get("HOME") or str(Path.home())) / ".qwen"


def merged_settings(user: Mapping[str, Any], hook_log: Path) -> dict[str, Any]:
    """The user's settings with Baton's hooks appended and Baton's overrides set."""
    settings: dict[str, Any] = json.loads(json.dumps(user))
    add_hooks(settings, HOOK_EVENTS, hook_command(hook_log), HOOK_NAME)
    settings["disableAllHooks"] = False
    apply_overrides(settings, _OVERRIDES)
    return settings


def build_home(runtime_dir: Path, env: Mapping[str, str], hook_log: Path) -> Path:
    """Write the terminal's Qwen Code directory under `runtime_dir`; returns it (QWEN_HOME)."""
    home = private_dir(runtime_dir / "qwen-home")
    user = user_qwen_dir(env, own_home=home)
    link_entries(user, home, keep={_SETTINGS})
    settings = merged_settings(read_json(user / _SETTINGS), hook_log)
    write_private(home / _SETTINGS, json.dumps(settings, indent=2) + "\n")
    return home


def offer_mcp_servers(home: Path, servers: Mapping[str, Mapping[str, Any]]) -> None:
    """Add `servers` (Qwen Code's `mcpServers` entries) to the settings of the terminal's
    QWEN_HOME (`home`, as `build_home` returned it)."""
    if not servers:
        return
    path = home / _SETTINGS
    settings = read_json(path)
    add_mcp_servers(settings, servers)
    write_private(path, json.dumps(settings, indent=2) + "\n")
