"""A pane's environment: where CAO's clients find the server, and a shell level that keeps
an agent CLI's `bash -c` (hooks, commands; stdin a socket) from reading ~/.bashrc."""

from __future__ import annotations

import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from baton.server.pane_environment import pane_environment, shell_level


@pytest.mark.parametrize(
    ("server", "pane"), [(None, "1"), ("0", "1"), ("", "1"), ("x", "1"), ("1", "1"), ("3", "3")]
)
def test_a_pane_has_the_shell_level_of_a_terminal_or_more(server: str | None, pane: str) -> None:
    assert shell_level(server) == pane


def test_the_pane_environment_names_the_server_and_keeps_the_rest() -> None:
    environment = pane_environment({"PATH": "/bin", "SHLVL": "0"}, "0.0.0.0", 9889)
    assert environment == {
        "PATH": "/bin",
        "CAO_API_HOST": "127.0.0.1",
        "CAO_API_PORT": "9889",
        "SHLVL": "1",
    }
    assert pane_environment({}, "10.0.0.5", 1)["CAO_API_HOST"] == "10.0.0.5"


def _bash_with_socket_stdin(home: Path, environment: dict[str, str]) -> None:
    """`bash -c true` as Node starts a hook: its stdin one end of a socket pair."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        subprocess.run(
            ["bash", "-c", "true"],
            stdin=theirs,
            env={**environment, "HOME": str(home), "PATH": "/usr/bin:/bin"},
            timeout=30,
            check=True,
        )


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_a_hook_shell_in_a_pane_does_not_read_the_users_bashrc(tmp_path: Path) -> None:
    marker = tmp_path / "bashrc-was-read"
    (tmp_path / ".bashrc").write_text(f"touch {marker}\n")
    # The server's own environment as systemd or a CI job leaves it: no shell level.
    _bash_with_socket_stdin(tmp_path, {})
    assert marker.exists(), "bash no longer reads ~/.bashrc here: the test proves nothing"
    marker.unlink()
    _bash_with_socket_stdin(tmp_path, pane_environment({}, "127.0.0.1", 9889))
    assert not marker.exists()
