"""Answer actions: mint one-time answers for a waiting agent, and perform one by its token.

`POST /baton/actions` is an ordinary API call (the master token when the server has
one; a terminal's own token may not). `POST /baton/actions/{action_token}` needs no
bearer: the action token is the credential (see `baton.server.actions`), so an ntfy
button on a phone can call it as it is.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter
from fastapi import Path as PathParam
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from baton.server.actions import DEFAULT_ACTION_SECONDS, Choice, perform
from baton.server.routes.common import TERMINAL_ID_PATTERN, ServicesDep

__all__ = ["ACTION_PATH_PREFIX", "router"]

ACTION_PATH_PREFIX = "/baton/actions/"

router = APIRouter(tags=["actions"])


class ChoiceBody(BaseModel):
    label: Annotated[str, Field(min_length=1, max_length=80)]
    text: str | None = None
    keys: list[str] = Field(default_factory=list)


class MintBody(BaseModel):
    """The answers a dialog offers, for one terminal; they expire after `expires_in` s."""

    terminal_id: Annotated[str, Field(pattern=TERMINAL_ID_PATTERN)]
    choices: list[ChoiceBody]
    expires_in: float = DEFAULT_ACTION_SECONDS


class MintedAction(BaseModel):
    label: str
    token: str
    path: str


class MintedActions(BaseModel):
    terminal_id: str
    expires_in: float
    actions: list[MintedAction]


@router.post("/baton/actions")
def mint_actions(services: ServicesDep, body: MintBody) -> MintedActions:
    services.terminals.record(body.terminal_id)  # 404 for an unknown terminal
    choices = [Choice(c.label, c.text, tuple(c.keys)) for c in body.choices]
    tokens = services.actions.mint(body.terminal_id, choices, body.expires_in)
    actions = [
        MintedAction(label=choice.label, token=token, path=ACTION_PATH_PREFIX + token)
        for choice, token in zip(choices, tokens, strict=True)
    ]
    return MintedActions(terminal_id=body.terminal_id, expires_in=body.expires_in, actions=actions)


@router.post(ACTION_PATH_PREFIX + "{action_token}")
async def use_action(
    services: ServicesDep,
    action_token: Annotated[str, PathParam(min_length=8, max_length=100)],
) -> dict[str, str]:
    done = await run_in_threadpool(
        perform, services.terminals, services.controls, action_token, services.actions
    )
    return {"done": done}
