"""CAO's allowedTools carried to each CLI: Claude Code's flags, Codex's instructions."""

from __future__ import annotations

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
