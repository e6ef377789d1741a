"""Tokens and budgets end to end: `baton run` against `baton serve` and the scripted agent.

The scripted agent counts one token per four UTF-8 bytes of each message and answer and
keeps the sum in its usage file; the server reports it at `/terminals/{id}/usage`, and
the orchestrator records each turn's share as a `tokens` event.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.support.receiver import running_receiver
from tests.support.run_env import scripted_run_env
from tests.support.server import ServerProcess

from baton.demo.sample import SampleProject, write_sample_project
from baton.orchestrator.events import read_events
from baton.scripted_agent.usage import estimate_tokens

pytestmark = pytest.mark.tmux


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "baton", "run", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _env(server: ServerProcess, project: SampleProject, **extra: str) -> dict[str, str]:
    return scripted_run_env(server.base_url, project, **{"CLEANUP_ON_EXIT": None, **extra})


def _events(project: SampleProject) -> list[dict[str, Any]]:
    (log,) = (project.root / ".tmp").glob("2*/events.jsonl")
    return list(read_events(log))


def _state(project: SampleProject) -> dict[str, Any]:
    path = project.root / ".tmp" / "codex-3agents-loop-state.json"
    return json.loads(path.read_text(encoding="utf-8"))


def test_token_budget_stops_between_turns_and_resumes(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    project = write_sample_project(tmp_path / "project")
    budget = 1500
    with running_receiver() as receiver:
        notify = {"NTFY_URL": receiver.url, "NTFY_TOPIC": "loop", "WEBHOOK_URL": receiver.url}
        first = _run(_env(baton_server, project, MAX_TOKENS=str(budget), **notify))
        told_budget = [json.loads(r.body) for r in receiver.received("/")]
        events = _events(project)
        state = _state(project)
        # Run again without raising it: it stops at once, sending nothing.
        again = _run(_env(baton_server, project, MAX_TOKENS=str(budget), **notify))
        told_budget = [json.loads(r.body) for r in receiver.received("/")]
        sent_again = [e for e in _events(project) if e["event"] == "prompt_sent"]
        second = _run(
            _env(baton_server, project, MAX_TOKENS=str(budget * 100), CLEANUP_ON_EXIT="1", **notify)
        )
        told_pass = [json.loads(r.body) for r in receiver.received("/")][len(told_budget) :]
        ntfy = receiver.received("/loop")

    assert first.returncode == 1, first.stderr
    tokens = [e for e in events if e["event"] == "tokens"]
    prompts = [e for e in events if e["event"] == "prompt_sent"]
    # Every turn was counted, and each turn's input is what the agent received.
    assert len(tokens) == len(prompts) >= 1
    for sent, used in zip(prompts, tokens, strict=True):
        text = Path(sent["file"]).read_text(encoding="utf-8")
        assert used["input_tokens"] == estimate_tokens(text)
        assert used["output_tokens"] > 0
        assert (used["role"], used["round"], used["phase"]) == (
            sent["role"],
            sent["round"],
            sent["phase"],
        )
        assert used["model"] == "scripted"
    # It stopped at the first turn boundary where the budget was used up, not later.
    totals = [
        sum(t["input_tokens"] + t["output_tokens"] for t in tokens[: i + 1])
        for i in range(len(tokens))
    ]
    assert totals[-1] >= budget
    assert all(total < budget for total in totals[:-1])
    lines = [line for line in first.stderr.splitlines() if line.startswith("baton: budget")]
    assert lines == [
        f"baton: budget MAX_TOKENS={budget} reached: the agents used {totals[-1]} tokens; "
        "raise it and resume the run to continue"
    ]
    assert "; raise MAX_TOKENS, then resume with: cd " in first.stderr
    (budget_event,) = [e for e in events if e["event"] == "budget"]
    assert budget_event["budget"] == "MAX_TOKENS"
    assert budget_event["spent"] == totals[-1]
    assert state["final_status"] == "RUNNING"
    assert state["awaiting"] is None
    assert again.returncode == 1, again.stderr
    assert f"budget MAX_TOKENS={budget} reached" in again.stderr
    assert len(sent_again) == len(prompts)
    # The person was told, with the same line, each time.
    assert [p["event"] for p in told_budget] == ["budget", "budget"]
    assert told_budget[0]["message"] == lines[0].removeprefix("baton: ")
    assert told_budget[0]["state_file"] == str(project.root / ".tmp/codex-3agents-loop-state.json")

    # Raised budget: the same run continues to its PASS, counting on from its record.
    assert second.returncode == 0, second.stderr
    assert [p["event"] for p in told_pass] == ["pass"]
    assert [r.headers["title"] for r in ntfy] == ["Baton: budget reached"] * 2 + [
        "Baton: RESULT: PASS"
    ]
    assert "RESULT: PASS" in second.stderr
    events = _events(project)
    assert [e["event"] for e in events].count("run_resume") == 2
    tokens = [e for e in events if e["event"] == "tokens"]
    prompts = [e for e in events if e["event"] == "prompt_sent"]
    assert len(tokens) == len(prompts) > len(totals)
    for sent, used in zip(prompts, tokens, strict=True):
        text = Path(sent["file"]).read_text(encoding="utf-8")
        assert used["input_tokens"] == estimate_tokens(text)


def test_cost_budget_uses_the_configured_prices(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    project = write_sample_project(tmp_path / "project")
    config = tmp_path / "baton.json"
    prices = {"scripted": {"input_per_mtok": 1000, "output_per_mtok": 4000}}
    config.write_text(json.dumps({"prices": prices, "limits": {"max_cost_usd": 0.5}}))
    completed = _run(_env(baton_server, project, CLEANUP_ON_EXIT="1"), str(config))

    assert completed.returncode == 1, completed.stderr
    tokens = [e for e in _events(project) if e["event"] == "tokens"]
    costs = []
    for used in tokens:
        expected = (used["input_tokens"] * 1000 + used["output_tokens"] * 4000) / 1_000_000
        assert used["cost_usd"] == pytest.approx(expected)
        costs.append(expected)
    assert sum(costs) >= 0.5 > sum(costs[:-1])
    assert f"budget MAX_COST_USD=0.5 reached: the agents used ${sum(costs):.4f}" in completed.stderr
    assert _state(project)["final_status"] == "RUNNING"
