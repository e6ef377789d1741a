"""`baton watch` in a real tmux pane against a real run, read back with `capture-pane`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.integration.cockpit.conftest import FinishedRun, PrivateTmux

from baton.roles import ROLES

pytestmark = pytest.mark.tmux


def _screen_lines(run: FinishedRun, terminal_id: str) -> list[str]:
    with run.server.client() as client:
        output = client.get(f"/terminals/{terminal_id}/output", params={"mode": "full"}).json()
    return [line.strip() for line in output["output"].splitlines() if len(line.strip()) > 12]


def _panel(screen: str) -> str:
    """The screen panel's body: between its title line and the events panel."""
    found = re.search(r"screen: .*?\n(.*?)╰", screen, re.S)
    assert found, screen
    return found.group(1)


def test_watch_shows_agents_live_and_switches_screen_with_keys(
    finished_run: FinishedRun, private_tmux: PrivateTmux
) -> None:
    state = json.loads(finished_run.state_path.read_text())
    terminals = state["terminals"]
    private_tmux.start(
        [sys.executable, "-m", "baton", "watch", str(finished_run.state_path), "--interval", "0.3"],
        finished_run.env,
    )
    # The last section of the first frame: a capture can come while a frame is drawn.
    first = private_tmux.wait_for("run_end")
    assert f"screen: analyst · terminal {terminals['analyst']}" in first
    assert "PASS in round 2" in first
    assert f"server: {finished_run.server.base_url} (live)" in first
    for index, role in enumerate(ROLES, 1):
        row = next(line for line in first.splitlines() if f"{index} {role.title} " in line)
        assert terminals[role.terminal_key] in row
        assert "scripted" in row
        assert re.search(r"\b(idle|completed)\b", row), row
    tester_row = next(line for line in first.splitlines() if "5 tester" in line)
    assert "PASS" in tester_row and "r2 tester c1" in tester_row
    assert "last events" in first and "run_end" in first
    assert "baton attach analyst --state-file" in first
    analyst_panel = _panel(first)
    assert any(line in analyst_panel for line in _screen_lines(finished_run, terminals["analyst"]))

    private_tmux.keys("3")
    third = private_tmux.wait_for(f"screen: programmer · terminal {terminals['programmer']}")
    programmer_panel = _panel(third)
    assert programmer_panel != analyst_panel
    programmer_lines = _screen_lines(finished_run, terminals["programmer"])
    assert any(line in programmer_panel for line in programmer_lines)
    assert "baton attach programmer --state-file" in third

    private_tmux.keys("Tab")
    fourth = private_tmux.wait_for(
        f"screen: peer programmer · terminal {terminals['peer_programmer']}"
    )
    assert re.search(r"▶4 peer programmer", fourth), fourth

    private_tmux.keys("q")
    for _ in range(100):
        if private_tmux.pane_dead():
            break
        time.sleep(0.1)
    assert private_tmux.pane_dead()


def test_watch_on_a_finished_run_without_its_server(
    tmp_path: Path, finished_run: FinishedRun
) -> None:
    """The server is gone (another API in a copy of the state): rows come from the record."""
    state = json.loads(finished_run.state_path.read_text())
    state["api"] = "http://127.0.0.1:9"  # nothing listens on the discard port
    copy = tmp_path / "state.json"
    copy.write_text(json.dumps(state))
    completed = subprocess.run(
        [sys.executable, "-m", "baton", "watch", "--once", str(copy)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**finished_run.env, "COLUMNS": "150"},
    )
    assert completed.returncode == 0, completed.stderr
    out = completed.stdout
    assert "server: not reachable" in out
    assert "last answer (no live screen): analyst" in out
    assert "ANALYST_SUMMARY" in out
    assert "5 tester" in out and "PASS" in out
