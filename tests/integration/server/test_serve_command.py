"""`baton serve` refuses bad settings with one line and exit code 1, before starting."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path


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
