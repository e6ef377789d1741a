"""Exactly once across crashes: SIGKILL `baton run` at every step boundary, then resume.

`BATON_TEST_CRASH_AT=<step>:<n>` makes the n-th arrival at a named boundary (see
`baton.orchestrator.crashpoints`) kill the run with SIGKILL. A plain `baton run` must then
reach the same result as an uninterrupted run: every role asked exactly as often, every
answer archived once, no stray terminal, no temp file, a state file that parses.
"""

from __future__ import annotations

import json
import re
import signal
from collections import Counter

import pytest
from tests.integration.orchestrator.conftest import Project

from baton.orchestrator.crashpoints import CRASH_POINTS

# One uninterrupted run (MAX_ROUNDS=1, the fake's default answers): review cycle 1 is
# REVISE, cycle 2 APPROVED, then the tester passes.
EXPECTED_PROMPTS = {
    "analyst": 2,
    "peer_analyst": 2,
    "programmer": 2,
    "peer_programmer": 2,
    "tester": 1,
}
EXPECTED_ANSWERS = {
    "analyst": 2,
    "analyst_review": 2,
    "programmer": 2,
    "programmer_review": 2,
    "tester": 1,
}

CRASHES = [
    *(f"terminal_created:{n}" for n in (1, 2, 5)),
    *(f"prompt_archived:{n}" for n in (1, 9)),
    *(f"before_send:{n}" for n in (1, 6, 9)),
    *(f"after_send:{n}" for n in (1, 4, 9)),
    *(f"answer_archived:{n}" for n in (1, 5, 9)),
    *(f"state_written:{n}" for n in (1, 3, 8, 20, 23)),
    *(f"state_saved:{n}" for n in (1, 10, 17, 18)),
]


def _answers_archived(project: Project) -> Counter[str]:
    counts: Counter[str] = Counter()
    for path in project.archives():
        match = re.fullmatch(r"\d+-([a-z_]+)\.md", path.name)
        if match:
            counts[match.group(1)] += 1
    return counts


def _prompts_received(project: Project) -> Counter[str]:
    return Counter(role for role, _ in project.cao.inputs())


def test_every_crash_point_is_listed() -> None:
    listed = {case.split(":")[0] for case in CRASHES}
    # agent_restarted is covered by the restart tests
    assert listed == set(CRASH_POINTS) - {"agent_restarted"}


@pytest.mark.parametrize("crash_at", CRASHES)
def test_killed_at_a_step_boundary_then_resumed(project: Project, crash_at: str) -> None:
    killed = project.run(MAX_ROUNDS="1", BATON_TEST_CRASH_AT=crash_at)
    assert killed.returncode == -signal.SIGKILL, killed.stderr  # the crash point was reached

    resumed = project.run(MAX_ROUNDS="1")
    assert resumed.returncode == 0, resumed.stderr
    assert "Traceback" not in resumed.stderr
    state = json.loads(project.state_file.read_text(encoding="utf-8"))
    assert state["final_status"] == "PASS"

    assert _prompts_received(project) == Counter(EXPECTED_PROMPTS)
    assert _answers_archived(project) == Counter(EXPECTED_ANSWERS)
    assert not [p for p in project.archives() if p.name.endswith("-stale.md")]
    live = {t.id for t in project.cao.live_terminals()}
    assert live == set(state["terminals"].values())
    assert len(project.cao.sessions) == 1
    leftovers = [p for p in (project.wd / ".tmp").rglob("*.tmp")]
    assert leftovers == []
