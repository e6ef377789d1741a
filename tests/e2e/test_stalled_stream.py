"""A model stream that stalls again after its interrupt: the real Codex is restarted, PASS.

The scripted model server accepts the analyst's first two requests and never sends a byte
(Misbehaviour.STALL). `baton run` interrupts the first (Esc) and sends the prompt again;
when that one stalls too, it restarts the CLI, and the loop runs to its real FAIL-then-PASS
end (the other four roles the scripted agent: the stalls are the analyst's). A single
stall, interrupted and asked again, is held for every CLI in the loops of
`test_agent_restart.py`.
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


def test_a_stream_that_stalls_again_gets_its_codex_restarted(tmp_path: Path) -> None:
    brain = Brain(behaviours={"analyst": Misbehaviour.STALL}, stall_times=2)
    project = write_sample_project(tmp_path / "project")
    with team_server(tmp_path, brain, {"codex"}) as team:
        result = run_loop(
            team, project, provider="codex", cli_roles=("analyst",), STALL_SECONDS="10"
        )
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
