"""Typing into agents: status transitions, big exact pastes, exited CLIs, first-run dialogs."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import httpx
import pytest
from tests.support.server import ServerProcess, running_baton_server, wait_for_status

pytestmark = pytest.mark.tmux


def _scripted(client: httpx.Client, tmp_path: Path, profile: str = "programmer") -> dict:
    response = client.post(
        "/sessions",
        params={
            "agent_profile": profile,
            "provider": "scripted",
            "working_directory": str(tmp_path),
        },
    )
    assert response.status_code == 201, response.text
    return response.json()


def _big_message() -> str:
    """~100 KB over many lines, with quotes, `$`, backticks, backslashes and non-ASCII."""
    line = "He said \"it's $HOME `uname` \\n ${x} 'q'\" — naïve café ✓ 漢字 🚀 tab\there"
    lines = [f"{index:05d} {line}" for index in range(1300)]
    text = "\n".join(lines) + "\n\nend of message"
    assert len(text.encode("utf-8")) > 100_000
    return text


def test_status_goes_idle_processing_completed(tmp_path: Path) -> None:
    env = {"BATON_SCRIPTED_WORK_SECONDS": "1"}
    with running_baton_server(tmp_path, env=env) as server, server.client() as client:
        terminal = _scripted(client, tmp_path)["id"]
        assert client.get(f"/terminals/{terminal}").json()["status"] == "idle"
        # Once input is accepted the status is never the previous turn's stale one.
        for turn in range(3):
            client.post(f"/terminals/{terminal}/input", params={"message": f"task {turn}"})
            assert client.get(f"/terminals/{terminal}").json()["status"] == "processing"
            assert wait_for_status(client, terminal, {"completed"}) == "completed"
        screen = server.screen()
        assert "Working (" not in screen.splitlines()[-1]


def test_big_multiline_message_arrives_byte_exact(baton_server: ServerProcess, tmp_path: Path):
    message = _big_message()
    with baton_server.client() as client:
        terminal = _scripted(client, tmp_path)["id"]
        # Too long for a URL (httpx stops at 64 KB): the message travels as a JSON body.
        sent = client.post(f"/terminals/{terminal}/input", json={"message": message})
        assert sent.status_code == 200, sent.text
        assert wait_for_status(client, terminal, {"completed"}) == "completed"
        last = client.get(f"/terminals/{terminal}/output", params={"mode": "last"}).json()
    received = baton_server.state_dir / "terminals" / terminal / "inputs" / "0001.txt"
    assert received.read_bytes() == message.encode("utf-8")
    # One message, not 1302 submissions.
    assert sorted(p.name for p in received.parent.iterdir()) == ["0001.txt"]
    assert f"{len(message)} character(s)" in last["output"]


def test_unknown_slash_commands_are_ignored(baton_server: ServerProcess, tmp_path: Path) -> None:
    with baton_server.client() as client:
        terminal = _scripted(client, tmp_path)["id"]
        response = client.post(f"/terminals/{terminal}/input", params={"message": "/rename x"})
        assert response.json() == {"success": True}
        assert client.get(f"/terminals/{terminal}").json()["status"] == "idle"
        client.post(f"/terminals/{terminal}/input", params={"message": "real work"})
        assert wait_for_status(client, terminal, {"completed"}) == "completed"
    inputs = baton_server.state_dir / "terminals" / terminal / "inputs"
    assert [p.read_text() for p in sorted(inputs.iterdir())] == ["real work"]


def test_input_after_exit_is_409_and_nothing_reaches_a_shell(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    marker = tmp_path / "typed-into-a-shell"
    with baton_server.client() as client:
        terminal = _scripted(client, tmp_path)["id"]
        assert client.post(f"/terminals/{terminal}/exit").json() == {"success": True}
        assert wait_for_status(client, terminal, {"error"}) == "error"
        refused = client.post(f"/terminals/{terminal}/input", params={"message": f"touch {marker}"})
        assert refused.status_code == 409
        assert "exited" in refused.json()["detail"]
        # Exiting again types nothing either.
        assert client.post(f"/terminals/{terminal}/exit").status_code == 200
        full = client.get(f"/terminals/{terminal}/output", params={"mode": "full"}).json()
    time.sleep(0.5)
    assert not marker.exists()
    assert "touch" not in full["output"]
    dead = baton_server.tmux("list-panes", "-a", "-F", "#{pane_dead}")
    assert dead.split() == ["1"]


def test_ctrl_d_quits_the_scripted_agent(baton_server: ServerProcess, tmp_path: Path) -> None:
    with baton_server.client() as client:
        terminal = _scripted(client, tmp_path)["id"]
        baton_server.tmux("send-keys", "-t", baton_server.pane_ids()[-1], "C-d")
        assert wait_for_status(client, terminal, {"error"}) == "error"
        assert (
            client.post(f"/terminals/{terminal}/input", params={"message": "x"}).status_code == 409
        )


def test_first_run_dialog_is_answered_at_startup(tmp_path: Path) -> None:
    env = {"BATON_SCRIPTED_TRUST_DIALOG": "1"}
    with running_baton_server(tmp_path, env=env) as server, server.client() as client:
        terminal = _scripted(client, tmp_path)
        assert terminal["status"] == "idle"
        screen = server.screen()
    assert "Do you trust the files in this folder? [y/n] yes" in screen


def test_pane_environment_carries_path_and_server_environment(tmp_path: Path) -> None:
    tool_dir = tmp_path / "bin"
    tool_dir.mkdir()
    env = {
        "PATH": f"{tool_dir}{os.pathsep}{os.environ['PATH']}",
        "BATON_PROBE": "probe-42",
        "SHLVL": "0",  # a server started by systemd or a CI job
    }
    with running_baton_server(tmp_path, env=env) as server, server.client() as client:
        terminal = _scripted(client, tmp_path)["id"]
        pid = server.pane_pid()
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert client.get(f"/terminals/{terminal}").json()["status"] == "idle"
    assert b"BATON_PROBE=probe-42" in environ
    path_entry = next(item for item in environ if item.startswith(b"PATH="))
    assert path_entry.decode().split("=", 1)[1].split(os.pathsep)[0] == str(tool_dir)
    assert f"BATON_TERMINAL_ID={terminal}".encode() in environ
    assert b"SHLVL=1" in environ  # the CLI's `bash -c` hooks read no ~/.bashrc


_DAEMON = """
import os, signal, sys, time
if os.fork() == 0:
    if os.fork() == 0:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        with open(sys.argv[1], "w") as out:
            out.write(str(os.getpid()))
        time.sleep(600)
    os._exit(0)
