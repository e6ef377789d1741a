"""The master token never reaches an agent; each agent's own token does only its own acts.

A real `baton serve` with BATON_TOKEN and scripted agents in its private tmux: the
environment of every pane process, tmux's global environment and every file under the
state directory are searched for the master token; the token found in a pane is then
used as CAO's MCP tools use theirs.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.support.server import ServerProcess, create_scripted_terminal, running_baton_server

MASTER = "master-" + secrets.token_hex(16)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    with running_baton_server(tmp_path, env={"BATON_TOKEN": MASTER}) as running:
        yield running


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").iterdir():
            children = (task / "children").read_text().split()
            todo.extend(int(child) for child in children)
    return found


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    pairs = (item.decode(errors="replace").partition("=") for item in raw.split(b"\0") if item)
    return {key: value for key, _, value in pairs}


def _pane_processes(server: ServerProcess) -> list[int]:
    pids = [int(pid) for pid in server.tmux("list-panes", "-a", "-F", "#{pane_pid}").split()]
    return [pid for pane in pids for pid in _descendants(pane)]


def _pane_pid(server: ServerProcess, terminal: dict) -> int:
    """The pid of a terminal's pane command, found by its window name."""
    for line in server.tmux("list-panes", "-a", "-F", "#{window_name} #{pane_pid}").splitlines():
        name, _, pid = line.partition(" ")
        if name == terminal["name"]:
            return int(pid)
    raise AssertionError(f"no pane for {terminal['name']}")


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_no_agent_process_tmux_or_file_holds_the_master_token(
    server: ServerProcess, tmp_path: Path
) -> None:
    with server.client() as client:
        first = create_scripted_terminal(client, tmp_path)
        create_scripted_terminal(client, tmp_path, session_name=first["session_name"])
    processes = _pane_processes(server)
    assert len(processes) >= 2
    for pid in processes:
        environment = _environ(pid)
        assert MASTER not in "\0".join(f"{k}={v}" for k, v in environment.items()), pid
        assert environment["BATON_TERMINAL_TOKEN"].startswith("btt.")
        assert environment["CAO_AUTH_LOCAL_TOKEN"] == environment["BATON_TERMINAL_TOKEN"]
    assert MASTER not in server.tmux("show-environment", "-g")
    tmux_pid = int(server.tmux("display-message", "-p", "#{pid}").strip())
    assert MASTER not in Path(f"/proc/{tmux_pid}/environ").read_bytes().decode(errors="replace")
    for path in server.state_dir.rglob("*"):
        if path.is_file() and not path.is_socket():
            assert MASTER.encode() not in path.read_bytes(), path
    assert not list(server.state_dir.rglob("*.env"))  # the launcher took its env file
    # The server's own environment is not readable by the agents (same user) either;
    # root reads it anyway, so this is only seen as an ordinary user.
    assert server.process is not None
    if os.geteuid() != 0:
        with pytest.raises(PermissionError):
            Path(f"/proc/{server.process.pid}/environ").read_bytes()


