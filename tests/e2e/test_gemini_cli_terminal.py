"""One real Gemini CLI terminal under a `baton serve` that runs in a CI job.

Gemini CLI 0.61 runs headless whenever `CI` or `GITHUB_ACTIONS` is "true", even with a
terminal on stdin and stdout: it wants its prompt on stdin, prints "No input provided
via stdin" and exits at launch. A server started by a CI job passes that environment
to every pane, so the provider must keep the CLI interactive there. Here the server's
environment says so explicitly, whatever the shell running the tests says.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.e2e.clis import require_cli
from tests.e2e.model.brain import Brain
from tests.e2e.model.gemini_api import gemini_environment, gemini_model_server
from tests.support.server import running_baton_server
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]

# A bound so a broken CLI fails the test instead of hanging it; never an assertion.
_WAIT_SECONDS = 120.0


@pytest.mark.parametrize("variable", ["CI", "GITHUB_ACTIONS"])
def test_a_ci_job_environment_leaves_the_cli_interactive(tmp_path: Path, variable: str) -> None:
    require_cli("gemini")
    project = tmp_path / "project"
    responses = project / ".tmp" / "agent-responses"
    responses.mkdir(parents=True)
    target = responses / "analyst_summary.md"
    prompt = (
        "Round: 1\nAnalyst review cycle: 1\nReview the change and report.\n"
        f"RESPONSE FILE INSTRUCTION: write your final answer to {target} "
        "(write a temporary file, then mv it into place)."
    )
    with (
        gemini_model_server(Brain()) as model,
        running_baton_server(
            tmp_path, env={**gemini_environment(tmp_path, model), variable: "true"}
        ) as server,
        server.client() as client,
    ):
        created = client.post(
            "/sessions",
            params={
                "provider": "gemini_cli",
                "agent_profile": "system_analyst",
                "working_directory": str(project),
            },
        )
        assert created.status_code == 201, created.text
        terminal = created.json()
        pane_log = server.state_dir / "terminals" / terminal["id"] / "pane.log"
        shown = pane_log.read_text(encoding="utf-8", errors="replace")
        assert "No input provided via stdin" not in shown
        assert terminal["status"] == "idle", shown[-2000:]

        sent = client.post(f"/terminals/{terminal['id']}/input", json={"message": prompt})
        assert sent.status_code == 200, sent.text

        def finished() -> str | None:
            status = client.get(f"/terminals/{terminal['id']}").json()["status"]
            return status if status in ("completed", "error") else None

        status = wait_until(finished, _WAIT_SECONDS, interval=0.2, message="no turn ended")
        assert status == "completed"
        # Written by the CLI's own tool call, on the scripted model's request.
        assert target.read_text(encoding="utf-8").startswith("ANALYST_SUMMARY")
        assert model.turn_requests()
