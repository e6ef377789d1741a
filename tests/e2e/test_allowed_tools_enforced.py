"""A profile's `allowedTools` reaches each agent CLI that can enforce it: an agent allowed
only to read and list files is asked by the model to run a shell command, and the CLI
does not run it (the model is told so); an unrestricted agent runs the same command."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.e2e.model.brain import Brain
from tests.e2e.model.cao_tasks import DISOBEY
from tests.e2e.team import team_server
from tests.support.waiting import poll

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]

_WAIT_SECONDS = 120.0
# What each CLI's tool result says when the list kept it from running the command.
_REFUSALS = {
    # Codex has no per-tool switch: its read-only sandbox refuses the write (the model is
    # told to disobey the restriction its instructions state, so the sandbox is tested).
    "codex": re.compile(r"Read-only file system"),
    "claude_code": re.compile(r"No such tool available: Bash"),
    "gemini_cli": re.compile(r'Tool \\"run_shell_command\\" not found'),
    "qwen_code": re.compile(r"run_shell_command.*declined.*deny rule"),
    # Copilot CLI is never offered the shell (`--excluded-tools`), and would refuse it.
    "copilot": re.compile(r"Tool 'bash' does not exist\. Available tools"),
    "opencode": re.compile(r"unavailable tool 'bash'"),
}


def _profiles(directory: Path, provider: str) -> Path:
    directory.mkdir()
    (directory / "reader.md").write_text(
        f"---\nname: reader\ndescription: reads only\nprovider: {provider}\n"
        "allowedTools:\n  - fs_read\n  - fs_list\n---\nYou read code and report.\n"
    )
    (directory / "doer.md").write_text(
        f"---\nname: doer\ndescription: unrestricted\nprovider: {provider}\n---\nYou do it.\n"
    )
    return directory


def _tool_results(body: Any) -> Iterator[str]:
    """Every tool result in one request, whatever API the CLI speaks."""
    items: list[Any] = []
    for key in ("messages", "contents", "input"):
        found = body.get(key) if isinstance(body, dict) else None
        items.extend(found if isinstance(found, list) else [])
    for item in items:
        if not isinstance(item, dict):
            continue
        if item.get("role") == "tool" or item.get("type") == "function_call_output":
            yield json.dumps(item)
        for part in item.get("content") or item.get("parts") or []:
            if isinstance(part, dict) and (
                part.get("type") == "tool_result" or "functionResponse" in part
            ):
                yield json.dumps(part)


def _turn(client: httpx.Client, model: Any, brain: Brain, profile: str, project: Path) -> str:
    """Create an agent with `profile`, ask it to create a marker file with a shell
    command, wait for the turn's end; the tool results the model got back, as text."""
    created = client.post(
        "/sessions", params={"agent_profile": profile, "working_directory": str(project)}
    )
    assert created.status_code == 201, created.text
    terminal = created.json()["id"]
    prompt = f"Run this exact shell command: touch {project / profile}-marker\n{DISOBEY}"
    before = len(model.requests)
    sent = client.post(f"/terminals/{terminal}/input", json={"message": prompt})
    assert sent.status_code == 200, sent.text
    results: list[str] = []

    def answered() -> bool:
        nonlocal results
        status = client.get(f"/terminals/{terminal}").json()["status"]
        results = [text for body in model.requests[before:] for text in _tool_results(body)]
        return bool(results) and status in ("completed", "error") and not brain.open_turns()

    poll(answered, _WAIT_SECONDS, interval=0.2)
    return "\n".join(results)


@pytest.mark.parametrize("provider", sorted(_REFUSALS))
def test_a_read_only_agent_is_refused_the_shell(tmp_path: Path, provider: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    profiles = _profiles(tmp_path / "profiles", provider)
    brain = Brain()
    with (
        team_server(tmp_path, brain, {provider}, profiles_dir=profiles) as team,
        team.server.client() as client,
    ):
        model = team.models[provider]
        refused = _turn(client, model, brain, "reader", project)
        assert not (project / "reader-marker").exists(), refused
        assert _REFUSALS[provider].search(refused), refused
        # The same request from an unrestricted agent runs: the refusal is the list's doing.
        _turn(client, model, brain, "doer", project)
        assert (project / "doer-marker").exists()
