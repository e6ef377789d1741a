"""What the cockpit's pages are told about runs, read from files a run wrote (no server).

A run is read again on every request: a whole run gives its summary, agents and timeline;
a missing or torn state file is one line; a state file another session now uses says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.integration.cockpit.crafted_run import write_run

from baton.web.batches import BatchDirectory
from baton.web.runs import Announcement, RunDirectory
from baton.web.views import CockpitViews


class _NoTerminals:
    """A registry that knows no terminal: the run's agents are not on this server."""

    def get_terminal(self, terminal_id: str) -> None:
        return None

    def sessions(self) -> list[Any]:
        return []


class _Service:
    registry = _NoTerminals()


def _views(tmp_path: Path) -> CockpitViews:
    runs = RunDirectory(tmp_path / "runs")
    return CockpitViews(
        runs=runs,
        batches=BatchDirectory(tmp_path / "batches", runs),
        service=_Service(),  # type: ignore[arg-type]
    )


def _announce(views: CockpitViews, session: str, state_file: Path) -> None:
    views.runs.announce(Announcement.from_body(session, {"state_file": str(state_file)}))


def test_a_run_is_read_from_its_state_file_and_record(tmp_path: Path) -> None:
    state_path = write_run(tmp_path)
    views = _views(tmp_path)
    session = json.loads(state_path.read_text())["session_name"]
    _announce(views, session, state_path)

    run = views.run(session)
    summary = run["summary"]
    assert summary["outcome"] == "PASS" and summary["moved_on_to"] is None
    assert summary["tokens"]["cost_usd"] is not None and summary["tokens"]["total"] > 0
    assert [v["verdict"] for v in summary["verdicts"]] == ["PASS"]
    assert [a["role"] for a in run["agents"]] == [
        "analyst",
        "peer_analyst",
        "programmer",
        "peer_programmer",
        "tester",
    ]
    assert all(not agent["on_this_server"] for agent in run["agents"])
    assert any(turn["waits"] for turn in run["turns"])
    kinds = [event["event"] for event in run["timeline"]]
    assert kinds[0] == "run_start" and "waiting" in kinds and "verdict" in kinds
    assert views.overview()["runs"][0]["session"] == session


def test_a_missing_or_torn_state_file_is_one_line(tmp_path: Path) -> None:
    views = _views(tmp_path)
    _announce(views, "gone", tmp_path / "missing.json")
    torn = tmp_path / "torn.json"
    torn.write_text('{"current_round": 1, "termi')
    _announce(views, "torn", torn)
    for session in ("gone", "torn"):
        summary = views.run(session)["summary"]
        assert summary["problem"].startswith("cannot read ")
    assert {run["session"] for run in views.overview()["runs"]} == {"gone", "torn"}


def test_a_state_file_now_used_by_another_session_says_so(tmp_path: Path) -> None:
    state_path = write_run(tmp_path)
    views = _views(tmp_path)
    _announce(views, "baton-old", state_path)
    current = json.loads(state_path.read_text())["session_name"]
    assert current != "baton-old"
    assert views.run("baton-old")["summary"]["moved_on_to"] == current
