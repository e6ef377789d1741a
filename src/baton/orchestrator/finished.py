"""A run whose state file says it already ended: complete an exit it was killed in.

A run killed after saving its PASS or FAIL but before its exit was done (its commit,
its agents' exit, `exit_complete`) finishes that exit when it is run again, instead of
starting anew; one that ended properly says so and returns its result.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from baton.orchestrator.client import ApiClient
from baton.orchestrator.config import Settings
from baton.orchestrator.events import EventKind, EventListener, RunEvents, read_events
from baton.orchestrator.git_commit import commit_on_pass
from baton.orchestrator.runlog import RunLog
from baton.orchestrator.state import FinalStatus, RunState, save_state
from baton.orchestrator.team import cleanup_terminals

__all__ = ["complete_finished_run"]


def complete_finished_run(
    settings: Settings,
    api: ApiClient,
    state: RunState,
    log: RunLog,
    listeners: Sequence[EventListener] = (),
) -> int:
    """Complete an interrupted exit, or say the run is over; its exit code."""
    path = settings.state_path
    if state.exit_complete is False:
        # Killed after its result was saved: finish that exit instead of a new run.
        log.info(
            f"the run in {path} had finished with {state.final_status} in "
            f"round {state.current_round} when it was stopped; completing its exit"
        )
        _commit_interrupted_pass(settings, state, log, listeners)
        if settings.cleanup_on_exit:
            cleanup_terminals(api, state, log)
        state.exit_complete = True
        save_state(state, path)
    else:
        log.info(
            f"the run in {path} already finished with {state.final_status} in "
            f"round {state.current_round}; nothing to resume (unset RESUME to start a new run)"
        )
    return 0 if state.final_status == FinalStatus.PASS else 1


def _commit_interrupted_pass(
    settings: Settings, state: RunState, log: RunLog, listeners: Sequence[EventListener]
) -> None:
    """A PASS killed before POST_GIT_COMMIT committed it: commit it now, once."""
    archive = Path(state.archive_dir) if state.archive_dir else None
    if state.final_status != FinalStatus.PASS or not settings.post_git_commit:
        return
    if archive is None or not archive.is_dir():
        return
    events = RunEvents(archive, listeners=list(listeners))
    if events.path is None or not events.path.is_file():
        return
    earlier = list(read_events(events.path))
    if any(e.get("event") == EventKind.GIT_COMMIT.value for e in earlier):
        return
    commit_on_pass(settings, state, events, earlier, log)
