"""`baton watch`: the five agents of a run, live, in any terminal (rich's Live display).

Each refresh re-reads the state file and `events.jsonl` and, when the run's server answers,
asks it for every terminal's status and the selected agent's screen. Without a server (a
finished run, a stopped one) the rows come from the record alone and the screen panel
shows the agent's last archived answer. Keys: 1-5 or Tab pick the agent, q quits.
"""

from __future__ import annotations

import os
import re
import select
import sys
import termios
import time
import tty
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from baton.cockpit.live import ServerProbe
from baton.cockpit.record import AgentRow, RunRecord, Turn, describe_event, load_run
from baton.errors import StateFileError
from baton.hints import baton_command
from baton.orchestrator.runlog import format_duration
from baton.roles import ROLES

__all__ = ["KeyReader", "Watcher", "open_watcher", "printable", "run_watch", "split_keys"]

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
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
    selected: int = 0
    record: RunRecord | None = None
    problem: str = ""
    live: dict[str, LiveAgent] = field(default_factory=dict)
    screen: str | None = None
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)

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
        self.screen = (
            self.probe.screen_tail(selected, self.tail_lines)
            if self.probe.reachable is not False
            else None
        )
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
        return header

    def _table(self, record: RunRecord, rows: list[AgentRow]) -> Table:
        table = Table(expand=True, show_edge=False, pad_edge=False)
        table.add_column("agent", no_wrap=True)
        table.add_column("provider", overflow="ellipsis", max_width=12)
        table.add_column("terminal", no_wrap=True)
        table.add_column("status", no_wrap=True)
        table.add_column("for", no_wrap=True)
        table.add_column("turn", overflow="ellipsis")
        table.add_column("verdict", no_wrap=True)
        table.add_column("tokens", justify="right", no_wrap=True)
        awaited = record.state.awaiting.role if record.state.awaiting else None
        now = self.clock()
        last_turns = _last_turns(record)
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
                row.provider,
                row.terminal_id or "-",
                status or "-",
                format_duration(max((reference - since).total_seconds(), 0.0)) if since else "-",
                f"r{turn.round} {turn.phase} c{turn.cycle}" if turn else "-",
                row.last_verdict,
                _tokens_cell(row),
            ]
            # Text cells, never markup: values read from the run are shown as they are.
            table.add_row(
                *(
                    Text(printable(cell), style=style if column == 3 else "")
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
            title=Text(f"last answer (no live screen): {title}"),
            title_align="left",
        )

    def _events_panel(self, record: RunRecord) -> Panel:
        recent = record.events[-8:]
        lines = Text("\n".join(printable(describe_event(event)) for event in recent))
        return Panel(lines or Text("no events yet"), title="last events", title_align="left")

    def _footer(self, record: RunRecord, row: AgentRow) -> Text:
        key = row.role.terminal_key
        where = ("--state-file", self.state_path)
        live = self.live.get(row.terminal_id)
        footer = Text("keys: 1-5 or Tab pick an agent · q quit\n", style="bold")
        footer.append(f"attach: {baton_command('attach', key, *where)}")
        if live and live.window:
            footer.append(f"   (tmux window {printable(live.window)})", "dim")
        footer.append(f"\nanswer: {baton_command('answer', key, 'TEXT', *where)}")
        return footer


def _outcome_style(state: Any) -> str:
    return {"PASS": "bold green", "FAIL": "bold red"}.get(state.final_status, "bold cyan")


def _tokens_cell(row: AgentRow) -> str:
    if not row.tokens.total:
        return "-"
    cost = f" {text}" if (text := row.tokens.cost_text(3, short=True)) else ""
    return f"{row.tokens.total:,}{cost}"


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


class KeyReader:
    """Single keys from a terminal without waiting for Enter (nothing when stdin is no tty)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.fd = stream.fileno() if stream.isatty() else None
        self._saved: list[Any] | None = None

    def __enter__(self) -> KeyReader:
        if self.fd is not None:
            self._saved = termios.tcgetattr(self.fd)
            tty.setcbreak(self.fd)
        return self

    def __exit__(self, *_: object) -> None:
        if self.fd is not None and self._saved is not None:
            termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)

    def read(self, timeout: float) -> str | None:
        """A key (an escape sequence as one string), or None after `timeout` seconds."""
        if self.fd is None:
            time.sleep(timeout)
            return None
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return None
        data = os.read(self.fd, 16).decode("utf-8", "replace")
        return data or None


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
        # The rest of the frame takes about 27 rows; the screen tail gets what is left.
        watcher.tail_lines = max(3, min(wanted, console.size.height - 27))

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


def split_keys(data: str) -> Iterator[str]:
    """One read's keys, one by one; an escape sequence (an arrow, shift-Tab) as one key."""
    index = 0
    while index < len(data):
        if data[index] == "\x1b":
            end = index + 1
            while end < len(data) and not data[end].isalpha() and data[end] != "~":
                end += 1
            yield data[index : end + 1]
            index = end + 1
        else:
            yield data[index]
            index += 1
