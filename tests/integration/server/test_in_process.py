"""The in-process server `baton demo` uses: a free port, and nothing left when it stops."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import httpx
import pytest

from baton.server.app import ServerOptions, run_server_in_thread

pytestmark = pytest.mark.tmux


def test_run_server_in_thread_serves_and_cleans_up(tmp_path: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="baton-tmux-") as socket_dir:
        socket = Path(socket_dir) / "tmux.sock"
        options = ServerOptions(
            port=0, state_dir=tmp_path / "state", tmux_socket=socket, kill_tmux_on_exit=True
        )
        try:
            with run_server_in_thread(options) as handle:
                assert handle.port > 0
                assert handle.base_url == f"http://127.0.0.1:{handle.port}"
                # Its panes find it (CAO's clients in a pane read these), not port 0.
                assert handle.service.environment["CAO_API_PORT"] == str(handle.port)
                assert handle.options.port == handle.port
                created = httpx.post(
                    f"{handle.base_url}/sessions",
                    params={
                        "agent_profile": "tester",
                        "provider": "scripted",
                        "working_directory": str(tmp_path),
                    },
                    timeout=60,
                )
                assert created.status_code == 201
                pid = int(
                    handle.service.tmux.run(
                        "display-message",
                        "-p",
                        "-t",
                        handle.service.tmux.session_names()[0] + ":",
                        "#{pane_pid}",
                    ).strip()
                )
            assert not Path(f"/proc/{pid}").exists()
            with pytest.raises(httpx.ConnectError):
                httpx.get(f"{handle.base_url}/health")
            assert not handle.service.tmux.is_running()
        finally:  # pass or fail, no tmux server outlives the test
            subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True)
