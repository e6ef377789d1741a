"""Session routes: create (a session, or a terminal in one), list, describe, delete."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from baton.server.controls import check_group, check_metadata
from baton.server.creation import CreateRequest
from baton.server.routes.common import TERMINAL_ID_PATTERN, ServicesDep
from baton.wire import SessionJSON, SessionSummaryJSON, TerminalJSON

__all__ = ["CreateBody", "router"]

router = APIRouter(tags=["sessions"])


class CreateBody(BaseModel):
    """Optional JSON body of the create routes (as CAO's).

    Extra environment for the pane, a first message typed in once the CLI rests, and
    the `group` / `metadata` labels of sibling discovery. Other CAO fields are ignored.
    """

    env_vars: dict[str, str] | None = None
    initial_message: str | None = None
    group: list[str] | None = None
    metadata: dict[str, Any] | None = None


async def create_terminal(
    request: Request,
    services: ServicesDep,
    agent_profile: str,
    provider: str | None = None,
    working_directory: str | None = None,
    session_name: str | None = None,
    caller_id: Annotated[str | None, Query(pattern=TERMINAL_ID_PATTERN)] = None,
    allowed_tools: str | None = None,
    body: CreateBody | None = None,
) -> TerminalJSON:
    """`POST /sessions` (new session) and `POST /sessions/{name}/terminals` (add to one)."""
    body = body or CreateBody()
    arrival = services.terminals.arrival_ticket()  # here, in the order requests arrived
    return await run_in_threadpool(
        lambda: services.terminals.create_terminal(
            CreateRequest(
                agent_profile=agent_profile,
                provider=provider,
                working_directory=working_directory,
                session_name=session_name,
                new_session="session_name" not in request.path_params,
                env_vars=body.env_vars,
                initial_message=body.initial_message,
                caller_id=caller_id,
                group=check_group(body.group),
                metadata=check_metadata(body.metadata),
                allowed_tools=[tool for tool in (allowed_tools or "").split(",") if tool],
                arrival=arrival,
            )
        )
    )


# `response_model=None`: the wire types are for mypy; the JSON goes out as built.
router.add_api_route(
    "/sessions", create_terminal, methods=["POST"], status_code=201, response_model=None
)
router.add_api_route(
    "/sessions/{session_name}/terminals",
    create_terminal,
    methods=["POST"],
    status_code=201,
    response_model=None,
)


@router.get("/sessions", response_model=None)
def list_sessions(services: ServicesDep) -> list[SessionSummaryJSON]:
    return services.sessions.list_sessions()


@router.get("/sessions/{session_name}", response_model=None)
def get_session(services: ServicesDep, session_name: str) -> SessionJSON:
    return services.sessions.get_session(session_name)


@router.delete("/sessions/{session_name}")
def delete_session(services: ServicesDep, session_name: str) -> dict[str, Any]:
    return {"success": True, **services.sessions.delete_session(session_name)}


@router.get("/sessions/{session_name}/terminals", response_model=None)
def list_session_terminals(services: ServicesDep, session_name: str) -> list[TerminalJSON]:
    return services.sessions.session_terminals(session_name)
