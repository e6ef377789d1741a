"""`baton status`: a short human summary of a run's state file."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from baton.orchestrator.config import DEFAULT_STATE_FILE_NAME
from baton.orchestrator.state import FinalStatus, Phase, RunState, load_state
from baton.roles import ROLES

__all__ = ["default_state_file", "format_status", "show_status"]


def default_state_file(environ: Mapping[str, str]) -> Path:
    """STATE_FILE, else `$WD/.tmp/codex-3agents-loop-state.json` (WD defaults to the cwd)."""
    if environ.get("STATE_FILE"):
        return Path(environ["STATE_FILE"]).expanduser()
    wd = Path(environ.get("WD") or ".").expanduser()
    return wd / ".tmp" / DEFAULT_STATE_FILE_NAME


def format_status(state: RunState, path: Path) -> str:
    """The summary lines for one state."""
    if state.final_status == FinalStatus.RUNNING:
        where = f"round {state.current_round}, phase {state.current_phase}"
        if state.current_phase in (Phase.ANALYST, Phase.PROGRAMMER):
            where += f" (review cycle {state.current_cycle}, {state.current_step} step)"
        headline = f"RUNNING: {where}"
        if state.awaiting:
            headline += f"; waiting for {state.awaiting.get('role', '?')}"
    else:
        headline = f"{state.final_status}: finished in round {state.current_round}"
    lines = [
        f"state file: {path}",
        f"status:     {headline}",
        f"updated:    {state.updated_at or 'unknown'}",
        f"api:        {state.api or 'unknown'} (provider {state.provider or 'unknown'})",
        f"wd:         {state.wd or 'unknown'}",
        f"session:    {state.session_name or 'none'}",
        "terminals:  "
        + ", ".join(
            f"{r.terminal_key}={state.terminals.get(r.terminal_key) or '-'}" for r in ROLES
        ),
    ]
    if state.archive_dir:
        lines.append(f"archive:    {state.archive_dir}")
    feedback = state.feedback.strip().splitlines()
    if feedback and feedback[0] != "None yet.":
        lines.append(f"feedback:   {feedback[0]}" + (" …" if len(feedback) > 1 else ""))
    return "\n".join(lines)


def show_status(
    state_file: Path | None, environ: Mapping[str, str], *, out: TextIO | None = None
) -> int:
    """Print the summary of `state_file` (or the default one); 0, or StateFileError."""
    path = Path(state_file) if state_file is not None else default_state_file(environ)
    state = load_state(path)
    stream = out or sys.stdout
    stream.write(format_status(state, path) + "\n")
    return 0
