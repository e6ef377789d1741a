"""`baton run` rides out a `baton serve` killed with SIGKILL and restarted on the same port.

Real tmux, real `baton serve`, the scripted agent. The private tmux server keeps the
agents running while the API is gone; the restarted server adopts their terminals from
its registry. Whatever the moment of the kill, the run reaches PASS in the same process,
every prompt is typed exactly once (the archive's prompts against what the scripted
agents received), and the team is exactly five terminals.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.run_env import scripted_run_env
from tests.support.server import ServerProcess, running_baton_server, wait_for_status
from tests.support.waiting import wait_until

from baton.demo.sample import SampleProject, write_sample_project
from baton.orchestrator.client import ApiClient
from baton.orchestrator.watchers import StatusEvents, StatusFeed

pytestmark = pytest.mark.tmux

_DOWN_SECONDS = 8.0


@dataclass
class Run:
    """A `baton run` subprocess against `server`, and where it leaves its traces."""

    server: ServerProcess
    project: SampleProject
    process: subprocess.Popen[bytes]
    stderr_path: Path

    @property
    def state_file(self) -> Path:
        return self.project.root / ".tmp" / "codex-3agents-loop-state.json"

    def state(self) -> dict[str, Any]:
        try:
            return dict(json.loads(self.state_file.read_text()))
        except (OSError, ValueError):
            return {}

    def log(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def events(self) -> list[dict[str, Any]]:
        lines = []
        for path in (self.project.root / ".tmp").glob("2*/events.jsonl"):
            lines += [json.loads(line) for line in path.read_text().splitlines() if line]
        return lines

    def prompts(self) -> list[str]:
        """Every prompt the run archived (`NNN-<role>-prompt.md`), in order."""
        paths = sorted((self.project.root / ".tmp").glob("2*/*-prompt.md"))
        return [path.read_text() for path in paths]

    def received(self) -> dict[str, list[str]]:
        """What each scripted agent received, per terminal, in order."""
        found: dict[str, list[str]] = {}
        for directory in sorted((self.server.state_dir / "terminals").glob("*/inputs")):
            messages = [path.read_text() for path in sorted(directory.glob("*.txt"))]
            found[directory.parent.name] = messages
        return found


@contextmanager
def _run(tmp_path: Path, server: ServerProcess, **settings: str) -> Iterator[Run]:
    project = write_sample_project(tmp_path / "project")
    env = scripted_run_env(server.base_url, project, **{"CLEANUP_ON_EXIT": "0", **settings})
    stderr_path = tmp_path / "run.stderr"
    with stderr_path.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "baton", "run"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )
    try:
        yield Run(server, project, process, stderr_path)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def _outage(server: ServerProcess, seconds: float = _DOWN_SECONDS) -> None:
    """SIGKILL `baton serve`, leave it down `seconds`, start it again on the same port."""
    port = server.port
    server.kill()
    time.sleep(seconds)
    server.start(port=port)


def _working(run: Run, role: str) -> bool:
    """The run is waiting for the answer `role` (an output key) and its agent is at work."""
    awaiting = run.state().get("awaiting") or {}
    if awaiting.get("role") != role:
        return False
    try:
        with httpx.Client(base_url=run.server.base_url, timeout=5) as client:
            status = client.get(f"/terminals/{awaiting['terminal_id']}").json()["status"]
    except (httpx.HTTPError, ValueError, KeyError):
        return False
    return bool(status == "processing")


def _all_terminals(server: ServerProcess) -> list[str]:
    with server.client() as client:
        sessions = client.get("/sessions").json()
        ids = []
        for session in sessions:
            name = session.get("name") or session.get("id")
            terminals = client.get(f"/sessions/{name}/terminals").json()
            ids += [terminal["id"] for terminal in terminals]
        return ids


def _assert_passed_with_every_prompt_typed_once(run: Run) -> None:
    assert run.process.wait(timeout=300) == 0, run.log()
    state = run.state()
    assert state["final_status"] == "PASS"
    prompts = run.prompts()
    received = run.received()
    typed = [message for messages in received.values() for message in messages]
    assert len(typed) == len(prompts), (len(typed), len(prompts), run.log())
    for messages in received.values():  # no message typed twice in a row into one agent
        assert all(a != b for a, b in itertools.pairwise(messages)), run.log()
    assert sorted(_all_terminals(run.server)) == sorted(state["terminals"].values())
    assert len(set(state["terminals"].values())) == 5
    assert state.get("restarts", {}) == {}  # no agent was taken for dead


def _outage_events(run: Run) -> list[str]:
    names = ("server_down", "server_still_down", "server_back")
    return [event["event"] for event in run.events() if event["event"] in names]


def test_server_killed_mid_turn_for_eight_seconds(tmp_path: Path) -> None:
    with (
        running_baton_server(
            tmp_path, env={"BATON_SCRIPTED_WORK_SECONDS": "programmer=3"}
        ) as server,
        _run(tmp_path, server) as run,
    ):
        wait_until(lambda: _working(run, "programmer"), timeout=120)
        _outage(server)
        _assert_passed_with_every_prompt_typed_once(run)
        log = run.log()
        assert log.count("not answering; waiting up to 10m00s") >= 1, log
        assert "answering again after" in log, log
        events = _outage_events(run)
        assert events and set(events) == {"server_down", "server_back"}
        assert events.count("server_down") == events.count("server_back")


def test_server_killed_twice_in_a_row(tmp_path: Path) -> None:
    with (
        running_baton_server(
            tmp_path, env={"BATON_SCRIPTED_WORK_SECONDS": "analyst_review=3"}
        ) as server,
        _run(tmp_path, server) as run,
    ):
        wait_until(lambda: _working(run, "analyst_review"), timeout=120)
        time.sleep(1.0)  # the prompt is in: the run is waiting for the answer
        _outage(server, 3.0)
        _outage(server, 3.0)
        _assert_passed_with_every_prompt_typed_once(run)


def test_server_killed_while_the_team_is_created(tmp_path: Path) -> None:
    with (
        running_baton_server(tmp_path) as server,
        _run(tmp_path, server) as run,
    ):
        wait_until(
            lambda: 1 <= len([t for t in run.state().get("terminals", {}).values() if t]) < 5,
            interval=0.01,
            timeout=120,
        )
        _outage(server)
        _assert_passed_with_every_prompt_typed_once(run)


def test_a_repeated_input_key_is_typed_once_across_a_restart(tmp_path: Path) -> None:
    with running_baton_server(tmp_path) as server:
        with server.client() as client:
            created = client.post(
                "/sessions",
                params={
                    "provider": "scripted",
                    "agent_profile": "tester",
                    "working_directory": str(tmp_path),
                },
            ).json()
            terminal = created["id"]
            headers = {"Idempotency-Key": "send-1"}
            first = client.post(
                f"/terminals/{terminal}/input", params={"message": "hello"}, headers=headers
            )
            assert first.status_code == 200
            wait_for_status(client, terminal, {"completed"})
        _outage(server, 0.5)
        with server.client() as client:
            again = client.post(
                f"/terminals/{terminal}/input", params={"message": "hello"}, headers=headers
            )
            assert again.status_code == 200 and again.json() == first.json()
            assert again.headers["Idempotency-Status"] == "replayed"
            fresh = client.post(f"/terminals/{terminal}/input", params={"message": "bye"})
            assert fresh.status_code == 200
        inputs = server.state_dir / "terminals" / terminal / "inputs"
        wait_until(lambda: len(list(inputs.glob("*.txt"))) >= 2, timeout=30)
        assert [path.read_text() for path in sorted(inputs.glob("*.txt"))] == ["hello", "bye"]


def test_the_status_stream_comes_back_after_a_restart(tmp_path: Path) -> None:
    with (
        running_baton_server(tmp_path, env={"BATON_SCRIPTED_WORK_SECONDS": "1"}) as server,
        server.client() as client,
    ):
        params = {"provider": "scripted", "agent_profile": "tester"}
        terminal = client.post(
            "/sessions", params={**params, "working_directory": str(tmp_path)}
        ).json()["id"]
        wait_for_status(client, terminal, {"idle", "completed"})
        rang = threading.Event()
        with ApiClient(server.base_url) as api:
            events = StatusEvents(api, rang.set)
            try:
                assert events.start(probe_seconds=10.0) is StatusFeed.SSE
                _outage(server, 2.0)
                rang.clear()
                wait_until(lambda: events.live, timeout=30)  # connected again, by itself
                client.post(f"/terminals/{terminal}/input", params={"message": "hello"})
                wait_until(lambda: events.latest(terminal) == "completed", timeout=30)
                assert rang.is_set()
            finally:
                events.close()


def test_past_the_window_the_run_stops_in_one_line_and_resumes_later(tmp_path: Path) -> None:
    with (
        running_baton_server(tmp_path, env={"BATON_SCRIPTED_WORK_SECONDS": "analyst=3"}) as server,
        _run(tmp_path, server, SERVER_OUTAGE_SECONDS="2") as run,
    ):
        wait_until(lambda: _working(run, "analyst"), timeout=120)
        port = server.port
        server.kill()
        assert run.process.wait(timeout=120) == 1
        errors = [line for line in run.log().splitlines() if "error:" in line]
        assert len(errors) == 1 and server.base_url in errors[0], run.log()
        assert "waiting up to 2.0s" in run.log() or "waiting up to 2s" in run.log(), run.log()
        assert run.state()["final_status"] == "RUNNING"
        server.start(port=port)
        env = scripted_run_env(server.base_url, run.project, CLEANUP_ON_EXIT="0")
        again = subprocess.run(
            [sys.executable, "-m", "baton", "run"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert again.returncode == 0, again.stderr
        assert run.state()["final_status"] == "PASS"


def test_a_run_stopped_while_its_server_is_away_does_not_sit_out_the_window(
    tmp_path: Path,
) -> None:
    """SIGTERM during an outage: the state is saved, and the exit's clean-up gives up on the
    absent server after a few seconds instead of the whole SERVER_OUTAGE_SECONDS."""
    with (
        running_baton_server(tmp_path, env={"BATON_SCRIPTED_WORK_SECONDS": "analyst=3"}) as server,
        _run(tmp_path, server, CLEANUP_ON_EXIT="1") as run,
    ):
        wait_until(lambda: _working(run, "analyst"), timeout=120)
        server.kill()
        wait_until(lambda: "not answering; waiting up to 10m00s" in run.log(), timeout=60)
        run.process.send_signal(signal.SIGTERM)
        assert run.process.wait(timeout=120) == 143, run.log()
        assert "could not exit analyst terminal" in run.log()
        assert run.state()["final_status"] == "RUNNING"
        assert "; resume with: cd " in run.log()
