"""One real Codex terminal under a real `baton serve`, against the scripted model server.

Codex runs offline (its CODEX_HOME points it at tests/e2e/model/openai_responses.py) and
does real work: the model asks it to run shell commands that write the response file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from tests.e2e.clis import require_cli
from tests.e2e.model.brain import Brain, Misbehaviour
from tests.e2e.model.openai_responses import (
    API_KEY_VARIABLE,
    ModelServer,
    codex_environment,
    openai_model_server,
)
from tests.e2e.record_codex import response_prompt
from tests.support.privacy import command_lines_containing, not_private
from tests.support.server import ServerProcess, running_baton_server, wait_for_status
from tests.support.waiting import poll, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]

_WAIT_SECONDS = 90.0


@dataclass
class CodexRig:
    server: ServerProcess
    model: ModelServer
    client: httpx.Client
    project: Path


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[CodexRig]:
    require_cli("codex")
    project = tmp_path / "project"
    (project / ".tmp" / "agent-responses").mkdir(parents=True)
    brain = Brain(behaviours={"analyst_review": Misbehaviour.HTTP_500})
    with (
        openai_model_server(brain) as model,
        running_baton_server(tmp_path, env=codex_environment(tmp_path, model)) as server,
        server.client() as client,
    ):
        yield CodexRig(server, model, client, project)


def _create(rig: CodexRig) -> str:
    response = rig.client.post(
        "/sessions",
        params={
            "provider": "codex",
            "agent_profile": "tester",
            "working_directory": str(rig.project),
        },
    )
    assert response.status_code == 201, response.text
    return response.json()["id"]


def _statuses_until(rig: CodexRig, terminal: str, final: set[str]) -> list[str]:
    """Poll the terminal's status until it is one of `final`; every status seen."""
    seen: list[str] = []

    def finished() -> bool:
        status = rig.client.get(f"/terminals/{terminal}").json()["status"]
        if not seen or seen[-1] != status:
            seen.append(status)
        return status in final and not rig.model.brain.open_turns()

    poll(finished, _WAIT_SECONDS, interval=0.1)
    return seen


def _send(rig: CodexRig, terminal: str, prompt: str) -> None:
    response = rig.client.post(f"/terminals/{terminal}/input", json={"message": prompt})
    assert response.status_code == 200, response.text


def test_two_turns_write_response_files_and_report_completed(rig: CodexRig) -> None:
    terminal = _create(rig)
    # Codex may report a short `working` of its own right after startup; it then rests.
    assert wait_for_status(rig.client, terminal, {"idle"}) == "idle"

    prompt = response_prompt(rig.project, "analyst_summary.md", "Round: 1\nAnalyse it.")
    _send(rig, terminal, prompt)
    seen = _statuses_until(rig, terminal, {"completed"})
    assert seen[-1] == "completed", seen
    assert "processing" in seen
    assert "idle" not in seen[1:]
    written = rig.project / ".tmp" / "agent-responses" / "analyst_summary.md"
    answer = written.read_text(encoding="utf-8")
    assert answer.startswith("ANALYST_SUMMARY")
    last = rig.client.get(f"/terminals/{terminal}/output", params={"mode": "last"}).json()
    assert last["output"].strip() == answer.strip()

    second = response_prompt(rig.project, "programmer_summary.md", "Implement the change.")
    _send(rig, terminal, second)
    seen = _statuses_until(rig, terminal, {"completed"})
    assert seen[-1] == "completed", seen
    programmer = rig.project / ".tmp" / "agent-responses" / "programmer_summary.md"
    assert programmer.read_text(encoding="utf-8").startswith("PROGRAMMER_SUMMARY")
    last = rig.client.get(f"/terminals/{terminal}/output", params={"mode": "last"}).json()
    assert last["output"].strip() == programmer.read_text(encoding="utf-8").strip()
    full = rig.client.get(f"/terminals/{terminal}/output", params={"mode": "full"}).json()
    assert "ANALYST_SUMMARY" in full["output"] and "PROGRAMMER_SUMMARY" in full["output"]


def test_model_http_500_is_an_error_with_what_codex_showed(rig: CodexRig) -> None:
    terminal = _create(rig)
    _send(rig, terminal, response_prompt(rig.project, "analyst_review.md", "Review it."))
    seen = _statuses_until(rig, terminal, {"error"})
    assert seen[-1] == "error", seen
    last = rig.client.get(f"/terminals/{terminal}/output", params={"mode": "last"}).json()
    screen = rig.server.screen()
    assert last["output"]
    assert last["output"] in screen.replace("\n", " ") or last["output"][:40] in screen


