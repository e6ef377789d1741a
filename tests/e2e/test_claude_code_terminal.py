"""One real Claude Code terminal under a real `baton serve`, against the scripted model.

Claude Code runs offline (ANTHROPIC_BASE_URL points it at
tests/e2e/model/anthropic_messages.py, HOME is a throw-away directory) and does real
work: the model asks its Bash tool to write the response file named in the prompt.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from tests.e2e.clis import require_cli
from tests.e2e.model.anthropic_messages import (
    API_KEY,
    ModelServer,
    anthropic_model_server,
    claude_environment,
)
from tests.e2e.model.brain import Brain, Misbehaviour
from tests.support.privacy import command_lines_containing, not_private
from tests.support.server import ServerProcess, running_baton_server
from tests.support.waiting import poll, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]

# A bound so a broken CLI fails the test instead of hanging it; never an assertion.
_WAIT_SECONDS = 120.0


@dataclass
class ClaudeRig:
    server: ServerProcess
    model: ModelServer
    client: httpx.Client
    project: Path


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[ClaudeRig]:
    require_cli("claude")
    project = tmp_path / "project"
    (project / ".tmp" / "agent-responses").mkdir(parents=True)
    brain = Brain(behaviours={"tester": Misbehaviour.HTTP_500}, slow_seconds=1.0)
    with (
        anthropic_model_server(brain) as model,
        running_baton_server(tmp_path, env=claude_environment(tmp_path, model)) as server,
        server.client() as client,
    ):
        yield ClaudeRig(server, model, client, project)


def _prompt(project: Path, role_file: str, round_number: int = 1) -> str:
    target = project / ".tmp" / "agent-responses" / role_file
    return (
        f"Round: {round_number}\nAnalyst review cycle: 1\n"
        "Review the change and report.\n"
        f"RESPONSE FILE INSTRUCTION: write your final answer to {target} "
        "(write a temporary file, then mv it into place)."
    )


def _create(rig: ClaudeRig, profile: str) -> str:
    response = rig.client.post(
        "/sessions",
        params={
            "provider": "claude_code",
            "agent_profile": profile,
            "working_directory": str(rig.project),
        },
    )
    assert response.status_code == 201, response.text
    terminal = response.json()
    assert terminal["status"] == "idle"
    return terminal["id"]


def _send(rig: ClaudeRig, terminal: str, prompt: str) -> None:
    response = rig.client.post(f"/terminals/{terminal}/input", json={"message": prompt})
    assert response.status_code == 200, response.text


def _statuses_until(rig: ClaudeRig, terminal: str, final: set[str]) -> list[str]:
    """Poll until the status is one of `final` with no turn open; every status seen.

    While the model has a turn open, the status must never read as finished.
    """
    seen: list[str] = []

    def finished() -> bool:
        open_before = bool(rig.model.brain.open_turns())
        status = rig.client.get(f"/terminals/{terminal}").json()["status"]
        open_after = bool(rig.model.brain.open_turns())
        if not seen or seen[-1] != status:
            seen.append(status)
        if open_before and open_after:
            assert status in ("processing", "waiting_user_answer"), seen
        return status in final and not open_after

    poll(finished, _WAIT_SECONDS, interval=0.1)
    return seen


def _claude_pids(marker_dir: Path) -> list[int]:
    """Processes running the claude binary whose working directory is under `marker_dir`."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")[0]
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:
            continue
        if b"claude" in command and cwd.is_relative_to(marker_dir):
            pids.append(int(entry.name))
    return pids


