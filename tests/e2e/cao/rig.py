"""One rig for the CAO-client tests: scripted model, `baton serve`, a Codex supervisor."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from tests.e2e.cao.clients import CaoClients, require_cao
from tests.e2e.clis import require_cli
from tests.e2e.model.brain import Brain
from tests.e2e.model.openai_responses import ModelServer, codex_environment, openai_model_server
from tests.support.server import ServerProcess, running_baton_server

__all__ = ["WAIT_SECONDS", "CaoRig", "cao_rig", "response_prompt"]

WAIT_SECONDS = 120.0


@dataclass
class CaoRig:
    server: ServerProcess
    model: ModelServer
    client: httpx.Client
    project: Path
    cao: CaoClients

    def response_file(self, name: str) -> Path:
        return self.project / ".tmp" / "agent-responses" / name

    def create_codex(self, agent_profile: str = "programmer") -> dict:
        """A Codex terminal made through Baton's API: the supervisor CAO's tools act for."""
        response = self.client.post(
            "/sessions",
            params={
                "agent_profile": agent_profile,
                "provider": "codex",
                "working_directory": str(self.project),
            },
        )
        assert response.status_code == 201, response.text
        return response.json()


def response_prompt(project: Path, role_file: str, text: str) -> str:
    """A prompt that names a response file, so the scripted model plays that role."""
    path = project / ".tmp" / "agent-responses" / role_file
    return f"{text}\n\nRESPONSE FILE INSTRUCTION: write your final answer to {path}"


@contextmanager
def cao_rig(tmp_path: Path) -> Iterator[CaoRig]:
    """Everything running for one test, and nothing left afterwards."""
    require_cli("codex")
    require_cao()
    project = tmp_path / "project"
    (project / ".tmp" / "agent-responses").mkdir(parents=True)
    home = tmp_path / "cao-home"
    home.mkdir()
    # CAO's data (its agent store, where `cao install` writes) is shared by both sides.
    cao_data = ("CAO_HOME_DIR", str(tmp_path / "cao-data"))
    with (
        openai_model_server(Brain()) as model,
        running_baton_server(
            tmp_path, env={**codex_environment(tmp_path, model), cao_data[0]: cao_data[1]}
        ) as server,
        server.client() as client,
    ):
        clients = CaoClients(port=server.port, home=home, extra_env=(cao_data,))
        yield CaoRig(server, model, client, project, clients)
