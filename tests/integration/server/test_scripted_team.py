"""Five scripted agents in one session do the demo's two rounds for real over HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from tests.support.server import ServerProcess, wait_for_status

from baton.demo.sample import write_sample_project
from baton.roles import ROLES

pytestmark = pytest.mark.tmux


def _ask(client: httpx.Client, terminal: str, prompt: str, response: Path) -> str:
    """Send a prompt that names `response`; wait for the agent to rest; read the file."""
    sent = client.post(f"/terminals/{terminal}/input", json={"message": prompt})
    assert sent.status_code == 200, sent.text
    assert wait_for_status(client, terminal, {"completed", "error"}) == "completed"
    return response.read_text()


def test_two_rounds_fail_then_pass(baton_server: ServerProcess, tmp_path: Path) -> None:
    project = write_sample_project(tmp_path / "project")
    responses = project.root / ".tmp" / "agent-responses"
    files = {role.terminal_key: responses / role.response_file for role in ROLES}

    def instruction(key: str) -> str:
        return f"\nRESPONSE FILE INSTRUCTION\nWrite your final answer to {files[key]}\n"

    with baton_server.client() as client:
        terminals: dict[str, str] = {}
        first = ROLES[0]
        created = client.post(
            "/sessions",
            params={
                "agent_profile": first.profile,
                "provider": "scripted",
                "working_directory": str(project.root),
            },
        ).json()
        terminals[first.terminal_key] = created["id"]
        for role in ROLES[1:]:
            terminal = client.post(
                f"/sessions/{created['session_name']}/terminals",
                params={"agent_profile": role.profile, "provider": "scripted"},
            ).json()
            assert terminal["status"] == "idle"
            terminals[role.terminal_key] = terminal["id"]

        verdicts = []
        for round_number in (1, 2):
            analyst = _ask(
                client,
                terminals["analyst"],
                f"*** ORIGINAL EXPLORE SUMMARY ***\n{project.prompt()}\n"
                f"Round: {round_number}\nAnalyst review cycle: 1" + instruction("analyst"),
                files["analyst"],
            )
            assert f"Round: {round_number}" in analyst
            review = _ask(
                client,
                terminals["peer_analyst"],
                f"{analyst}\nAnalyst review cycle: 2" + instruction("peer_analyst"),
                files["peer_analyst"],
            )
            assert review.startswith("REVIEW_RESULT: APPROVED")
            summary = _ask(
                client,
                terminals["programmer"],
                f"{analyst}\nProgrammer review cycle: 1" + instruction("programmer"),
                files["programmer"],
            )
            assert "- stats/median.py" in summary
            verdicts.append(
                _ask(
                    client,
                    terminals["tester"],
                    f"*** SCENARIO TEST ***\n{project.prompt()}\n{summary}" + instruction("tester"),
                    files["tester"],
                )
            )
        last = client.get(f"/terminals/{terminals['tester']}/output", params={"mode": "last"})
    assert verdicts[0].startswith("RESULT: FAIL\nEVIDENCE:")
    assert "exit code: 1" in verdicts[0]
    assert verdicts[1].startswith("RESULT: PASS\nEVIDENCE:")
    # The screen keeps no trailing spaces; otherwise the last answer is the file's text.
    expected = "\n".join(line.rstrip() for line in verdicts[1].rstrip("\n").split("\n"))
    assert last.json()["output"] == expected
    scenario = json.loads(project.scenario_file.read_text())
    fixed = scenario["patches"][1]["files"]["stats/median.py"]
    assert (project.root / "stats" / "median.py").read_text() == fixed
