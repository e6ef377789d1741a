"""`GET /events` (server-sent events) and `GET /terminals/{id}/status/wait` (long poll).

Both are fed by the screen watcher's status changes, so a client hears that an agent
finished the moment the server sees it, instead of polling. The stream starts with one
status event per matching terminal (its current status, `previous_status: null`); each
event is one `data: <json>` line and a blank line; a `: keep-alive` comment goes out
when nothing else did for `KEEP_ALIVE_SECONDS`.
"""

import json
import time
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from baton.server.events import EventFilter, Subscription, TerminalEvent
from baton.server.session_names import resolve_session_name
from baton.server.terminals import TerminalService
from baton.wire import TerminalJSON

__all__ = ["KEEP_ALIVE_SECONDS", "MAX_WAIT_SECONDS", "events_router"]

KEEP_ALIVE_SECONDS = 15.0
DEFAULT_WAIT_SECONDS = 30.0
MAX_WAIT_SECONDS = 300.0


def events_router(service: TerminalService, terminal_id_pattern: str) -> APIRouter:
    """The two event routes over `service`'s event hub."""
    router = APIRouter()
    terminal_id_type = Annotated[str, PathParam(pattern=terminal_id_pattern)]

    @router.get("/events")
    async def events(
        request: Request,
        terminal_id: Annotated[list[str] | None, Query()] = None,
        session_name: str | None = None,
    ) -> StreamingResponse:
        if session_name is not None:  # a bare name means its `cao-` session, as elsewhere
            session_name = resolve_session_name(service.registry, session_name)
        event_filter = EventFilter(frozenset(terminal_id or ()), session_name)
        subscription = service.events.subscribe(event_filter)
        try:
            current = await run_in_threadpool(_current_statuses, service, event_filter)
        except BaseException:
            service.events.unsubscribe(subscription)
            raise
        return StreamingResponse(
            _stream(service, subscription, current),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    @router.get("/terminals/{terminal_id}/status/wait", response_model=None)
    async def wait_for_status(
        terminal_id: terminal_id_type,
        since: str | None = None,
        timeout: Annotated[float, Query(ge=0, le=MAX_WAIT_SECONDS)] = DEFAULT_WAIT_SECONDS,
    ) -> TerminalJSON:
        subscription = service.events.subscribe(EventFilter(frozenset({terminal_id})))
        try:
            described = await run_in_threadpool(service.get_terminal, terminal_id)
            deadline = time.monotonic() + timeout
            while described["status"] == since:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    event = await subscription.next(remaining)
                except TimeoutError:
                    break
                if event is None:
                    break
                if (event.kind == "status" and event.status != since) or event.kind != "status":
                    # Read again: the answer is the terminal as it is now (404 once deleted).
                    described = await run_in_threadpool(service.get_terminal, terminal_id)
            return described
        finally:
            service.events.unsubscribe(subscription)

    return router


def _current_statuses(service: TerminalService, event_filter: EventFilter) -> list[TerminalEvent]:
    events = []
    for record in service.registry.terminals(event_filter.session_name):
        if not event_filter.matches(record.id, record.session_name):
            continue
        events.append(
            TerminalEvent(
                kind="status",
                terminal_id=record.id,
                session_name=record.session_name,
                status=str(service.status(record)),
                previous_status=None,
            )
        )
    return events


async def _stream(
    service: TerminalService, subscription: Subscription, current: list[TerminalEvent]
) -> AsyncIterator[str]:
    try:
        for event in current:
            yield _frame(event)
        while True:
            try:
                arrived = await subscription.next(KEEP_ALIVE_SECONDS)
            except TimeoutError:
                yield ": keep-alive\n\n"
                continue
            if arrived is None:
                return
            yield _frame(arrived)
    finally:
        service.events.unsubscribe(subscription)


def _frame(event: TerminalEvent) -> str:
    return f"data: {json.dumps(event.as_json(), ensure_ascii=False)}\n\n"
