"""A profile's `allowedTools` reaches Claude Code: an agent allowed only to read is
asked by the model to run a shell command, and the CLI refuses to run it."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest
from tests.e2e.clis import require_cli
from tests.e2e.model.anthropic_messages import (
    ModelServer,
    anthropic_model_server,
    claude_environment,
)
from tests.e2e.model.brain import Brain
from tests.support.server import running_baton_server

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]

_WAIT_SECONDS = 120.0


def _profiles(directory: Path) -> Path:
    directory.mkdir()
    (directory / "reader.md").write_text(
        "---\nname: reader\ndescription: reads only\nprovider: claude_code\n"
        "allowedTools:\n  - fs_read\n  - fs_list\n---\nYou read code and report.\n"
    )
    (directory / "doer.md").write_text(
        "---\nname: doer\ndescription: unrestricted\nprovider: claude_code\n---\nYou do it.\n"
    )
    return directory


def _turn(client: httpx.Client, model: ModelServer, profile: str, project: Path) -> str:
    """Create an agent with `profile`, ask for the response file, wait for the turn's end;
    the tool results the model got back, as text."""
    created = client.post(
        "/sessions", params={"agent_profile": profile, "working_directory": str(project)}
    )
    assert created.status_code == 201, created.text
    terminal = created.json()["id"]
    answer = project / ".tmp" / "agent-responses" / "analyst_summary.md"
    prompt = (
        "Round: 1\nSummarise the project.\n"
        f"RESPONSE FILE INSTRUCTION: write your final answer to {answer}"
    )
    before = len(model.turn_requests())
    sent = client.post(f"/terminals/{terminal}/input", json={"message": prompt})
    assert sent.status_code == 200, sent.text
    deadline = time.monotonic() + _WAIT_SECONDS
    while time.monotonic() < deadline:
        status = client.get(f"/terminals/{terminal}").json()["status"]
        started = len(model.turn_requests()) > before
        if started and status in ("completed", "error") and not model.brain.open_turns():
            break
        time.sleep(0.2)
    results = []
    for body in model.turn_requests()[before:]:
        for message in body.get("messages", []):
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                if block.get("type") == "tool_result":
                    results.append(json.dumps(block))
    return "\n".join(results)


def test_a_read_only_agent_is_refused_the_shell(tmp_path: Path) -> None:
    require_cli("claude")
    project = tmp_path / "project"
    responses = project / ".tmp" / "agent-responses"
    responses.mkdir(parents=True)
    profiles = _profiles(tmp_path / "profiles")
    with (
        anthropic_model_server(Brain()) as model,
        running_baton_server(
            tmp_path, env=claude_environment(tmp_path, model), profiles_dir=profiles
        ) as server,
        server.client() as client,
    ):
        refused = _turn(client, model, "reader", project)
        assert not (responses / "analyst_summary.md").exists()
        assert '"is_error": true' in refused, refused
        assert "Bash" in refused, refused  # the CLI names the tool it will not run
        # The same request from an unrestricted agent runs: the refusal is the list's doing.
        _turn(client, model, "doer", project)
        assert (responses / "analyst_summary.md").exists()
