"""The cockpit's JSON routes (`/ui/api/…`) and the announcements of runs and batches
(`PUT /baton/runs/{session}`, `PUT /baton/batches/{id}`).

`/ui/api` answers the page's scripts: the overview, a run, an agent, an agent's screen as
a stream of server-sent events, and answering a waiting agent. Answering does what
`baton answer` does (text submitted like a prompt, then keys, in order) and likewise
refuses an agent that is not waiting unless `force` is given: text typed into a busy
agent becomes part of its work.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Request
from fastapi import Path as PathParam
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from baton.errors import BadRequestError, NotFoundError, NotWaitingError
from baton.server.controls import TerminalControls, validate_key
from baton.server.routes.common import TERMINAL_ID_PATTERN
from baton.status import TerminalStatus
from baton.web.batches import BATCH_ID_PATTERN, BatchAnnouncement
from baton.web.runs import SESSION_PATTERN, Announcement
from baton.web.views import CockpitViews

__all__ = ["STREAM_INTERVAL_SECONDS", "api_router"]

STREAM_INTERVAL_SECONDS = 0.25
_KEEP_ALIVE_SECONDS = 15.0
_MAX_KEYS = 20

TerminalId = Annotated[str, PathParam(pattern=TERMINAL_ID_PATTERN)]
Session = Annotated[str, PathParam(pattern=SESSION_PATTERN)]
BatchId = Annotated[str, PathParam(pattern=BATCH_ID_PATTERN)]


class AnswerBody(BaseModel):
    """`POST /ui/api/terminals/{id}/answer`: text (submitted) and/or keys, pressed in order."""

    text: str | None = None
    keys: list[str] = Field(default_factory=list)
    force: bool = False


def api_router(views: CockpitViews) -> APIRouter:
    """The JSON routes over `views` (and its terminal service)."""
    router = APIRouter()
    service = views.service
    controls = TerminalControls(service)

    @router.put("/baton/runs/{session}")
    async def announce_run(session: Session, request: Request) -> dict[str, Any]:
        try:
            body = await request.json()
        except ValueError:
            raise BadRequestError("the body is not JSON") from None
        announcement = Announcement.from_body(session, body)
        await run_in_threadpool(views.runs.announce, announcement)
        return {"success": True, "page": f"/ui/runs/{session}"}

    @router.put("/baton/batches/{batch_id}")
    async def announce_batch(batch_id: BatchId, request: Request) -> dict[str, Any]:
        try:
            body = await request.json()
        except ValueError:
            raise BadRequestError("the body is not JSON") from None
        announcement = BatchAnnouncement.from_body(batch_id, body)
        await run_in_threadpool(views.batches.announce, announcement)
        return {"success": True, "page": "/ui"}

    @router.delete("/baton/runs/{session}")
    def forget_run(session: Session) -> dict[str, bool]:
        views.runs.forget(session)
        return {"success": True}

    @router.get("/ui/api/overview")
    def overview() -> dict[str, Any]:
        return views.overview()

    @router.get("/ui/api/runs/{session}")
    def run(session: Session) -> dict[str, Any]:
        return views.run(session)

    @router.get("/ui/api/terminals/{terminal_id}")
    def terminal(terminal_id: TerminalId) -> dict[str, Any]:
        return views.terminal(terminal_id)

    @router.post("/ui/api/terminals/{terminal_id}/answer")
    def answer(terminal_id: TerminalId, body: AnswerBody) -> dict[str, Any]:
        if not body.text and not body.keys:
            raise BadRequestError("nothing to send: give text and/or keys")
        if len(body.keys) > _MAX_KEYS:
            raise BadRequestError(f"at most {_MAX_KEYS} keys at once")
        for key in body.keys:
            validate_key(key)
        record = service.record(terminal_id)
        before = str(service.status(record))
        if before != TerminalStatus.WAITING_USER_ANSWER and not body.force:
            raise NotWaitingError(
                f"terminal {terminal_id} is {before}, not waiting for an answer; nothing sent"
            )
        if body.text:
            service.send_input(terminal_id, body.text)
        for key in body.keys:
            controls.send_key(terminal_id, key)
        after = str(service.status(service.record(terminal_id)))
        return {"success": True, "before": before, "after": after}

    @router.get("/ui/api/terminals/{terminal_id}/stream")
    async def stream(terminal_id: TerminalId, request: Request) -> StreamingResponse:
        if service.registry.get_terminal(terminal_id) is None:
            raise NotFoundError(f"terminal {terminal_id!r} not found")
        return StreamingResponse(
            _screen_frames(views, terminal_id, request),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    return router


async def _screen_frames(
    views: CockpitViews, terminal_id: str, request: Request
) -> AsyncIterator[str]:
    """One `data:` frame whenever the terminal's status or screen changed; ends with it."""
    last: dict[str, Any] | None = None
    quiet = 0.0
    while not await request.is_disconnected():
        record = views.service.registry.get_terminal(terminal_id)
        if record is None:
            yield _frame({"status": "gone", "screen": ""})
            return
        live = await run_in_threadpool(views.terminal_live, record)
        if live != last:
            last, quiet = live, 0.0
            yield _frame(live)
        elif quiet >= _KEEP_ALIVE_SECONDS:
            quiet = 0.0
            yield ": keep-alive\n\n"
        await asyncio.sleep(STREAM_INTERVAL_SECONDS)
        quiet += STREAM_INTERVAL_SECONDS


def _frame(data: dict[str, Any]) -> str:
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"
