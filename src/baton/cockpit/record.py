"""One run as the views see it: the state file plus its event log, folded into plain objects.

`baton watch`, `baton status` and `baton report` all read a run through `load_run`, so they
agree on what happened. Events are read defensively: a field of the wrong type or an event
a newer Baton writes is skipped, never an error (the log is evidence, not configuration).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from baton.orchestrator.events import EVENTS_FILE_NAME, read_events
from baton.orchestrator.state import RunState, load_state
from baton.roles import ROLE_BY_OUTPUT, ROLE_BY_TERMINAL, ROLES, Role
from baton.status import TerminalStatus

__all__ = [
    "AgentRow",
    "RunRecord",
    "TokenUsage",
    "Turn",
    "describe_event",
    "load_run",
    "parse_time",
    "role_from_name",
]


def parse_time(value: Any) -> datetime | None:
    """An event's `ts` (or any ISO-8601 text) as an aware datetime; None when it is not one."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def role_from_name(name: str) -> Role | None:
    """A role from its terminal key (`peer_analyst`), output key (`analyst_review`) or title."""
    cleaned = "_".join(name.strip().lower().replace("-", " ").split())
    return (
        ROLE_BY_TERMINAL.get(cleaned)
        or ROLE_BY_OUTPUT.get(cleaned)
        or next((role for role in ROLES if role.title.replace(" ", "_") == cleaned), None)
    )


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


