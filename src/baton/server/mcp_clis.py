"""A CAO profile's MCP servers in the own configuration of Gemini CLI, Qwen Code, Copilot
CLI and OpenCode (Codex and Claude Code are in `mcp_offer`).

Each CLI gets the servers where its provider already writes the terminal's settings:

- Gemini CLI: `mcpServers` in the terminal's `settings.json` (`gemini_home`), each
  `trust: true`. Gemini CLI hides variables whose names hold TOKEN or AUTH from the
  servers it starts, so the entry's `env` names CAO's variables as `${NAME:-}`, which the
  CLI fills in from its own environment when it reads the file: the file holds no token;
- Qwen Code: `mcpServers` in the terminal's `settings.json` (`qwen_home`), `trust: true`;
  its servers inherit its environment. It offers MCP tools only through its tool search,
  so CAO's server gets `alwaysLoadTools: true`, as Codex keeps it out of its deferred
  tools. Each server runs through `mcp_relay`, which marks when its tools were listed:
  Qwen Code takes a prompt before that, and its provider waits for the marks;
- Copilot CLI: `--additional-mcp-config=@<file>` in the terminal's runtime directory,
  every tool of a server listed (`tools: ["*"]`) and the servers the agent's tool list
  grants allowed (`--allow-tool=<server>`); its servers inherit its environment. Its
  screen rests before its servers are connected, and a prompt typed then waits in its
  queue until they are (on a loaded machine, longer than a new turn may take to start):
  each server runs through `mcp_relay` too, and its provider waits for the marks;
- OpenCode: `mcp` entries (`type: local`, the command as one array, `environment`) in
  the terminal's OPENCODE_CONFIG_CONTENT (`opencode_config`); its servers inherit its
  environment.

CAO's variables (its address, the terminal's id and own token) thus come from the pane,
never from the command line. Every server gets a 600 s tool timeout, as for Codex: CAO's
handoff waits for another agent's whole turn.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from baton.private import write_private
from baton.providers import gemini_home, mcp_relay, opencode_config, qwen_home
from baton.providers.base import LaunchSpec, TerminalContext

__all__ = ["COPILOT_CONFIG_FILE", "OFFERED", "PASSED_VARIABLES", "offer"]

COPILOT_CONFIG_FILE = "copilot-mcp-servers.json"
# What an MCP server started by an agent needs from the pane, for CAO's to call back.
PASSED_VARIABLES = ("CAO_TERMINAL_ID", "CAO_AUTH_LOCAL_TOKEN", "CAO_API_HOST", "CAO_API_PORT")
OFFERED = frozenset({"gemini_cli", "qwen_code", "copilot", "opencode"})
_TOOL_TIMEOUT_MS = 600_000

Servers = Mapping[str, Mapping[str, Any]]


def offer(
    provider: str,
    spec: LaunchSpec,
    ctx: TerminalContext,
    servers: Servers,
    granted: Sequence[str],
) -> LaunchSpec:
    """`spec` with `servers` given to `provider`'s CLI (one of OFFERED); `granted` are the
    servers the agent's tool list lets it use."""
    if provider == "gemini_cli":
        home = spec.env.get("GEMINI_CLI_HOME")
        if home:
            gemini_home.offer_mcp_servers(Path(home), gemini_servers(servers))
        return spec
    if provider == "qwen_code":
        home = spec.env.get("QWEN_HOME")
        if home:
            mcp_relay.clear_marks(str(ctx.runtime_dir))
            qwen_home.offer_mcp_servers(Path(home), qwen_servers(servers, ctx.runtime_dir))
        return spec
    if provider == "copilot":
        config = ctx.runtime_dir / COPILOT_CONFIG_FILE
        mcp_relay.clear_marks(str(ctx.runtime_dir))
        entries = copilot_servers(servers, ctx.runtime_dir)
        write_private(config, json.dumps({"mcpServers": entries}, indent=2))
        extra = [f"--additional-mcp-config=@{config}", *(f"--allow-tool={n}" for n in granted)]
        return replace(spec, argv=[spec.argv[0], *extra, *spec.argv[1:]])
    variable = opencode_config.CONTENT_VARIABLE
    content = opencode_config.with_mcp_servers(
        spec.env.get(variable, ""), opencode_servers(servers)
    )
    return replace(spec, env={**spec.env, variable: content})


