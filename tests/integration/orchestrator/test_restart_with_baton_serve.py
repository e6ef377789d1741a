"""An agent CLI killed mid-turn under `baton serve` is restarted in its terminal; PASS anyway.

Real tmux, real `baton serve`, the scripted agent: the programmer's CLI process is found
by the `BATON_TERMINAL_ID` in its environment and killed with SIGKILL while it works.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from tests.support.run_env import scripted_run_env
from tests.support.server import running_baton_server
from tests.support.waiting import wait_until

from baton.demo.sample import write_sample_project

pytestmark = pytest.mark.tmux


def _pids_with_env(name: str, value: str) -> list[int]:
    wanted = f"{name}={value}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if wanted in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def test_programmer_cli_killed_mid_turn_is_restarted(tmp_path: Path) -> None:
    slow_programmer = {"BATON_SCRIPTED_WORK_SECONDS": "programmer=2"}  # killed in its turn
    with running_baton_server(tmp_path, env=slow_programmer) as server:
        project = write_sample_project(tmp_path / "project")
        state_file = project.root / ".tmp" / "codex-3agents-loop-state.json"
        env = scripted_run_env(server.base_url, project)
        stderr_path = tmp_path / "run.stderr"
        with stderr_path.open("w") as stderr:
            run = subprocess.Popen(
                [sys.executable, "-m", "baton", "run"],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                start_new_session=True,
            )
        try:

            def awaiting_programmer() -> bool:
                if not state_file.exists():
                    return False
                state = json.loads(state_file.read_text())
                return (state.get("awaiting") or {}).get("role") == "programmer"

            wait_until(awaiting_programmer, 120)
            terminal = json.loads(state_file.read_text())["terminals"]["programmer"]
            with httpx.Client(base_url=server.base_url) as client:
                wait_until(
                    lambda: client.get(f"/terminals/{terminal}").json()["status"] == "processing",
                    120,
                )
            pane_log = server.state_dir / "terminals" / terminal / "pane.log"
            victims = _pids_with_env("BATON_TERMINAL_ID", terminal)
            assert victims
            for pid in victims:
                os.kill(pid, signal.SIGKILL)
            logged_before = pane_log.stat().st_size
            assert run.wait(timeout=300) == 0, stderr_path.read_text()
        finally:
            if run.poll() is None:
                os.killpg(run.pid, signal.SIGKILL)
                run.wait(timeout=10)
        log = stderr_path.read_text()
        state = json.loads(state_file.read_text())
        assert state["final_status"] == "PASS"
        assert state["restarts"] == {"programmer": 1}
        assert state["terminals"]["programmer"] == terminal  # restarted in the same terminal
        died = [line for line in log.splitlines() if "died" in line]
        assert len(died) == 1 and "restarted its CLI in the same terminal" in died[0], log
        # The pane log (providers read native signals from it) still records the new CLI.
        assert pane_log.stat().st_size > logged_before