@dataclass
class TokenUsage:
    """Tokens (and cost, when priced) summed over `tokens` events."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cost_usd: float | None = None
    models: set[str] = field(default_factory=set)
    unpriced: set[str] = field(default_factory=set)  # models whose tokens have no price

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens

    def cost_text(self, digits: int = 4, *, short: bool = False) -> str | None:
        """The cost as shown: `$0.1234`, with `+` and the unpriced models when partial.

        None when no turn was priced at all (nothing to show but tokens).
        """
        if self.cost_usd is None and not self.unpriced:
            return None
        amount = f"${self.cost_usd or 0.0:.{digits}f}"
        if not self.unpriced:
            return amount
        if short:
            return f"{amount}+"
        models = ", ".join(sorted(self.unpriced))
        return f"{amount}+ (partial: no price for {models})"

    def add(self, event: Mapping[str, Any]) -> None:
        self.input_tokens += _int(event.get("input_tokens")) or 0
        self.output_tokens += _int(event.get("output_tokens")) or 0
        self.cached_input_tokens += _int(event.get("cached_input_tokens")) or 0
        cost = _float(event.get("cost_usd"))
        model = _str(event.get("model"))
        if cost is not None:
            self.cost_usd = (self.cost_usd or 0.0) + cost
        elif (_int(event.get("input_tokens")) or 0) + (_int(event.get("output_tokens")) or 0):
            self.unpriced.add(model or "(unnamed)")
        if model:
            self.models.add(model)

    def merge(self, other: TokenUsage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cached_input_tokens += other.cached_input_tokens
        if other.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + other.cost_usd
        self.models |= other.models
        self.unpriced |= other.unpriced


@dataclass
class Turn:
    """One prompt to one agent and what came of it (the bar on the report's timeline)."""

    role: Role
    terminal_id: str
    round: int
    phase: str
    cycle: int
    sent_at: datetime
    prompt_chars: int | None = None
    prompt_file: str | None = None
    answered_at: datetime | None = None
    answer_chars: int | None = None
    answer_file: str | None = None
    from_file: bool | None = None
    waits: list[tuple[datetime, datetime | None]] = field(default_factory=list)
    reminders: list[datetime] = field(default_factory=list)

    def seconds(self, now: datetime | None = None) -> float:
        end = self.answered_at or now or self.sent_at
        return max(0.0, (end - self.sent_at).total_seconds())


@dataclass
class AgentRow:
    """One agent as the views list it."""

    role: Role
    terminal_id: str
    provider: str
    status: str | None
    status_since: datetime | None
    last_verdict: str
    tokens: TokenUsage


@dataclass
class RunRecord:
    """A run's state, its events and what they add up to."""

    state: RunState
    state_path: Path
    events: list[dict[str, Any]]
    turns: list[Turn]
    gates: list[dict[str, Any]]
    verdicts: list[dict[str, Any]]
    tokens: dict[tuple[str, int], TokenUsage]  # (output key, round) -> usage
    providers: dict[str, str]  # terminal key -> provider
    statuses: dict[str, tuple[str, datetime | None]]  # terminal id -> (status, since)
    start: dict[str, Any] | None

    @property
    def archive_dir(self) -> Path | None:
        return Path(self.state.archive_dir) if self.state.archive_dir else None

    @property
    def outcome(self) -> str:
        return self.state.final_status

    @property
    def started_at(self) -> datetime | None:
        return parse_time(self.events[0].get("ts")) if self.events else None

    @property
    def ended_at(self) -> datetime | None:
        ends = [e for e in self.events if e.get("event") == "run_end"]
        return parse_time(ends[-1].get("ts")) if ends else None

    @property
    def last_event_at(self) -> datetime | None:
        return parse_time(self.events[-1].get("ts")) if self.events else None

    @property
    def git_head(self) -> str | None:
        for event in self.events:
            head = event.get("git_head")
            if event.get("event") in ("run_start", "run_resume") and isinstance(head, str) and head:
                return head
        return None

    def tokens_for_role(self, output_key: str) -> TokenUsage:
        total = TokenUsage()
        for (key, _round), usage in self.tokens.items():
            if key == output_key:
                total.merge(usage)
        return total

    def total_tokens(self) -> TokenUsage:
        total = TokenUsage()
        for usage in self.tokens.values():
            total.merge(usage)
        return total

    def last_verdict(self, role: Role) -> str:
        """The tester's last RESULT, a reviewer's last gate decision, else `-`."""
        if role.output_key == "tester":
            found = [v for v in self.verdicts if _str(v.get("verdict"))]
            return str(found[-1]["verdict"]) if found else "-"
        found = [g for g in self.gates if g.get("role") == role.output_key]
        if not found:
            return "-"
        return "APPROVED" if found[-1].get("approved") is True else "REVISE"

    def agent_rows(self) -> list[AgentRow]:
        """The five agents, with the status the log last saw for each."""
        rows = []
        for role in ROLES:
            terminal_id = self.state.terminals.get(role.terminal_key, "")
            status, since = self.statuses.get(terminal_id, (None, None))
            rows.append(
                AgentRow(
                    role=role,
                    terminal_id=terminal_id,
                    provider=self.providers.get(role.terminal_key) or self.state.provider or "?",
                    status=status,
                    status_since=since,
                    last_verdict=self.last_verdict(role),
                    tokens=self.tokens_for_role(role.output_key),
                )
            )
        return rows

    def rounds(self) -> list[int]:
        seen = {turn.round for turn in self.turns} | {key[1] for key in self.tokens}
        seen.add(self.state.current_round)
        return sorted(seen)


def describe_event(event: Mapping[str, Any]) -> str:
    """One line for an event: time, kind, who, and what matters about it."""
    moment = parse_time(event.get("ts"))
    stamp = moment.astimezone().strftime("%H:%M:%S") if moment else "--:--:--"
    kind = str(event.get("event"))
    role = str(event.get("role") or "").replace("_", " ")
    where = f"r{event.get('round')}" if "round" in event else ""
    detail = ""
    if kind == "prompt_sent":
        detail = f"{event.get('chars')} chars"
    elif kind == "answer":
        detail = f"{event.get('chars')} chars" + ("" if event.get("from_file") else " (screen)")
    elif kind == "status":
        detail = f"{event.get('previous') or 'start'} → {event.get('status')}"
    elif kind == "gate":
        detail = str(event.get("reason") or "")
    elif kind == "verdict":
        detail = f"RESULT: {event.get('verdict')}"
    elif kind == "tokens":
        detail = f"{event.get('input_tokens')} in / {event.get('output_tokens')} out"
    elif kind in ("run_end",):
        detail = str(event.get("final_status"))
    elif kind == "error":
        detail = str(event.get("message") or "")
    elif kind == "waiting":
        detail = "waiting for a user answer"
    elif kind == "stall":
        detail = f"{event.get('action')}: {event.get('reason') or 'no progress'}"
    else:  # reminders, restarts, budgets and kinds added later: what they say about it
        detail = str(event.get("message") or event.get("reason") or "")
    parts = [stamp, kind, role, where, detail]
    return " ".join(part for part in parts if part)[:200]


def events_path_for(state: RunState) -> Path | None:
    """`<archive>/events.jsonl` of a run, when the state names its archive."""
    return Path(state.archive_dir) / EVENTS_FILE_NAME if state.archive_dir else None


def load_run(state_path: Path) -> RunRecord:
    """Read a state file (StateFileError when it is unusable) and the events beside its archive."""
    state = load_state(state_path)
    path = events_path_for(state)
    events = list(read_events(path)) if path is not None else []
    return fold_events(state, Path(state_path), events)


def fold_events(state: RunState, state_path: Path, events: Iterable[dict[str, Any]]) -> RunRecord:
    """Build the record from already read events (the order they were written)."""
    kept = [e for e in events if isinstance(e.get("event"), str)]
    record = RunRecord(
        state=state,
        state_path=state_path,
        events=kept,
        turns=[],
        gates=[],
        verdicts=[],
        tokens={},
        providers={},
        statuses={},
        start=None,
    )
    open_turns: dict[str, Turn] = {}  # output key -> the turn awaiting its answer
    for event in kept:
        _fold_one(record, open_turns, event)
    return record


def _fold_one(record: RunRecord, open_turns: dict[str, Turn], event: dict[str, Any]) -> None:
    kind = event["event"]
    when = parse_time(event.get("ts"))
    role = (
        ROLE_BY_OUTPUT.get(event.get("role") or "") if isinstance(event.get("role"), str) else None
    )
    if kind in ("run_start", "run_resume"):
        record.start = record.start or event
        providers = event.get("providers")
        if isinstance(providers, dict):
            record.providers.update({k: v for k, v in providers.items() if isinstance(v, str)})
    elif kind == "prompt_sent" and role is not None and when is not None:
        turn = Turn(
            role=role,
            terminal_id=_str(event.get("terminal_id")) or "",
            round=_int(event.get("round")) or 1,
            phase=_str(event.get("phase")) or "",
            cycle=_int(event.get("cycle")) or 1,
            sent_at=when,
            prompt_chars=_int(event.get("chars")),
            prompt_file=_str(event.get("file")),
        )
        record.turns.append(turn)
        open_turns[role.output_key] = turn
    elif kind == "answer" and role is not None:
        answered = open_turns.pop(role.output_key, None)
        if answered is not None:
            answered.answered_at = when
            answered.answer_chars = _int(event.get("chars"))
            answered.answer_file = _str(event.get("file"))
            from_file = event.get("from_file")
            answered.from_file = from_file if isinstance(from_file, bool) else None
            _close_wait(answered, when)
    elif kind == "status":
        _fold_status(record, open_turns, event, role, when)
    elif kind == "waiting" and role is not None and when is not None:
        waiting = open_turns.get(role.output_key)
        if waiting is not None and not (waiting.waits and waiting.waits[-1][1] is None):
            waiting.waits.append((when, None))
    elif kind == "reminder" and role is not None and when is not None:
        reminded = open_turns.get(role.output_key)
        if reminded is not None:
            reminded.reminders.append(when)
    elif kind == "gate":
        record.gates.append(event)
    elif kind == "verdict":
        record.verdicts.append(event)
    elif kind == "tokens" and role is not None:
        key = (role.output_key, _int(event.get("round")) or record.state.current_round)
        record.tokens.setdefault(key, TokenUsage()).add(event)


def _fold_status(
    record: RunRecord,
    open_turns: dict[str, Turn],
    event: dict[str, Any],
    role: Role | None,
    when: datetime | None,
) -> None:
    status = _str(event.get("status"))
    terminal_id = _str(event.get("terminal_id"))
    if status is None:
        return
    if terminal_id:
        record.statuses[terminal_id] = (status, when)
    turn = open_turns.get(role.output_key) if role is not None else None
    if turn is None or when is None:
        return
    if status == TerminalStatus.WAITING_USER_ANSWER.value:
        if not (turn.waits and turn.waits[-1][1] is None):
            turn.waits.append((when, None))
    else:
        _close_wait(turn, when)


def _close_wait(turn: Turn, when: datetime | None) -> None:
    if turn.waits and turn.waits[-1][1] is None and when is not None:
        turn.waits[-1] = (turn.waits[-1][0], when)
