"""A real run to look at: `baton run` against `baton serve` (scripted agents, real tmux).

The run ends with PASS and CLEANUP_ON_EXIT=0, so its five terminals stay up on the
server: the views see live statuses and screens. `PrivateTmux` is a tmux server of the
test's own (`tmux -L <unique>`) in which a view runs as a person would run it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.support.server import ServerProcess, running_baton_server
from tests.support.waiting import poll

from baton.demo.sample import write_sample_project


@dataclass(frozen=True)
class FinishedRun:
    server: ServerProcess
    wd: Path
    state_path: Path
    stderr: str
    env: dict[str, str]


def baton_env(server: ServerProcess, **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("TMUX", "TMUX_PANE")}
    for name in ("STATE_FILE", "RESUME", "PROMPT_FILE", "MAX_ROUNDS", "WD", "API"):
        env.pop(name, None)
    return {**env, **extra}


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FinishedRun]:
    """One finished run for every test that only looks at it (the views, the report)."""
    base = tmp_path_factory.mktemp("cockpit-run")
    with running_baton_server(base) as server:
        project = write_sample_project(base / "project")
        _commit_everything(project.root)
        state_path = project.root / ".tmp" / "run-state.json"
        env = baton_env(
            server,
            API=server.base_url,
            PROVIDER="scripted",
            WD=str(project.root),
            PROMPT=project.prompt(),
            STATE_FILE=str(state_path),
            POLL_SECONDS="0.2",
            IDLE_GRACE_SECONDS="5",
            CLEANUP_ON_EXIT="0",
        )
        completed = subprocess.run(
            [sys.executable, "-m", "baton", "run"],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert completed.returncode == 0, completed.stderr[-3000:]
        yield FinishedRun(server, project.root, state_path, completed.stderr, env)


def _commit_everything(root: Path) -> None:
    """Make the project a git repository with one commit: the run's starting point."""
    git = ["git", "-C", str(root), "-c", "user.name=test", "-c", "user.email=test@example.com"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "start"]):
        subprocess.run([*git, *args], check=True, capture_output=True)


class PrivateTmux:
    """A tmux server on a unique `-L` socket, killed (with what runs in it) at the end."""

    def __init__(self, columns: int = 160, rows: int = 60) -> None:
        self.name = f"baton-test-{uuid.uuid4().hex[:10]}"
        self.columns, self.rows = columns, rows

    def tmux(self, *args: str, check: bool = True) -> str:
        completed = subprocess.run(
            ["tmux", "-L", self.name, *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if check:
            assert completed.returncode == 0, completed.stderr
        return completed.stdout

    def start(self, command: list[str], env: dict[str, str]) -> None:
        """Run `command` in a fresh session's only pane (the pane stays when it exits)."""
        exports = [f"{key}={value}" for key, value in env.items() if key.isidentifier()]
        self.tmux(
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "view",
            "-x",
            str(self.columns),
            "-y",
            str(self.rows),
            "env",
            "-i",
            *exports,
            *command,
        )
        self.tmux("set-option", "-t", "view", "remain-on-exit", "on")

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "view")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "view", *keys)

    def wait_for(self, text: str, timeout: float = 30.0) -> str:
        """The screen once `text` is on it (the last screen in the failure message if never)."""
        screens = [""]

        def shows() -> bool:
            screens[0] = self.screen()
            return text in screens[0]

        if not poll(shows, timeout, interval=0.1):
            raise AssertionError(f"{text!r} never appeared; the screen was:\n{screens[0]}")
        return screens[0]

    def pane_dead(self) -> bool:
        return self.tmux("display-message", "-p", "-t", "view", "#{pane_dead}").strip() == "1"

    def kill(self) -> None:
        self.tmux("kill-server", check=False)


@pytest.fixture
def private_tmux() -> Iterator[PrivateTmux]:
    tmux = PrivateTmux()
    try:
        yield tmux
    finally:
        tmux.kill()
