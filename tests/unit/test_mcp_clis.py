"""A profile's mcpServers in the own configuration of Gemini CLI, Qwen Code, Copilot CLI and
OpenCode, written by their real providers into the terminal's files; no token anywhere."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from baton.errors import BadRequestError
from baton.providers import mcp_relay
from baton.providers.base import AgentProfile, LaunchSpec, TerminalContext
from baton.providers.copilot_cli import CopilotCliProvider
from baton.providers.gemini_cli import GeminiCliProvider
from baton.providers.mcp_relay import READY_DIR, ready_file, relayed
from baton.providers.opencode import OpenCodeProvider
from baton.providers.opencode_config import CONTENT_VARIABLE
from baton.providers.qwen_code import QwenCodeProvider
from baton.server import tool_policy
from baton.server.mcp_clis import COPILOT_CONFIG_FILE, PASSED_VARIABLES
from baton.server.mcp_offer import with_mcp_servers

SERVERS = {"cao-mcp-server": {"command": "cao-mcp-server", "args": ["--x"], "env": {"A": "1"}}}
RESTRICTED = ("@cao-mcp-server", "fs_read", "fs_list")


def _ctx(tmp_path: Path, servers: dict | None = None) -> TerminalContext:
    """A terminal whose PATH has `cao-mcp-server`, with a user home of its own."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    program = bin_dir / "cao-mcp-server"
    program.write_text("#!/bin/sh\n", encoding="utf-8")
    program.chmod(0o755)
    runtime = tmp_path / "runtime"
    runtime.mkdir(exist_ok=True)
    profile = AgentProfile("sup", "", "Coordinate.\n", mcp_servers=servers or SERVERS)
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path / "user")}
    return TerminalContext("1a2b3c4d", tmp_path, profile, runtime, env=env)


