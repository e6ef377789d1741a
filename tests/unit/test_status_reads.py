"""`GET /terminals/{id}` from memory: the route's exact answer, or the route itself."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from starlette.responses import Response

from baton.errors import NotFoundError
from baton.server.routes.common import TERMINAL_ID_PATTERN
from baton.server.status_reads import StatusReadMiddleware

DESCRIBED = {"id": "0123abcd", "status": "idle", "name": "w", "metadata": None}


class Source:
    def __init__(self, *, in_memory: bool) -> None:
        self.in_memory = in_memory

    def answers_from_memory(self, terminal_id: str) -> bool:
        return self.in_memory

    def get_terminal(self, terminal_id: str) -> dict[str, Any]:
        if terminal_id != DESCRIBED["id"]:
            raise NotFoundError(f"terminal {terminal_id!r} not found")
        return DESCRIBED


class Route:
    """Stands for the routed app; answers as the route does and counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.calls += 1
        response = Response(json.dumps(DESCRIBED).encode(), media_type="application/json")
        await response(scope, receive, send)


def _get(app: Any, path: str, method: str = "GET") -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "headers": [], "query_string": b""}
    asyncio.run(app(scope, receive, send))
    return sent


def test_a_status_in_memory_is_answered_exactly_as_the_route_answers() -> None:
    route = Route()
    fast = StatusReadMiddleware(
        route, terminals=Source(in_memory=True), id_pattern=TERMINAL_ID_PATTERN
    )
    answered = _get(fast, "/terminals/0123abcd")
    assert route.calls == 0
    assert answered == _get(route, "/terminals/0123abcd")  # same status, headers, body


def test_everything_else_goes_to_the_route() -> None:
    route = Route()
    memory = StatusReadMiddleware(
        route, terminals=Source(in_memory=True), id_pattern=TERMINAL_ID_PATTERN
    )
    tmux = StatusReadMiddleware(
        route, terminals=Source(in_memory=False), id_pattern=TERMINAL_ID_PATTERN
    )
    _get(tmux, "/terminals/0123abcd")  # needs tmux: a worker thread, as routed
    _get(memory, "/terminals/99999999")  # unknown: the route's 404
    _get(memory, "/terminals/0123abcd/output")
    _get(memory, "/terminals/0123ABCD")  # not an id: the route's 422
    _get(memory, "/terminals/0123abcd", method="DELETE")
    assert route.calls == 5
