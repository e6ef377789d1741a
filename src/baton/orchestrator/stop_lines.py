"""What an unfinished run says as it stops: where it stands, and how to go on.

The command that resumes it is the one it was started with (`resume_command`), printed
only when running it again can get past what stopped the run: after a signal, a budget,
an unreachable server or an agent that failed its turn, not after a configuration or
usage error, which the user must fix first.
"""

from __future__ import annotations

from pathlib import Path

from baton.errors import ApiHttpError, BudgetExhausted, ConfigError, StateFileError
from baton.orchestrator.state import RunState, load_state, resume_command

__all__ = ["resumable", "stopped_line", "unsaved_note"]

# API answers a resume cannot change: the request itself is wrong (a profile or provider
# the server does not know, a refused token).
_USAGE_STATUSES = frozenset({400, 401, 403, 422})


def resumable(error: BaseException | None) -> bool:
    """Whether running the same command again can get past what stopped the run."""
    if isinstance(error, ConfigError):
        return False
    return not (isinstance(error, ApiHttpError) and error.status_code in _USAGE_STATUSES)


def stopped_line(
    state: RunState,
    state_path: Path,
    stopped_by: BaseException | None,
    not_resumable: str | None = None,
) -> str:
    """The saved state's place, and the command that resumes it when one can.

    `not_resumable` replaces the command when nothing can resume the run (the demo's
    server ends with it).
    """
    where = f"round {state.current_round}, phase {state.current_phase}"
    saved = f"state saved to {state_path} ({where})"
    if not_resumable:
        return f"{saved}; {not_resumable}"
    if not resumable(stopped_by):
        return f"{saved}; fix the error below before running again"
    command = resume_command(state, state_path)
    if isinstance(stopped_by, BudgetExhausted):
        return f"{saved}; raise {stopped_by.budget}, then resume with: {command}"
    return f"{saved}; resume with: {command}"


def unsaved_note(error: StateFileError, state_path: Path) -> str:
    """What a failed last save leaves: the earlier saved state, intact, or nothing."""
    try:
        kept = load_state(state_path)
    except StateFileError:
        return f"{error}; no earlier state was saved, so there is nothing to resume"
    return (
        f"{error}; the last saved state (round {kept.current_round}, phase "
        f"{kept.current_phase}, saved {kept.updated_at or 'earlier'}) is intact: once "
        f"{state_path.parent} can be written again, resume with: "
        f"{resume_command(kept, state_path)}"
    )
