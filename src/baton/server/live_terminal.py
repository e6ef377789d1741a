"""One terminal as the screen watcher follows it: its emulator, log position and status.

`LiveTerminal` reads the pane log from where it stopped and feeds the new bytes to the
terminal's emulator; `seeded_emulator` builds an emulator from tmux's own rendering, for
a terminal whose log cannot be replayed (adopted after a restart, resized).

The pane log is bounded: once the model has read `max_log_bytes` of it, the log is
copied to `pane.log.1` (replacing the previous copy) and emptied in place. tmux's
`cat >> pane.log` appends with O_APPEND, so its next bytes land at the new start and the
model reads on from offset 0 without missing one. It is rotated only when the model has
read every byte, so nothing the screen needs is cut away.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

from baton.private import private_file
from baton.providers import Provider, TerminalContext
from baton.providers.base import PANE_LOG, TurnRecord
from baton.server.emulator import PaneEmulator
from baton.server.tmux import PaneRef, PaneSnapshot
from baton.status import TerminalStatus

__all__ = [
    "DEFAULT_MAX_PANE_LOG_BYTES",
    "PANE_LOG",
    "PREVIOUS_PANE_LOG",
    "LiveTerminal",
    "log_size",
    "seeded_emulator",
]

PREVIOUS_PANE_LOG = PANE_LOG + ".1"
DEFAULT_MAX_PANE_LOG_BYTES = 64 << 20
_READ_CHUNK = 4 << 20


class ChangeCount:
    """How many times something changed, and a wait for the next change."""

    def __init__(self) -> None:
        self._count = 0
        self._changed = threading.Condition()

    @property
    def count(self) -> int:
        with self._changed:
            return self._count

    def note(self) -> None:
        """One more change: wake whoever waits in `wait_past`."""
        with self._changed:
            self._count += 1
            self._changed.notify_all()

    def wait_past(self, seen: int, timeout: float) -> int:
        """Until a change after the `seen`-th (or `timeout`); how many there were."""
        with self._changed:
            self._changed.wait_for(lambda: self._count != seen, max(0.0, timeout))
            return self._count


class LiveTerminal:
    """One terminal's emulator, read position in its pane log, status and liveness."""

    def __init__(
        self,
        *,
        terminal_id: str,
        session_name: str,
        pane_id: str,
        provider: Provider,
        ctx: TerminalContext,
        columns: int,
        rows: int,
        max_log_bytes: int | None = DEFAULT_MAX_PANE_LOG_BYTES,
    ) -> None:
        self.terminal_id = terminal_id
        self.session_name = session_name
        self.pane_id = pane_id
        self.provider = provider
        self.ctx = ctx
        self.log_path: Path = ctx.runtime_dir / PANE_LOG
        self.max_log_bytes = max_log_bytes or None  # None or 0: the log is never rotated
        self.emulator = PaneEmulator(columns, rows)
        self.offset = 0
        self.status: TerminalStatus | None = None
        # The CLI's own record of its turns, read with the status (None: it keeps none).
        self.turns: TurnRecord | None = None
        # How many times the status became busy (processing, a dialog): the screen's
        # own evidence that a turn started, for CLIs that keep no turn record.
        self.busy_count = 0
        # True while the emulator is known to show what tmux shows.
        self.verified = False
        self.exited = False
        self.pid: int | None = None
        self.evaluated: tuple[int, int] = (-1, -1)  # `signature()` at the last evaluation
        self.candidate: int | None = None  # log offset of a seed awaiting confirmation
        self.audit: tuple[int, str] | None = None  # (log offset, capture) to compare later
        # Progress: when the screen (its animation aside) or a native signal file last
        # changed, as (wall clock, monotonic); None until the model first shows a screen.
        self.progress_at: tuple[float, float] | None = None
        # When the model last read pane output (monotonic): the screen is still since.
        self.fed_at = 0.0
        self._view: str | None = None
        self._signals: tuple[int, int] | None = None
        self.lock = threading.RLock()
        # Its evaluations: input and a settling creation wait on this terminal's only.
        self.evaluations = ChangeCount()

    @property
    def pane(self) -> PaneRef:
        """The followed pane, as tmux acts name it (checked against its binding)."""
        return PaneRef(pane_id=self.pane_id, terminal_id=self.terminal_id)

    def signature(self) -> tuple[int, int]:
        """Total size and latest change of the runtime directory's files.

        The pane log and every native signal file (notify, hook records) live there, so
        a different signature since the last evaluation means the status may have
        changed — even before the watcher thread has heard of it.
        """
        total = latest = 0
        try:
            with os.scandir(self.ctx.runtime_dir) as entries:
                for entry in entries:
                    if entry.is_file(follow_symlinks=False):
                        info = entry.stat(follow_symlinks=False)
                        total += info.st_size
                        latest = max(latest, info.st_mtime_ns)
        except OSError:
            pass
        return total, latest

    def note_progress(self, screen: str) -> None:
        """Remember now as the last progress if the screen's work or a signal file changed.

        Only what `Provider.progress_view` keeps counts: a spinner, a timer or a blinking
        bullet is not progress. Native signals are the runtime directory's files other
        than the pane log (Codex notify records, Claude Code hook records, usage files).
        """
        view = self.provider.progress_view(screen)
        signals = self._signal_signature()
        if view != self._view or signals != self._signals:
            self._view, self._signals = view, signals
            self.progress_at = (time.time(), time.monotonic())

    def quiet_seconds(self) -> float | None:
        """Seconds since the last progress; None while unknown."""
        if self.progress_at is None:
            return None
        return max(0.0, time.monotonic() - self.progress_at[1])

    def _signal_signature(self) -> tuple[int, int]:
        total = latest = 0
        try:
            with os.scandir(self.ctx.runtime_dir) as entries:
                for entry in entries:
                    if entry.name != PANE_LOG and entry.is_file(follow_symlinks=False):
                        info = entry.stat(follow_symlinks=False)
                        total += info.st_size
                        latest = max(latest, info.st_mtime_ns)
        except OSError:
            pass
        return total, latest

    def stale(self) -> bool:
        """Whether anything changed since the status was last evaluated."""
        return self.signature() != self.evaluated

    def catch_up(self) -> bool:
        """Feed what the pane wrote since the last read (call with `lock` held)."""
        try:
            size = os.stat(self.log_path).st_size
        except OSError:
            return False
        if size < self.offset:  # the log was replaced: the model no longer follows it
            self.offset = size
            self.verified = False
            return True
        if size == self.offset:
            return False
        with self.log_path.open("rb") as handle:
            handle.seek(self.offset)
            while self.offset < size:
                data = handle.read(min(size - self.offset, _READ_CHUNK))
                if not data:
                    break
                self.offset += len(data)
                self.emulator.feed(data)
                self.fed_at = time.monotonic()
        if self.max_log_bytes is not None and self.offset >= self.max_log_bytes:
            self.rotate_log()
        return True

    def rotate_log(self) -> bool:
        """Keep the log read so far as `pane.log.1` and empty `pane.log` (lock held).

        Skipped (tried again at the next read) when the pane wrote more since the read,
        so no byte the model has not seen is ever cut away.
        """
        previous = self.log_path.with_name(PREVIOUS_PANE_LOG)
        partial = self.log_path.with_name(PREVIOUS_PANE_LOG + ".part")
        try:
            if os.stat(self.log_path).st_size != self.offset:
                return False
            private_file(partial)
            shutil.copyfile(self.log_path, partial)
            os.replace(partial, previous)
            if os.stat(self.log_path).st_size != self.offset:
                return False
            os.truncate(self.log_path, 0)
        except OSError:
            partial.unlink(missing_ok=True)
            return False
        self.offset = 0
        return True

    def screen(self) -> str:
        """The visible screen now, as `capture-pane -p` would print it."""
        with self.lock:
            self.catch_up()
            return self.emulator.visible()

    def history(self) -> str:
        with self.lock:
            self.catch_up()
            return self.emulator.history()


def seeded_emulator(snapshot: PaneSnapshot) -> PaneEmulator:
    """An emulator showing what tmux shows now (scrollback not included)."""
    emulator = PaneEmulator(snapshot.width, snapshot.height)
    if snapshot.alternate:
        emulator.enter_alternate_unknown_main()
    parts = [b"\x1b[0m"]
    for row, text in enumerate(snapshot.styled):
        parts.append(f"\x1b[{row + 1};1H".encode())
        parts.append(text.encode("utf-8"))
    parts.append(b"\x1b[0m")
    if (snapshot.scroll_top, snapshot.scroll_bottom) != (0, snapshot.height - 1):
        parts.append(f"\x1b[{snapshot.scroll_top + 1};{snapshot.scroll_bottom + 1}r".encode())
    parts.append(f"\x1b[{snapshot.cursor_y + 1};{snapshot.cursor_x + 1}H".encode())
    emulator.feed(b"".join(parts))
    emulator.forget_history()
    return emulator


def log_size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return -1
