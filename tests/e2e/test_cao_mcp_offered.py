"""A CAO profile's `mcpServers` reach the agent: each real CLI under `baton serve` starts
CAO's `cao-mcp-server` with the terminal's id, its own token (never the master one) and
the server's address, so CAO's supervisor pattern can call back: a supervisor's model
is offered CAO's tools from its first prompt and its `handoff` runs a worker whose
answer comes back; a server whose command is not installed is refused in one line."""

from __future__ import annotations

import json
import os
import secrets
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.e2e.cao.clients import CAO_BIN_DIR, require_cao
from tests.e2e.clis import AGENT_BIN_DIR, require_cli
from tests.e2e.model.brain import Brain
from tests.e2e.model.openai_responses import codex_environment, openai_model_server
from tests.e2e.team import team_server
from tests.support.server import running_baton_server, wait_for_status
from tests.support.waiting import wait_until

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


def _runs_cao_mcp_server(cmdline: str) -> bool:
    """The program (or the script its interpreter runs) is CAO's `cao-mcp-server`; the
    CLI that names it in an option is not."""
    return any(Path(part).name == "cao-mcp-server" for part in cmdline.split()[:2])


def _mcp_server_of(
    terminal_id: str, timeout: float = 60.0, *, other_than: str | None = None
) -> tuple[str, dict[str, str]]:
    """A cao-mcp-server process of the terminal (one whose token is not `other_than`)."""

    def started() -> tuple[str, dict[str, str]] | None:
        for cmdline, env in _processes():
            if (
                _runs_cao_mcp_server(cmdline)
                and env.get("CAO_TERMINAL_ID") == terminal_id
                and (other_than is None or env.get("CAO_AUTH_LOCAL_TOKEN") != other_than)
            ):
                return cmdline, env
        return None

    message = f"no cao-mcp-server started for terminal {terminal_id}"
    return wait_until(started, timeout, interval=0.2, message=message)


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


@pytest.mark.parametrize(
    "provider", ["claude_code", "gemini_cli", "qwen_code", "copilot", "opencode"]
)
def test_every_other_cli_hands_off_through_cao_mcp_server_with_its_own_token(
    tmp_path: Path, provider: str
) -> None:
    """The server is given in the CLI's own configuration (settings, an extra MCP config,
    config content), next to the allowedTools enforcement; the supervisor's model is
    offered CAO's tools with its first prompt (Qwen Code's and Copilot CLI's terminals
    are handed out once their relay saw the tools listed) and its `handoff` runs a
    worker of the same CLI, whose answer comes back; a restart gives the server again."""
    require_cao()
    store = tmp_path / "cao-data" / "agent-store"
    store.mkdir(parents=True)
    (store / "supervisor.md").write_text(
        f"---\nname: supervisor\ndescription: coordinates\nprovider: {provider}\n"
        "allowedTools: ['@cao-mcp-server', fs_read, fs_list]\n"
        f"mcpServers:\n  cao-mcp-server:\n    command: {CAO_BIN_DIR / 'cao-mcp-server'}\n"
        "---\nYou coordinate workers with CAO's tools.\n",
        encoding="utf-8",
    )
    (store / "worker.md").write_text(
        f"---\nname: worker\nprovider: {provider}\n---\nDo the task.\n", encoding="utf-8"
    )
    project = tmp_path / "project"
    project.mkdir()
    extra = {"BATON_TOKEN": MASTER, "CAO_HOME_DIR": str(tmp_path / "cao-data")}
    with (
        team_server(tmp_path, Brain(), {provider}, extra_env=extra) as team,
        team.server.client() as client,
    ):
        created = client.post(
            "/sessions",
            params={"agent_profile": "supervisor", "working_directory": str(project)},
        )
        assert created.status_code == 201, created.text
        supervisor = created.json()
        terminal = supervisor["id"]
        assert supervisor["provider"] == provider
        cmdline, mcp_env = _mcp_server_of(terminal, timeout=90.0)
        token = mcp_env["CAO_AUTH_LOCAL_TOKEN"]
        assert token.startswith(f"btt.{terminal}.")
        assert MASTER not in mcp_env.values()
        assert mcp_env["CAO_API_HOST"] == "127.0.0.1"
        assert mcp_env["CAO_API_PORT"] == str(team.server.port)
        assert str(CAO_BIN_DIR / "cao-mcp-server") in cmdline
        assert not any(token in command or MASTER in command for command, _ in _processes())
        _hands_off(client, team.models[provider], supervisor)
        restarted = client.post(f"/terminals/{terminal}/restart")
        assert restarted.status_code == 200, restarted.text
        _, again = _mcp_server_of(terminal, timeout=90.0, other_than=token)
        assert again["CAO_AUTH_LOCAL_TOKEN"].startswith(f"btt.{terminal}.")
        assert MASTER not in again.values()


