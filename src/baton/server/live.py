"""Every terminal's screen and status in memory, current as the pane writes.

Each pane's raw output already goes to `<runtime dir>/pane.log` (tmux `pipe-pane`, set up
before the CLI starts). One watcher thread per server follows all of them:

- inotify on each terminal's runtime directory wakes it when the pane log grows and when
  a native signal file changes (Codex notify records, Claude hook records);
- new bytes are fed to the terminal's `PaneEmulator`, and the provider's status is
  evaluated from the rendered screen and its signals; a change is reported at once;
- a pidfd per pane says the CLI exited the moment it does; one `list-panes -a` per
  interval (for all terminals) catches removed panes and resized windows;
- the model is trusted only when it is known to equal tmux: a terminal started by this
  server is followed from its first byte; one adopted after a restart (or resized) is
  seeded from `capture-pane -e` and trusted once its rendering equals `capture-pane -p`.
  Each interval one trusted terminal is compared with tmux again (round robin).
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import threading
import time
from collections.abc import Callable

from inotify_simple import INotify
from inotify_simple import flags as inotify_flags

from baton.providers import Provider, TerminalContext
from baton.server.live_terminal import (
    DEFAULT_MAX_PANE_LOG_BYTES,
    ChangeCount,
    LiveTerminal,
)
from baton.server.records import TerminalRecord
from baton.server.screen_trust import ScreenTrust
from baton.server.tmux import PaneInfo, TmuxServer, bound_pane
from baton.status import TerminalStatus

__all__ = ["LiveTerminal", "ScreenWatcher", "StatusListener"]

_WATCH_MASK = (
    inotify_flags.MODIFY | inotify_flags.CLOSE_WRITE | inotify_flags.CREATE | inotify_flags.MOVED_TO
)

logger = logging.getLogger("baton.server.live")


StatusListener = Callable[[LiveTerminal, TerminalStatus | None, TerminalStatus], None]


class ScreenWatcher:
    """The thread that keeps every tracked terminal's model and status current.

    Like rich's `Live`: `start()` runs the thread, `stop()` ends it and frees its file
    descriptors, and `with ScreenWatcher(...) as watcher:` does both.
    """

    def __init__(
        self,
        tmux: TmuxServer,
        on_change: StatusListener,
        *,
        interval: float = 1.0,
        max_log_bytes: int | None = DEFAULT_MAX_PANE_LOG_BYTES,
    ) -> None:
        self.tmux = tmux
        self.trust = ScreenTrust(tmux)
        self.interval = interval
        self.max_log_bytes = max_log_bytes
        self._on_change = on_change
        self._terminals: dict[str, LiveTerminal] = {}
        self._by_watch: dict[int, LiveTerminal] = {}
        self._watches: dict[str, int] = {}
        self._pidfds: dict[str, int] = {}
        self._guard = threading.Lock()
        self._pending: list[Callable[[], None]] = []
        self._inotify = INotify()
        self._selector = selectors.DefaultSelector()
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)
        self._selector.register(self._inotify.fileno(), selectors.EVENT_READ, "inotify")
        self._selector.register(self._wake_read, selectors.EVENT_READ, "wake")
        self._stopping = False
        self._audit_index = 0
        # Every evaluation of any terminal (each terminal also counts its own).
        self.evaluations = ChangeCount()
        self._thread: threading.Thread | None = None

    def start(self) -> ScreenWatcher:
        """Start watching (once); refused after `stop()`, whose descriptors are gone."""
        if self._stopping:
            raise RuntimeError("a stopped ScreenWatcher cannot start again")
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="baton-screens", daemon=True)
            self._thread.start()
        return self

    def __enter__(self) -> ScreenWatcher:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    # -- tracking ---------------------------------------------------------------------

    def track_record(
        self,
        record: TerminalRecord,
        provider: Provider,
        ctx: TerminalContext,
        *,
        fresh: bool,
        panes: dict[str, PaneInfo] | None = None,
    ) -> LiveTerminal:
        """Follow a terminal of the registry; creation, adoption and restart all come here.

        `fresh`: created just now, its log read from the first byte. Otherwise (adopted
        after a server restart, or its CLI respawned) the model is seeded from tmux in the
        watcher thread; until then readers fall back to `capture-pane`. `panes` is a
        `list-panes` answer when the caller has one (adopting many at once).
        """
        if panes is None:
            panes = self.tmux.list_panes() or {}
        pane = bound_pane(panes, record.pane)
        live = LiveTerminal(
            terminal_id=record.id,
            session_name=record.session_name,
            pane_id=record.pane_id,
            provider=provider,
            ctx=ctx,
            columns=pane.width if pane else 200,
            rows=pane.height if pane else 50,
            max_log_bytes=self.max_log_bytes,
        )
        live.verified = fresh and pane is not None
        if pane is None or pane.dead:
            live.exited = True
        else:
            live.pid = pane.pid
        try:
            watch = self._inotify.add_watch(ctx.runtime_dir, _WATCH_MASK)
        except OSError:
            watch = -1
        with self._guard:
            self._terminals[record.id] = live
            if watch >= 0:
                self._by_watch[watch] = live
                self._watches[record.id] = watch
        self._later(lambda: self._watch_process(live))
        if live.verified or live.exited:
            self.evaluate(live)
        return live

    def forget(self, terminal_id: str) -> None:
        """Stop following a terminal (it is being deleted)."""
        with self._guard:
            live = self._terminals.pop(terminal_id, None)
            watch = self._watches.pop(terminal_id, None)
            if watch is not None:
                self._by_watch.pop(watch, None)
        if watch is not None:
            with contextlib.suppress(OSError):
                self._inotify.rm_watch(watch)
        if live is not None:
            self._later(lambda: self._unwatch_process(terminal_id))

    def get(self, terminal_id: str) -> LiveTerminal | None:
        with self._guard:
            return self._terminals.get(terminal_id)

    def terminals(self) -> list[LiveTerminal]:
        with self._guard:
            return list(self._terminals.values())

    def stop(self) -> None:
        """End the thread and release what it watched with; safe to call twice."""
        if self._stopping:
            return
        self._stopping = True
        self._wake()
        if self._thread is not None:
            self._thread.join(timeout=5)
        for fd in list(self._pidfds.values()):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._pidfds.clear()
        self._selector.close()
        self._inotify.close()
        for fd in (self._wake_read, self._wake_write):
            with contextlib.suppress(OSError):
                os.close(fd)

    # -- status --------------------------------------------------------------------------

    def evaluate(self, live: LiveTerminal) -> TerminalStatus | None:
        """Bring the model up to date and re-read the status; report a change."""
        try:
            return self._evaluate(live)
        finally:
            live.evaluations.note()
            self.evaluations.note()

    def evaluations_of(self, terminal_id: str) -> int:
        """How many times this terminal was evaluated (-1: not followed), for
        `wait_evaluated`."""
        live = self.get(terminal_id)
        return live.evaluations.count if live is not None else -1

    def wait_evaluated(self, terminal_id: str, seen: int, timeout: float) -> int:
        """Until this terminal's next evaluation after the `seen`-th, or `timeout` but at
        most the check interval (what only tmux can tell is read again then); a terminal
        not followed waits for any evaluation. Other terminals' output wakes nobody here:
        under sixteen loops a waiter woken by every pane write re-read its screen for
        nothing hundreds of times a second."""
        timeout = min(timeout, self.interval)
        live = self.get(terminal_id)
        if live is None:
            self.evaluations.wait_past(self.evaluations.count, timeout)
            return -1
        return live.evaluations.wait_past(seen, timeout)

    def last_output(self, terminal_id: str) -> float:
        """When the screen model last read this terminal's pane output (monotonic; 0.0
        for a terminal not followed): how long a screen has been still."""
        live = self.get(terminal_id)
        return live.fed_at if live is not None else 0.0

    def _evaluate(self, live: LiveTerminal) -> TerminalStatus | None:
        with live.lock:
            live.evaluated = live.signature()
            live.catch_up()
            try:
                live.turns = live.provider.turn_record(live.ctx)
            except Exception:  # a provider bug must not stop the watcher
                logger.exception("turn record of terminal %s failed", live.terminal_id)
            if live.emulator.main_screen_lost:
                live.verified = False  # reseeded at the next interval check
            if live.exited:
                new = TerminalStatus.ERROR
            elif not live.verified:
                return live.status
            else:
                screen = live.emulator.visible()
                try:
                    new = live.provider.status(screen, live.ctx)
                    live.note_progress(screen)
                except Exception:  # a provider bug must not stop the watcher
                    logger.exception("status of terminal %s failed", live.terminal_id)
                    return live.status
            previous = live.status
            if new != previous:
                live.status = new
                if new in (TerminalStatus.PROCESSING, TerminalStatus.WAITING_USER_ANSWER):
                    live.busy_count += 1
                self._on_change(live, previous, new)
            return new

    def mark_exited(self, live: LiveTerminal) -> None:
        with live.lock:
            live.exited = True
        self.evaluate(live)

    # -- the thread -----------------------------------------------------------------------

    def _later(self, action: Callable[[], None]) -> None:
        with self._guard:
            self._pending.append(action)
        self._wake()

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self._wake_write, b"x")

    def _run(self) -> None:
        next_check = time.monotonic()
        while not self._stopping:
            timeout = max(0.0, next_check - time.monotonic())
            try:
                ready = self._selector.select(timeout)
            except (OSError, ValueError):
                return
            for key, _ in ready:
                if self._stopping:
                    return
                try:
                    self._dispatch(key.data)
                except Exception:
                    logger.exception("screen watcher: handling %s failed", key.data)
            if time.monotonic() >= next_check:
                try:
                    self._check_panes()
                except Exception:
                    logger.exception("screen watcher: checking panes failed")
                self.evaluations.note()  # waiters re-read what tmux alone can tell
                next_check = time.monotonic() + self.interval

    def _dispatch(self, what: object) -> None:
        if what == "inotify":
            self._on_files_changed()
        elif what == "wake":
            with contextlib.suppress(OSError):
                os.read(self._wake_read, 4096)
            with self._guard:
                pending, self._pending = self._pending, []
            for action in pending:
                action()
        elif isinstance(what, tuple):  # a pidfd became readable: that CLI has exited
            terminal_id = what[1]
            live = self.get(terminal_id)
            self._unwatch_process(terminal_id)
            if live is not None:
                self.mark_exited(live)

    def _on_files_changed(self) -> None:
        changed: dict[str, LiveTerminal] = {}
        for event in self._inotify.read(timeout=0):
            if event.mask & inotify_flags.Q_OVERFLOW:
                changed.update((live.terminal_id, live) for live in self.terminals())
                continue
            with self._guard:
                live = self._by_watch.get(event.wd)
            if live is not None:
                changed[live.terminal_id] = live
        for live in changed.values():
            self.evaluate(live)

    def _watch_process(self, live: LiveTerminal) -> None:
        if live.exited or live.pid is None or live.terminal_id in self._pidfds:
            return
        try:
            fd = os.pidfd_open(live.pid)
        except ProcessLookupError:
            self.mark_exited(live)
            return
        except (OSError, AttributeError):
            return  # no pidfds here: the interval check notices the exit
        self._pidfds[live.terminal_id] = fd
        self._selector.register(fd, selectors.EVENT_READ, ("exit", live.terminal_id))

    def _unwatch_process(self, terminal_id: str) -> None:
        fd = self._pidfds.pop(terminal_id, None)
        if fd is None:
            return
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(fd)
        with contextlib.suppress(OSError):
            os.close(fd)

    def _check_panes(self) -> None:
        """One `list-panes -a` for all terminals: exits, removed panes, resizes, trust."""
        tracked = self.terminals()
        if not tracked:
            return
        panes = self.tmux.list_panes()
        if panes is None:
            return
        for live in tracked:
            self._check_pane(live, bound_pane(panes, live.pane))
        trusted = [live for live in tracked if live.verified and not live.exited]
        if trusted:
            self._audit_index = (self._audit_index + 1) % len(trusted)
            self.trust.audit(trusted[self._audit_index])

    def _check_pane(self, live: LiveTerminal, pane: PaneInfo | None) -> None:
        if live.exited:
            return
        if pane is None or pane.dead:
            self.mark_exited(live)
            return
        if (pane.width, pane.height) != (live.emulator.columns, live.emulator.lines):
            with live.lock:
                live.verified = False
                live.candidate = None
        if live.pid != pane.pid:
            self._unwatch_process(live.terminal_id)
            live.pid = pane.pid
            self._watch_process(live)
        if live.audit is not None:
            self.trust.finish_audit(live)
        if not live.verified:
            if live.candidate is not None and self.trust.confirm(live):
                self.evaluate(live)
            else:
                self.trust.seed(live)
