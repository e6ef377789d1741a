"""Two faults in one real loop: a stalled model stream, then a CLI killed mid-turn.

`baton run` → `baton serve` → Codex / Claude Code / Gemini CLI / Qwen Code / Copilot CLI /
OpenCode against the scripted model servers. One loop per CLI holds both faults:

- the analyst's first request (OpenCode's: of its second turn) is accepted and never
  answered (Misbehaviour.STALL), the way a hung model stream leaves the CLI busy with
  only its spinner turning. With a short STALL_SECONDS, `baton run` must see no progress
  in `baton serve`'s `quiet_seconds`, press the CLI's interrupt key (Esc; Ctrl-C for
  Copilot CLI) and send the prompt again.
  Played for Codex, Claude Code, Copilot CLI and OpenCode (the loops of Gemini CLI and
  Qwen Code hold the kill alone);
- while the programmer works on its second turn (so the CLI has a conversation to
  resume), its CLI process is found by `BATON_TERMINAL_ID` and killed with SIGKILL: one
  restart of the programmer, and the restarted CLI must really have resumed (its requests
  carry the earlier prompts again).

The loop must still reach its real FAIL-then-PASS end. The two roles the faults hit run
the CLI; the reviewers and the tester, whose turns the faults do not touch, are the
scripted agent (each CLI's whole loop of five has a test of its own), so each loop
starts two of the CLI's processes, not five.
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
from baton.orchestrator.events import read_events

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
            time.sleep(0.5)  # well inside the turn (each of its replies waits slow_seconds)
            for pid in _pids_with_env("BATON_TERMINAL_ID", awaiting["terminal_id"]):
                os.kill(pid, signal.SIGKILL)
                self.killed.append(pid)
            return


# The interrupt key Baton must press for each CLI whose stream stalls here (None: no
# stall in that CLI's loop, only the kill).
_STALL_KEYS = {
    "codex": "Escape",
    "claude_code": "Escape",
    "gemini_cli": None,
    "qwen_code": None,
    "copilot": "C-c",
    "opencode": "Escape",
}
# OpenCode's first prompt in a process loads its model providers before the first request
# leaves: 10 to 25 s without a change on screen on a loaded machine, a stall by a 10 s
# measure. So its STALL_SECONDS is longer, and its analyst stalls on its second turn, with
# the CLI warm: a slow first start plus the stall after it would be two stalls in one
# turn (a restart of the analyst, then a resumed CLI starting slowly again).
# Copilot CLI cancels a stalled request slowly on a loaded machine ("Cancelling" for more
# than 20 s), and an interrupted CLI that is not at rest within min(STALL_SECONDS, 30 s)
# is restarted: 30 s leaves it room.
# Where no stall is played (Gemini CLI, Qwen Code), a long STALL_SECONDS keeps a slow
# restart of the killed CLI on a loaded machine from passing for one.
_STALL_SECONDS = {"opencode": "40", "copilot": "30", "gemini_cli": "60", "qwen_code": "60"}
_STALL_AFTER = {"opencode": 1}
# The programmer's turn the kill lands in (its second prompt: round 1, review cycle 2) is
# slow, so the kill finds it mid-turn; its other turns go at the model's pace.
_KILLED_TURN = frozenset({1})
# The roles the faults hit: the analyst stalls, the programmer is killed.
_FAULTED_ROLES = ("analyst", "programmer")


@pytest.mark.parametrize("provider", list(_STALL_KEYS))
def test_a_stalled_stream_and_a_cli_killed_mid_turn_and_the_loop_passes(
    tmp_path: Path, provider: str
) -> None:
    keys = _STALL_KEYS[provider]
    behaviours = {"programmer": Misbehaviour.SLOW}
    if keys is not None:
        behaviours["analyst"] = Misbehaviour.STALL
    brain = Brain(
        behaviours=behaviours,
        slow_seconds=2.0,
        slow_turns=_KILLED_TURN,
        stall_after=_STALL_AFTER.get(provider, 0),
    )
    project = write_sample_project(tmp_path / "project")
    state_file = project.root / ".tmp" / "codex-3agents-loop-state.json"
    settings = {"CLEANUP_ON_EXIT": "0", "STALL_SECONDS": _STALL_SECONDS.get(provider, "10")}
    with team_server(tmp_path, brain, {provider}) as team:
        killer = _Killer(state_file, brain)
        killer.start()
        try:
            result = run_loop(
                team, project, provider=provider, cli_roles=_FAULTED_ROLES, **settings
            )
        finally:
            killer.stop.set()
            killer.join(timeout=5)
        requests = team.models[provider].turn_requests()
    assert killer.killed, f"the programmer's CLI was never killed: {result.stderr[-3000:]}"
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.tester_verdicts() == ["RESULT: FAIL", "RESULT: PASS"]
    state = json.loads(state_file.read_text(encoding="utf-8"))
    assert state["final_status"] == "PASS"
    # The stall was interrupted and asked again, no restart; the kill restarted the CLI.
    assert state["restarts"] == {"programmer": 1}, result.stderr[-3000:]
    events = list(read_events(Path(state["archive_dir"]) / "events.jsonl"))
    # A restarted CLI that is slow to read its first input on a loaded machine (Gemini CLI
    # resuming: 11 s once) has that prompt interrupted and sent again, a recovery of its
    # own (reason: not taken); the stall steps are the ones the stalled stream caused.
    steps = [
        (e["action"], e["role"])
        for e in events
        if e["event"] == "stall" and e["reason"] != "it did not take the prompt"
    ]
    if keys is not None:
        assert brain.stalls_taken("analyst") == 1  # the stream really stalled once
        assert steps == [("interrupt", "analyst"), ("resend", "analyst")], result.stderr[-3000:]
        assert f"interrupting its turn ({keys})" in result.stderr
    else:
        assert steps == [], result.stderr[-3000:]
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
