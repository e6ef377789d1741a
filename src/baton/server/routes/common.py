"""What every router shares: the services behind the API and the terminal-id parameter."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from fastapi import Path as PathParam

from baton.server.controls import TerminalControls
from baton.server.inbox import InboxService
from baton.server.sessions import SessionService
from baton.server.steps import StepRunner
from baton.server.terminals import TerminalService

__all__ = ["TERMINAL_ID_PATTERN", "Services", "ServicesDep", "TerminalId", "services"]

TERMINAL_ID_PATTERN = r"^[a-f0-9]{8}$"

TerminalId = Annotated[str, PathParam(pattern=TERMINAL_ID_PATTERN)]


@dataclass(frozen=True)
class Services:
    """The objects the handlers work through, built once per application."""

    terminals: TerminalService
    sessions: SessionService
    controls: TerminalControls
    inbox: InboxService
    steps: StepRunner

    @classmethod
    def over(cls, terminals: TerminalService) -> Services:
        return cls(
            terminals=terminals,
            sessions=SessionService(terminals),
            controls=TerminalControls(terminals),
            inbox=InboxService(terminals),
            steps=StepRunner(terminals, events=terminals.events),
        )


def services(request: Request) -> Services:
    found: Services = request.app.state.services
    return found


ServicesDep = Annotated[Services, Depends(services)]
