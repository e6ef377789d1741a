"""A replaced agent whose session is gone goes in a new one, and the run hears of it."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from baton.errors import ApiHttpError
from baton.orchestrator.config import Settings
from baton.orchestrator.restarts import AgentRestarter
from baton.orchestrator.runlog import RunLog
from baton.orchestrator.state import RunState
from baton.roles import ROLE_BY_TERMINAL

PROMPT = "*** ORIGINAL EXPLORE SUMMARY ***\nexplore\n*** SCENARIO TEST ***\nscenario\n"


class GoneSession:
    """A server that cannot restart terminals and no longer knows the run's session."""

    def __init__(self) -> None:
        self.created: list[str] = []

    def restart_terminal(self, terminal_id: str) -> dict[str, Any]:
        raise ApiHttpError("POST", f"/terminals/{terminal_id}/restart", 404, "Not Found")

    def delete_terminal(self, terminal_id: str) -> None:
        raise ApiHttpError("DELETE", f"/terminals/{terminal_id}", 404, "Not Found")

    def create_terminal(self, session_name: str, profile: str, **_: object) -> dict[str, Any]:
        raise ApiHttpError("POST", f"/sessions/{session_name}/terminals", 404, "Not Found")

    def create_session(self, profile: str, **_: object) -> dict[str, Any]:
        self.created.append(profile)
        return {"id": "new1", "session_name": "cao-new"}


def test_a_replacement_in_a_new_session_is_announced(tmp_path: Path) -> None:
    settings = Settings(wd=tmp_path, prompt=PROMPT, agent_restarts=2)
    state = RunState(wd=str(tmp_path), prompt=PROMPT, terminals={k: k for k in ROLE_BY_TERMINAL})
    state.session_name = "cao-old"
    api: Any = GoneSession()
    restarter = AgentRestarter(api, settings, state, RunLog(io.StringIO()))
    followed: list[str] = []
    restarter.on_new_session = followed.append
    assert restarter.bring_back("tester", reason="exited") == "new1"
    assert state.session_name == "cao-new"
    assert followed == ["cao-new"]
    assert api.created == [settings.profile_for("tester")]
