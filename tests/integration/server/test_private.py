"""Nothing the server keeps can be read by another user: no secret on a command line,
every file it writes 0600, every directory 0700."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from tests.support.privacy import command_lines_containing, not_private
from tests.support.server import ServerProcess, running_baton_server, wait_for_status

pytestmark = pytest.mark.tmux

SERVER_SECRET = "sk-server-secret-7f3a9c"
TERMINAL_SECRET = "sk-terminal-secret-51d2e8"


def _create(client: httpx.Client, tmp_path: Path, provider: str = "scripted") -> str:
    response = client.post(
        "/sessions",
        params={
            "agent_profile": "tester",
            "provider": provider,
            "working_directory": str(tmp_path),
        },
        json={"env_vars": {"PER_TERMINAL_KEY": TERMINAL_SECRET}},
    )
    assert response.status_code == 201, response.text
    return response.json()["id"]


def _command_lines() -> dict[int, bytes]:
    lines = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                lines[int(entry.name)] = (entry / "cmdline").read_bytes()
            except OSError:
                continue
    return lines


def _tmux_server_pid(server: ServerProcess) -> int:
    return int(server.tmux("display-message", "-p", "#{pid}").strip())


def test_no_secret_on_any_command_line(tmp_path: Path) -> None:
    env = {"ANTHROPIC_API_KEY": SERVER_SECRET}
    with running_baton_server(tmp_path, env=env) as server, server.client() as client:
        terminal = _create(client, tmp_path)
        client.post(f"/terminals/{terminal}/input", params={"message": "work"})
        assert wait_for_status(client, terminal, {"completed"}) == "completed"
        pane_pid = server.pane_pid()
        tmux_pid = _tmux_server_pid(server)
        command_lines = _command_lines()
        leaks = {
            **command_lines_containing(SERVER_SECRET),
            **command_lines_containing(TERMINAL_SECRET),
        }
        pane_environment = Path(f"/proc/{pane_pid}/environ").read_bytes().split(b"\0")
    # The processes that matter were there to be read …
    assert pane_pid in command_lines and tmux_pid in command_lines
    assert b"baton.scripted_agent" in command_lines[pane_pid]
    # … and no process showed either secret on its command line.
    assert leaks == {}
    # The CLI still gets both, and the environment file it came through is gone.
    assert f"ANTHROPIC_API_KEY={SERVER_SECRET}".encode() in pane_environment
    assert f"PER_TERMINAL_KEY={TERMINAL_SECRET}".encode() in pane_environment
    runtime_dir = server.state_dir / "terminals" / terminal
    assert not [path for path in runtime_dir.iterdir() if "env" in path.name]


def test_everything_the_server_writes_is_private(baton_server: ServerProcess, tmp_path: Path):
    with baton_server.client() as client:
        terminal = _create(client, tmp_path)
        client.post(f"/terminals/{terminal}/input", params={"message": "keep this private"})
        assert wait_for_status(client, terminal, {"completed"}) == "completed"
    state = baton_server.state_dir
    runtime = state / "terminals" / terminal
    # The ones that hold transcripts, prompts and the registry are among them.
    for expected in (state / "baton.db", runtime / "pane.log", runtime / "instructions.md"):
        assert expected.is_file()
    assert (runtime / "inputs" / "0001.txt").read_text() == "keep this private"
    assert not_private(state) == {}


def test_pane_environment_is_read_back_from_the_running_cli(tmp_path: Path) -> None:
    """After a server restart a provider gets the terminal's env_vars from the live pane."""
    import shutil
    import tempfile

    from baton.server.tmux import PaneRef, TmuxServer
    from baton.server.tmux_windows import PaneLaunch, create_window

    socket_dir = Path(tempfile.mkdtemp(prefix="baton-tmux-"))
    tmux = TmuxServer(socket_dir / "tmux.sock", tmp_path / "state" / "tmux.conf")
    runtime = tmp_path / "state" / "terminals" / "t1"
    try:
        window = create_window(
            tmux,
            session="s1",
            window_name="w",
            new_session=True,
            terminal_id="t1",
            launch=PaneLaunch(
                ["sleep", "60"],
                {"CODEX_HOME": "/per/terminal", "PATH": "/usr/bin:/bin"},
                tmp_path,
                runtime,
            ),
        )
        pane = PaneRef(pane_id=window.pane_id, terminal_id="t1")
        environment = None
        for _ in range(100):
            environment = tmux.pane_environment(pane)
            if environment and environment.get("CODEX_HOME"):
                break
            time.sleep(0.05)
        assert environment is not None
        assert environment["CODEX_HOME"] == "/per/terminal"
        tmux.kill_window(pane)
        assert tmux.pane_environment(pane) is None
    finally:
        tmux.kill_server()
        shutil.rmtree(socket_dir, ignore_errors=True)
