"""What a wait says about the statuses it sees: the status hook and the dialog lines.

Every status change goes to the `on_status` hook (the run record's `status` events); a
dialog (`waiting_user_answer`) is said once, naming `baton answer` and `baton attach`,
and so is the agent resuming after it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from baton.hints import baton_command
from baton.orchestrator.runlog import RunLog, format_duration
from baton.roles import Role
from baton.status import TerminalStatus

__all__ = ["StatusHook", "report_status", "track_waiting", "waiting_hint"]

# Called with (role, terminal id, status, previous status or None) when a wait sees a change.
StatusHook = Callable[[Role, str, str, str | None], None]


def waiting_hint(role: Role, state_file: Path | None = None) -> str:
    """The exact commands that answer or show a waiting agent (logged and in the event)."""
    key = role.terminal_key
    where: tuple[str | Path, ...] = ("--state-file", state_file) if state_file else ()
    return (
        f"`{baton_command('answer', key, 'TEXT', *where)}` (a menu wants `--key KEY` "
        f"instead of TEXT) or `{baton_command('attach', key, *where)}`"
    )


def track_waiting(
    log: RunLog,
    role: Role,
    who: str,
    status: str,
    waiting_since: float | None,
    now: float,
    state_file: Path | None = None,
) -> float | None:
    """Say once when a dialog opens (naming the commands) and when work resumes.

    Returns when the current wait for a user answer began, or None outside one.
    """
    waiting = status == TerminalStatus.WAITING_USER_ANSWER
    if waiting and waiting_since is None:
        log.warning(
            f"{who} is waiting for a user answer (a permission or choice dialog); "
            f"answer it with {waiting_hint(role, state_file)}; baton keeps waiting"
        )
        return now
    if not waiting and waiting_since is not None:
        log.info(
            f"{who} resumed after waiting {format_duration(now - waiting_since)} "
            f"for an answer; now {status}"
        )
        return None
    return waiting_since


def report_status(
    hook: StatusHook | None,
    log: RunLog,
    role: Role,
    terminal_id: str,
    status: str,
    previous: str | None,
) -> None:
    """Tell the hook (the run record) about a status change; it never stops the wait."""
    if hook is None:
        return
    try:
        hook(role, terminal_id, status, previous)
    except Exception as error:  # a record that cannot be written must not end the run
        log.warning(f"cannot record the status of terminal {terminal_id}: {error}")
