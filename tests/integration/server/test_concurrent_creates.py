"""Terminals created at once in one session: each CLI's start-up overlaps the others',
and every terminal gets a pane of its own, bound to it."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.server import in_process_server

from baton.server import creation
from baton.server.records import TerminalRecord
from baton.server.startup_slots import StartupSlots

pytestmark = pytest.mark.tmux


def test_four_creates_in_one_session_overlap_and_bind_their_own_panes(tmp_path: Path) -> None:
    with in_process_server(tmp_path / "state") as handle:
        creator = handle.service.creator
        settle = creator.settle
        # Each start-up waits until all four are under way: creates that held one
        # lock through the CLI's start-up would never get there.
        together = threading.Barrier(4, timeout=30)

        def settle_together(record: TerminalRecord) -> None:
            together.wait()
            settle(record)

        params = {"provider": "scripted", "working_directory": str(tmp_path)}
        with httpx.Client(base_url=handle.base_url, timeout=60) as client:
            analyst = {"agent_profile": "system_analyst", **params}
            first = client.post("/sessions", params=analyst)
            assert first.status_code == 201, first.text
            session = first.json()["session_name"]
            creator.settle = settle_together  # type: ignore[method-assign]

            def create(profile: str) -> dict[str, Any]:
                made = client.post(
                    f"/sessions/{session}/terminals",
                    params={"agent_profile": profile, **params},
                )
                assert made.status_code == 201, made.text
                return made.json()

            profiles = ["peer_system_analyst", "programmer", "peer_programmer", "tester"]
            with ThreadPoolExecutor(max_workers=4) as pool:
                made = list(pool.map(create, profiles))
            listed = client.get(f"/sessions/{session}/terminals").json()
        ids = [terminal["id"] for terminal in made]
        assert len(set(ids)) == 4
        assert {item["id"] for item in listed} == {first.json()["id"], *ids}
        panes = set()
        for terminal_id in ids:
            record = handle.service.record(terminal_id)
            bound = handle.service.tmux.run(
                "display-message", "-p", "-t", record.pane_id, "#{@baton_terminal}"
            ).strip()
            assert bound == terminal_id
            panes.add(record.pane_id)
        assert len(panes) == 4


def test_windows_of_one_team_are_made_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No lock is held across tmux's window creation: four creates meet inside it."""
    made_at_once = threading.Barrier(4, timeout=30)
    real = creation.create_window

    def create_window_together(*args: Any, **kwargs: Any) -> Any:
        if not kwargs["new_session"]:
            made_at_once.wait()
        return real(*args, **kwargs)

    monkeypatch.setattr(creation, "create_window", create_window_together)
    with in_process_server(tmp_path / "state") as handle:
        handle.service.creator.startups = StartupSlots(4)
        params = {"provider": "scripted", "working_directory": str(tmp_path)}
        with httpx.Client(base_url=handle.base_url, timeout=60) as client:
            first = client.post("/sessions", params={"agent_profile": "system_analyst", **params})
            assert first.status_code == 201, first.text
            session = first.json()["session_name"]

            def create(profile: str) -> int:
                made = client.post(
                    f"/sessions/{session}/terminals", params={"agent_profile": profile, **params}
                )
                return made.status_code

            profiles = ["peer_system_analyst", "programmer", "peer_programmer", "tester"]
            with ThreadPoolExecutor(max_workers=4) as pool:
                codes = list(pool.map(create, profiles))
    assert codes == [201] * 4
    assert not made_at_once.broken


def test_one_new_session_name_asked_for_twice_at_once_is_made_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = creation.create_window

    def slow_create_window(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.5)  # the other request arrives while this session is being made
        return real(*args, **kwargs)

    monkeypatch.setattr(creation, "create_window", slow_create_window)
    with in_process_server(tmp_path / "state") as handle:
        params = {
            "provider": "scripted",
            "working_directory": str(tmp_path),
            "agent_profile": "system_analyst",
            "session_name": "cao-twice",
        }
        with httpx.Client(base_url=handle.base_url, timeout=60) as client:
            with ThreadPoolExecutor(max_workers=2) as pool:
                answers = list(pool.map(lambda _: client.post("/sessions", params=params), [1, 2]))
            terminals = client.get("/sessions/cao-twice/terminals").json()
    assert sorted(answer.status_code for answer in answers) == [201, 400]
    refused = next(answer for answer in answers if answer.status_code == 400)
    assert "already exists" in refused.text
    assert len(terminals) == 1
