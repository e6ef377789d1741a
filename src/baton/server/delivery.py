"""The one path from an API message to a pane: checked, neutralised, pasted, submitted.

Every provider's input goes through `MessageDelivery`, so no provider can forget a step:
a blank message is refused (422) and an oversized one too (413) before anything is
typed; the text is neutralised (`baton.delivery.neutralize`) so no byte of it reaches
the CLI as a key; it is pasted as one bracketed paste; then the provider's own submit
keys follow, once the paste shows on screen (`baton.server.sending`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from baton.delivery import DEFAULT_MAX_MESSAGE_BYTES, is_blank, message_size, neutralize
from baton.errors import ConfigError, EmptyMessageError, MessageTooLargeError
from baton.providers.base import Provider
from baton.server.tmux import PaneRef, TmuxServer

__all__ = [
    "MAX_MESSAGE_BYTES_VARIABLE",
    "BodySizeLimitMiddleware",
    "MessageDelivery",
    "PreparedMessage",
    "body_limit_for",
    "message_limit_from",
    "parse_message_limit",
]

MAX_MESSAGE_BYTES_VARIABLE = "BATON_MAX_MESSAGE_BYTES"


def parse_message_limit(raw: str, *, name: str = MAX_MESSAGE_BYTES_VARIABLE) -> int:
    """A positive byte count; one line naming `name` otherwise."""
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigError(f"{name} must be a whole number of bytes, got {raw!r}") from None
    if value <= 0:
        raise ConfigError(f"{name} must be greater than 0, got {raw!r}")
    return value


def message_limit_from(environ: Mapping[str, str]) -> int:
    """BATON_MAX_MESSAGE_BYTES from `environ`, else the default limit."""
    raw = environ.get(MAX_MESSAGE_BYTES_VARIABLE)
    return parse_message_limit(raw) if raw else DEFAULT_MAX_MESSAGE_BYTES


@dataclass(frozen=True)
class PreparedMessage:
    """A message that passed the checks; `text` is neutralised and safe to paste."""

    text: str


class MessageDelivery:
    """Check, neutralise, paste and submit messages into panes of one tmux server."""

    def __init__(self, tmux: TmuxServer, *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES):
        self.tmux = tmux
        self.max_message_bytes = max_message_bytes

    def prepare(self, message: str) -> PreparedMessage:
        """Refuse a blank or oversized message; neutralise the rest."""
        if is_blank(message):
            raise EmptyMessageError("the message is empty: there is nothing to submit")
        size = message_size(message)
        if size > self.max_message_bytes:
            raise MessageTooLargeError(
                f"the message is {size} bytes, over the limit of {self.max_message_bytes} "
                "(baton serve --max-message-bytes)"
            )
        return PreparedMessage(neutralize(message))

    def paste(self, pane: PaneRef, message: PreparedMessage) -> None:
        """Paste the text as one bracketed paste (the caller waits for it to show)."""
        self.tmux.paste(pane, message.text)

    def submit(self, pane: PaneRef, provider: Provider) -> None:
        """Press the provider's submit keys (the only keys a message ever causes)."""
        self.tmux.send_keys(pane, provider.submit_keys)


def body_limit_for(max_message_bytes: int) -> int:
    """The largest request body that can carry a message within the limit.

    JSON may spell one byte as six (`\\u001b`); the rest of a body is small.
    """
    return 6 * max_message_bytes + 64 * 1024


class BodySizeLimitMiddleware:
    """Answer 413 to a request body no valid message fits in, before it is held whole.

    The exact limit is checked on the decoded message (`MessageDelivery.prepare`); this
    only keeps a 40 MB body from being held in memory to find that out. The rest of the
    refused body is read and dropped (up to `drain_bytes`, for `drain_seconds`) before
    the answer goes out: a connection closed with bytes unread is reset, and a client
    still sending or not yet reading would get the reset instead of the 413.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body_bytes: int,
        drain_bytes: int = 64 * 1024 * 1024,
        drain_seconds: float = 5.0,
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.drain_bytes = drain_bytes
        self.drain_seconds = drain_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        declared = headers.get(b"content-length")
        if declared is not None:
            if declared.isdigit() and int(declared) > self.max_body_bytes:
                # A client that asked to continue sends no body unless told to.
                waits = headers.get(b"expect", b"").lower() == b"100-continue"
                await self._refuse(receive, send, more_body=not waits)
                return
            await self.app(scope, receive, send)
            return
        # A chunked body: read it here, within the limit, then hand it on.
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, receive, send)
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.max_body_bytes:
                await self._refuse(receive, send, more_body=message.get("more_body", False))
                return
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": b"".join(chunks), "more_body": False}

        await self.app(scope, replay, send)

    async def _refuse(self, receive: Receive, send: Send, *, more_body: bool) -> None:
        if more_body:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.drain_seconds):
                    await self._drain(receive)
        detail = (
            f"the request body is over {self.max_body_bytes} bytes: no message within the "
            "limit is that large (baton serve --max-message-bytes)"
        )
        body = json.dumps({"detail": detail}).encode("utf-8")
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _drain(self, receive: Receive) -> None:
        """Read what is left of the body and drop it, up to `drain_bytes`."""
        drained = 0
        while drained <= self.drain_bytes:
            message = await receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                return
            drained += len(message.get("body", b""))
