"""Bring a dead agent back: the same role and working directory, its conversation if it can.

An agent CLI that exits or is killed while the run needs it (its terminal shows status
`error`, or the server no longer knows the terminal) is replaced, at most AGENT_RESTARTS
times per role in one `baton run`:

- `baton serve` restarts the CLI inside the same terminal (`POST /terminals/{id}/restart`),
  resuming the CLI's own conversation where the provider knows how;
- a server without that route (404/405, e.g. a stock `cao-server`) gets a replacement
  terminal in the run's session with the same profile; the dead one is deleted so it is
  not left behind, and the state file records the new id.

The caller saves the state right after; `restarts` in the state file counts every restart.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable
from typing import Any

from baton.errors import AgentRestartsExhausted, ApiError, ApiHttpError
from baton.orchestrator.client import ApiClient
from baton.orchestrator.config import Settings
from baton.orchestrator.crashpoints import crash_point
from baton.orchestrator.events import EventKind, RunEvents
from baton.orchestrator.runlog import RunLog
from baton.orchestrator.state import RunState
from baton.roles import ROLE_BY_TERMINAL

__all__ = ["AgentRestarter"]

# What a server without the restart route answers (unknown path, or path known for GET only).
_NO_RESTART_ROUTE = (404, 405, 501)
_REASON_LIMIT = 160


class AgentRestarter:
    """Replaces dead agents of one run, counting restarts per role for this invocation."""

    def __init__(
        self,
        api: ApiClient,
        settings: Settings,
        state: RunState,
        log: RunLog,
        events: RunEvents | None = None,
    ) -> None:
        self.api = api
        self.settings = settings
        self.state = state
        self.log = log
        self.events = events or RunEvents(None)
        self.spent: Counter[str] = Counter()
        # Told when a replaced agent had to go in a new session (the old one was gone).
        self.on_new_session: Callable[[str], None] = lambda _name: None

    def bring_back(self, terminal_key: str, *, reason: str, cause: str = "exit") -> str:
        """Restart or replace the role's agent; its (possibly new) terminal id.

        `cause` is "exit" (the CLI died) or "stall" (it stopped making progress).
        AgentRestartsExhausted once the role has used up AGENT_RESTARTS in this run.
        """
        state = self.state
        role = ROLE_BY_TERMINAL[terminal_key]
        old = state.terminals[terminal_key]
        limit = self.settings.agent_restarts
        why = _short(reason)
        what_happened = "stalled" if cause == "stall" else "died"
        if self.spent[terminal_key] >= limit:
            raise AgentRestartsExhausted(
                f"{role.title} (terminal {old}) {what_happened} ({why}) and AGENT_RESTARTS={limit} "
                "restarts are spent for it in this run"
            )
        self.spent[terminal_key] += 1
        restarted = self._restart_in_place(old)
        if restarted is not None:
            new, how = old, "restarted"
            resumed = bool(restarted.get("resumed"))
            what = "restarted its CLI in the same terminal" + (
                ", resuming its conversation" if resumed else ""
            )
        else:
            new, how, resumed = self._replace(terminal_key, old), "replaced", False
            what = f"replaced it with terminal {new} in session {state.session_name}"
        state.terminals[terminal_key] = new
        state.restarts[terminal_key] = state.restarts.get(terminal_key, 0) + 1
        if state.awaiting and state.awaiting.role == role.output_key:
            state.awaiting.agent_restarted = True  # the pending prompt goes out again
        count = self.spent[terminal_key]
        self.log.warning(
            f"{role.title} (terminal {old}) {what_happened} ({why}); {what} "
            f"(restart {count}/{limit})"
        )
        self.events.emit(
            EventKind.AGENT_RESTART,
            role=role.output_key,
            terminal_key=terminal_key,
            old_terminal_id=old,
            terminal_id=new,
            how=how,
            resumed=resumed,
            restart=count,
            limit=limit,
            reason=why,
            cause=cause,
        )
        crash_point("agent_restarted")
        return new

    def _restart_in_place(self, terminal_id: str) -> dict[str, Any] | None:
        """The server's restart of the terminal, or None when it cannot restart terminals."""
        try:
            return self.api.restart_terminal(terminal_id)
        except ApiHttpError as error:
            if error.status_code in _NO_RESTART_ROUTE:
                return None
            raise

    def _replace(self, terminal_key: str, old: str) -> str:
        """A new terminal for the role in the run's session (a new session if it is gone)."""
        state = self.state
        with contextlib.suppress(ApiError):  # already gone, or the server cannot delete
            self.api.delete_terminal(old)
        profile = self.settings.profile_for(terminal_key)
        provider = self.settings.provider_for(terminal_key)
        try:
            created = self.api.create_terminal(
                state.session_name, profile, provider=provider, working_directory=self.settings.wd
            )
        except ApiHttpError as error:
            if error.status_code != 404:
                raise
            created = self.api.create_session(
                profile, provider=provider, working_directory=self.settings.wd
            )
            state.session_name = created["session_name"]
            self.on_new_session(state.session_name)
        return str(created["id"])


def _short(reason: str) -> str:
    words = " ".join(reason.split())
    return words if len(words) <= _REASON_LIMIT else words[: _REASON_LIMIT - 1] + "…"
