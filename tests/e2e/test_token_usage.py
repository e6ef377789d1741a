"""Tokens read from the real CLIs' own records match what the model server reported.

Real Codex and real Claude Code run under a real `baton serve` against the scripted
model servers, which give every response its own usage figures and keep them; after two
turns `GET /terminals/{id}/usage` must report the sum of the conversation's figures. Every
CLI's whole loop counts and prices every turn's tokens (`tests/e2e/loop_checks.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.e2e.clis import require_cli
from tests.e2e.model import anthropic_messages, openai_responses
from tests.e2e.model.brain import Brain
from tests.e2e.record_codex import response_prompt
from tests.support.server import running_baton_server
from tests.support.waiting import poll

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]

_WAIT_SECONDS = 120.0


def _create(client: httpx.Client, provider: str, project: Path) -> str:
    response = client.post(
        "/sessions",
        params={
            "provider": provider,
            "agent_profile": "system_analyst",
            "working_directory": str(project),
        },
    )
    assert response.status_code == 201, response.text
    return response.json()["id"]


def _turn(client: httpx.Client, terminal: str, prompt: str, brain: Brain) -> None:
    response = client.post(f"/terminals/{terminal}/input", json={"message": prompt})
    assert response.status_code == 200, response.text
    status = ""

    def completed() -> bool:
        nonlocal status
        status = client.get(f"/terminals/{terminal}").json()["status"]
        return status == "completed" and not brain.open_turns()

    if not poll(completed, _WAIT_SECONDS, interval=0.2):
        pytest.fail(f"the turn did not complete (last status {status})")


def _usage_after(
    client: httpx.Client, terminal: str, expected: Callable[[], dict[str, int]]
) -> dict[str, Any]:
    """The terminal's usage once it matches (the CLI writes its record a moment after the
    turn ends on screen), else the last reading."""
    usage: dict[str, Any] = {}

    def matches() -> bool:
        nonlocal usage
        usage = client.get(f"/terminals/{terminal}/usage").json()
        counts = {k: usage[k] for k in ("input_tokens", "cached_input_tokens", "output_tokens")}
        return counts == expected()

    poll(matches, 15, interval=0.2)
    return usage


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / ".tmp" / "agent-responses").mkdir(parents=True)
    return project


def test_codex_usage_is_its_rollout_token_count(tmp_path: Path) -> None:
    require_cli("codex")
    project = _project(tmp_path)
    brain = Brain()
    with (
        openai_responses.openai_model_server(brain) as model,
        running_baton_server(
            tmp_path, env=openai_responses.codex_environment(tmp_path, model)
        ) as server,
        server.client() as client,
    ):
        terminal = _create(client, "codex", project)
        _turn(client, terminal, response_prompt(project, "analyst_summary.md", "Analyse."), brain)
        _turn(client, terminal, response_prompt(project, "analyst_summary.md", "Again."), brain)
        usage = _usage_after(client, terminal, model.conversation_usage)

        expected = model.conversation_usage()
        assert expected["input_tokens"] > expected["cached_input_tokens"] > 0
        assert {k: usage[k] for k in expected} == expected
        assert usage["model"] == openai_responses.MODEL_NAME


def test_claude_code_usage_is_its_transcript_usage(tmp_path: Path) -> None:
    require_cli("claude")
    project = _project(tmp_path)
    brain = Brain()
    with (
        anthropic_messages.anthropic_model_server(brain) as model,
        running_baton_server(
            tmp_path, env=anthropic_messages.claude_environment(tmp_path, model)
        ) as server,
        server.client() as client,
    ):
        terminal = _create(client, "claude_code", project)
        _turn(client, terminal, response_prompt(project, "analyst_summary.md", "Analyse."), brain)
        _turn(client, terminal, response_prompt(project, "analyst_summary.md", "Again."), brain)
        usage = _usage_after(client, terminal, model.conversation_usage)

        expected = model.conversation_usage()
        assert expected["input_tokens"] > expected["cached_input_tokens"] > 0
        assert {k: usage[k] for k in expected} == expected
        turn_models = {body["model"] for body in model.turn_requests()}
        assert usage["model"] in turn_models
