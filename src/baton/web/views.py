"""What the cockpit's pages show, as plain JSON: runs from their files, agents from memory.

A run is read afresh from its state file and run record (`cockpit.record.load_run`) on
every request: the state file is replaced atomically, so a read sees a whole file, and
a state file that is gone, unreadable or now another run's is said so instead of failing.
Statuses and screens come from the server's live screen model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baton.cockpit.record import RunRecord, TokenUsage, describe_event, load_run
from baton.errors import BatonError, NotFoundError, ServerError
from baton.roles import ROLE_BY_TERMINAL
from baton.server.records import TerminalRecord
from baton.server.terminals import TerminalService
from baton.web.batches import BatchDirectory
from baton.web.runs import Announcement, RunDirectory

__all__ = ["CockpitViews", "screen_tail"]

_TAIL_LINES = 14
_TIMELINE_EVENTS = 400


def screen_tail(screen: str, lines: int = _TAIL_LINES) -> str:
    """The last `lines` lines of a screen that hold something (what an agent card shows)."""
    rows = screen.rstrip("\n").split("\n")
    while rows and not rows[-1].strip():
        rows.pop()
    return "\n".join(rows[-lines:])


def _tokens(usage: TokenUsage) -> dict[str, Any]:
    return {
        "input": usage.input_tokens,
        "output": usage.output_tokens,
        "cached": usage.cached_input_tokens,
        "total": usage.total,
        "cost_usd": round(usage.cost_usd, 4) if usage.cost_usd is not None else None,
        "cost": usage.cost_text(),  # as shown: `$0.4120+ (partial: no price for m)`
        "models": sorted(usage.models),
        "unpriced": sorted(usage.unpriced),
    }


@dataclass(frozen=True)
class CockpitViews:
    """Builds each page's JSON from the run directory and the terminal service."""

    runs: RunDirectory
    batches: BatchDirectory
    service: TerminalService

    # -- terminals --------------------------------------------------------------------

    def _record(self, terminal_id: str) -> TerminalRecord | None:
        return self.service.registry.get_terminal(terminal_id)

    def terminal_live(self, record: TerminalRecord) -> dict[str, Any]:
        """Status and screen of one terminal, from the screen model (tmux when not trusted)."""
        try:
            status = str(self.service.status(record))
            screen = self.service.reader.screen(record)
        except ServerError as error:
            return {"status": "error", "screen": "", "problem": str(error)}
        return {"status": status, "screen": screen}

    def terminal(self, terminal_id: str) -> dict[str, Any]:
        """The agent page: the terminal, its live screen, and the run it belongs to."""
        record = self._record(terminal_id)
        if record is None:
            raise NotFoundError(f"terminal {terminal_id!r} not found")
        run = self._run_for_terminal(record)
        role = None
        if run is not None:
            role = next((key for key, tid in run["terminals"].items() if tid == record.id), None)
        found = ROLE_BY_TERMINAL.get(role or "")
        return {
            "id": record.id,
            "name": record.name,
            "session": record.session_name,
            "provider": record.provider,
            "profile": record.agent_profile,
            "working_directory": record.working_directory,
            "role": role,
            "role_title": found.title if found else None,
            "run": run["summary"] if run else None,
            **self.terminal_live(record),
        }

    def _run_for_terminal(self, record: TerminalRecord) -> dict[str, Any] | None:
        announcement = self.runs.get(record.session_name)
        if announcement is None:
            return None
        read = _read(announcement)
        if isinstance(read, str):
            return None
        return {"summary": _summary(announcement, read), "terminals": dict(read.state.terminals)}

    # -- runs -------------------------------------------------------------------------

    def overview(self) -> dict[str, Any]:
        """The index: every announced batch and run, then every session no run announced."""
        runs = []
        announced = set()
        for announcement in self.runs.all():
            announced.add(announcement.session)
            read = _read(announcement)
            if isinstance(read, str):
                runs.append(_unreadable(announcement, read))
            else:
                runs.append(_summary(announcement, read))
        sessions = []
        for session in self.service.registry.sessions():
            if session.name in announced:
                continue
            terminals = [
                {
                    "id": record.id,
                    "name": record.name,
                    "provider": record.provider,
                    "profile": record.agent_profile,
                    "status": self.terminal_live(record)["status"],
                }
                for record in self.service.registry.terminals(session.name)
            ]
            sessions.append({"name": session.name, "terminals": terminals})
        return {"batches": self.batches.views(), "runs": runs, "sessions": sessions}

    def run(self, session: str) -> dict[str, Any]:
        """One run: its summary, its five agents live, its timeline."""
        announcement = self.runs.get(session)
        if announcement is None:
            raise NotFoundError(f"no run announced for session {session!r}")
        read = _read(announcement)
        if isinstance(read, str):
            return {"summary": _unreadable(announcement, read), "agents": [], "timeline": []}
        return {
            "summary": _summary(announcement, read),
            "agents": self._agents(read),
            "turns": _turns(read),
            "timeline": _timeline(read),
        }

    def state_path(self, session: str) -> Path:
        """The state file a run announced; NotFoundError when none was."""
        announcement = self.runs.get(session)
        if announcement is None:
            raise NotFoundError(f"no run announced for session {session!r}")
        return Path(announcement.state_file)

    def _agents(self, record: RunRecord) -> list[dict[str, Any]]:
        agents = []
        for row in record.agent_rows():
            terminal = self._record(row.terminal_id) if row.terminal_id else None
            live = (
                self.terminal_live(terminal)
                if terminal is not None
                else {"status": row.status or "unknown", "screen": ""}
            )
            agents.append(
                {
                    "role": row.role.terminal_key,
                    "title": row.role.title,
                    "terminal_id": row.terminal_id,
                    "on_this_server": terminal is not None,
                    "provider": row.provider,
                    "status": live["status"],
                    "verdict": row.last_verdict,
                    "tokens": _tokens(row.tokens),
                    "screen": screen_tail(live["screen"]),
                }
            )
        return agents