"""


def test_delete_kills_the_process_tree_and_daemons(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    # The tester's test command starts a daemon that ignores SIGHUP and SIGTERM and
    # leaves the parent chain, as a CLI's background helper might.
    (tmp_path / "daemon.py").write_text(_DAEMON)
    pid_file = tmp_path / "daemon.pid"
    scenario = {"test_command": f"{sys.executable} daemon.py {pid_file}"}
    (tmp_path / ".baton").mkdir()
    (tmp_path / ".baton" / "scenario.json").write_text(json.dumps(scenario))
    response_file = tmp_path / ".tmp" / "agent-responses" / "test_result.md"
    with baton_server.client() as client:
        terminal = _scripted(client, tmp_path, profile="tester")["id"]
        pane_pid = baton_server.pane_pid()
        client.post(
            f"/terminals/{terminal}/input",
            params={"message": f"Run the scenario test. Write your answer to {response_file}"},
        )
        assert wait_for_status(client, terminal, {"completed"}) == "completed"
        assert response_file.read_text().startswith("RESULT: PASS")
        daemon_pid = int(pid_file.read_text())
        assert _alive(daemon_pid)
        assert client.delete(f"/terminals/{terminal}").json() == {"success": True}
    assert not _alive(pane_pid)
    assert not _alive(daemon_pid)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return state[state.rfind(")") + 2 :].split()[0] not in ("Z", "X")