def _settings(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_gemini_cli_gets_trusted_servers_in_its_own_settings(tmp_path: Path) -> None:
    user = tmp_path / "user" / ".gemini"
    user.mkdir(parents=True)
    mine = {"command": "mine"}
    user_settings = {"mcpServers": {"mine": mine}, "mcp": {"allowed": ["mine"]}}
    (user / "settings.json").write_text(json.dumps(user_settings), encoding="utf-8")
    ctx = _ctx(tmp_path)
    spec = GeminiCliProvider().launch(ctx)
    spec = with_mcp_servers("gemini_cli", spec, ctx, RESTRICTED)
    spec = tool_policy.apply_to_launch(spec, RESTRICTED, "gemini_cli")
    path = Path(spec.env["GEMINI_CLI_HOME"]) / ".gemini" / "settings.json"
    settings = _settings(path)
    entry = settings["mcpServers"]["cao-mcp-server"]
    assert entry["command"] == "cao-mcp-server" and entry["args"] == ["--x"]
    assert entry["trust"] is True and entry["timeout"] == 600_000
    # Gemini CLI hides TOKEN/AUTH variables from its servers: they are named for it to
    # fill in from its own environment, so the file holds no token.
    assert entry["env"] == {"A": "1", **{name: f"${{{name}:-}}" for name in PASSED_VARIABLES}}
    assert settings["mcpServers"]["mine"] == mine
    assert settings["mcp"]["allowed"] == ["mine", "cao-mcp-server"]
    # The allowedTools enforcement written after it keeps the servers.
    assert "run_shell_command" in settings["tools"]["exclude"]
    assert spec.argv[:2] == ["gemini", "--approval-mode"]
    # The user's own file is untouched.
    assert json.loads((user / "settings.json").read_text()) == user_settings


def test_qwen_code_gets_trusted_servers_in_its_own_settings(tmp_path: Path) -> None:
    user = tmp_path / "user" / ".qwen"
    user.mkdir(parents=True)
    user_settings = {"mcp": {"excluded": ["cao-mcp-server", "other"]}}
    (user / "settings.json").write_text(json.dumps(user_settings), encoding="utf-8")
    ctx = _ctx(tmp_path)
    spec = with_mcp_servers("qwen_code", QwenCodeProvider().launch(ctx), ctx, RESTRICTED)
    settings = _settings(Path(spec.env["QWEN_HOME"]) / "settings.json")
    # Through the relay that marks the server's tools listed (Qwen Code does not wait).
    ready = ready_file(str(ctx.runtime_dir), "cao-mcp-server")
    assert Path(ready).parent.is_dir()
    assert settings["mcpServers"]["cao-mcp-server"] == {
        "command": sys.executable,
        "args": ["-I", "-S", mcp_relay.__file__, ready, "--", "cao-mcp-server", "--x"],
        "env": {"A": "1"},
        "timeout": 600_000,
        "trust": True,
        "alwaysLoadTools": True,
    }
    assert settings["mcp"]["excluded"] == ["other"]
    assert settings["hooks"]  # the provider's own settings are kept


@pytest.mark.parametrize(("allowed", "allow"), [(None, True), (RESTRICTED, True), ((), False)])
def test_copilot_cli_gets_an_additional_mcp_config_file(
    tmp_path: Path, allowed: tuple[str, ...] | None, allow: bool
) -> None:
    ctx = _ctx(tmp_path)
    spec = with_mcp_servers("copilot", CopilotCliProvider().launch(ctx), ctx, allowed)
    config = ctx.runtime_dir / COPILOT_CONFIG_FILE
    assert spec.argv[:2] == ["copilot", f"--additional-mcp-config=@{config}"]
    assert ("--allow-tool=cao-mcp-server" in spec.argv) is allow
    assert "--allow-all" in spec.argv
    relay = relayed(
        sys.executable, str(ctx.runtime_dir), "cao-mcp-server", ["cao-mcp-server", "--x"]
    )
    assert json.loads(config.read_text())["mcpServers"]["cao-mcp-server"] == {
        "type": "local",
        "command": relay[0],
        "args": relay[1:],
        "env": {"A": "1"},
        "tools": ["*"],
        "timeout": 600_000,
    }
    assert (ctx.runtime_dir / READY_DIR).is_dir()  # the marks of a new launch, none yet
    assert not any("btt." in part for part in spec.argv)


def test_opencode_gets_local_mcp_entries_in_its_config_content(tmp_path: Path) -> None:
    base = _ctx(tmp_path)
    mine = json.dumps({"mcp": {"mine": {"type": "remote", "url": "u"}}})
    ctx = TerminalContext(
        base.terminal_id,
        tmp_path,
        base.profile,
        base.runtime_dir,
        env={**base.env, CONTENT_VARIABLE: mine},
    )
    spec = with_mcp_servers("opencode", OpenCodeProvider().launch(ctx), ctx, RESTRICTED)
    spec = tool_policy.apply_to_launch(spec, RESTRICTED, "opencode")
    content = json.loads(spec.env[CONTENT_VARIABLE])
    assert content["mcp"]["cao-mcp-server"] == {
        "type": "local",
        "command": ["cao-mcp-server", "--x"],
        "enabled": True,
        "timeout": 600_000,
        "environment": {"A": "1"},
    }
    assert content["mcp"]["mine"] == {"type": "remote", "url": "u"}
    assert content["permission"]["bash"] == "deny"
    assert content["instructions"] and content["plugin"]
    assert spec.argv == ["opencode", "--auto"]


def test_a_relaunch_gets_the_servers_again(tmp_path: Path) -> None:
    """Restart launches again (a fresh home): the servers are written into it again."""
    ctx = _ctx(tmp_path)
    provider = GeminiCliProvider()
    for _ in range(2):
        spec = with_mcp_servers("gemini_cli", provider.launch(ctx), ctx)
        path = Path(spec.env["GEMINI_CLI_HOME"]) / ".gemini" / "settings.json"
        assert list(_settings(path)["mcpServers"]) == ["cao-mcp-server"]


@pytest.mark.parametrize("provider", ["gemini_cli", "qwen_code", "copilot", "opencode"])
def test_a_server_command_not_on_the_path_is_refused(tmp_path: Path, provider: str) -> None:
    ctx = _ctx(tmp_path, {"cao": {"command": "not-installed-anywhere"}})
    with pytest.raises(BadRequestError, match="'not-installed-anywhere', which is not on"):
        with_mcp_servers(provider, LaunchSpec([provider]), ctx)


def test_no_servers_leave_the_launch_alone(tmp_path: Path) -> None:
    ctx = TerminalContext("1a2b3c4d", tmp_path, AgentProfile("p", "", ""), tmp_path, env={})
    for provider in ("gemini_cli", "qwen_code", "copilot", "opencode"):
        spec = LaunchSpec([provider])
        assert with_mcp_servers(provider, spec, ctx) is spec
