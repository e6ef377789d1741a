"""`Idempotency-Key`: a POST repeated with the same key is answered, not done again.

A client that lost the answer to a write (the server restarted, the connection broke)
sends it again with the key it used the first time. The first outcome is kept in the
registry (sqlite, so it survives a restart of the server) and every repeat gets it back
with `Idempotency-Status: replayed`: a prompt is typed once, a terminal created once. A
repeat that arrives while the first is still under way waits for its outcome. A key
whose first request was cut off by the server's own death has no outcome to give: the
repeat is answered 409 with `Idempotency-Status: interrupted`, and the client checks
what happened instead of trusting either answer. 5xx outcomes are not kept unless the work
had gone past undoing (below).

The work behind a route may say, once what it did cannot be undone, what a repeat should
be told should the server die before the answer (`outcome_if_cut_off`): the input route
does so once the message is submitted, so a prompt typed just before the server was
killed is answered as typed, not as interrupted.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from baton.errors import StorageFullError
from baton.server.registry import Registry

__all__ = ["IDEMPOTENCY_HEADER", "STATUS_HEADER", "IdempotencyMiddleware", "outcome_if_cut_off"]

IDEMPOTENCY_HEADER = "idempotency-key"
STATUS_HEADER = "idempotency-status"
_MAX_KEY_CHARS = 200
# Set while a keyed request runs: keeps the outcome a repeat gets if the server dies.
_CUT_OFF: ContextVar[Callable[[int, dict[str, Any]], None] | None] = ContextVar(
    "idempotency_cut_off", default=None
)


def outcome_if_cut_off(status_code: int, data: dict[str, Any]) -> None:
    """The request's work is done past undoing: a repeat after the server's death gets this.

    A no-op outside a request with an `Idempotency-Key` (and in any other thread).
    """
    keep = _CUT_OFF.get()
    if keep is not None:
        keep(status_code, data)


class IdempotencyMiddleware:
    """Pure ASGI middleware over every POST that carries an `Idempotency-Key` header."""

    def __init__(self, app: ASGIApp, *, registry: Registry) -> None:
        self.app = app
        self.registry = registry
        self.boot = secrets.token_hex(8)  # this server process; a key of another one was cut off
        self._running: dict[str, asyncio.Event] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        header = _header(scope) if scope["type"] == "http" and scope["method"] == "POST" else None
        if header is None:
            await self.app(scope, receive, send)
            return
        if not header or len(header) > _MAX_KEY_CHARS:
            await _answer(
                send, 400, {"detail": f"Idempotency-Key must be 1-{_MAX_KEY_CHARS} chars"}
            )
            return
        key = f"{scope['method']} {scope['path']} {header}"
        while (running := self._running.get(key)) is not None:
            await running.wait()  # the same key under way in this process: wait for it
        try:
            earlier = self.registry.claim_key(key, self.boot)
        except StorageFullError as error:
            # Answered here: raised out of a middleware, it would be answered and then the
            # connection dropped under the client's next request (see routes/errors.py).
            await _answer(send, error.status_code, {"detail": error.detail()})
            return
        if earlier is not None:
            await self._repeat(send, earlier)
            return
        self._running[key] = asyncio.Event()
        try:
            await self._first(scope, receive, send, key)
        finally:
            self._running.pop(key).set()

    async def _first(self, scope: Scope, receive: Receive, send: Send, key: str) -> None:
        """Run the request and keep its outcome (status, content type, body) for repeats."""
        start: dict[str, Any] = {}
        chunks: list[bytes] = []
        provisional: list[int] = []

        def keep(status_code: int, data: dict[str, Any]) -> None:
            body = json.dumps(data).encode("utf-8")
            self.registry.finish_key(key, status_code, "application/json", body)
            provisional.append(status_code)

        async def capture(message: Message) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
            await send(message)

        token = _CUT_OFF.set(keep)
        try:
            await self.app(scope, receive, capture)
        except Exception:
            if not provisional:
                self.registry.release_key(key)  # nothing done: a repeat may try again
            raise  # (a cancelled request stays under way: a restart makes it "interrupted")
        finally:
            _CUT_OFF.reset(token)
        status = int(start.get("status", 500))
        if status >= 500 and not provisional:
            self.registry.release_key(key)  # nothing done that a repeat would double
            return
        content_type = "application/json"
        for name, value in start.get("headers", ()):
            if name.lower() == b"content-type":
                content_type = value.decode("latin-1")
        self.registry.finish_key(key, status, content_type, b"".join(chunks))

    async def _repeat(self, send: Send, earlier: dict[str, Any]) -> None:
        if earlier.get("status_code") is None:
            detail = (
                "an earlier request with this Idempotency-Key was cut off when the server "
                "stopped; its outcome is unknown"
            )
            await _answer(send, 409, {"detail": detail}, status="interrupted")
            return
        body = bytes(earlier.get("body") or b"")
        headers = [
            (b"content-type", str(earlier.get("content_type") or "application/json").encode()),
            (b"content-length", str(len(body)).encode()),
            (STATUS_HEADER.encode(), b"replayed"),
        ]
        await send(
            {"type": "http.response.start", "status": earlier["status_code"], "headers": headers}
        )
        await send({"type": "http.response.body", "body": body})


def _header(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name.lower() == IDEMPOTENCY_HEADER.encode():
            return str(value.decode("latin-1")).strip()
    return None


async def _answer(send: Send, status_code: int, data: Any, *, status: str = "") -> None:
    body = json.dumps(data).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status:
        headers.append((STATUS_HEADER.encode(), status.encode()))
    await send({"type": "http.response.start", "status": status_code, "headers": headers})
    await send({"type": "http.response.body", "body": body})