def test_a_terminal_token_does_its_own_acts_and_nothing_else(
    server: ServerProcess, tmp_path: Path
) -> None:
    with server.client() as master:
        supervisor = create_scripted_terminal(master, tmp_path)
        stranger = create_scripted_terminal(
            master, tmp_path
        )  # another session, nothing to do with it
    token = _environ(_pane_pid(server, supervisor))["BATON_TERMINAL_TOKEN"]
    own, other = supervisor["id"], stranger["id"]
    with httpx.Client(base_url=server.base_url, headers=_bearer(token), timeout=60) as agent:
        assert agent.get(f"/terminals/{own}").status_code == 200
        # handoff/assign: a worker in its own session, naming itself as caller
        worker = create_scripted_terminal(
            agent, tmp_path, session_name=supervisor["session_name"], caller_id=own
        )
        sent = agent.post(f"/terminals/{worker['id']}/input", params={"message": "hello"})
        assert sent.status_code == 200, sent.text
        assert (
            agent.get(f"/terminals/{worker['id']}/output", params={"mode": "full"}).status_code
            == 200
        )
        assert agent.get(f"/terminals/{own}/siblings").status_code == 200
        # CAO's handoff: one run-step in its own session, naming itself as caller.
        step = agent.post(
            "/terminals/run-step",
            json={
                "provider": "scripted",
                "agent": "programmer",
                "prompt": "Round: 1",
                "session_name": supervisor["session_name"],
                "caller_id": own,
                "timeout": 60,
            },
        )
        assert step.status_code == 200, step.text
        elsewhere = agent.post(
            "/terminals/run-step",
            json={"provider": "scripted", "agent": "programmer", "prompt": "x", "caller_id": own},
        )
        assert elsewhere.status_code == 403
        assert elsewhere.json()["detail"].startswith(
            f"terminal {own}'s token may not POST /terminals/run-step"
        )

        for method, path, params in [
            ("POST", f"/terminals/{other}/input", {"message": "rm -rf ~"}),
            ("DELETE", f"/terminals/{other}", {}),
            ("GET", f"/terminals/{other}/output", {"mode": "full"}),
            ("POST", "/sessions", {"agent_profile": "programmer", "provider": "scripted"}),
            ("GET", "/sessions", {}),
            ("GET", f"/terminals/{own}/attach", {}),
            ("POST", "/baton/actions", {}),  # an agent may not mint answers to itself
            (
                "POST",
                f"/sessions/{supervisor['session_name']}/terminals",
                {"agent_profile": "programmer"},
            ),
        ]:
            refused = agent.request(method, path, params=params)
            assert refused.status_code == 403, (method, path, refused.text)
            detail = refused.json()["detail"]
            assert detail.startswith(f"terminal {own}'s token may not {method} {path}")
            assert "\n" not in detail
        assert agent.delete(f"/terminals/{worker['id']}").status_code == 200
    # The master token still does everything; a deleted terminal's token is dead.
    with server.client() as master:
        assert master.post(f"/terminals/{other}/input", params={"message": "hi"}).status_code == 200
        assert master.delete(f"/terminals/{other}").status_code == 200
    worker_token_file = server.state_dir / "tokens" / worker["id"]
    assert not worker_token_file.exists()
    wrong = httpx.get(f"{server.base_url}/terminals/{own}", headers=_bearer("btt.0000"), timeout=10)
    assert wrong.status_code == 401


def test_a_tmux_server_started_with_the_token_is_cleaned_when_adopted(tmp_path: Path) -> None:
    """A private tmux server left by an older `baton serve` may hold the token globally."""
    socket_dir = Path(tempfile.mkdtemp(prefix="baton-old-"))
    sock = socket_dir / "tmux.sock"
    old = {**os.environ, "BATON_TOKEN": MASTER}
    old.pop("TMUX", None)
    try:
        subprocess.run(
            ["tmux", "-S", str(sock), "-f", "/dev/null", "new-session", "-d", "-s", "old"],
            env=old,
            check=True,
            timeout=30,
        )
        before = subprocess.run(
            ["tmux", "-S", str(sock), "show-environment", "-g", "BATON_TOKEN"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert before.stdout.strip() == f"BATON_TOKEN={MASTER}"
        env = {"BATON_TOKEN": MASTER, "BATON_TMUX_SOCKET": str(sock)}
        with running_baton_server(tmp_path, env=env) as server, server.client() as client:
            server.tmux_socket = sock
            assert MASTER not in server.tmux("show-environment", "-g")
            terminal = create_scripted_terminal(client, tmp_path)
            assert "BATON_TOKEN" not in _environ(_pane_pid(server, terminal))
    finally:
        subprocess.run(["tmux", "-S", str(sock), "kill-server"], capture_output=True, timeout=30)
        shutil.rmtree(socket_dir, ignore_errors=True)
