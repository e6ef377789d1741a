"""A stalled model stream under the real CLIs: the turn is interrupted, asked again, PASS.

The scripted model server accepts the analyst's first request and never sends a byte
(Misbehaviour.STALL), the way a hung model stream leaves Codex, Claude Code, Copilot CLI or
OpenCode busy with only its spinner turning. With a short STALL_SECONDS, `baton run` must see
no progress in `baton serve`'s `quiet_seconds`, press the CLI's interrupt key (Esc; Ctrl-C
for Copilot CLI), send the prompt again, and run the loop to its real FAIL-then-PASS end.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.e2e.model.brain import Brain, Misbehaviour
from tests.e2e.team import run_loop, team_server

from baton.demo.sample import write_sample_project
from baton.orchestrator.events import read_events

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]


# OpenCode's first prompt in a process loads its model providers before the first request
# leaves: 10 to 25 s without a change on screen on a loaded machine, a stall by a 10 s
# measure (interrupted, its prompt sent again, that first request is the one that stalls).
_STALL_SECONDS = {"codex": "10", "claude_code": "10", "copilot": "10", "opencode": "40"}


@pytest.mark.parametrize(
    ("provider", "keys"),
    [("codex", "Escape"), ("claude_code", "Escape"), ("copilot", "C-c"), ("opencode", "Escape")],
)
def test_a_stalled_stream_is_interrupted_and_the_loop_passes(
    tmp_path: Path, provider: str, keys: str
) -> None:
    brain = Brain(behaviours={"analyst": Misbehaviour.STALL})
    project = write_sample_project(tmp_path / "project")
    with team_server(tmp_path, brain, {provider}) as team:
        result = run_loop(team, project, provider=provider, STALL_SECONDS=_STALL_SECONDS[provider])
    assert result.returncode == 0, result.stderr[-3000:]
    assert brain.stalls_taken("analyst") == 1  # the stream really stalled once
    assert result.tester_verdicts() == ["RESULT: FAIL", "RESULT: PASS"]
    state = json.loads((project.root / ".tmp" / "codex-3agents-loop-state.json").read_text())
    assert state["final_status"] == "PASS"
    assert not state.get("restarts")
    events = list(read_events(Path(state["archive_dir"]) / "events.jsonl"))
    steps = [(e["action"], e["role"]) for e in events if e["event"] == "stall"]
    assert steps == [("interrupt", "analyst"), ("resend", "analyst")], result.stderr[-3000:]
    assert f"interrupting its turn ({keys})" in result.stderr


def test_a_stream_that_stalls_again_gets_its_codex_restarted(tmp_path: Path) -> None:
    brain = Brain(behaviours={"analyst": Misbehaviour.STALL}, stall_times=2)
    project = write_sample_project(tmp_path / "project")
    with team_server(tmp_path, brain, {"codex"}) as team:
        result = run_loop(team, project, provider="codex", STALL_SECONDS="10")
    assert result.returncode == 0, result.stderr[-3000:]
    assert brain.stalls_taken("analyst") == 2
    state = json.loads((project.root / ".tmp" / "codex-3agents-loop-state.json").read_text())
    assert state["final_status"] == "PASS"
    assert state["restarts"] == {"analyst": 1}
    events = list(read_events(Path(state["archive_dir"]) / "events.jsonl"))
    steps = [e["action"] for e in events if e["event"] == "stall"]
    assert steps == ["interrupt", "resend", "restart"], result.stderr[-3000:]
    [restart] = [e for e in events if e["event"] == "agent_restart"]
    assert (restart["cause"], restart["how"]) == ("stall", "restarted")
