"""`baton run` drives an unmodified `cao-server` 2.5.4 through the whole loop.

The server is CAO's own (`.tools/cao/bin/cao-server`, installed by scripts/install-cao.sh)
with its credential-free `mock_cli` provider; the `mock_cli` binary it starts is Baton's
(`baton.scripted_agent.mock_cli`: CAO's screen, the scripted agent's real work), put on
the PATH of the server's login shells through a throw-away HOME. The server runs on
127.0.0.1 with its own CAO home and its own tmux server (TMUX_TMPDIR), all removed after.

IDLE_GRACE_SECONDS is far longer than the test may take, so a turn that waited out an
idle grace (or the startup guard) instead of being handed off fails the test.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from tests.support.server import MARKER_VARIABLE, free_port, kill_marked_processes
from tests.support.waiting import poll

from baton.demo.sample import write_sample_project
from baton.orchestrator.events import read_events

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]

CAO_SERVER = Path(__file__).resolve().parents[2] / ".tools" / "cao" / "bin" / "cao-server"
_STARTUP_SECONDS = 90.0


@dataclass
class StockCao:
    url: str
    root: Path
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")


@contextlib.contextmanager
def stock_cao_server() -> Iterator[StockCao]:
    """`cao-server` on a free 127.0.0.1 port with a private HOME, CAO home and tmux."""
    if not CAO_SERVER.is_file():
        pytest.skip(f"cao-server 2.5.4 is not installed at {CAO_SERVER} (scripts/install-cao.sh)")
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    root = Path(tempfile.mkdtemp(prefix="baton-cao-"))  # short: tmux socket paths are limited
    home, cao_home, tmux_dir, bin_dir = (root / name for name in ("home", "cao", "tmux", "bin"))
    for directory in (home, cao_home / "agent-store", tmux_dir, bin_dir):
        directory.mkdir(parents=True)
    shim = bin_dir / "mock_cli"
    shim.write_text(
        f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m baton.scripted_agent.mock_cli "$@"\n'
    )
    shim.chmod(0o755)
    # Login shells reset PATH from /etc/profile; the private HOME puts mock_cli back first.
    for profile in (".bash_profile", ".profile"):
        (home / profile).write_text(f"export PATH={shlex.quote(str(bin_dir))}:$PATH\n")
    profiles = Path(__file__).resolve().parents[2] / "src" / "baton" / "profiles"
    for profile in profiles.glob("*.md"):
        shutil.copy(profile, cao_home / "agent-store" / profile.name)
    marker = uuid.uuid4().hex
    env = {
        **os.environ,
        "HOME": str(home),
        "CAO_HOME_DIR": str(cao_home),
        "TMUX_TMPDIR": str(tmux_dir),
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}",
        "SHELL": "/bin/bash",
        MARKER_VARIABLE: marker,
    }
    for name in ("TMUX", "TMUX_PANE"):
        env.pop(name, None)
    port = free_port()
    log_path = root / "cao-server.log"
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [str(CAO_SERVER), "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = StockCao(f"http://127.0.0.1:{port}", root, log_path)
    try:
        _wait_healthy(server, process)
        yield server
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        for socket in tmux_dir.glob("tmux-*/*"):
            subprocess.run(
                ["tmux", "-S", str(socket), "kill-server"], capture_output=True, check=False
            )
        kill_marked_processes(marker)
        shutil.rmtree(root, ignore_errors=True)


def _wait_healthy(server: StockCao, process: subprocess.Popen[bytes]) -> None:

    def healthy() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"cao-server exited:\n{server.log()}")
        with contextlib.suppress(httpx.HTTPError):
            return httpx.get(f"{server.url}/health", timeout=2).status_code == 200
        return False

    if not poll(healthy, _STARTUP_SECONDS, interval=0.2):
        raise RuntimeError(f"cao-server did not become healthy:\n{server.log()}")


def test_the_whole_loop_runs_against_a_stock_cao_server_with_mock_cli(tmp_path: Path) -> None:
    project = write_sample_project(tmp_path / "project")
    with stock_cao_server() as cao:
        env = {
            **os.environ,
            "API": cao.url,
            "PROVIDER": "mock_cli",
            "WD": str(project.root),
            "PROMPT": project.prompt(),
            "CLEANUP_ON_EXIT": "1",
            "IDLE_GRACE_SECONDS": "3600",  # waiting out a grace would outlast the test
        }
        run = subprocess.run(
            [sys.executable, "-m", "baton", "run"],
            env=env,
            cwd=project.root,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert run.returncode == 0, f"{run.stderr}\n--- cao-server log ---\n{cao.log()[-3000:]}"
    stderr = run.stderr
    assert "RESULT: FAIL → round 2" in stderr
    assert "round 2/8 · tester phase: RESULT: PASS" in stderr
    for sign_of_waiting in ("never showed it started", "did not write", "still reports"):
        assert sign_of_waiting not in stderr
    archive = next(path for path in (project.root / ".tmp").glob("2*") if path.is_dir())
    events = list(read_events(archive / "events.jsonl"))
    answers = [event for event in events if event["event"] == "answer"]
    assert len(answers) == 18  # two rounds of nine turns, every one from its file
    assert all(event["from_file"] for event in answers)
    assert [event["verdict"] for event in events if event["event"] == "verdict"] == [
        "FAIL",
        "PASS",
    ]
    checked = subprocess.run(
        project.test_command, shell=True, cwd=project.root, capture_output=True, check=False
    )
    assert checked.returncode == 0
