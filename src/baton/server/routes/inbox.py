"""Inbox routes: queue a message for a terminal, list a terminal's messages."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool

from baton.errors import BadRequestError
from baton.server.inbox import message_json
from baton.server.records import MessageStatus
from baton.server.routes.common import ServicesDep, TerminalId

__all__ = ["router"]

router = APIRouter(tags=["inbox"])


@router.post("/terminals/{receiver_id}/inbox/messages")
async def post_message(
    services: ServicesDep, receiver_id: TerminalId, sender_id: str, message: str
) -> dict[str, Any]:
    """Queue the message; it is typed in at once if the receiver rests, else when it does."""
    queued = await run_in_threadpool(services.inbox.post, receiver_id, sender_id, message)
    shown = message_json(queued)
    return {
        "success": True,
        "message_id": queued.id,
        "sender_id": queued.sender_id,
        "receiver_id": queued.receiver_id,
        "created_at": shown["created_at"],
    }


@router.get("/terminals/{terminal_id}/inbox/messages")
def list_messages(
    services: ServicesDep,
    terminal_id: TerminalId,
    limit: Annotated[int, Query(ge=1, le=100)] = 10,
    status: str | None = None,
) -> list[dict[str, Any]]:
    """The terminal's messages, oldest first; `status` keeps pending, delivered or failed."""
    wanted = None
    if status is not None:
        try:
            wanted = MessageStatus(status)
        except ValueError:
            raise BadRequestError(
                f"invalid status {status[:40]!r}: use pending, delivered or failed"
            ) from None
    found = services.inbox.messages(terminal_id, limit=limit, status=wanted)
    return [message_json(message) for message in found]
