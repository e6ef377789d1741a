"""The five agent terminals: create them, check them on resume, and let them go.

One session is created with the analyst's profile; the other four roles get terminals in
that session. Every call goes through `ApiClient`, so the same code drives `baton serve`
and `cao-server`.
"""

from __future__ import annotations

from baton.errors import ApiError, ApiHttpError, StateFileError
from baton.orchestrator.client import ApiClient
from baton.orchestrator.config import Settings
from baton.orchestrator.runlog import RunLog
from baton.orchestrator.state import RunState
from baton.roles import ROLES
from baton.status import TerminalStatus

__all__ = ["cleanup_terminals", "init_new_run", "verify_resume_terminals"]


def init_new_run(api: ApiClient, settings: Settings, state: RunState, log: RunLog) -> None:
    """Create the session (analyst profile) and the four other terminals into `state`."""
    first, *others = ROLES
    created = api.create_session(
        settings.profile_for(first.terminal_key),
        provider=settings.provider_for(first.terminal_key),
        working_directory=settings.wd,
    )
    state.session_name = created["session_name"]
    state.terminals[first.terminal_key] = created["id"]
    log.info(f"session {state.session_name}: {first.title} is terminal {created['id']}")
    for role in others:
        created = api.create_terminal(
            state.session_name,
            settings.profile_for(role.terminal_key),
            provider=settings.provider_for(role.terminal_key),
            working_directory=settings.wd,
        )
        state.terminals[role.terminal_key] = created["id"]
        log.info(f"session {state.session_name}: {role.title} is terminal {created['id']}")


def verify_resume_terminals(api: ApiClient, state: RunState) -> None:
    """Every terminal of the saved run must still answer; StateFileError names the first not."""
    for role in ROLES:
        terminal_id = state.terminals.get(role.terminal_key, "")
        if not terminal_id:
            raise StateFileError(
                f"cannot resume: the state file has no terminal for {role.terminal_key}"
            )
        try:
            status = api.get_status(terminal_id)
        except ApiHttpError as error:
            raise StateFileError(
                f"cannot resume: terminal {role.terminal_key} ({terminal_id}) is not reachable "
                f"(HTTP {error.status_code}: {error.detail}); set RESUME=0 to start a new run"
            ) from None
        if status == TerminalStatus.ERROR:
            raise StateFileError(
                f"cannot resume: terminal {role.terminal_key} ({terminal_id}) is in status "
                "error; set RESUME=0 to start a new run"
            )


def cleanup_terminals(api: ApiClient, state: RunState, log: RunLog) -> None:
    """CLEANUP_ON_EXIT: ask all five agent CLIs to exit; failures are only logged."""
    for role in ROLES:
        terminal_id = state.terminals.get(role.terminal_key, "")
        if not terminal_id:
            continue
        try:
            api.exit_terminal(terminal_id)
            log.info(f"exited {role.title} terminal {terminal_id}")
        except ApiError as error:  # cleanup must never hide the run's own outcome
            log.warning(f"could not exit {role.title} terminal {terminal_id}: {error}")