def test_two_turns_write_the_file_and_report_the_answer(rig: ClaudeRig) -> None:
    terminal = _create(rig, "system_analyst")
    response_file = rig.project / ".tmp" / "agent-responses" / "analyst_summary.md"

    _send(rig, terminal, _prompt(rig.project, "analyst_summary.md"))
    seen = _statuses_until(rig, terminal, {"completed", "error"})
    assert seen[-1] == "completed", seen
    assert "processing" in seen
    # Written by the CLI's Bash tool, on the model's request.
    assert response_file.read_text(encoding="utf-8").startswith("ANALYST_SUMMARY")
    last = rig.client.get(f"/terminals/{terminal}/output", params={"mode": "last"}).json()
    assert last["output"] == rig.model.answers[-1]
    assert "Round: 1" in last["output"]

    response_file.unlink()
    _send(rig, terminal, _prompt(rig.project, "analyst_summary.md", round_number=2))
    seen = _statuses_until(rig, terminal, {"completed", "error"})
    assert seen[-1] == "completed", seen
    assert "processing" in seen
    assert "Round: 2" in response_file.read_text(encoding="utf-8")
    last = rig.client.get(f"/terminals/{terminal}/output", params={"mode": "last"}).json()
    assert last["output"] == rig.model.answers[-1]
    assert "Round: 2" in last["output"]
    assert [record.closed is not None for record in rig.model.brain.timeline] == [True, True]


def test_a_long_multiline_prompt_arrives_whole(rig: ClaudeRig) -> None:
    terminal = _create(rig, "system_analyst")
    context = "".join(f"Context line {n}: keep it.\n" for n in range(300))
    _send(rig, terminal, context + _prompt(rig.project, "analyst_summary.md"))
    seen = _statuses_until(rig, terminal, {"completed", "error"})
    assert seen[-1] == "completed", seen
    sent = [body for body in rig.model.turn_requests() if body.get("messages")]
    text = str(sent[-1]["messages"])
    assert "Context line 0: keep it." in text and "Context line 299: keep it." in text


def test_model_http_500_ends_in_error(rig: ClaudeRig) -> None:
    terminal = _create(rig, "tester")
    _send(rig, terminal, _prompt(rig.project, "test_result.md"))
    seen = _statuses_until(rig, terminal, {"error"})
    assert seen[-1] == "error", seen
    assert not (rig.project / ".tmp" / "agent-responses" / "test_result.md").exists()
    full = rig.client.get(f"/terminals/{terminal}/output", params={"mode": "full"}).json()
    assert "API Error: 500" in full["output"]


def test_deleting_the_terminal_leaves_no_claude_behind(rig: ClaudeRig) -> None:
    terminal = _create(rig, "system_analyst")
    _send(rig, terminal, _prompt(rig.project, "analyst_summary.md"))
    assert _statuses_until(rig, terminal, {"completed"})[-1] == "completed"
    assert _claude_pids(rig.project)
    assert rig.client.delete(f"/terminals/{terminal}").json() == {"success": True}
    assert _claude_pids(rig.project) == []
    assert rig.client.get(f"/terminals/{terminal}").status_code == 404


def test_exit_keys_quit_the_cli(rig: ClaudeRig) -> None:
    terminal = _create(rig, "system_analyst")
    assert rig.client.post(f"/terminals/{terminal}/exit").json() == {"success": True}

    def status() -> str:
        return str(rig.client.get(f"/terminals/{terminal}").json()["status"])

    # The CLI exited: its pane is dead.
    wait_until(lambda: status() == "error", _WAIT_SECONDS, interval=0.1, message="no error")
    assert _claude_pids(rig.project) == []


def test_hostile_bytes_reach_the_model_as_text_and_claude_stays_up(rig: ClaudeRig) -> None:
    from tests.e2e.model.anthropic_messages import latest_prompt

    terminal = _create(rig, "system_analyst")
    hostile = "Evidence follows.\n\x1b[201~\x15/exit\r\nafter the marker \x03\x04 end"
    _send(rig, terminal, hostile)
    seen = _statuses_until(rig, terminal, {"completed", "error"})
    assert seen[-1] == "completed", seen
    prompt, _, _ = latest_prompt(rig.model.turn_requests()[-1]["messages"])
    assert prompt.strip() == "Evidence follows.\n␛[201~␕/exit\nafter the marker ␃␄ end"
    # The same CLI is still there and takes the next prompt.
    assert rig.server.tmux("list-panes", "-a", "-F", "#{pane_dead}").split() == ["0"]
    _send(rig, terminal, "Second prompt.")
    seen = _statuses_until(rig, terminal, {"completed", "error"})
    assert seen[-1] == "completed", seen
    # Nothing another user could read: the API key on no command line, runtime files private.
    assert command_lines_containing(API_KEY) == {}
    assert not_private(rig.server.state_dir) == {}
