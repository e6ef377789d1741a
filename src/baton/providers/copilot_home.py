"""A per-terminal Copilot CLI directory (COPILOT_HOME) over the user's own `~/.copilot`.

Copilot CLI 1.0 keeps its user settings (`settings.json`, hooks included), personal
instructions (`copilot-instructions.md`, `instructions/`), login, MCP configuration,
custom agents, skills, session files (`session-state/`, `session-store.db`) and logs in
one directory: `COPILOT_HOME`, else `~/.copilot`. Settings and hooks come from no other
place Baton may write (the project's `.github/` is the user's), so each terminal gets
`<runtime>/copilot-home` as its COPILOT_HOME (`cli_home`, as for Gemini CLI and Qwen Code):

- every entry of the user's directory is a symlink to the user's, so the CLI reads and
  writes the user's own login, sessions, agents, skills and logs;
- `settings.json` is the user's (plain JSON, `//` comment lines allowed) with Baton's
  hooks added to the user's own hooks and hooks switched on; auto-update off (an
  unattended loop must not change its CLI), no banner or startup tips (they draw
  answer-like lines above the first prompt), no IDE connection;
- `copilot-instructions.md` is the user's personal instructions followed by the role
  profile: Copilot CLI adds it to its system prompt, which stays as it is.

The user's files are only ever read.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from baton.private import private_dir, write_private
from baton.providers.cli_home import add_hooks, apply_overrides, hook_command, link_entries

__all__ = [
    "HOOK_EVENTS",
    "HOOK_NAME",
    "INSTRUCTIONS_FILE",
    "build_home",
    "merged_settings",
    "read_settings",
    "user_copilot_dir",
]

HOOK_NAME = "baton-turns"
# Copilot CLI's hook events under the names (and payloads: `hook_event_name`,
# `session_id`, `transcript_path`) it shares with Claude Code.
HOOK_EVENTS: tuple[str, ...] = ("SessionStart", "UserPromptSubmit", "Stop")
INSTRUCTIONS_FILE = "copilot-instructions.md"
_SETTINGS = "settings.json"
_TOP_LEVEL: dict[str, Any] = {
    "autoUpdate": False,
    "banner": "never",
    "showTipsOnStartup": False,
    "disableAllHooks": False,
}
_SECTIONS: dict[str, dict[str, Any]] = {"ide": {"autoConnect": False}}


def user_copilot_dir(env: Mapping[str, str], own_home: Path | None = None) -> Path:
    """The user's Copilot CLI directory, as the CLI would find it with `env`.

    A COPILOT_HOME that is `own_home` (an environment read back from a running CLI after
    a server restart) is Baton's, not the user's: `~/.copilot` is used instead.
    """
    home = env.get("COPILOT_HOME")
    if home and (own_home is None or Path(home) != own_home):
        return Path(home)
    return Path(env.get("HOME") or str(Path.home())) / ".copilot"


def read_settings(path: Path) -> dict[str, Any]:
    """The settings object in `path`, lines starting with `//` left out; {} when unreadable."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    kept = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
    try:
        data = json.loads(kept)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def merged_settings(user: Mapping[str, Any], hook_log: Path) -> dict[str, Any]:
    """The user's settings with Baton's hooks appended and Baton's overrides set."""
    settings: dict[str, Any] = json.loads(json.dumps(user))
    add_hooks(settings, HOOK_EVENTS, hook_command(hook_log), HOOK_NAME)
    settings.update(_TOP_LEVEL)
    apply_overrides(settings, _SECTIONS)
    return settings


def build_home(
    runtime_dir: Path, env: Mapping[str, str], instructions: str, hook_log: Path
) -> Path:
    """Write the terminal's Copilot CLI directory under `runtime_dir`; returns it
    (COPILOT_HOME)."""
    home = private_dir(runtime_dir / "copilot-home")
    user = user_copilot_dir(env, own_home=home)
    link_entries(user, home, keep={_SETTINGS, INSTRUCTIONS_FILE})
    settings = merged_settings(read_settings(user / _SETTINGS), hook_log)
    write_private(home / _SETTINGS, json.dumps(settings, indent=2) + "\n")
    parts = []
    with contextlib.suppress(OSError, UnicodeDecodeError):
        parts.append((user / INSTRUCTIONS_FILE).read_text(encoding="utf-8").strip())
    parts.append(instructions.strip())
    write_private(home / INSTRUCTIONS_FILE, "\n\n".join(part for part in parts if part) + "\n")
    return home
