"""`GET /terminals/{id}/usage`: the tokens a terminal's agent spent, from the CLI's records.

Not a CAO route: an orchestrator that finds it missing (404 from a stock `cao-server`)
simply reports no tokens. The answer is cumulative for the terminal:
`{"input_tokens", "cached_input_tokens", "output_tokens", "model"}`, every field null
while the CLI has recorded nothing (or its provider keeps no such record).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Request
from fastapi import Path as PathParam
from starlette.concurrency import run_in_threadpool

__all__ = ["router"]

router = APIRouter()

_UNKNOWN: dict[str, Any] = {
    "input_tokens": None,
    "cached_input_tokens": None,
    "output_tokens": None,
    "model": None,
}


@router.get("/terminals/{terminal_id}/usage")
async def terminal_usage(
    request: Request, terminal_id: Annotated[str, PathParam(pattern=r"^[a-f0-9]{8}$")]
) -> dict[str, Any]:
    usage = await run_in_threadpool(request.app.state.service.usage, terminal_id)
    return usage.to_json() if usage is not None else dict(_UNKNOWN)
