"""`baton serve` refuses bad settings with one line and exit code 1, before starting."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest


def _serve(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "baton", "serve", "--state-dir", str(tmp_path / "s"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = _serve("--port", str(port), tmp_path=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"baton: error: cannot listen on 127.0.0.1:{port}: Address already in use"
    ]


def test_missing_profiles_dir(tmp_path: Path) -> None:
    result = _serve("--profiles-dir", str(tmp_path / "absent"), tmp_path=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"baton: error: profiles directory does not exist: {tmp_path / 'absent'}"
    )


def test_unusable_state_dir(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    result = subprocess.run(
        [sys.executable, "-m", "baton", "serve", "--port", "0", "--state-dir", str(blocker / "x")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.startswith(f"baton: error: cannot use state directory {blocker / 'x'}")
    assert len(result.stderr.strip().splitlines()) == 1


def _serve_env(*args: str, tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, "-m", "baton", "serve", "--state-dir", str(tmp_path / "s"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, **env},
    )


def test_all_interfaces_without_a_token_is_refused(tmp_path: Path) -> None:
    result = _serve_env(
        "--host", "0.0.0.0", "--port", "0", tmp_path=tmp_path, env={"BATON_TOKEN": ""}
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "baton: error: refusing to listen on '0.0.0.0' without a token: set BATON_TOKEN to "
        "serve beyond loopback (clients send it as Authorization: Bearer <token>)"
    ]
    assert not (tmp_path / "s").exists()  # refused before anything was created


@pytest.mark.parametrize(
    ("args", "env", "line"),
    [
        (("--port", "70000"), {}, "baton: error: --port must be between 0 and 65535, got 70000"),
        (
            ("--host", "no-such-host.invalid", "--port", "0"),
            {"BATON_TOKEN": "t"},
            "baton: error: cannot listen on no-such-host.invalid:0: ",
        ),
        (
            ("--port", "abc"),
            {},
            "baton: error: --port must be a number between 0 and 65535, got 'abc'",
        ),
        (
            ("--max-message-bytes", "0"),
            {},
            "baton: error: --max-message-bytes must be greater than 0, got '0'",
        ),
        (
            (),
            {"BATON_MAX_MESSAGE_BYTES": "lots"},
            "baton: error: BATON_MAX_MESSAGE_BYTES must be a whole number of bytes, got 'lots'",
        ),
        (
            (),
            {"BATON_AGENT_NICE": "-5"},
            "baton: error: BATON_AGENT_NICE must be a whole number from 0 to 19, got '-5'",
        ),
    ],
    ids=["port-range", "unknown-host", "port-word", "zero-limit", "bad-limit-env", "bad-nice"],
)
def test_bad_option_is_one_line(
    tmp_path: Path, args: tuple[str, ...], env: dict[str, str], line: str
) -> None:
    result = _serve_env(*args, tmp_path=tmp_path, env=env)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(line)


def test_ctrl_c_while_serving_exits_130_with_one_line(tmp_path: Path) -> None:
    import os
    import signal

    import httpx
    from tests.support.server import free_port
    from tests.support.waiting import wait_until

    def healthy() -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "baton",
            "serve",
            "--port",
            str(port),
            "--state-dir",
            str(tmp_path / "s"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "BATON_TMUX_SOCKET": str(tmp_path / "t.sock")},
    )
    try:
        wait_until(healthy, 30, interval=0.1, message="the server never answered /health")
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130
    assert stderr.strip().splitlines() == ["baton: interrupted by signal 2"]
