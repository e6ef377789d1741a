"""A terminal is one pane, for ever: no act on one terminal reaches another's pane.

A new tmux server numbers its panes from `%0` again. After the private tmux server dies,
a terminal created afterwards can get the pane id an old terminal had; every act on the
old terminal (input, key, read, restart, delete, adoption by a restarted `baton serve`)
must leave the new one alone, and the old one comes back only in a new pane of its own.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.server import ServerProcess, wait_for_status
from tests.support.waiting import wait_until

pytestmark = pytest.mark.tmux

INTRUDER = "INTRUDER-TEXT"


def _create(client: httpx.Client, session: str, directory: Path) -> dict[str, Any]:
    created = client.post(
        "/sessions",
        params={
            "agent_profile": "programmer",
            "provider": "scripted",
            "session_name": session,
            "working_directory": str(directory),
        },
    )
    assert created.status_code == 201, created.text
    return created.json()


def _kill_tmux_server(server: ServerProcess) -> None:
    pid = int(server.tmux("display-message", "-p", "#{pid}").strip())
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not os.path.exists(f"/proc/{pid}"), 10, message="tmux outlived SIGKILL")


def _old_terminals_and_a_newcomer(
    server: ServerProcess, client: httpx.Client, tmp_path: Path
) -> tuple[str, str, str, str]:
    """Terminals A and B in two sessions, their tmux server killed, then C: (A, B, C, C's pane)."""
    a = _create(client, "team-a", tmp_path)["id"]
    b = _create(client, "team-b", tmp_path)["id"]
    a_pane = server.terminal_pane(a)
    assert a_pane == "%0"
    _kill_tmux_server(server)
    assert wait_for_status(client, a, {"error"}) == "error"
    assert wait_for_status(client, b, {"error"}) == "error"
    c = _create(client, "team-c", tmp_path)["id"]
    c_pane = server.terminal_pane(c)
    assert c_pane == a_pane  # the new server handed A's old pane id to C
    return a, b, c, c_pane


def _acts_on_old_terminal_leave_the_newcomer_alone(
    server: ServerProcess, client: httpx.Client, a: str, b: str, c: str, c_pane: str
) -> None:
    c_pid = server.pane_pid(c_pane)
    assert client.get(f"/terminals/{a}").json()["status"] == "error"
    typed = client.post(f"/terminals/{a}/input", params={"message": INTRUDER})
    assert typed.status_code == 409, typed.text
    pressed = client.post(f"/terminals/{a}/key", params={"key": "Enter"})
    assert pressed.status_code == 409, pressed.text
    output = client.get(f"/terminals/{a}/output", params={"mode": "full"})
    assert output.status_code == 200
    assert output.json()["output"] == ""  # A's pane is gone: nothing of C's is read as A's

    # B comes back in a new pane of its own: a window in its session, made again.
    restarted = client.post(f"/terminals/{b}/restart")
    assert restarted.status_code == 200, restarted.text
    assert restarted.json()["status"] in ("idle", "completed")
    b_pane = server.terminal_pane(b)
    assert b_pane is not None and b_pane != c_pane
    assert "cao-team-b" in server.tmux("list-sessions", "-F", "#{session_name}").split()

    # A is still dead until restarted; deleting it kills nothing of C's.
    assert client.get(f"/terminals/{a}").json()["status"] == "error"
    assert client.delete(f"/terminals/{a}").status_code == 200
    assert server.terminal_pane(c) == c_pane
    assert server.pane_pid(c_pane) == c_pid
    assert INTRUDER not in server.screen(c_pane)
    assert client.get(f"/terminals/{c}").json()["status"] in ("idle", "completed")

    # C still works, in its own pane; B too.
    for terminal in (c, b):
        sent = client.post(f"/terminals/{terminal}/input", params={"message": "still mine"})
        assert sent.status_code == 200, sent.text
        assert wait_for_status(client, terminal, {"completed"}) == "completed"
    assert server.pane_pid(c_pane) == c_pid


def test_after_the_tmux_server_dies_terminals_never_take_over_each_other(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    with baton_server.client() as client:
        a, b, c, c_pane = _old_terminals_and_a_newcomer(baton_server, client, tmp_path)
        _acts_on_old_terminal_leave_the_newcomer_alone(baton_server, client, a, b, c, c_pane)


def test_a_restarted_serve_does_not_adopt_another_terminals_pane(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    with baton_server.client() as client:
        a, b, c, c_pane = _old_terminals_and_a_newcomer(baton_server, client, tmp_path)
    baton_server.restart()
    with baton_server.client() as client:
        wait_until(lambda: client.get(f"/terminals/{a}").json()["status"] == "error", timeout=15)
        _acts_on_old_terminal_leave_the_newcomer_alone(baton_server, client, a, b, c, c_pane)


def test_a_restarted_dead_terminal_gets_a_pane_of_its_own(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    with baton_server.client() as client:
        a, _b, c, c_pane = _old_terminals_and_a_newcomer(baton_server, client, tmp_path)
        c_pid = baton_server.pane_pid(c_pane)
        restarted = client.post(f"/terminals/{a}/restart")
        assert restarted.status_code == 200, restarted.text
        a_pane = baton_server.terminal_pane(a)
        assert a_pane is not None and a_pane != c_pane
        assert os.readlink(f"/proc/{baton_server.pane_pid(a_pane)}/cwd") == str(tmp_path)
        sent = client.post(f"/terminals/{a}/input", params={"message": INTRUDER})
        assert sent.status_code == 200, sent.text
        assert wait_for_status(client, a, {"completed"}) == "completed"
        assert INTRUDER in baton_server.screen(a_pane)
        assert INTRUDER not in baton_server.screen(c_pane)
        assert baton_server.pane_pid(c_pane) == c_pid
        # Deleting A removes A's window only.
        assert client.delete(f"/terminals/{a}").status_code == 200
        assert baton_server.terminal_pane(a) is None
        assert baton_server.pane_pid(c_pane) == c_pid
        assert client.get(f"/terminals/{c}").json()["status"] in ("idle", "completed")


def test_a_terminal_added_to_a_session_tmux_lost_makes_the_session_again(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    """A team half made when the tmux server died goes on: the next terminal of the
    session gets the session made again (as a restart does), in the session's directory,
    and the dead one stays dead until restarted."""
    directory = tmp_path / "team #{pane_pid} dir"
    directory.mkdir()
    with baton_server.client() as client:
        first = _create(client, "team-a", directory)["id"]
        _kill_tmux_server(baton_server)
        assert wait_for_status(client, first, {"error"}) == "error"
        added = client.post(
            "/sessions/team-a/terminals",
            params={"agent_profile": "tester", "provider": "scripted"},
        )
        assert added.status_code == 201, added.text
        second = added.json()["id"]
        assert added.json()["session_name"] == "cao-team-a"
        pane = baton_server.terminal_pane(second)
        assert pane is not None
        assert os.readlink(f"/proc/{baton_server.pane_pid(pane)}/cwd") == str(directory)
        assert "cao-team-a" in baton_server.tmux("list-sessions", "-F", "#{session_name}").split()
        sent = client.post(f"/terminals/{second}/input", params={"message": "hello"})
        assert sent.status_code == 200, sent.text
        assert wait_for_status(client, second, {"completed"}) == "completed"
        assert client.get(f"/terminals/{first}").json()["status"] == "error"
        listed = [t["id"] for t in client.get("/sessions/team-a/terminals").json()]
        assert listed == [first, second]
