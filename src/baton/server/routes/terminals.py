"""Terminal routes: read, type into, press keys in, label, list siblings of, exit, delete."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from baton.errors import BadRequestError
from baton.server.controls import OUTPUT_RANGE_MAX_LENGTH
from baton.server.restart import restart_terminal
from baton.server.routes.common import ServicesDep, TerminalId
from baton.wire import TerminalJSON

__all__ = ["router"]

router = APIRouter(tags=["terminals"])


class MetadataBody(BaseModel):
    """`PATCH …/metadata`: the whole new metadata (`null` clears it); the key is required."""

    metadata: dict[str, Any] | None


class GroupBody(BaseModel):
    """`PATCH …/group`: the whole new group (`null` or `[]` clears it); the key is required."""

    group: list[str] | None


_UNKNOWN_USAGE: dict[str, Any] = {
    "input_tokens": None,
    "cached_input_tokens": None,
    "output_tokens": None,
    "model": None,
    "cost_usd": None,
    "complete": None,
}


@router.get("/terminals/{terminal_id}", response_model=None)
async def get_terminal(services: ServicesDep, terminal_id: TerminalId) -> Response:
    # The call every client polls: from memory on the event loop (no thread hop, no
    # response model to validate); through tmux in a worker thread when it must.
    terminals = services.terminals
    if terminals.answers_from_memory(terminal_id):
        described = terminals.get_terminal(terminal_id)
    else:
        described = await run_in_threadpool(terminals.get_terminal, terminal_id)
    return Response(json.dumps(described).encode(), media_type="application/json")


@router.post("/terminals/{terminal_id}/input")
async def send_input(
    services: ServicesDep,
    terminal_id: TerminalId,
    request: Request,
    message: str | None = None,
    queue: bool = True,
) -> dict[str, bool]:
    # CAO clients send `?message=`; a message too long for a URL may come as the body
    # instead: JSON `{"message": "..."}` or plain UTF-8 text. The answer waits until the
    # CLI took the message as its own turn; `queue=false`: 409 at once if it is busy.
    if message is None:
        message = await _message_from_body(request)
    await run_in_threadpool(services.terminals.send_input, terminal_id, message, queue=queue)
    return {"success": True}


@router.post("/terminals/{terminal_id}/key")
def send_key(services: ServicesDep, terminal_id: TerminalId, key: str) -> dict[str, bool]:
    services.controls.send_key(terminal_id, key)
    return {"success": True}


@router.get("/terminals/{terminal_id}/usage")
def get_usage(services: ServicesDep, terminal_id: TerminalId) -> dict[str, Any]:
    """Baton only: the terminal's cumulative tokens from the CLI's own records.

    Every field is null while the CLI has recorded nothing (or keeps no such record); an
    orchestrator that gets 404 here (a stock `cao-server`) simply reports no tokens.
    """
    usage = services.terminals.usage(terminal_id)
    return usage.to_json() if usage is not None else dict(_UNKNOWN_USAGE)


@router.get("/terminals/{terminal_id}/attach")
def attach_info(services: ServicesDep, terminal_id: TerminalId) -> dict[str, str]:
    """Which private tmux socket, session and window show the agent (`baton attach ROLE`)."""
    return services.controls.attach_info(terminal_id)


@router.get("/terminals/{terminal_id}/output")
def get_output(
    services: ServicesDep,
    terminal_id: TerminalId,
    mode: Annotated[Literal["full", "last"], Query()] = "full",
) -> dict[str, str]:
    return {"output": services.terminals.get_output(terminal_id, mode), "mode": mode}


@router.get("/terminals/{terminal_id}/output/range")
def get_output_range(
    services: ServicesDep,
    terminal_id: TerminalId,
    offset: Annotated[int, Query(ge=0)],
    length: Annotated[int, Query(ge=1, le=OUTPUT_RANGE_MAX_LENGTH)],
) -> dict[str, Any]:
    data = services.controls.output_range(terminal_id, offset, length)
    return {"terminal_id": terminal_id, "offset": offset, "length": length, "data": data}


@router.get("/terminals/{terminal_id}/working-directory")
def get_working_directory(services: ServicesDep, terminal_id: TerminalId) -> dict[str, Any]:
    return {"working_directory": services.controls.working_directory(terminal_id)}


@router.patch("/terminals/{terminal_id}/metadata", response_model=None)
def set_metadata(
    services: ServicesDep, terminal_id: TerminalId, body: MetadataBody
) -> TerminalJSON:
    services.controls.set_metadata(terminal_id, body.metadata)
    return services.terminals.get_terminal(terminal_id)


@router.patch("/terminals/{terminal_id}/group", response_model=None)
def set_group(services: ServicesDep, terminal_id: TerminalId, body: GroupBody) -> TerminalJSON:
    services.controls.set_group(terminal_id, body.group)
    return services.terminals.get_terminal(terminal_id)


@router.get("/terminals/{terminal_id}/siblings")
def list_siblings(
    services: ServicesDep,
    terminal_id: TerminalId,
    depth: Annotated[int | None, Query(ge=1)] = None,
    cross_session: bool = False,
) -> list[dict[str, Any]]:
    return services.controls.siblings(terminal_id, depth=depth, cross_session=cross_session)


@router.post("/terminals/{terminal_id}/restart")
def restart(services: ServicesDep, terminal_id: TerminalId) -> dict[str, Any]:
    """Baton only: the agent CLI started again in the same terminal, resumed where it can."""
    return restart_terminal(services.terminals, terminal_id)


@router.post("/terminals/{terminal_id}/exit")
def exit_terminal(services: ServicesDep, terminal_id: TerminalId) -> dict[str, bool]:
    services.terminals.exit_terminal(terminal_id)
    return {"success": True}


@router.delete("/terminals/{terminal_id}")
def delete_terminal(services: ServicesDep, terminal_id: TerminalId) -> dict[str, bool]:
    services.terminals.delete_terminal(terminal_id)
    return {"success": True}


async def _message_from_body(request: Request) -> str:
    body = await request.body()
    if not body:
        raise RequestValidationError(
            [{"loc": ("query", "message"), "msg": "Field required", "type": "missing"}]
        )
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequestError("the message body is not UTF-8") from None
    if request.headers.get("content-type", "").startswith("application/json"):
        try:
            data = json.loads(text)
        except ValueError:
            raise BadRequestError("the message body is not valid JSON") from None
        if not isinstance(data, dict) or not isinstance(data.get("message"), str):
            raise BadRequestError('the JSON body must be {"message": "<text>"}')
        message: str = data["message"]
        return message
    return text
