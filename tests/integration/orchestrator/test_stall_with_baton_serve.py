"""A stalled agent comes back under `baton serve`: interrupted and asked again, then restarted.

Real tmux, real `baton serve`, the scripted agent, `baton run` as a subprocess. The
analyst's turns hang (BATON_SCRIPTED_HANG: the working indicator turns, nothing else
happens, until Esc) and STALL_SECONDS is short, so the run must notice the stall from the
server's `quiet_seconds`, press Esc, send the prompt again, and, on a second hang,
restart the CLI; either way the run ends with PASS.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.run_env import scripted_run_env
from tests.support.server import running_baton_server

from baton.demo.sample import write_sample_project
from baton.orchestrator.events import read_events

pytestmark = pytest.mark.tmux


def _run_with_hangs(tmp_path: Path, hangs: str) -> tuple[dict, list[dict], str, Path]:
    """`baton run` on the sample project with these hangs; its state, events, log, hang file."""
    hang_file = tmp_path / "hangs"
    hang_file.write_text(hangs)
    with running_baton_server(tmp_path, env={"BATON_SCRIPTED_HANG": str(hang_file)}) as server:
        project = write_sample_project(tmp_path / "project")
        env = scripted_run_env(server.base_url, project, STALL_SECONDS="3")
        result = subprocess.run(
            [sys.executable, "-m", "baton", "run"],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert result.returncode == 0, result.stderr
    state = json.loads((project.root / ".tmp" / "codex-3agents-loop-state.json").read_text())
    events = list(read_events(Path(state["archive_dir"]) / "events.jsonl"))
    return state, events, result.stderr, hang_file


def test_a_stalled_turn_is_interrupted_sent_again_and_passes(tmp_path: Path) -> None:
    state, events, log, hang_file = _run_with_hangs(tmp_path, "analyst\n")
    assert hang_file.read_text() == ""  # the analyst did hang
    assert state["final_status"] == "PASS"
    assert not state.get("restarts")
    stalls = [e for e in events if e["event"] == "stall"]
    assert [(e["action"], e["role"]) for e in stalls] == [
        ("interrupt", "analyst"),
        ("resend", "analyst"),
    ]
    assert stalls[0]["keys"] == ["Escape"]
    assert "stalled (no progress for" in log and "interrupting its turn (Escape)" in log
    assert "is at rest after the interrupt; sending its prompt again" in log
    prompts = [e for e in events if e["event"] == "prompt_sent" and e["role"] == "analyst"]
    assert len(prompts) >= 2  # the first prompt, and the same turn's again


def test_a_turn_that_stalls_twice_restarts_the_cli_and_passes(tmp_path: Path) -> None:
    state, events, log, hang_file = _run_with_hangs(tmp_path, "analyst\nanalyst\n")
    assert hang_file.read_text() == ""
    assert state["final_status"] == "PASS"
    assert state["restarts"] == {"analyst": 1}
    steps = [e["action"] for e in events if e["event"] == "stall"]
    assert steps == ["interrupt", "resend", "restart"]
    restarts = [e for e in events if e["event"] == "agent_restart"]
    assert [(e["role"], e["cause"], e["how"]) for e in restarts] == [
        ("analyst", "stall", "restarted")
    ]
    stalled = [line for line in log.splitlines() if "stalled (" in line and "restart 1/" in line]
    assert len(stalled) == 1 and "restarted its CLI in the same terminal" in stalled[0], log


def test_a_rerun_after_the_timeout_interrupts_instead_of_waiting_again(tmp_path: Path) -> None:
    """STALL_SECONDS=0: the hanging analyst runs out of RESPONSE_TIMEOUT; the rerun presses
    Esc at once and sends the prompt again, instead of waiting another RESPONSE_TIMEOUT."""
    hang_file = tmp_path / "hangs"
    hang_file.write_text("analyst\n")
    with running_baton_server(tmp_path, env={"BATON_SCRIPTED_HANG": str(hang_file)}) as server:
        project = write_sample_project(tmp_path / "project")
        env = scripted_run_env(
            server.base_url, project, STALL_SECONDS="0", RESPONSE_TIMEOUT="3",
            CLEANUP_ON_EXIT="0",
        )  # fmt: skip
        command = [sys.executable, "-m", "baton", "run"]
        first = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        assert first.returncode != 0 and "RESPONSE_TIMEOUT=3" in first.stderr, first.stderr
        state_path = project.root / ".tmp" / "codex-3agents-loop-state.json"
        awaiting = json.loads(state_path.read_text())["awaiting"]
        assert awaiting["role"] == "analyst" and awaiting["timed_out_at"]
        env["RESPONSE_TIMEOUT"] = "600"  # a plain wait would now take ten minutes
        env["CLEANUP_ON_EXIT"] = "1"
        again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "not waiting for it the same way again" in again.stderr
    assert "interrupting its turn (Escape)" in again.stderr
    state = json.loads(state_path.read_text())
    assert state["final_status"] == "PASS"
    events = list(read_events(Path(state["archive_dir"]) / "events.jsonl"))
    steps = [(e["action"], e["reason"]) for e in events if e["event"] == "stall"]
    reason = "still working when RESPONSE_TIMEOUT stopped the last run"
    assert steps == [("interrupt", reason), ("resend", reason)]