def gemini_servers(servers: Servers) -> dict[str, dict[str, Any]]:
    """Gemini CLI's entries: CAO's variables named for the CLI to fill in (see above)."""
    out = {}
    for name, spec in servers.items():
        entry = _stdio(spec)
        entry["env"] = {
            **entry.get("env", {}),
            **{variable: f"${{{variable}:-}}" for variable in PASSED_VARIABLES},
        }
        out[name] = entry
    return out


def qwen_servers(servers: Servers, runtime_dir: Path) -> dict[str, dict[str, Any]]:
    """Qwen Code's entries (its servers inherit its environment), each through the relay
    that marks its tools listed in `runtime_dir`. Qwen Code offers MCP tools only through
    its tool search; CAO's are offered from the first request."""
    out = {}
    for name, spec in servers.items():
        entry = _stdio(spec)
        command = [entry["command"], *entry["args"]]
        entry["command"], *entry["args"] = mcp_relay.relayed(
            sys.executable, str(runtime_dir), name, command
        )
        if _is_cao(name, spec):
            entry["alwaysLoadTools"] = True
        out[name] = entry
    return out


def copilot_servers(servers: Servers, runtime_dir: Path) -> dict[str, dict[str, Any]]:
    """Copilot CLI's `--additional-mcp-config` entries, every tool of each listed, each
    server through the relay that marks its tools listed in `runtime_dir`."""
    out = {}
    for name, spec in servers.items():
        command = [str(spec["command"]), *_args(spec)]
        relay, *relay_args = mcp_relay.relayed(sys.executable, str(runtime_dir), name, command)
        entry: dict[str, Any] = {"type": "local", "command": relay, "args": relay_args}
        entry.update(_env(spec))
        entry["tools"] = ["*"]
        entry["timeout"] = _timeout_ms(spec)
        out[name] = entry
    return out


def opencode_servers(servers: Servers) -> dict[str, dict[str, Any]]:
    """OpenCode's `mcp` entries: the command and its arguments as one array."""
    out = {}
    for name, spec in servers.items():
        entry: dict[str, Any] = {
            "type": "local",
            "command": [str(spec["command"]), *_args(spec)],
            "enabled": True,
            "timeout": _timeout_ms(spec),
        }
        env = _env(spec)
        if env:
            entry["environment"] = env["env"]
        out[name] = entry
    return out


def _stdio(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The settings entry Gemini CLI and Qwen Code share, trusted (no confirmation)."""
    entry: dict[str, Any] = {"command": str(spec["command"]), "args": _args(spec)}
    entry.update(_env(spec))
    entry["timeout"] = _timeout_ms(spec)
    entry["trust"] = True
    return entry


def _is_cao(name: str, spec: Mapping[str, Any]) -> bool:
    """CAO's own MCP server, whose `handoff` and `assign` a supervisor must see at once."""
    return "cao-mcp-server" in (name, Path(str(spec["command"])).name)


def _args(spec: Mapping[str, Any]) -> list[str]:
    return [str(arg) for arg in spec.get("args") or ()]


def _env(spec: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """`{"env": …}` with the profile's own variables for the server, or nothing."""
    env = spec.get("env")
    if not env:
        return {}
    return {"env": {str(key): str(value) for key, value in env.items()}}


def _timeout_ms(spec: Mapping[str, Any]) -> int:
    seconds = spec.get("tool_timeout_sec")
    return int(float(seconds) * 1000) if seconds else _TOOL_TIMEOUT_MS
