"""Wake the handoff the moment something changes, instead of sleeping POLL_SECONDS.

Two sources feed one `ChangeWatcher`:

- the response directory, watched with inotify: a response file renamed or written into
  place wakes the wait at once;
- the server's status events (documented with `baton serve`): the `GET /events`
  stream when the server offers it, else the long-poll `GET /terminals/{id}/status/wait`;
  a server without either (a stock `cao-server`) gives no status wake-ups, and the
  handoff reads the status at short, growing intervals after the file appears.

The watcher only says *that* something changed; the handoff still reads the status and
the file itself, so the handoff's rules (docs/architecture.md, "A prompt's trip") decide
exactly as they do when polling.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
from collections.abc import Callable, Iterable
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from inotify_simple import INotify, flags

from baton.errors import ApiError, BatonError
from baton.orchestrator.runlog import RunLog
from baton.roles import RESPONSE_DIR_NAME
from baton.status import TerminalStatus, parse_status

__all__ = [
    "ChangeWatcher",
    "EventSource",
    "ResponseDirWatcher",
    "StatusEvents",
    "StatusFeed",
    "Wake",
    "open_change_watcher",
]

# How long the first status event may take before `/events` is deemed not offered.
SSE_PROBE_SECONDS = 1.0
# A stream that broke is tried again after this long (polling covers the gap).
_RECONNECT_SECONDS = 5.0
# How long one long-poll request may wait on the server.
_LONG_POLL_SECONDS = 30


class Wake(StrEnum):
    """Why a wait ended early."""

    FILE = "file"
    STATUS = "status"


class StatusFeed(StrEnum):
    """Which status events the server offers."""

    SSE = "sse"
    LONG_POLL = "long-poll"
    NONE = "none"


class EventSource(Protocol):
    """The API calls the status events need (ApiClient has them)."""

    def iter_events(
        self, *, stop: threading.Event, session_name: str | None = None
    ) -> Iterable[dict[str, Any]]: ...

    def wait_status(
        self, terminal_id: str, since: TerminalStatus, timeout: float
    ) -> TerminalStatus | None: ...


class _Selectable(Protocol):
    """Anything `select` can wait on."""

    def fileno(self) -> int: ...


class _Doorbell:
    """A self-pipe: other threads ring it, `select` sees it."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)

    def fileno(self) -> int:
        return self._read

    def ring(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self._write, b"!")

    def drain(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            while os.read(self._read, 4096):
                pass

    def close(self) -> None:
        for descriptor in (self._read, self._write):
            with contextlib.suppress(OSError):
                os.close(descriptor)


class ResponseDirWatcher:
    """inotify on `WD/.tmp/agent-responses/`: which file names were completed since last read.

    A file counts when it is renamed into place (the atomic write the instruction asks
    for) or closed after writing (an agent that writes it directly).
    """

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._inotify = INotify(nonblocking=True)
        self._watch = self._inotify.add_watch(
            self.directory, flags.MOVED_TO | flags.CLOSE_WRITE | flags.DELETE_SELF
        )

    def fileno(self) -> int:
        return int(self._inotify.fileno())

    def completed_names(self) -> set[str]:
        """The names completed since the last call (without blocking)."""
        try:
            events = self._inotify.read(timeout=0)
        except (BlockingIOError, OSError):
            return set()
        return {event.name for event in events if event.name}

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._inotify.close()


class StatusEvents:
    """The server's status changes, as the last status seen per terminal, ringing a bell.

    `start()` probes `GET /events`; when no status event arrives within
    SSE_PROBE_SECONDS it tries the long-poll on the first wait, and else gives up quietly.
    """

    def __init__(
        self, source: EventSource, bell: Callable[[], None], session_name: str | None = None
    ) -> None:
        self._source = source
        self._bell = bell
        # Only the run's own session: with many runs on one server, each would otherwise
        # read (and the server send it) every other run's events too.
        self._session_name = session_name
        self._lock = threading.Lock()
        self._latest: dict[str, TerminalStatus] = {}
        # The status each terminal's latest event moved from (None: the stream's first word).
        self._moved_from: dict[str, TerminalStatus | None] = {}
        self._changes: dict[str, int] = {}  # how many changes each terminal has had
        self._first = threading.Event()
        self._connected = threading.Event()
        self._stop = threading.Event()
        # Ends the stream in use (closed, or following a new session): one per stream.
        self._leave = threading.Event()
        self._sse_thread: threading.Thread | None = None
        self._long_poll: tuple[str, TerminalStatus] | None = None  # (terminal, since) in flight
        self._long_poll_supported = True
        self.feed = StatusFeed.NONE

    def start(self, probe_seconds: float = SSE_PROBE_SECONDS) -> StatusFeed:
        """Connect to `/events` and wait briefly for its first status event."""
        self._sse_thread = self._follow(self._leave, self._session_name)
        deadline = time.monotonic() + probe_seconds
        while not self._first.is_set() and self._sse_thread.is_alive():
            if time.monotonic() >= deadline:
                break
            self._first.wait(0.01)
        if self._first.is_set():
            self.feed = StatusFeed.SSE
        else:
            self.close()  # not offered (404/405) or not CAO-shaped status events
            self.feed = StatusFeed.LONG_POLL
        return self.feed

    def latest(self, terminal_id: str) -> TerminalStatus | None:
        """The newest status the events gave for `terminal_id`."""
        with self._lock:
            return self._latest.get(terminal_id)

    def latest_move(self, terminal_id: str) -> tuple[TerminalStatus | None, TerminalStatus | None]:
        """The newest status the events gave for `terminal_id`, and the one it moved from
        (None when the event did not say), read together."""
        with self._lock:
            return self._latest.get(terminal_id), self._moved_from.get(terminal_id)

    def changes(self, terminal_id: str) -> int:
        """How many status changes of `terminal_id` have arrived so far."""
        with self._lock:
            return self._changes.get(terminal_id, 0)

    def expect(self, terminal_id: str, since: TerminalStatus) -> None:
        """The handoff saw `since` on `terminal_id`: make sure its next change rings."""
        with self._lock:
            self._latest.setdefault(terminal_id, since)
            if self.feed is not StatusFeed.LONG_POLL or not self._long_poll_supported:
                return
            if self._long_poll == (terminal_id, since):
                return
            self._long_poll = (terminal_id, since)
        threading.Thread(
            target=self._long_poll_once, args=(terminal_id, since), daemon=True
        ).start()

    def follow_session(self, session_name: str) -> None:
        """The run's terminals are in `session_name` now: listen to that session instead.

        A new stream starts at once; the old one ends at its next line (a keep-alive at
        the latest), its events of the old session still noted meanwhile.
        """
        with self._lock:
            if session_name == self._session_name or self._stop.is_set():
                return
            self._session_name = session_name
            old, self._leave = self._leave, threading.Event()
            leave = self._leave
        old.set()
        if self._sse_thread is not None:
            self._sse_thread = self._follow(leave, session_name)

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            self._leave.set()

    # --- background threads ---

    @property
    def live(self) -> bool:
        """Whether the `/events` stream is connected now (its statuses are current)."""
        return self.feed is StatusFeed.SSE and self._connected.is_set()

    def _follow(self, leave: threading.Event, session_name: str | None) -> threading.Thread:
        thread = threading.Thread(target=self._read_stream, args=(leave, session_name), daemon=True)
        thread.start()
        return thread

    def _in_use(self, leave: threading.Event) -> bool:
        with self._lock:
            return leave is self._leave

    def _read_stream(self, leave: threading.Event, session_name: str | None) -> None:
        while not leave.is_set():
            try:
                for event in self._source.iter_events(stop=leave, session_name=session_name):
                    if leave.is_set():
                        return
                    if self._in_use(leave):
                        self._connected.set()
                    self._take(event)
            except BatonError:
                if not self._first.is_set():
                    return  # never worked: not offered
            finally:
                if self._in_use(leave):
                    self._connected.clear()
            if leave.wait(_RECONNECT_SECONDS):
                return

    def _take(self, event: dict[str, Any]) -> None:
        if event.get("kind") != "status":
            return  # other /events payloads (a stock cao-server's) are noise here
        terminal_id, status = event.get("terminal_id"), parse_status(event.get("status"))
        if not isinstance(terminal_id, str) or status is None:
            return
        previous = parse_status(event.get("previous_status"))
        with self._lock:
            changed = self._record(terminal_id, status, previous)
        self._first.set()
        if changed:
            self._bell()

    def _record(
        self, terminal_id: str, status: TerminalStatus, previous: TerminalStatus | None
    ) -> bool:
        """Note `status`, reached from `previous` (lock held); True when it is a change."""
        if self._latest.get(terminal_id) == status:
            return False
        self._latest[terminal_id] = status
        self._moved_from[terminal_id] = previous
        self._changes[terminal_id] = self._changes.get(terminal_id, 0) + 1
        return True

    def _long_poll_once(self, terminal_id: str, since: TerminalStatus) -> None:
        try:
            status = self._source.wait_status(terminal_id, since, _LONG_POLL_SECONDS)
        except BatonError:
            with self._lock:  # a failed request: the next wait asks again
                if self._long_poll == (terminal_id, since):
                    self._long_poll = None
            return
        with self._lock:
            if self._long_poll == (terminal_id, since):
                self._long_poll = None
            if status is None:
                self._long_poll_supported = False  # 404/405: the route is not there
                self.feed = StatusFeed.NONE
                return
            changed = status != since and self._record(terminal_id, status, since)
        if changed:
            self._bell()


class ChangeWatcher:
    """What `Handoff` waits on: a response file completed, or the terminal's status changed.

    Use it as a context manager (or call `close`): it owns an inotify descriptor, a pipe
    and, with `/events`, a reader thread.
    """

    def __init__(
        self,
        response_dir: Path,
        source: EventSource | None = None,
        session_name: str | None = None,
    ) -> None:
        self._bell = _Doorbell()
        self._files = ResponseDirWatcher(response_dir)
        self._status = (
            StatusEvents(source, self._bell.ring, session_name) if source is not None else None
        )
        self._seen: dict[str, int] = {}  # changes already reported per terminal

    def follow_session(self, session_name: str) -> None:
        """Hear the status events of `session_name`'s terminals (the run's new session)."""
        if self._status is not None:
            self._status.follow_session(session_name)

    def start(self, probe_seconds: float = SSE_PROBE_SECONDS) -> StatusFeed:
        """Find out which status events the server offers; return that."""
        if self._status is not None:
            self._status.start(probe_seconds)
        return self.feed

    @property
    def feed(self) -> StatusFeed:
        """The status events in use (the long-poll turns to NONE once the server says 404)."""
        return self._status.feed if self._status is not None else StatusFeed.NONE

    def wait(
        self, terminal_id: str, since: TerminalStatus, path: Path, timeout: float
    ) -> Wake | None:
        """Block until `path` is completed, `terminal_id` changes status, or `timeout` passes.

        A status change that arrived since the previous wait returned counts too, so a
        change between the caller's status read and this call is never slept through.
        """
        deadline = time.monotonic() + max(0.0, timeout)
        if self._status is not None:
            self._status.expect(terminal_id, since)
        name = Path(path).name
        while True:
            if name in self._files.completed_names():
                return Wake.FILE
            if self._status is not None:
                changes = self._status.changes(terminal_id)
                if changes > self._seen.get(terminal_id, 0):
                    self._seen[terminal_id] = changes
                    return Wake.STATUS
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                readable: list[_Selectable] = [self._files, self._bell]
                select.select(readable, [], [], left)
            except (OSError, ValueError) as error:
                raise ApiError(f"waiting for a change failed: {error}") from None
            self._bell.drain()

    def latest_status(self, terminal_id: str) -> TerminalStatus | None:
        """The newest status `GET /events` gave for `terminal_id`; None while that stream is
        not connected (a long-poll answer may be older than the caller's own read)."""
        if self._status is None or not self._status.live:
            return None
        return self._status.latest(terminal_id)

    def status_after(self, terminal_id: str, seen: TerminalStatus) -> TerminalStatus | None:
        """The stream's newest status for `terminal_id` when its event moved on from `seen`
        (the caller's last word); None when it did not (read afresh).

        The caller's own read can be newer than the stream: a dialog drawn right after the
        prompt is read as `waiting_user_answer` while the stream still brings the
        `processing` before it. Taking that `processing` would report the dialog twice.
        """
        if self._status is None or not self._status.live:
            return None
        latest, moved_from = self._status.latest_move(terminal_id)
        return latest if moved_from == seen else None

    def close(self) -> None:
        if self._status is not None:
            self._status.close()
        self._files.close()
        self._bell.close()

    def __enter__(self) -> ChangeWatcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_change_watcher(
    wd: Path, source: EventSource | None, log: RunLog, session_name: str | None = None
) -> ChangeWatcher | None:
    """A started watcher for `WD`'s response directory and `source`'s status events (those
    of `session_name`'s terminals, when named).

    None (with a warning) when inotify is not available: the handoff then polls.
    """
    directory = Path(wd).resolve() / RESPONSE_DIR_NAME
    try:
        directory.mkdir(parents=True, exist_ok=True)
        watcher = ChangeWatcher(directory, source, session_name)
    except OSError as error:
        log.warning(
            f"cannot watch {directory} ({error.strerror or error}); "
            "polling every POLL_SECONDS instead"
        )
        return None
    feed = watcher.start()
    if feed is StatusFeed.SSE:
        log.info("following the server's status events (GET /events)")
    return watcher
