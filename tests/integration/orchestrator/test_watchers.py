"""ChangeWatcher for real: inotify on a real directory, status events over real HTTP.

A small server on 127.0.0.1 plays the three kinds of server the contract allows: one with
the `GET /events` stream, one with only the long-poll, and one with neither (404, as a
stock `cao-server`), plus one whose `/events` carries other content (noise).
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from tests.support.waiting import wait_until

from baton.orchestrator.client import ApiClient
from baton.orchestrator.watchers import ChangeWatcher, StatusFeed, Wake


class StatusServer:
    """Statuses per terminal; `set()` changes one and tells every listener."""

    def __init__(self, *, sse: bool, long_poll: bool, noise: bool = False) -> None:
        self.sse, self.long_poll, self.noise = sse, long_poll, noise
        self.statuses: dict[str, str] = {"t1": "idle"}
        self.changed = threading.Condition()
        self.listeners: list[queue.Queue[dict[str, object]]] = []
        self.stopping = threading.Event()
        self.dropping = threading.Event()  # end every open /events stream
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                if url.path == "/events" and (owner.sse or owner.noise):
                    self._stream()
                elif url.path.endswith("/status/wait") and owner.long_poll:
                    terminal = url.path.split("/")[2]
                    query = parse_qs(url.query)
                    self._long_poll(terminal, query["since"][0], float(query["timeout"][0]))
                else:
                    self._json(404, {"detail": "Not Found"})

            def _json(self, code: int, body: dict[str, object]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _long_poll(self, terminal: str, since: str, timeout: float) -> None:
                deadline = time.monotonic() + timeout
                with owner.changed:
                    while owner.statuses[terminal] == since and not owner.stopping.is_set():
                        left = deadline - time.monotonic()
                        if left <= 0:
                            break
                        owner.changed.wait(min(left, 0.1))
                    status = owner.statuses[terminal]
                self._json(200, {"id": terminal, "status": status})

            def _stream(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                inbox: queue.Queue[dict[str, object]] = queue.Queue()
                if owner.noise:  # CAO-style fleet events: lifecycle kinds, never "status"
                    self._send({"type": "terminal_output", "data": "hello"})
                    for kind in ("launch", "completion"):
                        event = _status_event("t1", "completed", None)
                        self._send({**event, "kind": kind})
                else:
                    for terminal, status in owner.statuses.items():
                        self._send(_status_event(terminal, status, None))
                owner.listeners.append(inbox)
                while not owner.stopping.is_set():
                    if owner.dropping.is_set():
                        self.close_connection = True
                        return
                    try:
                        event = inbox.get(timeout=0.1)
                    except queue.Empty:
                        continue
                    if not owner.noise:
                        self._send(event)

            def _send(self, event: dict[str, object]) -> None:
                self.wfile.write(f": keep-alive\n\ndata: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def set(self, terminal: str, status: str) -> None:
        with self.changed:
            previous = self.statuses.get(terminal)
            self.statuses[terminal] = status
            self.changed.notify_all()
        for inbox in list(self.listeners):
            inbox.put(_status_event(terminal, status, previous))

    def close(self) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def _status_event(terminal: str, status: str, previous: str | None) -> dict[str, object]:
    return {
        "kind": "status",
        "terminal_id": terminal,
        "session_name": "s",
        "status": status,
        "previous_status": previous,
        "at": "2026-01-01T00:00:00Z",
    }


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[StatusServer]:
    sse, long_poll, noise = request.param
    status_server = StatusServer(sse=sse, long_poll=long_poll, noise=noise)
    yield status_server
    status_server.close()


def _watcher(tmp_path: Path, server: StatusServer) -> tuple[ChangeWatcher, ApiClient, Path]:
    directory = tmp_path / ".tmp" / "agent-responses"
    directory.mkdir(parents=True)
    client = ApiClient(server.url)
    return ChangeWatcher(directory, client), client, directory


def _later(seconds: float, action: object) -> None:
    def run() -> None:
        time.sleep(seconds)
        action()  # type: ignore[operator]

    threading.Thread(target=run, daemon=True).start()


@pytest.mark.parametrize(
    ("server", "feed"),
    [
        ((True, True, False), StatusFeed.SSE),
        ((False, True, False), StatusFeed.LONG_POLL),
        ((False, False, False), StatusFeed.NONE),
        ((False, False, True), StatusFeed.NONE),
    ],
    indirect=["server"],
    ids=["sse", "long-poll", "none", "noise-on-events"],
)
def test_a_renamed_response_file_wakes_the_wait(
    tmp_path: Path, server: StatusServer, feed: StatusFeed
) -> None:
    watcher, client, directory = _watcher(tmp_path, server)
    with watcher, client:
        found = watcher.start(probe_seconds=1.0)
        # The first wait takes the status the stream starts with (or, for a server without
        # events, tries the long-poll, whose 404 turns it off).
        watcher.wait("t1", "idle", directory / "x.md", 0.3)
        if feed is StatusFeed.NONE:
            assert found in (StatusFeed.LONG_POLL, StatusFeed.NONE)
            assert watcher.feed is not StatusFeed.SSE
        else:
            assert found is feed
        target = directory / "analyst_summary.md"

        def write() -> None:
            temporary = directory / ".analyst_summary.partial"
            temporary.write_text("answer")
            os.replace(temporary, target)

        _later(0.2, write)
        assert watcher.wait("t1", "processing", target, 30) is Wake.FILE


def test_a_file_written_in_place_wakes_when_closed(tmp_path: Path) -> None:
    server = StatusServer(sse=False, long_poll=False)
    try:
        watcher, client, directory = _watcher(tmp_path, server)
        with watcher, client:
            target = directory / "test_result.md"
            _later(0.2, lambda: target.write_text("RESULT: PASS"))
            assert watcher.wait("t1", "processing", target, 30) is Wake.FILE
    finally:
        server.close()


def test_another_roles_file_does_not_end_the_wait(tmp_path: Path) -> None:
    server = StatusServer(sse=False, long_poll=False)
    try:
        watcher, client, directory = _watcher(tmp_path, server)
        with watcher, client:
            (directory / "programmer_summary.md").write_text("not the tester's")
            started = time.monotonic()
            assert watcher.wait("t1", "processing", directory / "test_result.md", 0.3) is None
            assert time.monotonic() - started >= 0.3
    finally:
        server.close()


@pytest.mark.parametrize(
    "server", [(True, False, False), (False, True, False)], indirect=True, ids=["sse", "long-poll"]
)
def test_a_status_change_wakes_the_wait(tmp_path: Path, server: StatusServer) -> None:
    server.statuses["t1"] = "processing"
    watcher, client, directory = _watcher(tmp_path, server)
    with watcher, client:
        watcher.start(probe_seconds=1.0)
        path = directory / "analyst_summary.md"
        watcher.wait("t1", "processing", path, 0.2)  # the status it starts from
        _later(0.2, lambda: server.set("t1", "completed"))
        assert watcher.wait("t1", "processing", path, 30) is Wake.STATUS
        # The stream's word is as fresh as a read; a long-poll answer may not be.
        expected = "completed" if server.sse else None
        assert watcher.latest_status("t1") == expected
        # Moved on from what the caller last read: taken; from anything else: read afresh.
        assert watcher.status_after("t1", "processing") == expected
        assert watcher.status_after("t1", "idle") is None
        # Nothing more changes: the next wait runs to its timeout.
        assert watcher.wait("t1", "completed", path, 0.3) is None


def test_without_status_events_a_status_change_does_not_wake(tmp_path: Path) -> None:
    server = StatusServer(sse=False, long_poll=False)
    try:
        server.statuses["t1"] = "processing"
        watcher, client, directory = _watcher(tmp_path, server)
        with watcher, client:
            assert watcher.start(probe_seconds=0.5) is StatusFeed.LONG_POLL
            _later(0.1, lambda: server.set("t1", "completed"))
            assert watcher.wait("t1", "processing", directory / "a.md", 0.5) is None
            assert watcher.feed is not StatusFeed.SSE
    finally:
        server.close()


def test_a_dropped_stream_is_not_taken_for_the_current_status(tmp_path: Path) -> None:
    server = StatusServer(sse=True, long_poll=False)
    try:
        watcher, client, _ = _watcher(tmp_path, server)
        with watcher, client:
            assert watcher.start(probe_seconds=1.0) is StatusFeed.SSE
            assert watcher.latest_status("t1") == "idle"
            server.dropping.set()
            # The caller reads the status itself.
            wait_until(lambda: watcher.latest_status("t1") is None, 10, message="still live")
    finally:
        server.close()
