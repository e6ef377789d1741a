"""Status events from a real `baton serve`: the SSE stream and the long poll.

The scripted agent is driven through a turn; its status changes must arrive on
`GET /events` as they happen, and `GET /terminals/{id}/status/wait` must return at the
change (not at its timeout).
"""

from __future__ import annotations

import json
import queue
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.server import (
    ServerProcess,
    create_scripted_terminal,
    in_process_server,
    wait_for_status,
)

from baton.server import events_routes

pytestmark = pytest.mark.tmux


class EventReader:
    """Reads `GET /events` in a thread; every data line parsed into `events`."""

    def __init__(self, server: ServerProcess, **params: Any) -> None:
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.comments: list[str] = []
        self._server = server
        self._params = params
        self._client = httpx.Client(base_url=server.base_url, headers=server.headers)
        self._opened = threading.Event()
        self.content_type = ""
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        assert self._opened.wait(10)

    def _read(self) -> None:
        try:
            with self._client.stream(
                "GET", "/events", params=self._params, timeout=httpx.Timeout(5, read=60)
            ) as response:
                self.content_type = response.headers.get("content-type", "")
                self._opened.set()
                for line in response.iter_lines():
                    if line.startswith("data: "):
                        self.events.put(json.loads(line[len("data: ") :]))
                    elif line.startswith(":"):
                        self.comments.append(line)
        except httpx.HTTPError:
            self._opened.set()

    def next(self, timeout: float = 20) -> dict[str, Any]:
        return self.events.get(timeout=timeout)

    def until(self, predicate: Any, timeout: float = 20) -> list[dict[str, Any]]:
        """Events up to and including the first that satisfies `predicate`."""
        seen = []
        deadline = time.monotonic() + timeout
        while True:
            event = self.next(max(0.1, deadline - time.monotonic()))
            seen.append(event)
            if predicate(event):
                return seen

    def close(self) -> None:
        self._client.close()


def test_a_status_change_arrives_on_the_stream(baton_server: ServerProcess, tmp_path: Path) -> None:
    with baton_server.client() as client:
        terminal = create_scripted_terminal(client, tmp_path)
        reader = EventReader(baton_server, terminal_id=terminal["id"])
        try:
            assert reader.content_type.startswith("text/event-stream")
            first = reader.next()
            assert first["kind"] == "status"
            assert first["terminal_id"] == terminal["id"]
            assert first["session_name"] == terminal["session_name"]
            assert first["status"] == "idle"
            assert first["previous_status"] is None
            assert first["at"].endswith("Z")

            sent = client.post(f"/terminals/{terminal['id']}/input", params={"message": "go"})
            assert sent.status_code == 200
            changes = reader.until(lambda e: e.get("status") == "completed")
            statuses = [e["status"] for e in changes]
            assert statuses[0] == "processing"
            assert changes[0]["previous_status"] == "idle"
            assert changes[-1]["previous_status"] == "processing"
            # The event told the truth: the terminal says so too.
            assert client.get(f"/terminals/{terminal['id']}").json()["status"] == "completed"

            assert client.delete(f"/terminals/{terminal['id']}").status_code == 200
            ended = reader.until(lambda e: e["kind"] == "completion")
            assert ended[-1]["terminal_id"] == terminal["id"]
        finally:
            reader.close()