def _read(announcement: Announcement) -> RunRecord | str:
    """The run record, or the one line that says why it cannot be read now."""
    try:
        record = load_run(Path(announcement.state_file))
    except (BatonError, OSError, ValueError) as error:
        return f"cannot read {announcement.state_file}: {error}"
    return record


def _unreadable(announcement: Announcement, problem: str) -> dict[str, Any]:
    return {
        "session": announcement.session,
        "state_file": announcement.state_file,
        "wd": announcement.wd,
        "problem": problem,
    }


def _summary(announcement: Announcement, record: RunRecord) -> dict[str, Any]:
    state = record.state
    moved_on = bool(state.session_name) and state.session_name != announcement.session
    verdicts = [{"round": v.get("round"), "verdict": v.get("verdict")} for v in record.verdicts]
    gates = [
        {
            "role": g.get("role"),
            "round": g.get("round"),
            "cycle": g.get("cycle"),
            "approved": g.get("approved") is True,
        }
        for g in record.gates
    ]
    return {
        "session": announcement.session,
        "state_file": announcement.state_file,
        "wd": state.wd or announcement.wd,
        "outcome": str(state.final_status),
        "round": state.current_round,
        "phase": str(state.current_phase),
        "step": str(state.current_step),
        "cycle": state.current_cycle,
        "awaiting": state.awaiting.role if state.awaiting else None,
        "provider": state.provider,
        "started_at": record.started_at.isoformat() if record.started_at else None,
        "ended_at": record.ended_at.isoformat() if record.ended_at else None,
        "updated_at": state.updated_at,
        "tokens": _tokens(record.total_tokens()),
        "verdicts": verdicts,
        "gates": gates,
        "terminals": dict(state.terminals),
        "moved_on_to": state.session_name if moved_on else None,
        "has_git_start": record.git_head is not None,
    }


def _turns(record: RunRecord) -> list[dict[str, Any]]:
    return [
        {
            "role": turn.role.terminal_key,
            "title": turn.role.title,
            "round": turn.round,
            "phase": turn.phase,
            "cycle": turn.cycle,
            "sent_at": turn.sent_at.isoformat(),
            "answered_at": turn.answered_at.isoformat() if turn.answered_at else None,
            "seconds": round(turn.seconds(), 1),
            "waits": len(turn.waits),
        }
        for turn in record.turns
    ]


def _timeline(record: RunRecord) -> list[dict[str, Any]]:
    return [
        {
            "ts": event.get("ts") if isinstance(event.get("ts"), str) else None,
            "event": event.get("event"),
            "role": event.get("role") if isinstance(event.get("role"), str) else None,
            "text": describe_event(event),
        }
        for event in record.events[-_TIMELINE_EVENTS:]
    ]
