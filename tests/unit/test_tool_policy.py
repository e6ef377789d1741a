"""CAO's allowedTools carried to each CLI: Claude Code's flags, Codex's instructions."""

from __future__ import annotations

import json
from pathlib import Path

from baton.providers.base import AgentProfile, LaunchSpec, TerminalContext
from baton.server import tool_policy


def _ctx(tmp_path: Path) -> TerminalContext:
    profile = AgentProfile("sup", "", "Coordinate.\n")
    return TerminalContext("1a2b3c4d", tmp_path, profile, tmp_path, env={"X": "1"})


def test_claude_code_is_denied_every_native_tool_the_list_does_not_grant() -> None:
    spec = tool_policy.apply_to_launch(
        LaunchSpec(["claude", "--settings", "s"]), ("fs_read", "@cao-mcp-server"), "claude_code"
    )
    denied = [spec.argv[i + 1] for i, part in enumerate(spec.argv) if part == "--disallowedTools"]
    assert "Bash" in denied and "Write" in denied and "Read" not in denied
    assert spec.argv[0] == "claude" and spec.argv[-2:] == ["--settings", "s"]


def test_no_list_or_a_star_changes_nothing(tmp_path: Path) -> None:
    spec = LaunchSpec(["claude"])
    assert tool_policy.apply_to_launch(spec, None, "claude_code") is spec
    assert tool_policy.apply_to_launch(spec, ("*",), "claude_code") is spec
    ctx = _ctx(tmp_path)
    assert tool_policy.apply_to_context(ctx, ("*",), "codex") is ctx
    assert tool_policy.apply_to_context(ctx, ("fs_read",), "claude_code") is ctx


def test_codex_is_told_the_tools_and_sandboxed_read_only_once(tmp_path: Path) -> None:
    ctx = tool_policy.apply_to_context(_ctx(tmp_path), ("@cao-mcp-server", "fs_read"), "codex")
    text = ctx.profile.instructions
    assert text.startswith(tool_policy.SECURITY_PROMPT)
    assert "You only have access to these tools: @cao-mcp-server, fs_read" in text
    assert text.endswith("Coordinate.\n")
    assert ctx.env["BATON_CODEX_SANDBOX"] == "read-only" and ctx.env["X"] == "1"
    again = tool_policy.apply_to_context(ctx, ("@cao-mcp-server", "fs_read"), "codex")
    assert again.profile.instructions == text
    shell = tool_policy.apply_to_context(_ctx(tmp_path), ("execute_bash",), "codex")
    assert "BATON_CODEX_SANDBOX" not in shell.env
    nothing = tool_policy.apply_to_context(_ctx(tmp_path), (), "codex")
    assert "You may not use any tools." in nothing.profile.instructions


def test_fs_star_and_builtin_grant_their_kinds() -> None:
    assert tool_policy.granted_kinds(("fs_*",)) == {"fs_read", "fs_write", "fs_list"}
    assert tool_policy.granted_kinds(("@builtin",)) == set(tool_policy.BUILTIN_KINDS)
    assert tool_policy.granted_kinds(("@cao-mcp-server", "shell")) == set()
    assert tool_policy.blocked(("@builtin", "@cao-mcp-server")) == []
    assert "Read" not in tool_policy.blocked(("fs_*",))
    assert "Bash" in tool_policy.blocked(("fs_*",))


def test_every_native_table_covers_every_kind_so_no_cli_but_codex_is_only_told() -> None:
    for provider, table in tool_policy.NATIVE_TABLES.items():
        assert set(table) == set(tool_policy.BUILTIN_KINDS), provider
    assert tool_policy.told("codex")
    assert not any(tool_policy.told(provider) for provider in tool_policy.NATIVE_TABLES)


def _gemini_spec(tmp_path: Path, user_settings: dict[str, object]) -> tuple[LaunchSpec, Path]:
    home = tmp_path / "gemini-home"
    (home / ".gemini").mkdir(parents=True)
    settings = home / ".gemini" / "settings.json"
    settings.write_text(json.dumps(user_settings))
    return LaunchSpec(
        ["gemini", "--approval-mode", "yolo"], {"GEMINI_CLI_HOME": str(home)}
    ), settings


