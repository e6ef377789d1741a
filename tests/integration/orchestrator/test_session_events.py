"""A run hears its own session's status events from `baton serve`, not every run's.

With many runs on one server (a batch), each would otherwise read every other run's
events, and the server send them: work that grows with the square of the runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.server import ServerProcess, wait_for_status
from tests.support.waiting import wait_until

from baton.orchestrator.client import ApiClient
from baton.orchestrator.watchers import ChangeWatcher, StatusFeed

pytestmark = pytest.mark.tmux


def _session(http: httpx.Client, directory: Path) -> dict[str, Any]:
    created = http.post(
        "/sessions",
        params={
            "agent_profile": "system_analyst",
            "provider": "scripted",
            "working_directory": str(directory),
        },
    )
    assert created.status_code in (200, 201), created.text
    found: dict[str, Any] = created.json()
    return found


def _answered(http: httpx.Client, terminal: str) -> None:
    sent = http.post(f"/terminals/{terminal}/input", json={"message": "say hello"})
    assert sent.status_code == 200, sent.text
    assert wait_for_status(http, terminal, {"completed"}) == "completed"


def test_a_run_hears_only_its_own_sessions_status_events(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    responses = tmp_path / ".tmp" / "agent-responses"
    responses.mkdir(parents=True)
    with baton_server.client() as http:
        mine, other = _session(http, tmp_path), _session(http, tmp_path)
        token = baton_server.env.get("BATON_TOKEN")
        with (
            ApiClient(baton_server.base_url, provider="scripted", token=token) as api,
            ChangeWatcher(responses, api, mine["session_name"]) as watcher,
        ):
            assert watcher.start(probe_seconds=10) is StatusFeed.SSE
            assert watcher.latest_status(mine["id"]) == "idle"
            assert watcher.latest_status(other["id"]) is None  # not in the first snapshot
            _answered(http, other["id"])
            # The server sends events in order: once this one is heard, the other
            # session's would have been too, had they been sent.
            _answered(http, mine["id"])
            wait_until(lambda: watcher.latest_status(mine["id"]) == "completed", 10)
            assert watcher.latest_status(other["id"]) is None
            # A replaced agent in a new session: the watcher follows it there.
            watcher.follow_session(other["session_name"])
            wait_until(
                lambda: watcher.latest_status(other["id"]) == "completed",
                10,
                message="the new session's events never came",
            )
