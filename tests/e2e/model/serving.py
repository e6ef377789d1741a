"""Run an ASGI model server on a free 127.0.0.1 port in a background thread."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from starlette.responses import Response
from starlette.types import Receive, Scope, Send
from tests.support.waiting import poll

__all__ = ["StalledStream", "running_app"]

_STARTUP_SECONDS = 15.0


@contextmanager
def running_app(app: object) -> Iterator[str]:
    """Serve `app` for the duration of the block; yields its base URL (`http://127.0.0.1:N`)."""
    config = uvicorn.Config(
        app,  # type: ignore[arg-type]
        host="127.0.0.1",
        port=0,
        log_level="warning",
        lifespan="off",
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="model-server", daemon=True)
    thread.start()
    poll(lambda: server.started or not thread.is_alive(), _STARTUP_SECONDS, interval=0.02)
    if not server.started:
        server.should_exit = True
        raise RuntimeError("the model server did not start")
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


class StalledStream(Response):
    """A stalled model stream: the response head of an event stream, then nothing, until
    the client gives up (or the server stops)."""

    def __init__(self) -> None:
        super().__init__(media_type="text/event-stream")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        while (await receive())["type"] != "http.disconnect":
            pass
