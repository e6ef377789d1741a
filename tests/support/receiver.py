"""A real HTTP receiver on 127.0.0.1 that keeps every request (notification tests)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.support.waiting import poll

__all__ = ["Received", "Receiver", "running_receiver"]


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    url: str
    requests: list[Received] = field(default_factory=list)
    status: int = 200  # what it answers (set 500 to play a broken endpoint)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def received(self, path: str | None = None) -> list[Received]:
        with self._lock:
            return [r for r in self.requests if path is None or r.path == path]

    def wait_for(self, path: str, count: int = 1, timeout: float = 30.0) -> list[Received]:
        """The requests to `path` once there are `count` of them (a test step, not a timing
        assertion)."""
        poll(lambda: len(self.received(path)) >= count, timeout)
        return self.received(path)


@contextmanager
def running_receiver() -> Iterator[Receiver]:
    receiver = Receiver(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {name.lower(): value for name, value in self.headers.items()}
            with receiver._lock:
                receiver.requests.append(Received("POST", self.path, headers, body))
            self.send_response(receiver.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