def test_gemini_cli_settings_exclude_what_the_list_does_not_grant(tmp_path: Path) -> None:
    user = {"tools": {"exclude": ["my_tool"], "sandbox": False}, "ui": {"theme": "x"}}
    spec, settings = _gemini_spec(tmp_path, user)
    assert tool_policy.apply_to_launch(spec, ("fs_read", "fs_list"), "gemini_cli") == spec
    written = json.loads(settings.read_text())
    excluded = written["tools"]["exclude"]
    assert excluded[0] == "my_tool" and written["tools"]["sandbox"] is False
    assert {"run_shell_command", "write_file", "replace", "web_fetch"} <= set(excluded)
    assert not {"read_file", "list_directory", "glob", "grep_search"} & set(excluded)
    assert written["ui"] == {"theme": "x"}
    tool_policy.apply_to_launch(spec, ("fs_read", "fs_list"), "gemini_cli")  # a relaunch
    assert json.loads(settings.read_text())["tools"]["exclude"] == excluded
    spec, settings = _gemini_spec(tmp_path / "all", {})
    tool_policy.apply_to_launch(spec, ("*",), "gemini_cli")
    assert json.loads(settings.read_text()) == {}


def test_qwen_code_is_started_excluding_what_the_list_does_not_grant() -> None:
    spec = LaunchSpec(["qwen", "--approval-mode", "yolo", "--append-system-prompt=r"])
    argv = tool_policy.apply_to_launch(spec, ("fs_read", "@cao-mcp-server"), "qwen_code").argv
    assert "--exclude-tools=run_shell_command" in argv and "--exclude-tools=edit" in argv
    assert "--exclude-tools=read_file" not in argv
    assert argv[0] == "qwen" and argv[-3:] == spec.argv[1:]
    shell = tool_policy.apply_to_launch(spec, ("execute_bash",), "qwen_code").argv
    assert "--exclude-tools=run_shell_command" not in shell
    assert "--exclude-tools=write_file" in shell


def test_copilot_is_denied_the_shell_and_writing_and_loses_unlisted_tools() -> None:
    """Denied (refused even under `--allow-all`) and taken from the model's tool list."""
    spec = LaunchSpec(["copilot", "--allow-all", "--session-id=x"])
    argv = tool_policy.apply_to_launch(spec, ("fs_read", "fs_list"), "copilot").argv
    assert {"--deny-tool=shell", "--deny-tool=write", "--deny-tool=url"} <= set(argv)
    hidden = {"bash", "read_bash", "stop_bash", "list_bash", "task", "create", "edit"}
    assert {f"--excluded-tools={tool}" for tool in hidden} <= set(argv)
    assert "--excluded-tools=view" not in argv and "--excluded-tools=glob" not in argv
    assert argv[0] == "copilot" and argv[-2:] == spec.argv[1:]
    writer = tool_policy.apply_to_launch(spec, ("fs_write",), "copilot").argv
    assert "--deny-tool=write" not in writer and "--excluded-tools=view" in writer


def test_opencode_config_denies_what_the_list_does_not_grant() -> None:
    user = {"instructions": ["r.md"], "permission": {"external_directory": "ask"}}
    spec = LaunchSpec(["opencode", "--auto"], {"OPENCODE_CONFIG_CONTENT": json.dumps(user)})
    env = tool_policy.apply_to_launch(spec, ("fs_read", "fs_list"), "opencode").env
    content = json.loads(env["OPENCODE_CONFIG_CONTENT"])
    assert content["instructions"] == ["r.md"]
    assert content["permission"]["external_directory"] == "ask"
    assert content["permission"]["bash"] == "deny" and content["permission"]["edit"] == "deny"
    assert "read" not in content["permission"] and "glob" not in content["permission"]
    unrestricted = tool_policy.apply_to_launch(spec, None, "opencode")
    assert unrestricted is spec
