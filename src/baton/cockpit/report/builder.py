"""`baton report`: one self-contained HTML page about a run, and a short text summary.

The page has no scripts and loads nothing (inline CSS and SVG only), so it opens offline
and can be mailed around. Agents' words are hostile input: they reach the page only
through Jinja2's autoescaping, never as markup.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from baton.cockpit.record import (
    RunRecord,
    TokenUsage,
    Turn,
    describe_event,
    load_run,
    parse_time,
)
from baton.cockpit.report.timeline import layout_timeline
from baton.errors import ReportError
from baton.gitinfo import diff_stat
from baton.orchestrator.runlog import format_duration
from baton.roles import ROLES

__all__ = ["REPORT_FILE_NAME", "Report", "build_report", "render_html", "write_report"]

REPORT_FILE_NAME = "report.html"
# Events where the run needed (or got) help: listed on their own in the page.
_INTERVENTIONS = ("waiting", "reminder", "stall", "agent_restart", "budget", "error")


@dataclass(frozen=True)
class Report:
    """Where the page was written and the summary printed for it."""

    path: Path
    summary: str


def write_report(state_path: Path) -> Report:
    """Read the run of `state_path`, write `<archive>/report.html`, return it with a summary."""
    record = load_run(state_path)
    return build_report(record)


def build_report(record: RunRecord) -> Report:
    """Render and write the page for `record` (atomically: a reader never sees half of it)."""
    directory = record.archive_dir or record.state_path.parent
    target = directory / REPORT_FILE_NAME
    change = _change(record)
    html = render_html(record, change)
    temporary = target.with_name(f".{target.name}.partial")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        # Private like the run record it is made from (agents' words, paths, prompts' sizes).
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
            stream.write(html)
        temporary.replace(target)
    except OSError as error:
        raise ReportError(f"cannot write the report {target}: {error.strerror}") from None
    return Report(path=target, summary=text_summary(record, change))


def _change(record: RunRecord) -> str:
    """`git diff --stat` since the run's starting commit, or why there is none."""
    wd = record.state.wd
    head = record.git_head
    if not wd:
        return "The state file names no working directory."
    if not head:
        return "No starting commit recorded (WD is not a git repository, or has no commit)."
    stat = diff_stat(Path(wd), head)
    if stat is None:
        return f"git cannot compare {wd} with the starting commit {head[:12]}."
    return stat.rstrip() or f"No change since the starting commit {head[:12]}."


