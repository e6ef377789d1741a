"""A profile's mcpServers as each CLI's launch options; no credential on a command line."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from baton.errors import BadRequestError
from baton.providers.base import AgentProfile, LaunchSpec, TerminalContext
from baton.server.mcp_offer import MCP_CONFIG_FILE, PASSED_VARIABLES, granted, with_mcp_servers

SERVERS = {"cao-mcp-server": {"command": "cao-mcp-server", "args": [], "env": {"A": "1"}}}


def _ctx(tmp_path: Path, servers: dict | None, *, installed: bool = True) -> TerminalContext:
    """A terminal whose PATH has an executable `cao-mcp-server` (unless not `installed`)."""
    profile = AgentProfile("sup", "", "Coordinate.\n", mcp_servers=servers)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    if installed:
        program = bin_dir / "cao-mcp-server"
        program.write_text("#!/bin/sh\n", encoding="utf-8")
        program.chmod(0o755)
    return TerminalContext("1a2b3c4d", tmp_path, profile, tmp_path, env={"PATH": str(bin_dir)})


def _overrides(argv: Sequence[str]) -> list[str]:
    return [argv[i + 1] for i, part in enumerate(argv) if part == "-c"]


def test_codex_gets_overrides_before_its_subcommand(tmp_path: Path) -> None:
    spec = LaunchSpec(argv=["codex", "--no-alt-screen", "resume", "thread-1"])
    argv = with_mcp_servers("codex", spec, _ctx(tmp_path, SERVERS)).argv
    assert argv[0] == "codex" and argv[-2:] == ["resume", "thread-1"]
    overrides = _overrides(argv)
    assert 'mcp_servers.cao-mcp-server.command="cao-mcp-server"' in overrides
    assert 'mcp_servers.cao-mcp-server.env={A = "1"}' in overrides
    passed = next(o for o in overrides if ".env_vars=" in o)
    assert all(f'"{name}"' in passed for name in PASSED_VARIABLES)
    assert 'mcp_servers.cao-mcp-server.omit_tools_from=["deferred"]' in overrides
    assert "mcp_servers.cao-mcp-server.tool_timeout_sec=600.0" in overrides
    assert "mcp_servers.cao-mcp-server.startup_timeout_sec=60.0" in overrides
    assert not any("btt." in part for part in argv)


def test_a_profiles_own_timeouts_are_kept(tmp_path: Path) -> None:
    servers = {"slow": {"command": "cao-mcp-server", "startup_timeout_sec": 90}}
    overrides = _overrides(
        with_mcp_servers("codex", LaunchSpec(["codex"]), _ctx(tmp_path, servers)).argv
    )
    assert "mcp_servers.slow.startup_timeout_sec=90.0" in overrides


@pytest.mark.parametrize(
    ("allowed", "approved"),
    [
        (None, True),
        (("*",), True),
        (("@cao-mcp-server", "fs_read", "fs_list"), True),
        (("fs_read", "execute_bash"), False),
    ],
)
def test_servers_the_tool_list_grants_are_approved_for_codex(
    tmp_path: Path, allowed: tuple[str, ...] | None, approved: bool
) -> None:
    """Under `--ask-for-approval never` Codex refuses an MCP call that needs approval."""
    spec = with_mcp_servers("codex", LaunchSpec(["codex"]), _ctx(tmp_path, SERVERS), allowed)
    approval = 'mcp_servers.cao-mcp-server.default_tools_approval_mode="approve"'
    assert (approval in _overrides(spec.argv)) is approved
    assert granted("cao-mcp-server", allowed) is approved


def test_a_server_command_not_on_the_path_is_refused(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path, SERVERS, installed=False)
    for provider in ("codex", "claude_code"):
        with pytest.raises(BadRequestError) as refused:
            with_mcp_servers(provider, LaunchSpec([provider]), ctx)
        assert str(refused.value) == (
            "profile 'sup': MCP server 'cao-mcp-server' runs 'cao-mcp-server', "
            "which is not on the PATH of baton serve"
        )
    # An absolute path needs no PATH; the scripted agent gets no MCP servers at all.
    absolute = {"cao": {"command": str(tmp_path / "bin" / "missing")}}
    with pytest.raises(BadRequestError, match="missing"):
        with_mcp_servers("codex", LaunchSpec(["codex"]), _ctx(tmp_path, absolute))
    spec = LaunchSpec(["python"])
    assert with_mcp_servers("scripted", spec, ctx) is spec


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
    servers = {"a.b": {"command": "cao-mcp-server"}}
    with pytest.raises(BadRequestError, match="not a plain key"):
        with_mcp_servers("codex", LaunchSpec(["codex"]), _ctx(tmp_path, servers))
