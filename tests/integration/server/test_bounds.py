"""Nothing grows without a bound, and odd requests get one clear status.

Real `baton serve` processes and scripted agents: a deleted terminal's runtime folder
goes (unless transcripts are kept), a pane log is rotated at its limit while the screen
model and the log routes keep working, duplicate Host headers are refused, and the
URL `baton serve` prints is one a person can paste.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.support.server import (
    ServerProcess,
    create_scripted_terminal,
    raw_exchange,
    running_baton_server,
    wait_for_status,
)


def test_a_deleted_terminal_leaves_no_runtime_folder(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    with baton_server.client() as client:
        alone = create_scripted_terminal(client, tmp_path)
        in_session = create_scripted_terminal(client, tmp_path)
        folders = [baton_server.state_dir / "terminals" / t["id"] for t in (alone, in_session)]
        assert all((folder / "pane.log").is_file() for folder in folders)
        assert client.delete(f"/terminals/{alone['id']}").status_code == 200
        assert client.delete(f"/sessions/{in_session['session_name']}").status_code == 200
    assert not any(folder.exists() for folder in folders)


def test_keep_transcripts_keeps_the_folder(tmp_path: Path) -> None:
    with (
        running_baton_server(tmp_path, env={"BATON_KEEP_TRANSCRIPTS": "1"}) as server,
        server.client() as client,
    ):
        terminal = create_scripted_terminal(client, tmp_path)
        folder = server.state_dir / "terminals" / terminal["id"]
        assert client.delete(f"/terminals/{terminal['id']}").status_code == 200
        assert (folder / "pane.log").stat().st_size > 0


LIMIT = 4096


def test_a_pane_log_is_rotated_at_its_limit_and_the_terminal_works_on(tmp_path: Path) -> None:
    response = tmp_path / ".tmp" / "agent-responses" / "analyst_summary.md"
    env = {"BATON_MAX_PANE_LOG_BYTES": str(LIMIT)}
    with running_baton_server(tmp_path, env=env) as server, server.client() as client:
        terminal = create_scripted_terminal(client, tmp_path, profile="system_analyst")["id"]
        folder = server.state_dir / "terminals" / terminal
        largest = 0
        for turn in range(1, 40):
            sent = client.post(
                f"/terminals/{terminal}/input",
                params={"message": f"Round: {turn}\nWrite your answer to {response}"},
            )
            assert sent.status_code == 200, sent.text
            assert wait_for_status(client, terminal, {"completed"}) == "completed"
            largest = max(largest, (folder / "pane.log").stat().st_size)
            if (folder / "pane.log.1").exists() and turn >= 3:
                break
        assert (folder / "pane.log.1").stat().st_size >= LIMIT
        assert largest < 2 * LIMIT  # the limit plus at most one turn's output
        # The screen model follows the emptied log: the last answer is read from it.
        last = client.get(f"/terminals/{terminal}/output", params={"mode": "last"})
        assert last.json()["output"].splitlines()[:2] == ["ANALYST_SUMMARY", f"Round: {turn}"]
        # The log-range route reads the current log from its new start.
        head = (folder / "pane.log").read_bytes()[:100]
        ranged = client.get(
            f"/terminals/{terminal}/output/range", params={"offset": 0, "length": 100}
        )
        assert ranged.status_code == 200
        assert ranged.json()["data"] == head.decode("utf-8", "replace")


def test_duplicate_host_headers_are_refused(baton_server: ServerProcess) -> None:
    request = (
        b"GET /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n"
        b"Connection: close\r\n\r\n"
    )
    answer = raw_exchange(baton_server.port, request)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400"), answer
    assert body == b'{"detail": "more than one Host header"}'


@contextlib.contextmanager
def _serving(tmp_path: Path, *args: str) -> Iterator[str]:
    """`baton serve` with `args`; the URL it prints."""
    env = {**os.environ, "BATON_TMUX_SOCKET": str(tmp_path / "t.sock")}
    env.pop("BATON_TOKEN", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "baton", "serve", "--state-dir", str(tmp_path / "s"), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        found = re.fullmatch(r"baton serve: listening on (\S+)\n", line)
        assert found, line
        yield found.group(1)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=20)


def test_port_0_prints_the_port_actually_bound(tmp_path: Path) -> None:
    with _serving(tmp_path, "--port", "0") as url:
        assert re.fullmatch(r"http://127\.0\.0\.1:[1-9]\d*", url), url
        assert httpx.get(f"{url}/health", timeout=10).status_code == 200


def test_an_ipv6_host_prints_a_url_in_brackets(tmp_path: Path) -> None:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback here")
    with _serving(tmp_path, "--host", "[::1]", "--port", "0") as url:
        assert re.fullmatch(r"http://\[::1\]:[1-9]\d*", url), url
        assert httpx.get(f"{url}/health", timeout=10).status_code == 200