def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("baton.cockpit.report", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_html(record: RunRecord, change: str) -> str:
    """The page's text; every value from the run is escaped by the template engine."""
    return _environment().get_template("report.html").render(**_context(record, change))


def _context(record: RunRecord, change: str) -> dict[str, Any]:
    state = record.state
    started, ended = record.started_at, record.ended_at or record.last_event_at
    return {
        "outcome": record.outcome,
        "state": state,
        "state_path": str(record.state_path),
        "archive": str(record.archive_dir or ""),
        "started": _clock(started),
        "ended": _clock(record.ended_at) if record.ended_at else "still running",
        "duration": format_duration((ended - started).total_seconds())
        if started and ended
        else "-",
        "git_head": record.git_head,
        "timeline": layout_timeline(record),
        "turns": [_turn_row(index, turn) for index, turn in enumerate(record.turns, 1)],
        "gates": [_gate_row(gate) for gate in record.gates],
        "verdicts": [_verdict_row(verdict) for verdict in record.verdicts],
        "tokens": _token_rows(record),
        "token_total": _usage_cells(record.total_tokens()),
        "has_tokens": bool(record.tokens),
        "change": change,
        "errors": [e for e in record.events if e.get("event") == "error"],
        "interventions": [
            describe_event(e) for e in record.events if e.get("event") in _INTERVENTIONS
        ],
        "roles": ROLES,
    }


def _clock(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC") if moment else "-"


def _turn_row(index: int, turn: Turn) -> dict[str, Any]:
    waited = sum(
        ((end or turn.answered_at or turn.sent_at) - began).total_seconds()
        for began, end in turn.waits
    )
    return {
        "index": index,
        "role": turn.role.title,
        "round": turn.round,
        "phase": turn.phase,
        "cycle": turn.cycle,
        "sent": turn.sent_at.strftime("%H:%M:%S"),
        "duration": format_duration(turn.seconds()) if turn.answered_at else "no answer",
        "prompt_chars": turn.prompt_chars,
        "answer_chars": turn.answer_chars,
        "source": {True: "file", False: "terminal output", None: "-"}[turn.from_file],
        "waited": format_duration(max(waited, 0.0)) if turn.waits else "",
        "reminders": len(turn.reminders),
    }


def _gate_row(gate: dict[str, Any]) -> dict[str, Any]:
    approved = gate.get("approved") is True
    said = gate.get("said_approved") is True
    return {
        "round": gate.get("round", "-"),
        "phase": gate.get("phase", "-"),
        "cycle": gate.get("cycle", "-"),
        "role": str(gate.get("role", "?")).replace("_", " "),
        "decision": "APPROVED" if approved else ("APPROVAL REFUSED" if said else "REVISE"),
        "approved": approved,
        "reason": str(gate.get("reason") or ""),
        "notes": str(gate.get("notes") or ""),
        "time": _short_time(gate.get("ts")),
    }


def _verdict_row(verdict: dict[str, Any]) -> dict[str, Any]:
    return {
        "round": verdict.get("round", "-"),
        "verdict": str(verdict.get("verdict") or "?"),
        "evidence": str(verdict.get("evidence") or ""),
        "time": _short_time(verdict.get("ts")),
    }


def _short_time(value: Any) -> str:
    moment = parse_time(value)
    return moment.strftime("%H:%M:%S") if moment else "-"


def _usage_cells(usage: TokenUsage) -> dict[str, str]:
    return {
        "input": f"{usage.input_tokens:,}",
        "cached": f"{usage.cached_input_tokens:,}",
        "output": f"{usage.output_tokens:,}",
        "cost": usage.cost_text() or "-",
        "models": ", ".join(sorted(usage.models)) or "-",
    }


def _token_rows(record: RunRecord) -> list[dict[str, Any]]:
    rows = []
    order = {role.output_key: index for index, role in enumerate(ROLES)}
    for (key, round_number), usage in sorted(
        record.tokens.items(), key=lambda item: (item[0][1], order.get(item[0][0], 9))
    ):
        rows.append({"role": key.replace("_", " "), "round": round_number, **_usage_cells(usage)})
    return rows


def text_summary(record: RunRecord, change: str) -> str:
    """A few lines for the terminal: outcome, rounds, reviews, tokens, the change."""
    state = record.state
    lines = []
    started, ended = record.started_at, record.ended_at or record.last_event_at
    took = f", {format_duration((ended - started).total_seconds())}" if started and ended else ""
    if state.final_status == "RUNNING":
        lines.append(
            f"RUNNING: round {state.current_round}, phase {state.current_phase}{took} so far, "
            f"{len(record.turns)} turns"
        )
    else:
        lines.append(
            f"{state.final_status} in round {state.current_round}{took}, {len(record.turns)} turns"
        )
    for verdict in record.verdicts:
        evidence = str(verdict.get("evidence") or "").strip().splitlines()
        first = f" — {evidence[0][:100]}" if evidence else ""
        lines.append(f"  round {verdict.get('round', '?')}: {verdict.get('verdict', '?')}{first}")
    approved = sum(1 for gate in record.gates if gate.get("approved") is True)
    lines.append(f"  reviews: {len(record.gates)} cycles, {approved} approved")
    sent = sum(turn.prompt_chars or 0 for turn in record.turns)
    received = sum(turn.answer_chars or 0 for turn in record.turns)
    waits = sum(len(turn.waits) for turn in record.turns)
    lines.append(
        f"  sizes: {sent:,} prompt characters sent, {received:,} answer characters received"
        + (f"; {waits} wait(s) for a user answer" if waits else "")
    )
    if record.tokens:
        total = record.total_tokens()
        cost = f", {text}" if (text := total.cost_text()) else ""
        lines.append(
            f"  tokens: {total.input_tokens:,} in ({total.cached_input_tokens:,} cached), "
            f"{total.output_tokens:,} out{cost}"
        )
    else:
        lines.append("  tokens: no token records in this run")
    change_lines = change.strip().splitlines()
    summary_line = (
        next((line.strip() for line in change_lines if "changed" in line), change_lines[-1].strip())
        if change_lines
        else "-"
    )
    lines.append(f"  change: {summary_line}")
    return "\n".join(lines)
