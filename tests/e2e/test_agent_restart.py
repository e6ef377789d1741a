"""A real agent CLI killed mid-turn is restarted in its terminal, resuming its conversation.

`baton run` → `baton serve` → Codex / Claude Code / Gemini CLI / Qwen Code / Copilot CLI /
OpenCode against the scripted model servers.
While the programmer works on its second turn (so the CLI has a conversation to resume),
its CLI process is found by `BATON_TERMINAL_ID` and killed with SIGKILL. The loop must
still reach its FAIL-then-PASS result, with one restart of the programmer, and the
restarted CLI must really have resumed: its requests carry the earlier prompts again.
"""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.model.brain import Brain, Misbehaviour
from tests.e2e.team import run_loop, team_server

from baton.demo.sample import write_sample_project

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]


def _pids_with_env(name: str, value: str) -> list[int]:
    wanted = f"{name}={value}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if wanted in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


class _Killer(threading.Thread):
    """Kills the programmer's CLI once, mid-way through its second turn."""

    def __init__(self, state_file: Path, brain: Brain) -> None:
        super().__init__(daemon=True)
        self.state_file = state_file
        self.brain = brain
        self.killed: list[int] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.1):
            try:
                state = json.loads(self.state_file.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            awaiting = state.get("awaiting") or {}
            if awaiting.get("role") != "programmer" or state.get("current_cycle") != 2:
                continue
            if not any(turn.role == "programmer" for turn in self.brain.open_turns()):
                continue
            time.sleep(0.5)  # well inside the turn (every reply waits slow_seconds)
            for pid in _pids_with_env("BATON_TERMINAL_ID", awaiting["terminal_id"]):
                os.kill(pid, signal.SIGKILL)
                self.killed.append(pid)
            return


@pytest.mark.parametrize(
    "provider", ["codex", "claude_code", "gemini_cli", "qwen_code", "copilot", "opencode"]
)
def test_cli_killed_mid_turn_is_restarted_and_the_loop_passes(
    tmp_path: Path, provider: str
) -> None:
    brain = Brain(behaviours={"programmer": Misbehaviour.SLOW}, slow_seconds=2.0)
    project = write_sample_project(tmp_path / "project")
    state_file = project.root / ".tmp" / "codex-3agents-loop-state.json"
    with team_server(tmp_path, brain, {provider}) as team:
        killer = _Killer(state_file, brain)
        killer.start()
        try:
            result = run_loop(team, project, provider=provider, CLEANUP_ON_EXIT="0")
        finally:
            killer.stop.set()
            killer.join(timeout=5)
        requests = team.models[provider].turn_requests()
    assert killer.killed, "the programmer's CLI was never killed"
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.tester_verdicts() == ["RESULT: FAIL", "RESULT: PASS"]
    state = json.loads(state_file.read_text(encoding="utf-8"))
    assert state["final_status"] == "PASS"
    assert state["restarts"] == {"programmer": 1}
    died = [line for line in result.stderr.splitlines() if " died (" in line]
    assert len(died) == 1, result.stderr[-3000:]
    assert "restarted its CLI in the same terminal, resuming its conversation" in died[0]
    # A fresh conversation would start again from one prompt; a resumed one never shrinks.
    counts = [n for n in map(_programmer_prompts, requests) if n]
    assert counts == sorted(counts) and counts[-1] >= 3, counts


def _programmer_prompts(body: dict[str, Any]) -> int:
    """How many programmer prompts the conversation in one model request holds.

    Every prompt Baton types ends with a RESPONSE FILE INSTRUCTION naming its own file;
    the other roles' prompts may name the programmer's summary, never as theirs.
    """
    return len(_PROGRAMMER_INSTRUCTION.findall("\n".join(_strings(body))))


_PROGRAMMER_INSTRUCTION = re.compile(r"to this file:\n\s*\S*/programmer_summary\.md")


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []
