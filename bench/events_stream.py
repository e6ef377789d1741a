"""What the bench scripts share: a free port, and a listener for a terminal's `completed`.

`CompletedListener` subscribes to `GET /events` for one terminal, returns once the
subscription is live (the snapshot event has arrived), and notes the moment the
terminal's status turns `completed`.
"""

from __future__ import annotations

import json
import socket
import threading
import time

import httpx

__all__ = ["CompletedListener", "free_port"]


def free_port() -> int:
    """A port on 127.0.0.1 nobody listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class CompletedListener:
    """The `perf_counter()` time at which a terminal's `completed` event arrived, if it did."""

    def __init__(self, base_url: str, terminal_id: str, *, timeout: float = 120) -> None:
        self.arrived_at: float | None = None
        self._ready = threading.Event()
        self._url = base_url + "/events"
        self._params = {"terminal_id": terminal_id}
        self._timeout = timeout
        self._thread = threading.Thread(target=self._listen, daemon=True)
        self._thread.start()
        self._ready.wait(10)

    def _listen(self) -> None:
        with httpx.stream("GET", self._url, params=self._params, timeout=self._timeout) as stream:
            for line in stream.iter_lines():
                if not line.startswith("data: "):
                    continue
                event = json.loads(line[6:])
                if event.get("previous_status") is None:  # the snapshot: subscribed
                    self._ready.set()
                elif event.get("status") == "completed":
                    self.arrived_at = time.perf_counter()
                    return

    def join(self, timeout: float) -> float | None:
        """Wait up to `timeout` seconds for the event; its arrival time, or None."""
        self._thread.join(timeout)
        return self.arrived_at
