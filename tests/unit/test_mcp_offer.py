"""A profile's mcpServers as each CLI's launch options; no credential on a command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from baton.errors import BadRequestError
from baton.providers.base import AgentProfile, LaunchSpec, TerminalContext
from baton.server.mcp_offer import MCP_CONFIG_FILE, PASSED_VARIABLES, with_mcp_servers

SERVERS = {"cao-mcp-server": {"command": "cao-mcp-server", "args": [], "env": {"A": "1"}}}


def _ctx(tmp_path: Path, servers: dict | None) -> TerminalContext:
    profile = AgentProfile("sup", "", "Coordinate.\n", mcp_servers=servers)
    return TerminalContext("1a2b3c4d", tmp_path, profile, tmp_path, env={})


def test_codex_gets_overrides_before_its_subcommand(tmp_path: Path) -> None:
    spec = LaunchSpec(argv=["codex", "--no-alt-screen", "resume", "thread-1"])
    argv = with_mcp_servers("codex", spec, _ctx(tmp_path, SERVERS)).argv
    assert argv[0] == "codex" and argv[-2:] == ["resume", "thread-1"]
    overrides = [argv[i + 1] for i, part in enumerate(argv) if part == "-c"]
    assert 'mcp_servers.cao-mcp-server.command="cao-mcp-server"' in overrides
    assert 'mcp_servers.cao-mcp-server.env={A = "1"}' in overrides
    passed = next(o for o in overrides if ".env_vars=" in o)
    assert all(f'"{name}"' in passed for name in PASSED_VARIABLES)
    assert 'mcp_servers.cao-mcp-server.omit_tools_from=["deferred"]' in overrides
    assert not any("btt." in part for part in argv)


def test_claude_code_gets_an_mcp_config_file(tmp_path: Path) -> None:
    spec = LaunchSpec(argv=["claude", "--settings", "s.json"])
    argv = with_mcp_servers("claude_code", spec, _ctx(tmp_path, SERVERS)).argv
    assert argv[:3] == ["claude", "--mcp-config", str(tmp_path / MCP_CONFIG_FILE)]
    config = json.loads((tmp_path / MCP_CONFIG_FILE).read_text())
    assert config["mcpServers"]["cao-mcp-server"] == {
        "type": "stdio",
        "command": "cao-mcp-server",
        "args": [],
        "env": {"A": "1"},
    }


def test_no_servers_or_other_clis_leave_the_launch_alone(tmp_path: Path) -> None:
    spec = LaunchSpec(argv=["codex"])
    assert with_mcp_servers("codex", spec, _ctx(tmp_path, None)) is spec
    assert with_mcp_servers("scripted", spec, _ctx(tmp_path, SERVERS)) is spec


def test_a_server_name_that_is_not_a_plain_key_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BadRequestError, match="not a plain key"):
        with_mcp_servers("codex", LaunchSpec(["codex"]), _ctx(tmp_path, {"a.b": {"command": "x"}}))
