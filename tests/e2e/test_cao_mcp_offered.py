"""A CAO profile's `mcpServers` reach the agent: real Codex and Claude Code under
`baton serve` start CAO's `cao-mcp-server` with the terminal's id, its own token (never
the master one) and the server's address, so CAO's supervisor pattern can call back."""

from __future__ import annotations

import secrets
import time
from pathlib import Path

import pytest
from tests.e2e.cao.clients import CAO_BIN_DIR, require_cao
from tests.e2e.clis import require_cli
from tests.e2e.model.anthropic_messages import anthropic_model_server, claude_environment
from tests.e2e.model.brain import Brain
from tests.e2e.model.openai_responses import codex_environment, openai_model_server
from tests.support.server import running_baton_server

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]

MASTER = "master-" + secrets.token_hex(16)


def _processes() -> list[tuple[str, dict[str, str]]]:
    """(command line, environment) of every process this user can read."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            raw = (proc / "environ").read_bytes()
        except OSError:
            continue
        env = dict(item.decode(errors="replace").partition("=")[::2] for item in raw.split(b"\0"))
        found.append((cmdline, env))
    return found


def _mcp_server_of(terminal_id: str, timeout: float = 60.0) -> tuple[str, dict[str, str]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for cmdline, env in _processes():
            if "cao-mcp-server" in cmdline and env.get("CAO_TERMINAL_ID") == terminal_id:
                return cmdline, env
        time.sleep(0.2)
    raise AssertionError(f"no cao-mcp-server started for terminal {terminal_id}")


def test_codex_agent_gets_cao_mcp_server_with_its_own_token(tmp_path: Path) -> None:
    require_cli("codex")
    require_cao()
    store = tmp_path / "cao-data" / "agent-store"
    store.mkdir(parents=True)
    (store / "supervisor.md").write_text(
        "---\nname: supervisor\ndescription: coordinates\nmcpServers:\n"
        f"  cao-mcp-server:\n    type: stdio\n    command: {CAO_BIN_DIR / 'cao-mcp-server'}\n"
        "    args: []\n---\nYou coordinate workers with CAO's tools.\n",
        encoding="utf-8",
    )
    (store / "plain.md").write_text("---\nname: plain\n---\nNo MCP.\n", encoding="utf-8")
    project = tmp_path / "project"
    project.mkdir()
    with openai_model_server(Brain()) as model:
        env = {
            **codex_environment(tmp_path, model),
            "BATON_TOKEN": MASTER,
            "CAO_HOME_DIR": str(tmp_path / "cao-data"),
        }
        with (
            running_baton_server(tmp_path, env=env) as server,
            server.client() as client,
        ):
            created = client.post(
                "/sessions",
                params={
                    "agent_profile": "supervisor",
                    "provider": "codex",
                    "working_directory": str(project),
                },
            )
            assert created.status_code == 201, created.text
            terminal = created.json()["id"]
            cmdline, mcp_env = _mcp_server_of(terminal)
            assert mcp_env["CAO_AUTH_LOCAL_TOKEN"].startswith(f"btt.{terminal}.")
            assert MASTER not in mcp_env.values()
            assert mcp_env["CAO_API_HOST"] == "127.0.0.1"
            assert mcp_env["CAO_API_PORT"] == str(server.port)
            assert str(CAO_BIN_DIR / "cao-mcp-server") in cmdline
            # Its CLI's configuration names it (the Codex process's own command line).
            assert any(
                "mcp_servers.cao-mcp-server.command=" in command
                for command, variables in _processes()
                if variables.get("CAO_TERMINAL_ID") == terminal and "codex" in command
            )
            plain = client.post(
                "/sessions",
                params={
                    "agent_profile": "plain",
                    "provider": "codex",
                    "working_directory": str(project),
                },
            ).json()["id"]
            with pytest.raises(AssertionError, match="no cao-mcp-server"):
                _mcp_server_of(plain, timeout=3.0)


def test_claude_code_agent_gets_cao_mcp_server_with_its_own_token(tmp_path: Path) -> None:
    require_cli("claude")
    require_cao()
    store = tmp_path / "cao-data" / "agent-store"
    store.mkdir(parents=True)
    (store / "supervisor.md").write_text(
        "---\nname: supervisor\ndescription: coordinates\nprovider: claude_code\n"
        f"mcpServers:\n  cao-mcp-server:\n    command: {CAO_BIN_DIR / 'cao-mcp-server'}\n"
        "---\nYou coordinate workers with CAO's tools.\n",
        encoding="utf-8",
    )
    project = tmp_path / "project"
    project.mkdir()
    with anthropic_model_server(Brain()) as model:
        env = {
            **claude_environment(tmp_path, model),
            "BATON_TOKEN": MASTER,
            "CAO_HOME_DIR": str(tmp_path / "cao-data"),
        }
        with running_baton_server(tmp_path, env=env) as server, server.client() as client:
            created = client.post(
                "/sessions",
                params={"agent_profile": "supervisor", "working_directory": str(project)},
            )
            assert created.status_code == 201, created.text
            terminal = created.json()["id"]
            _, mcp_env = _mcp_server_of(terminal)
            assert mcp_env["CAO_AUTH_LOCAL_TOKEN"].startswith(f"btt.{terminal}.")
            assert MASTER not in mcp_env.values()
            assert mcp_env["CAO_API_PORT"] == str(server.port)
