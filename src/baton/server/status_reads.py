"""`GET /terminals/{id}` answered straight from memory, before FastAPI's routing.

It is the call every client polls, many times a second under a batch. Routed, most of its
CPU went to the framework (exception and exit-stack layers, route matching, dependency
solving) rather than to the answer, which the live screen model already holds. This
middleware sits inside the safety checks (`LocalOnlyMiddleware`, the token), so it sees
only requests they let through, and answers exactly what the route answers: same body,
same headers. Anything else (another path, a status that needs tmux, an unknown terminal)
goes on to the route as before.
"""

from __future__ import annotations

import json
import re
from typing import Protocol

from starlette.types import ASGIApp, Receive, Scope, Send

from baton.wire import TerminalJSON

__all__ = ["StatusReadMiddleware"]


class StatusSource(Protocol):
    """What the middleware reads: `TerminalService` has both."""

    def answers_from_memory(self, terminal_id: str) -> bool: ...

    def get_terminal(self, terminal_id: str) -> TerminalJSON: ...


class StatusReadMiddleware:
    """Pure ASGI: `GET /terminals/{id}` from memory when it can be, else the app."""

    def __init__(self, app: ASGIApp, *, terminals: StatusSource, id_pattern: str) -> None:
        self.app = app
        self.terminals = terminals
        self._path = re.compile(r"/terminals/(" + id_pattern.strip("^$") + r")")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = self._answer(scope) if scope["type"] == "http" else None
        if body is None:
            await self.app(scope, receive, send)
            return
        headers = [
            (b"content-length", str(len(body)).encode("latin-1")),
            (b"content-type", b"application/json"),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def _answer(self, scope: Scope) -> bytes | None:
        """The route's body when memory has the answer; None to let the route answer."""
        if scope["method"] != "GET":
            return None
        found = self._path.fullmatch(scope["path"])
        if found is None:
            return None
        terminal_id = found.group(1)
        try:
            if not self.terminals.answers_from_memory(terminal_id):
                return None
            return json.dumps(self.terminals.get_terminal(terminal_id)).encode()
        except Exception:  # the route words any error (404, 409, 500) as it always has
            return None