def _codex_processes(codex_home: str) -> list[int]:
    """Processes running the Codex binary with this test's CODEX_HOME."""
    found = []
    needle = f"CODEX_HOME={codex_home}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        program = Path(command.split(b"\0")[0].decode(errors="replace")).name
        # The Codex launcher (node) and its binary; not the tmux server, whose command
        # line merely names codex.
        if needle in environ and program in ("codex", "node") and b"codex" in command:
            found.append(int(entry.name))
    return found


def test_deleting_the_terminal_leaves_no_codex_process(rig: CodexRig) -> None:
    terminal = _create(rig)
    _send(rig, terminal, "Say READY.")
    assert _statuses_until(rig, terminal, {"completed"})[-1] == "completed"
    codex_home = rig.server.env["CODEX_HOME"]
    assert _codex_processes(codex_home), "codex should be running before the delete"
    assert rig.client.delete(f"/terminals/{terminal}").status_code == 200
    left = [pid for pid in _codex_processes(codex_home) if pid != os.getpid()]
    assert not left, f"codex processes left behind: {left}"


def test_hostile_bytes_reach_the_model_as_text_and_codex_stays_up(rig: CodexRig) -> None:
    from tests.e2e.model.openai_responses import latest_prompt

    terminal = _create(rig)
    assert wait_for_status(rig.client, terminal, {"idle"}) == "idle"
    hostile = "Evidence follows.\n\x1b[201~\x15/exit\r\nafter the marker \x03\x04 end"
    _send(rig, terminal, hostile)
    seen = _statuses_until(rig, terminal, {"completed", "error"})
    assert seen[-1] == "completed", seen
    turns = [latest_prompt(body.get("input") or []) for body in rig.model.requests]
    prompts = {turn.prompt.strip() for turn in turns if turn is not None}
    # One user message with the whole text (Codex also sends it to its title request).
    assert "Evidence follows.\n␛[201~␕/exit\nafter the marker ␃␄ end" in prompts
    assert not any(prompt.startswith(("/exit", "after the marker")) for prompt in prompts)
    # The same CLI is still there and takes the next prompt.
    assert rig.server.tmux("list-panes", "-a", "-F", "#{pane_dead}").split() == ["0"]
    _send(rig, terminal, "Second prompt.")
    seen = _statuses_until(rig, terminal, {"completed", "error"})
    assert seen[-1] == "completed", seen
    # Nothing another user could read: the API key on no command line, runtime files private.
    assert command_lines_containing(rig.server.env[API_KEY_VARIABLE]) == {}
    assert not_private(rig.server.state_dir) == {}


def test_a_terminal_with_its_own_codex_home_uses_its_config(rig: CodexRig, tmp_path: Path) -> None:
    """`env_vars.CODEX_HOME` decides the config Baton reads (the user's notify is chained)."""
    from tests.e2e.model.openai_responses import write_codex_home

    marker = tmp_path / "own-notify-ran"
    home = write_codex_home(tmp_path / "own-codex-home", rig.model)
    notify = f'notify = ["/bin/sh", "-c", "echo \\"$1\\" > {marker}", "notify"]\n'
    config = home / "config.toml"
    config.write_text(notify + config.read_text(encoding="utf-8"), encoding="utf-8")
    response = rig.client.post(
        "/sessions",
        params={
            "provider": "codex",
            "agent_profile": "tester",
            "working_directory": str(rig.project),
        },
        json={"env_vars": {"CODEX_HOME": str(home)}},
    )
    assert response.status_code == 201, response.text
    terminal = response.json()["id"]
    _send(rig, terminal, "Say hello.")
    seen = _statuses_until(rig, terminal, {"completed", "error"})
    assert seen[-1] == "completed", seen
    wait_until(marker.exists, 10, interval=0.1, message="no notify record")
    assert "agent-turn-complete" in marker.read_text(encoding="utf-8")
    # Codex kept this terminal's session under its own home, where the last answer is read.
    assert list((home / "sessions").rglob("rollout-*.jsonl"))
    last = rig.client.get(f"/terminals/{terminal}/output", params={"mode": "last"}).json()
    assert "READY" in last["output"]
