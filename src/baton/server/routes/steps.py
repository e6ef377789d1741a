"""`POST /terminals/run-step`: create a worker, prompt it, wait, answer, delete it.

`GET /handoff-results/{job_id}` reads a step's outcome again, for a client that timed out.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from baton.errors import ForbiddenError, NotFoundError
from baton.server.routes.common import TERMINAL_ID_PATTERN, ServicesDep
from baton.server.scopes import ACTING_TERMINAL, step_refusal
from baton.server.steps import StepRequest

__all__ = ["RunStepBody", "router"]

router = APIRouter(tags=["steps"])


class RunStepBody(BaseModel):
    """CAO's run-step request; fields Baton has no use for (model, env_vars …) are ignored."""

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
    job_id: Annotated[str | None, Field(max_length=128)] = None


@router.post("/terminals/run-step")
async def run_step(request: Request, services: ServicesDep, body: RunStepBody) -> dict[str, Any]:
    """The worker's answer as `{terminal_id, last_message, status}`.

    A worker that crashed answers 502 and one that ran long 504, with the detail
    `{message, kind, terminal_id}` CAO's clients read. With a terminal's own token, only
    a worker of that terminal, in its session (403 otherwise).
    """
    acting = getattr(request.state, ACTING_TERMINAL, None)
    if acting is not None:
        reason = step_refusal(
            acting,
            session_name=body.session_name,
            caller_id=body.caller_id,
            reuse_terminal_id=body.reuse_terminal_id,
            lookup=services.terminals.registry.get_terminal,
        )
        if reason is not None:
            raise ForbiddenError(reason)
    fields = body.model_dump()
    fields["allowed_tools"] = tuple(body.allowed_tools) if body.allowed_tools else None
    step = StepRequest(**fields)
    result = await run_in_threadpool(services.steps.run, step)
    return result.as_json()


@router.get("/handoff-results/{job_id}")
def get_handoff_result(services: ServicesDep, job_id: str) -> dict[str, Any]:
    """The recorded outcome of the run-step `job_id`: `running`, `completed` or `error`."""
    found = services.terminals.registry.handoff_result(job_id)
    if found is None:
        raise NotFoundError(f"no handoff result for job_id {job_id[:64]!r}")
    return found
