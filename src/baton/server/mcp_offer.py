"""MCP servers a CAO profile asks for (`mcpServers`), given to the agent's CLI at launch.

CAO's supervisor pattern needs its agents to run CAO's MCP server (`cao-mcp-server`),
which calls this API back as the terminal it runs in: it finds the server through
CAO_API_HOST / CAO_API_PORT, learns who it is from CAO_TERMINAL_ID, and authenticates with
CAO_AUTH_LOCAL_TOKEN — the terminal's own token, never the master one. Those come from
the pane's environment, never from the command line (where `ps` would show them):
Codex is told which variables to pass on (`env_vars`), Claude Code passes its own
environment to the servers it starts. Gemini CLI, Qwen Code, Copilot CLI and OpenCode get
them in their own configuration (`mcp_clis`).

A server's command must be found on the pane's PATH (or be an absolute path): the CLI
would otherwise start without the server's tools and say so only in its own warnings,
so the terminal is refused instead. Codex runs with `--ask-for-approval never`, under
which it refuses every MCP call that would need approval; the servers the agent's tool
list grants (`@<server>`, `*`, or no list) have their tools approved in advance.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import tomlkit

from baton.errors import BadRequestError
from baton.private import write_private
from baton.providers.base import LaunchSpec, TerminalContext
from baton.server import mcp_clis
from baton.server.mcp_clis import PASSED_VARIABLES

__all__ = ["MCP_CONFIG_FILE", "PASSED_VARIABLES", "granted", "with_mcp_servers"]

MCP_CONFIG_FILE = "mcp-servers.json"
_CONFIGURED = frozenset({"codex", "claude_code", *mcp_clis.OFFERED})
_BARE_KEY = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
# handoff and assign wait for another agent's whole turn: Codex's 60 s is too short.
_TOOL_TIMEOUT_SECONDS = 600.0
# A Python server (CAO's imports FastMCP) can take longer than Codex's 10 s to answer
# its first request on a busy machine; Codex then drops it for the whole session.
_STARTUP_TIMEOUT_SECONDS = 60.0


def with_mcp_servers(
    provider: str,
    spec: LaunchSpec,
    ctx: TerminalContext,
    allowed: Sequence[str] | None = None,
) -> LaunchSpec:
    """`spec` with the profile's MCP servers configured for `provider`'s CLI (unchanged
    when the profile asks for none or the CLI is one Baton cannot configure).

    `allowed` is the agent's CAO tool list: the servers it grants are approved in
    advance for Codex and allowed for Copilot CLI. BadRequestError when a server's
    command cannot be found.
    """
    servers = ctx.profile.mcp_servers
    if not servers or not spec.argv or provider not in _CONFIGURED:
        return spec
    _require_commands(ctx.profile.name, servers, ctx.env.get("PATH", os.defpath))
    if provider in mcp_clis.OFFERED:
        granted_servers = [name for name in servers if granted(name, allowed)]
        return mcp_clis.offer(provider, spec, ctx, servers, granted_servers)
    if provider == "codex":
        extra = _codex_overrides(servers, allowed)
    else:
        config = ctx.runtime_dir / MCP_CONFIG_FILE
        write_private(config, json.dumps({"mcpServers": _claude_servers(servers)}, indent=2))
        extra = ["--mcp-config", str(config)]
    # Right after the program: options before any subcommand (`codex … resume <id>`).
    return replace(spec, argv=[spec.argv[0], *extra, *spec.argv[1:]])


def granted(server: str, allowed: Sequence[str] | None) -> bool:
    """Whether a CAO tool list lets the agent use `server`'s tools (no list: everything)."""
    return allowed is None or "*" in allowed or f"@{server}" in allowed


def _require_commands(profile: str, servers: Mapping[str, Mapping[str, Any]], path: str) -> None:
    for name, spec in servers.items():
        command = str(spec["command"])
        if shutil.which(command, path=path) is None:
            raise BadRequestError(
                f"profile {profile!r}: MCP server {name!r} runs {command!r}, "
                "which is not on the PATH of baton serve"
            )


def _codex_overrides(
    servers: Mapping[str, Mapping[str, Any]], allowed: Sequence[str] | None
) -> list[str]:
    """`-c mcp_servers.<name>.<field>=<TOML>` per server, as CAO's own Codex launch does."""
    overrides: list[str] = []
    for name, spec in servers.items():
        if not name or not set(name) <= _BARE_KEY:
            raise BadRequestError(f"mcpServers name {name!r} is not a plain key")
        prefix = f"mcp_servers.{name}"
        fields: dict[str, Any] = {"command": spec["command"]}
        if spec.get("args"):
            fields["args"] = [str(arg) for arg in spec["args"]]
        if spec.get("env"):
            fields["env"] = {str(key): str(value) for key, value in spec["env"].items()}
        inherited = [str(v) for v in spec.get("env_vars") or ()]
        fields["env_vars"] = [*inherited, *(v for v in PASSED_VARIABLES if v not in inherited)]
        fields["tool_timeout_sec"] = float(spec.get("tool_timeout_sec") or _TOOL_TIMEOUT_SECONDS)
        fields["startup_timeout_sec"] = float(
            spec.get("startup_timeout_sec") or _STARTUP_TIMEOUT_SECONDS
        )
        if granted(name, allowed):
            fields["default_tools_approval_mode"] = "approve"
        if "cao-mcp-server" in (name, spec["command"]):
            # Keep CAO's tools in the first tool list, not behind Codex's tool search
            # (which can rank others above handoff and assign), as CAO does.
            fields["omit_tools_from"] = ["deferred"]
        for key, value in fields.items():
            overrides += ["-c", f"{prefix}.{key}={_toml(value)}"]
    return overrides


def _toml(value: Any) -> str:
    item = tomlkit.item(value)
    if isinstance(value, dict):
        inline = tomlkit.inline_table()
        inline.update(value)
        item = inline
    return str(item.as_string())


def _claude_servers(servers: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Claude Code's `--mcp-config` shape; stdio servers inherit Claude's environment."""
    out: dict[str, dict[str, Any]] = {}
    for name, spec in servers.items():
        entry: dict[str, Any] = {"type": "stdio", "command": spec["command"]}
        entry["args"] = [str(arg) for arg in spec.get("args") or ()]
        if spec.get("env"):
            entry["env"] = {str(key): str(value) for key, value in spec["env"].items()}
        out[name] = entry
    return out