def test_the_stream_filters_by_session_and_announces_launches(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    with baton_server.client() as client:
        first = create_scripted_terminal(client, tmp_path)
        reader = EventReader(baton_server, session_name=first["session_name"])
        try:
            assert reader.next()["terminal_id"] == first["id"]  # its current status
            other = create_scripted_terminal(client, tmp_path)  # another session: not heard
            added = client.post(
                f"/sessions/{first['session_name']}/terminals",
                params={"agent_profile": "tester", "provider": "scripted"},
            ).json()
            events = reader.until(lambda e: e["kind"] == "launch")
            assert events[-1]["terminal_id"] == added["id"]
            assert events[-1]["provider"] == "scripted"
            client.post(f"/terminals/{other['id']}/input", params={"message": "x"})
            client.post(f"/terminals/{added['id']}/input", params={"message": "y"})
            done = reader.until(lambda e: e.get("status") == "completed")
            assert all(e["terminal_id"] != other["id"] for e in events + done)
        finally:
            reader.close()


def test_a_cli_that_exits_is_reported_as_error(baton_server: ServerProcess, tmp_path: Path) -> None:
    with baton_server.client() as client:
        terminal = create_scripted_terminal(client, tmp_path)
        reader = EventReader(baton_server, terminal_id=terminal["id"])
        try:
            assert reader.next()["status"] == "idle"
            assert client.post(f"/terminals/{terminal['id']}/exit").status_code == 200
            events = reader.until(lambda e: e.get("status") == "error")
            assert events[-1]["previous_status"] is not None
        finally:
            reader.close()


def test_long_poll_returns_at_the_change(baton_server: ServerProcess, tmp_path: Path) -> None:
    with baton_server.client() as client:
        terminal = create_scripted_terminal(client, tmp_path)
        url = f"/terminals/{terminal['id']}/status/wait"

        # Already different from `since`: answered at once, the same JSON as GET (but for
        # the seconds since the screen last changed, which grow between the two reads).
        at_once = client.get(url, params={"since": "processing", "timeout": 60})
        assert at_once.status_code == 200
        answered = at_once.json()
        described = client.get(f"/terminals/{terminal['id']}").json()
        assert answered.pop("quiet_seconds", None) is not None
        assert described.pop("quiet_seconds", None) is not None
        assert answered == described

        # Nothing happens: the timeout ends the wait with the current status.
        started = time.monotonic()
        quiet = client.get(url, params={"since": "idle", "timeout": 0.5})
        assert quiet.json()["status"] == "idle"
        assert time.monotonic() - started >= 0.5

        # A change during the wait ends it, long before the timeout.
        answers: queue.Queue[httpx.Response] = queue.Queue()

        def wait() -> None:
            with baton_server.client() as waiter:
                answers.put(waiter.get(url, params={"since": "idle", "timeout": 120}))

        waiting = threading.Thread(target=wait, daemon=True)
        waiting.start()
        time.sleep(0.5)
        assert waiting.is_alive()  # still waiting: nothing changed yet
        client.post(f"/terminals/{terminal['id']}/input", params={"message": "go"})
        answer = answers.get(timeout=30)
        assert answer.status_code == 200
        assert answer.json()["status"] in ("processing", "completed")
        assert wait_for_status(client, terminal["id"], {"completed"}) == "completed"


def test_long_poll_answers_404_and_bounds_its_timeout(baton_server: ServerProcess) -> None:
    with baton_server.client() as client:
        missing = client.get("/terminals/0123abcd/status/wait", params={"timeout": 1})
        assert missing.status_code == 404
        too_long = client.get("/terminals/0123abcd/status/wait", params={"timeout": 301})
        assert too_long.status_code == 422
        assert "timeout" in too_long.json()["detail"]


def test_a_quiet_stream_sends_keep_alive_comments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(events_routes, "KEEP_ALIVE_SECONDS", 0.2)
    with (
        in_process_server(tmp_path / "state") as handle,
        httpx.stream("GET", f"{handle.base_url}/events", timeout=10) as stream,
    ):
        lines = []
        for line in stream.iter_lines():
            lines.append(line)
            if line == ": keep-alive" and len([x for x in lines if x]) >= 2:
                break
        assert [line for line in lines if line] == [": keep-alive", ": keep-alive"]


def test_a_status_event_goes_out_while_the_registry_is_busy(tmp_path: Path) -> None:
    """The watcher publishes a status change before anything is written: with the sqlite
    registry held (a slow commit), the event still arrives; `last_active` follows it."""
    with in_process_server(tmp_path / "state") as handle:
        service = handle.service
        with httpx.Client(base_url=handle.base_url, timeout=60) as client:
            terminal = create_scripted_terminal(client, tmp_path)
            assert wait_for_status(client, terminal["id"], {"idle"}) == "idle"
            record = service.record(terminal["id"])
            before = record.last_active
            published: queue.Queue[str] = queue.Queue()
            publish = service.events.publish

            def recording(event: Any) -> None:
                if event.kind == "status" and event.terminal_id == terminal["id"]:
                    published.put(event.status)
                publish(event)

            service.events.publish = recording  # type: ignore[method-assign]
            with service.registry._lock:  # sqlite busy: every registry call waits
                service.tmux.paste(record.pane, "work please")
                service.tmux.send_keys(record.pane, ["Enter"])
                status = published.get(timeout=30)
            assert status == "processing"
            assert wait_for_status(client, terminal["id"], {"completed"}) == "completed"
            after = service.record(terminal["id"]).last_active
            assert before is not None and after is not None and after > before
