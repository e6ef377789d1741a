"""`POST /terminals/run-step`: create a worker, prompt it, wait, answer, delete it."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from baton.server.routes.common import TERMINAL_ID_PATTERN, ServicesDep
from baton.server.steps import StepRequest

__all__ = ["RunStepBody", "router"]

router = APIRouter(tags=["steps"])


class RunStepBody(BaseModel):
    """CAO's run-step request; fields Baton has no use for (model, job_id …) are ignored."""

    provider: str
    agent: str
    prompt: str
    timeout: Annotated[float, Field(gt=0)] = 600.0
    session_name: str | None = None
    reuse_terminal_id: Annotated[str | None, Field(pattern=TERMINAL_ID_PATTERN)] = None
    teardown: bool = True
    working_directory: str | None = None
    caller_id: Annotated[str | None, Field(pattern=TERMINAL_ID_PATTERN)] = None
    allowed_tools: list[str] | None = None


@router.post("/terminals/run-step")
async def run_step(services: ServicesDep, body: RunStepBody) -> dict[str, Any]:
    """The worker's answer as `{terminal_id, last_message, status}`.

    A worker that crashed answers 502 and one that ran long 504, with the detail
    `{message, kind, terminal_id}` CAO's clients read.
    """
    fields = body.model_dump()
    fields["allowed_tools"] = tuple(body.allowed_tools) if body.allowed_tools else None
    request = StepRequest(**fields)
    result = await run_in_threadpool(services.steps.run, request)
    return result.as_json()
