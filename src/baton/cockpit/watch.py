"""`baton watch`: the five agents of a run, live, in any terminal (rich's Live display).

Each refresh re-reads the state file and `events.jsonl` and, when the run's server answers,
asks it for every terminal's status and the selected agent's screen. Without a server (a
finished run, a stopped one) the rows come from the record alone and the screen panel
shows the agent's last archived answer. Keys: 1-5 or Tab pick the agent, q quits.

The frame fits the terminal it is drawn in (`Watcher.fit`): no row ever wraps (long
values end in `…`), the key hints are always whole, narrow terminals drop the provider
and terminal columns, and the rows left over go to the agent's screen, which shows its
working area (`screen_area.py`), not its composer and footer.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from baton.cockpit.keys import KeyReader, split_keys
from baton.cockpit.live import ServerProbe
from baton.cockpit.record import AgentRow, RunRecord, Turn, describe_event, load_run
from baton.cockpit.screen_area import working_area
from baton.errors import StateFileError
from baton.hints import baton_command
from baton.orchestrator.runlog import format_duration
from baton.roles import ROLES

__all__ = ["KeyReader", "Watcher", "open_watcher", "printable", "run_watch", "split_keys"]

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Rows of the frame besides the screen's and the events' lines: header 3, table 7 (its
# header, rule, five agents), two panel frames 4, footer 3.
FRAME_ROWS = 17
NARROW_COLUMNS = 120  # below: no provider and terminal columns, shorter status and tokens
KEY_HINTS = "keys: 1-5 or Tab pick an agent · q quit"
_STATUS_STYLES = {
    "idle": "green",
    "completed": "green",
    "processing": "yellow",
    "waiting_user_answer": "bold white on red",
    "error": "bold red",
}


def printable(text: str) -> str:
    """Text from an agent with control characters removed: it cannot drive our terminal."""
    return _CONTROL.sub("", text.replace("\t", "    "))


@dataclass
class LiveAgent:
    """What the server said about one agent on the last refresh."""

    status: str | None = None
    since: datetime | None = None
    window: str = ""


@dataclass
class Watcher:
    """The view's state between refreshes: the selected agent and each status's start."""

    state_path: Path
    probe: ServerProbe | None
    tail_lines: int = 15
    events_lines: int = 8
    narrow: bool = False
    selected: int = 0
    record: RunRecord | None = None
    problem: str = ""
    live: dict[str, LiveAgent] = field(default_factory=dict)
    screen: str | None = None
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)

    def fit(self, width: int, height: int, wanted: int = 15) -> None:
        """Share `height` rows between the screen tail (up to `wanted`) and the events."""
        left = max(0, height - FRAME_ROWS)
        self.events_lines = 8 if left >= 24 else 4 if left >= 12 else 2
        self.tail_lines = max(1, min(wanted, left - self.events_lines))
        self.narrow = width < NARROW_COLUMNS

    # --- input ---

    def handle_key(self, key: str) -> bool:
        """Apply one key; False when the view should end."""
        if key in ("q", "Q", "\x03", "\x04"):
            return False
        if len(key) == 1 and key in "12345":
            self.selected = int(key) - 1
        elif key == "\t":
            self.selected = (self.selected + 1) % len(ROLES)
        elif key == "\x1b[Z":  # shift-Tab
            self.selected = (self.selected - 1) % len(ROLES)
        return True

    # --- data ---

    def refresh(self) -> None:
        """Re-read the run and ask the server; keep the last good record on a read error."""
        try:
            self.record = load_run(self.state_path)
            self.problem = ""
        except StateFileError as error:
            if self.record is None:
                raise
            self.problem = str(error)
        record = self.record
        assert record is not None
        if self.probe is None:
            return
        now = self.clock()
        for role in ROLES:
            terminal_id = record.state.terminals.get(role.terminal_key, "")
            found = self.probe.terminal(terminal_id) if self.probe.reachable is not False else None
            agent = self.live.setdefault(terminal_id, LiveAgent())
            status = found.get("status") if found else None
            status = status if isinstance(status, str) else None
            if status != agent.status:
                logged_status, logged_since = record.statuses.get(terminal_id, (None, None))
                agent.since = logged_since if logged_status == status and logged_since else now
                agent.status = status
            if found:
                session, window = found.get("tmux_session"), found.get("tmux_window")
                if isinstance(session, str) and isinstance(window, str):
                    agent.window = f"{session}:{window}"
        selected = record.state.terminals.get(ROLES[self.selected].terminal_key, "")
        screen = self.probe.screen(selected) if self.probe.reachable is not False else None
        provider = record.agent_rows()[self.selected].provider
        self.screen = None if screen is None else working_area(screen, provider, self.tail_lines)
        if self.probe.reachable is False:
            self.probe.reachable = None  # try again on the next refresh

    # --- drawing ---

    def render(self) -> RenderableType:
        record = self.record
        assert record is not None
        rows = record.agent_rows()
        return Group(
            self._header(record),
            self._table(record, rows),
            self._screen_panel(record, rows[self.selected]),
            self._events_panel(record),
            self._footer(record, rows[self.selected]),
        )

    def _header(self, record: RunRecord) -> Text:
        state = record.state
        if state.final_status == "RUNNING":
            where = f"RUNNING · round {state.current_round} · {state.current_phase} phase"
            if state.current_phase in ("analyst", "programmer"):
                where += f" · cycle {state.current_cycle} ({state.current_step})"
        else:
            where = f"{state.final_status} in round {state.current_round}"
        header = Text.assemble(("baton watch ", "bold"), (where, _outcome_style(state)))
        if record.tokens:
            total = record.total_tokens()
            cost = f", {text}" if (text := total.cost_text()) else ""
            header.append(f" · tokens {total.total:,}{cost}")
        if self.probe is None or self.probe.problem:
            reason = self.probe.problem if self.probe else "no API in the state"
            header.append(f"\nserver: not reachable: {reason}; statuses from the run record", "dim")
        else:
            header.append(f"\nserver: {record.state.api} (live)", "dim")
        header.append(f"\nstate: {self.state_path}", "dim")
        if self.problem:
            header.append(f"\n{self.problem}", "red")
        header.no_wrap, header.overflow = True, "ellipsis"
        return header

    def _table(self, record: RunRecord, rows: list[AgentRow]) -> Table:
        table = Table(expand=True, show_edge=False, pad_edge=False)
        # Every cell on one line: a long value ends in `…` rather than wrapping its row.
        wide = not self.narrow
        table.add_column("agent", no_wrap=True, overflow="ellipsis")
        if wide:
            table.add_column("provider", no_wrap=True, overflow="ellipsis", max_width=12)
            table.add_column("terminal", no_wrap=True, overflow="ellipsis")
        table.add_column("status", no_wrap=True, overflow="ellipsis")
        table.add_column("for", no_wrap=True, overflow="ellipsis")
        table.add_column("turn", no_wrap=True, overflow="ellipsis")
        table.add_column("verdict", no_wrap=True, overflow="ellipsis")
        table.add_column("tokens", justify="right", no_wrap=True, overflow="ellipsis")
        awaited = record.state.awaiting.role if record.state.awaiting else None
        now = self.clock()
        last_turns = _last_turns(record)
        status_column = 3 if wide else 1
        for index, row in enumerate(rows):
            live = self.live.get(row.terminal_id)
            status, since = (live.status, live.since) if live and live.status else (None, None)
            style = _STATUS_STYLES.get(status or "", "")
            reference = now
            if status is None:  # no live answer: what the run record saw last, dimmed
                status, since, style = row.status, row.status_since, "dim"
                reference = record.ended_at or now
            marker = "▶" if index == self.selected else " "
            working = "*" if awaited == row.role.output_key else ""
            turn = last_turns.get(row.role.output_key)
            cells = [
                f"{marker}{index + 1} {row.role.title}{working}",
                *((row.provider, row.terminal_id or "-") if wide else ()),
                _short_status(status) if self.narrow else status or "-",
                format_duration(max((reference - since).total_seconds(), 0.0)) if since else "-",
                f"r{turn.round} {turn.phase} c{turn.cycle}" if turn else "-",
                row.last_verdict,
                _tokens_cell(row, cost=wide),
            ]
            # Text cells, never markup: values read from the run are shown as they are.
            table.add_row(
                *(
                    Text(printable(cell), style=style if column == status_column else "")
                    for column, cell in enumerate(cells)
                )
            )
        return table

    def _screen_panel(self, record: RunRecord, row: AgentRow) -> Panel:
        title = printable(f"{ROLES[self.selected].title} · terminal {row.terminal_id or '-'}")
        if self.screen is not None:
            # Unwrapped, so the panel is exactly as tall as the tail and the frame fits.
            body = Text(printable(self.screen) or "(empty screen)", no_wrap=True, overflow="crop")
            return Panel(body, title=Text(f"screen: {title}"), title_align="left")
        answer = _last_answer_tail(record, row, self.tail_lines)
        return Panel(
            Text(printable(answer), style="dim", no_wrap=True, overflow="crop"),
            title=Text(f"last answer (no live screen): {title}", overflow="ellipsis"),
            title_align="left",
        )

    def _events_panel(self, record: RunRecord) -> Panel:
        recent = record.events[-self.events_lines :]
        lines = Text(
            "\n".join(printable(describe_event(event)) for event in recent),
            no_wrap=True,
            overflow="ellipsis",
        )
        return Panel(lines or Text("no events yet"), title="last events", title_align="left")

    def _footer(self, record: RunRecord, row: AgentRow) -> Text:
        key = row.role.terminal_key
        where = ("--state-file", self.state_path)
        live = self.live.get(row.terminal_id)
        footer = Text(f"{KEY_HINTS}\n", style="bold", no_wrap=True, overflow="ellipsis")
        footer.append(f"attach: {baton_command('attach', key, *where)}")
        if live and live.window and not self.narrow:
            footer.append(f"   (tmux window {printable(live.window)})", "dim")
        footer.append(f"\nanswer: {baton_command('answer', key, 'TEXT', *where)}")
        return footer


def _outcome_style(state: Any) -> str:
    return {"PASS": "bold green", "FAIL": "bold red"}.get(state.final_status, "bold cyan")


def _short_status(status: str | None) -> str:
    return "waiting" if status == "waiting_user_answer" else status or "-"


def _tokens_cell(row: AgentRow, *, cost: bool = True) -> str:
    if not row.tokens.total:
        return "-"
    if not cost:
        return f"{row.tokens.total:,}"
    dollars = f" {text}" if (text := row.tokens.cost_text(3, short=True)) else ""
    return f"{row.tokens.total:,}{dollars}"


def _last_turns(record: RunRecord) -> dict[str, Turn]:
    return {turn.role.output_key: turn for turn in record.turns}


def _last_answer_tail(record: RunRecord, row: AgentRow, lines: int) -> str:
    path = record.state.output_files.get(row.role.output_key)
    if not path:
        answered = [t for t in record.turns if t.role == row.role and t.answer_file]
        path = answered[-1].answer_file if answered else None
    if not path:
        return "(no answer archived yet)"
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return f"(cannot read {path})"
    return "\n".join(text.rstrip().splitlines()[-lines:])


def run_watch(
    state_path: Path,
    environ: Mapping[str, str],
    *,
    once: bool = False,
    interval: float = 1.0,
    lines: int = 15,
    console: Console | None = None,
) -> int:
    """Show the run until `q` (or one frame with `once`); StateFileError when it is unreadable."""
    console = console or Console()
    watcher = open_watcher(state_path, environ, lines)
    probe = watcher.probe
    try:
        if console.is_terminal:
            watcher.fit(console.size.width, console.size.height, lines)
        watcher.refresh()
        if once or not console.is_terminal:  # a pipe or a file gets one frame
            console.print(watcher.render())
            return 0
        _loop(watcher, console, interval)
    finally:
        if probe is not None:
            probe.close()
    return 0


def open_watcher(state_path: Path, environ: Mapping[str, str], lines: int = 15) -> Watcher:
    """A Watcher on a run (StateFileError when unreadable), on the agent it waits for.

    Its probe (when the run names a server) is the caller's to close.
    """
    record = load_run(state_path)
    probe = ServerProbe.for_environment(record.state.api, environ) if record.state.api else None
    watcher = Watcher(state_path=Path(state_path), probe=probe, tail_lines=lines)
    awaited = record.state.awaiting.role if record.state.awaiting else None
    # Open on the agent the run waits for: that is the screen worth seeing first.
    watcher.selected = next(
        (index for index, role in enumerate(ROLES) if role.output_key == awaited), 0
    )
    return watcher


def _loop(watcher: Watcher, console: Console, interval: float) -> None:
    from rich.live import Live

    wanted = watcher.tail_lines

    def fit() -> None:
        watcher.fit(console.size.width, console.size.height, wanted)

    fit()
    watcher.refresh()
    with (
        KeyReader(sys.stdin) as keys,
        Live(watcher.render(), console=console, screen=True, auto_refresh=False) as live,
    ):
        next_refresh = time.monotonic() + interval
        while True:
            key = keys.read(max(0.0, next_refresh - time.monotonic()))
            if key is not None:
                if not _keys_continue(watcher, key):
                    return
                fit()
                watcher.refresh()
                live.update(watcher.render(), refresh=True)
                continue
            fit()
            watcher.refresh()
            live.update(watcher.render(), refresh=True)
            next_refresh = time.monotonic() + interval


def _keys_continue(watcher: Watcher, data: str) -> bool:
    """Feed a read's keys one by one (escape sequences whole); False once one says quit."""
    return all(watcher.handle_key(key) for key in split_keys(data))