def _hands_off(client: httpx.Client, model: Any, supervisor: dict[str, Any]) -> None:
    """Give the supervisor a delegation task the moment it exists: its model is offered
    CAO's `handoff` with that first prompt (by name, or once Claude Code's tool search
    loaded it), the worker's answer reaches the supervisor's own answer, and the worker
    ran in the supervisor's session and was deleted after."""
    task = (
        "Use the handoff tool to delegate this task to the worker agent: "
        "Write a Python function called 'greet'."
    )
    sent = client.post(f"/terminals/{supervisor['id']}/input", params={"message": task})
    assert sent.status_code == 200, sent.text
    assert wait_for_status(client, supervisor["id"], {"completed"}, timeout=180) == "completed"
    # The agent's own requests (OpenCode asks a title of the same prompt without tools).
    asked = [body for body in model.requests if task in json.dumps(body) and body.get("tools")]
    first_offer = "ToolSearch" if supervisor["provider"] == "claude_code" else "handoff"
    assert first_offer in json.dumps(asked[0].get("tools"))
    assert any("handoff" in json.dumps(body.get("tools")) for body in asked)
    answer = client.get(f"/terminals/{supervisor['id']}/output", params={"mode": "last"})
    assert "received from worker:" in answer.json()["output"]
    assert "def greet(value):" in answer.json()["output"], answer.json()["output"]
    left = client.get(f"/sessions/{supervisor['session_name']}/terminals").json()
    assert [t["id"] for t in left] == [supervisor["id"]]


SUPERVISOR = (
    "---\nname: supervisor\ndescription: coordinates\n"
    "allowedTools: ['@cao-mcp-server', fs_read, fs_list]\n"
    "mcpServers:\n  cao-mcp-server:\n    type: stdio\n    command: cao-mcp-server\n"
    "---\nYou coordinate workers with CAO's tools.\n"
)


def _offered(body: dict) -> set[str]:
    """The function names a Responses request offers, namespaces flattened."""
    names = set()
    for tool in body.get("tools") or []:
        inner = tool.get("tools") if tool.get("type") == "namespace" else [tool]
        names |= {f"{tool.get('name')}/{item.get('name')}" for item in inner or []}
    return names


def test_codex_supervisor_hands_off_with_cao_tools_from_its_first_prompt(tmp_path: Path) -> None:
    """Read-only sandbox, `--ask-for-approval never`, a bare `cao-mcp-server` on PATH, the
    prompt typed the moment the terminal exists: the model is offered CAO's tools and its
    handoff runs (Codex would refuse an MCP call that needs approval)."""
    require_cli("codex")
    require_cao()
    store = tmp_path / "cao-data" / "agent-store"
    store.mkdir(parents=True)
    (store / "supervisor.md").write_text(SUPERVISOR, encoding="utf-8")
    (store / "worker.md").write_text("---\nname: worker\n---\nDo the task.\n", encoding="utf-8")
    project = tmp_path / "project"
    project.mkdir()
    with openai_model_server(Brain()) as model:
        codex_env = codex_environment(tmp_path, model)
        env = {
            **codex_env,
            "PATH": os.pathsep.join([str(CAO_BIN_DIR), codex_env["PATH"]]),
            "BATON_TOKEN": MASTER,
            "CAO_HOME_DIR": str(tmp_path / "cao-data"),
        }
        with running_baton_server(tmp_path, env=env) as server, server.client() as client:
            created = client.post(
                "/sessions",
                params={
                    "agent_profile": "supervisor",
                    "provider": "codex",
                    "working_directory": str(project),
                },
            )
            assert created.status_code == 201, created.text
            supervisor = created.json()
            task = (
                "Use the handoff tool to delegate this task to the worker agent: "
                "Write a Python function called 'greet'."
            )
            sent = client.post(f"/terminals/{supervisor['id']}/input", params={"message": task})
            assert sent.status_code == 200, sent.text
            assert (
                wait_for_status(client, supervisor["id"], {"completed"}, timeout=180) == "completed"
            )
            first = next(b for b in model.requests if task in json.dumps(b.get("input")))
            assert {"mcp__cao_mcp_server/handoff", "mcp__cao_mcp_server/assign"} <= _offered(first)
            answer = client.get(f"/terminals/{supervisor['id']}/output", params={"mode": "last"})
            # The worker's answer, as the handoff returned it to the supervisor's model.
            assert "received from worker:\n```python\ndef greet(value):" in answer.json()["output"]
            # The handoff's worker ran in the supervisor's session and was deleted after.
            left = client.get(f"/sessions/{supervisor['session_name']}/terminals").json()
            assert [t["id"] for t in left] == [supervisor["id"]]


def test_an_mcp_server_command_that_is_not_installed_is_refused(tmp_path: Path) -> None:
    path = os.pathsep.join([str(AGENT_BIN_DIR), "/usr/bin", "/bin"])
    if shutil.which("cao-mcp-server", path=path):
        pytest.skip("cao-mcp-server is installed system-wide here")
    store = tmp_path / "cao-data" / "agent-store"
    store.mkdir(parents=True)
    (store / "supervisor.md").write_text(SUPERVISOR, encoding="utf-8")
    env = {"PATH": path, "CAO_HOME_DIR": str(tmp_path / "cao-data")}
    with running_baton_server(tmp_path, env=env) as server, server.client() as client:
        refused = client.post(
            "/sessions",
            params={"agent_profile": "supervisor", "provider": "codex", "working_directory": "/"},
        )
        assert refused.status_code == 400
        assert refused.json()["detail"] == (
            "profile 'supervisor': MCP server 'cao-mcp-server' runs 'cao-mcp-server', "
            "which is not on the PATH of baton serve"
        )
        assert client.get("/sessions").json() == []
        assert not list((server.state_dir / "terminals").glob("*"))
