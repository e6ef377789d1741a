"""Terminals created at once in one session: each CLI's start-up overlaps the others',
and every terminal gets a pane of its own, bound to it."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.server import in_process_server

from baton.server.records import TerminalRecord

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
