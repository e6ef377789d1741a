"""Routes for a person at the run: press a key in an agent's terminal, find its window.

`POST /terminals/{id}/key?key=KEY` presses one key: a question or permission dialog wants
a key (a menu number, Enter, Escape, an arrow), not a line of text. Only a single
printable character or a tmux key name from a fixed list (optionally with C-, M- or S-)
is accepted: a key name is never a way to type arbitrary text or tmux commands.

`GET /terminals/{id}/attach` says which tmux socket, session and window show the agent,
so `baton attach ROLE` can run `tmux -S <socket> attach -t <session>:<window>` on the
server's machine (the socket is private to `baton serve`; nothing else names it).
"""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi import Path as PathParam

from baton.errors import BadRequestError, TerminalExitedError
from baton.server.terminals import TerminalService

__all__ = ["NAMED_KEYS", "operator_router", "validate_key"]

NAMED_KEYS = frozenset(
    {
        "Enter", "Escape", "Tab", "BTab", "Space", "BSpace", "Up", "Down", "Left", "Right",
        "Home", "End", "PageUp", "PageDown", "PPage", "NPage", "DC", "IC",
        *(f"F{number}" for number in range(1, 13)),
    }
)  # fmt: skip
# The terminal id shape of app.TERMINAL_ID_PATTERN (not imported: app includes this module).
_TERMINAL_ID = r"^[a-f0-9]{8}$"
_MODIFIED = re.compile(r"^(?:[CMS]-)+(.+)$")


def validate_key(key: str) -> str:
    """The key as tmux names it; BadRequestError naming it when it is not one we send."""
    base = _MODIFIED.match(key)
    name = base.group(1) if base else key
    if name in NAMED_KEYS or (len(name) == 1 and name.isprintable()):
        return key
    raise BadRequestError(
        f"key {key!r} is not a single character or one of: {', '.join(sorted(NAMED_KEYS))}"
    )


def operator_router(service: TerminalService) -> APIRouter:
    """The routes, bound to the server's terminal service."""
    router = APIRouter()

    @router.get("/terminals/{terminal_id}/attach")
    def attach_info(
        terminal_id: Annotated[str, PathParam(pattern=_TERMINAL_ID)],
    ) -> dict[str, str]:
        record = service.record(terminal_id)
        return {
            "tmux_socket": str(service.tmux.socket_path),
            "tmux_session": record.session_name,
            "tmux_window": record.name,
            "window_id": record.window_id,
        }

    @router.post("/terminals/{terminal_id}/key")
    def press_key(
        terminal_id: Annotated[str, PathParam(pattern=_TERMINAL_ID)],
        key: Annotated[str, Query(min_length=1, max_length=32)],
    ) -> dict[str, bool]:
        record = service.record(terminal_id)
        name = validate_key(key)
        state = service.tmux.pane_state(record.pane_id)
        if not state.exists or state.dead:
            raise TerminalExitedError(f"terminal {terminal_id}: the agent CLI has exited")
        # `-l` would type the name literally; a single character is already literal.
        service.tmux.send_keys(record.pane_id, [name])
        return {"success": True}

    return router
