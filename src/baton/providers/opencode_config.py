"""The configuration Baton adds to OpenCode's, for one terminal, without touching the user's.

OpenCode 1.18 reads its configuration from the user's files (`~/.config/opencode`, the
project's `opencode.json`, `.opencode/`) and then, last and strongest, from the JSON in
OPENCODE_CONFIG_CONTENT. Lists such as `instructions` and `plugin` are added to, not
replaced. So each terminal gets that variable, holding whatever the user's own
environment put there plus:

- `instructions`: the role profile, written to `<runtime>/opencode-role.md`. OpenCode
  adds each instructions file to the system prompt under its own, which stays whole;
- `plugin`: Baton's plugin (`opencode_plugin.js`), which records the CLI's turns in the
  file named by BATON_OPENCODE_EVENTS;
- `autoupdate: false`: an unattended loop must not replace its CLI while it runs.

Model, provider, keys and permissions stay the user's; the user's files are never read
or written by Baton.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from baton.errors import BadRequestError
from baton.private import write_private

__all__ = [
    "CONTENT_VARIABLE",
    "EVENTS_VARIABLE",
    "PLUGIN_FILE",
    "ROLE_FILE",
    "terminal_env",
    "with_mcp_servers",
]

CONTENT_VARIABLE = "OPENCODE_CONFIG_CONTENT"
EVENTS_VARIABLE = "BATON_OPENCODE_EVENTS"
ROLE_FILE = "opencode-role.md"
PLUGIN_FILE = Path(__file__).resolve().with_name("opencode_plugin.js")


def _user_content(env: Mapping[str, str]) -> dict[str, Any]:
    """The JSON object the user's OPENCODE_CONFIG_CONTENT holds ({} when unset)."""
    raw = env.get(CONTENT_VARIABLE, "")
    if not raw.strip():
        return {}
    try:
        content = json.loads(raw)
    except ValueError as error:
        raise BadRequestError(
            f"{CONTENT_VARIABLE} in the terminal's environment is not JSON ({error}); "
            "Baton adds its settings to it"
        ) from error
    if not isinstance(content, dict):
        raise BadRequestError(f"{CONTENT_VARIABLE} in the terminal's environment is not an object")
    return content


def _appended(existing: Any, ours: str) -> list[Any]:
    """`existing` (a list, or nothing) with `ours` once, at its end."""
    kept = [item for item in existing if item != ours] if isinstance(existing, list) else []
    return [*kept, ours]


def merged_content(user: Mapping[str, Any], role_file: Path) -> dict[str, Any]:
    """The user's config content with the role's instructions, the plugin, no auto-update.

    Content read back from a CLI Baton started (a restarted server) already holds
    Baton's entries; they are kept once.
    """
    content: dict[str, Any] = json.loads(json.dumps(user))
    content["instructions"] = _appended(content.get("instructions"), str(role_file))
    content["plugin"] = _appended(content.get("plugin"), PLUGIN_FILE.as_uri())
    content["autoupdate"] = False
    return content


def terminal_env(
    runtime_dir: Path, env: Mapping[str, str], instructions: str, event_log: Path
) -> dict[str, str]:
    """Write the role file under `runtime_dir`; the variables the CLI's pane gets."""
    role_file = runtime_dir / ROLE_FILE
    write_private(role_file, instructions.strip() + "\n")
    content = merged_content(_user_content(env), role_file)
    return {
        CONTENT_VARIABLE: json.dumps(content, ensure_ascii=False),
        EVENTS_VARIABLE: str(event_log),
    }


def with_mcp_servers(raw: str, servers: Mapping[str, Mapping[str, Any]]) -> str:
    """Config content `raw` (as `terminal_env` made it) with `servers` (OpenCode's `mcp`
    entries) added to its `mcp` section; a server of the same name there is replaced."""
    content = json.loads(raw) if raw.strip() else {}
    current = content.get("mcp")
    content["mcp"] = {
        **(current if isinstance(current, dict) else {}),
        **{name: dict(entry) for name, entry in servers.items()},
    }
    return json.dumps(content, ensure_ascii=False)
