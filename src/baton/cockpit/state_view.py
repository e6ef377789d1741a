"""`baton status`: a short, truthful summary of a run's state file and its run record.

A finished run says how it ended and what the last test said, never the feedback of an
earlier round; a running one says where it stands and what the current round works from.
When the run's server answers, each agent's live status is shown beside its terminal.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from baton.cockpit.live import ServerProbe
from baton.cockpit.record import RunRecord, load_run
from baton.orchestrator.config import DEFAULT_STATE_FILE_NAME
from baton.orchestrator.driver_lock import current_driver
from baton.orchestrator.state import NO_FEEDBACK, FinalStatus, Phase, RunState, resume_command
from baton.roles import ROLES

__all__ = [
    "default_state_file",
    "driver_line",
    "format_status",
    "live_statuses",
    "show_status",
]


def default_state_file(environ: Mapping[str, str]) -> Path:
    """STATE_FILE, else `$WD/.tmp/codex-3agents-loop-state.json` (WD defaults to the cwd)."""
    if environ.get("STATE_FILE"):
        return Path(environ["STATE_FILE"]).expanduser()
    wd = Path(environ.get("WD") or ".").expanduser()
    return wd / ".tmp" / DEFAULT_STATE_FILE_NAME


def _first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    return lines[0].strip() + (" …" if len(lines) > 1 else "")


def _last_test(record: RunRecord) -> tuple[int | str, str] | None:
    """(round, first line of the evidence) of the tester's last verdict, if any."""
    if record.verdicts:
        last = record.verdicts[-1]
        line = _first_line(str(last.get("evidence") or "")) or f"RESULT: {last.get('verdict')}"
        return last.get("round", "?"), line
    tester = record.state.outputs.get("tester", "")
    if tester.strip():
        return record.state.current_round, _first_line(tester)
    return None


def _headline(state: RunState) -> str:
    if state.final_status == FinalStatus.RUNNING:
        where = f"round {state.current_round}, phase {state.current_phase}"
        if state.current_phase in (Phase.ANALYST, Phase.PROGRAMMER):
            where += f" (review cycle {state.current_cycle}, {state.current_step} step)"
        headline = f"RUNNING: {where}"
        if state.awaiting:
            headline += f"; waiting for {state.awaiting.role}"
        return headline
    return f"{state.final_status}: finished in round {state.current_round}"


def driver_line(path: Path) -> str:
    """Whether a `baton run` drives the state file now, and which (its lock's record)."""
    driver = current_driver(path)
    if driver is None:
        return "none (no baton run holds this state file now)"
    return f"baton run {driver.describe()}"


def format_status(
    record: RunRecord,
    path: Path,
    live: Mapping[str, str] | None = None,
    server_note: str = "",
    driver: str = "",
) -> str:
    """The summary lines for one run; `live` maps terminal ids to the server's statuses,
    `driver` says which process drives it now (see `driver_line`)."""
    state = record.state
    lines = [
        f"state file: {path}",
        f"status:     {_headline(state)}",
        *([f"driver:     {driver}"] if driver else []),
        *(
            [f"resume:     {resume_command(state, path)}"]
            if state.final_status == FinalStatus.RUNNING
            and state.current_phase != Phase.DONE
            and driver.startswith("none")
            else []
        ),
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
    last_test = _last_test(record)
    if state.final_status != FinalStatus.RUNNING:
        if last_test is not None:
            lines.append(f"last test:  round {last_test[0]}: {last_test[1]}")
        if (
            state.final_status == FinalStatus.FAIL
            and _first_line(state.feedback)
            and (last_test is None or _first_line(state.feedback) != last_test[1])
        ):
            lines.append(f"why:        {_first_line(state.feedback)}")
    elif state.feedback.strip() and state.feedback.strip() != NO_FEEDBACK:
        source = (
            f"round {state.current_round - 1}'s tester"
            if state.current_round > 1
            else "this round's reviews"
        )
        lines.append(f"feedback:   {_first_line(state.feedback)} (from {source})")
    if record.gates:
        approved = sum(1 for gate in record.gates if gate.get("approved") is True)
        lines.append(f"reviews:    {len(record.gates)} cycles judged, {approved} approved")
    if record.tokens:
        total = record.total_tokens()
        cost = f", {text}" if (text := total.cost_text()) else ""
        lines.append(f"tokens:     {total.input_tokens:,} in, {total.output_tokens:,} out{cost}")
    if live is not None:
        lines.append("agents:" + (f"     ({server_note})" if server_note else ""))
        for role in ROLES:
            terminal_id = state.terminals.get(role.terminal_key) or "-"
            status = live.get(terminal_id) or "unknown"
            lines.append(f"  {role.terminal_key:<16} {terminal_id:<10} {status}")
    return "\n".join(lines)


def live_statuses(record: RunRecord, environ: Mapping[str, str]) -> tuple[dict[str, str], str]:
    """Each terminal's status from the run's server, and a note when it cannot answer."""
    if not record.state.api:
        return {}, "no API in the state file"
    statuses: dict[str, str] = {}
    with ServerProbe.for_environment(record.state.api, environ) as probe:
        for role in ROLES:
            terminal_id = record.state.terminals.get(role.terminal_key, "")
            status = probe.status(terminal_id) if probe.reachable is not False else None
            if status:
                statuses[terminal_id] = status
            elif terminal_id and probe.reachable:
                statuses[terminal_id] = "gone (the server does not know this terminal)"
        note = f"server not reachable: {probe.problem}" if probe.reachable is False else "live"
    return statuses, note


def show_status(
    state_file: Path | None,
    environ: Mapping[str, str],
    *,
    out: TextIO | None = None,
    live: bool = True,
) -> int:
    """Print the summary of `state_file` (or the default one); 0, or StateFileError."""
    path = Path(state_file) if state_file is not None else default_state_file(environ)
    record = load_run(path)
    statuses, note = live_statuses(record, environ) if live else (None, "")
    stream = out or sys.stdout
    stream.write(format_status(record, path, statuses, note, driver_line(path)) + "\n")
    return 0
