"""Typing into terminals: a message queued, pasted when the CLI is ready, confirmed taken.

A message is typed only into a CLI that waits for input: at rest on screen, and no turn
open in its own records (`Provider.turn_record`). Senders to one terminal queue in
arrival order (`InputQueue`), each blocked until its message was delivered. Delivery is
confirmed from what the CLI did with it, never from any screen change (a spinner always
changes the screen): its own record shows a new turn started. A CLI that keeps no turn
record must be seen busy on screen instead; a slash command, which starts no turn, must
leave the screen it was pasted into, and so must the answer to a dialog (a message sent
while the CLI asks a question, with nobody waiting before it, is typed at once).

The submit keys follow the paste once the screen model shows it drawn: the provider
reads the text (or its fold) in the input box (`Provider.paste_shown`) and no pane
output came for `paste_settle` seconds; after `paste_wait` seconds they follow anyway.
Every wait sleeps on the terminal's own condition (`ScreenWatcher.wait_evaluated`), woken
by each evaluation of that terminal (each of its pane writes is one) and at least once per
interval; nothing polls, and other terminals' output wakes nobody here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from baton.errors import (
    InputNotAcceptedError,
    InputQueueTimeoutError,
    TerminalBusyError,
    TerminalExitedError,
)
from baton.providers.base import Provider, TurnRecord
from baton.server.creation import ServiceTimings
from baton.server.delivery import MessageDelivery, PreparedMessage
from baton.server.idempotency import outcome_if_cut_off
from baton.server.input_queue import InputQueue
from baton.server.reading import TerminalReader
from baton.server.records import TerminalRecord
from baton.server.runtime import TerminalRuntime
from baton.server.tmux import TmuxServer
from baton.status import TerminalStatus

__all__ = ["InputSender"]

logger = logging.getLogger(__name__)
# Statuses in which a CLI reads a new message: its prompt is shown (after an error too).
_READY = frozenset({TerminalStatus.IDLE, TerminalStatus.COMPLETED, TerminalStatus.ERROR})


class InputSender:
    """Sends messages and keys to a terminal's CLI, one caller at a time per terminal."""

    def __init__(
        self,
        *,
        tmux: TmuxServer,
        runtime: TerminalRuntime,
        reader: TerminalReader,
        timings: ServiceTimings,
        delivery: MessageDelivery,
        on_accepted: Callable[[str], None],
    ) -> None:
        self.tmux = tmux
        self.delivery = delivery
        self._on_accepted = on_accepted
        self.runtime = runtime
        self.reader = reader
        self.timings = timings
        self.queue = InputQueue()

    def send_input(self, terminal_id: str, message: str, *, queue: bool = True) -> None:
        """Deliver `message` as one new turn of the CLI; return once the CLI took it.

        `queue`: wait (up to `queue_timeout`) behind earlier senders and for a busy CLI
        to rest; False refuses at once with TerminalBusyError instead.
        """
        record = self.reader.record(terminal_id)
        prepared = self.delivery.prepare(message)
        deadline = time.monotonic() + self.timings.queue_timeout
        # Sent while the CLI asks a question (a dialog), the message is the answer: typed
        # at once, unless other senders were already waiting (theirs are no answers).
        asking = self.reader.status(record) is TerminalStatus.WAITING_USER_ANSWER
        with self.queue.first_in_line(terminal_id, queue=queue, deadline=deadline) as waited:
            answer = asking and not waited
            self._wait_until_ready(record, queue=queue, deadline=deadline, answer=answer)
            with self.runtime.lock_for(terminal_id):
                self._deliver(record, prepared, answer=answer)
        self._on_accepted(terminal_id)

    # -- waiting for the CLI --------------------------------------------------------------

    def _wait_until_ready(
        self, record: TerminalRecord, *, queue: bool, deadline: float, answer: bool
    ) -> None:
        watcher = self.reader.watcher
        seen = watcher.evaluations_of(record.id)
        while True:
            self._require_alive(record)
            status, turns = self._state(record)
            if status in _READY and not (turns is not None and turns.open):
                return
            if answer and status is TerminalStatus.WAITING_USER_ANSWER:
                return
            doing = "working on a turn" if status in _READY else str(status)
            if not queue:
                raise TerminalBusyError(
                    f"terminal {record.id}: the CLI is busy ({doing}); not queued (queue=false)"
                )
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise InputQueueTimeoutError(
                    f"terminal {record.id}: the CLI was still busy ({doing}) after "
                    f"{self.timings.queue_timeout:g}s (BATON_INPUT_QUEUE_TIMEOUT); "
                    "the message was not typed"
                )
            seen = watcher.wait_evaluated(record.id, seen, remaining)

    def _state(self, record: TerminalRecord) -> tuple[TerminalStatus, TurnRecord | None]:
        """The status (brought up to date) and the CLI's turn record, read together."""
        status = self.reader.status(record)
        live = self.reader.watcher.get(record.id)
        if live is None:
            return status, None
        with live.lock:
            return status, live.turns

    # -- typing and confirming ---------------------------------------------------------------

    def _deliver(self, record: TerminalRecord, prepared: PreparedMessage, *, answer: bool) -> None:
        provider, _ = self.runtime.provider(record)
        self._require_alive(record)
        _, before = self._state(record)
        live = self.reader.watcher.get(record.id)
        busy_before = live.busy_count if live is not None else 0
        blank = self.reader.screen(record)
        self.delivery.paste(record.pane, prepared)
        self._require_alive(record)
        # A dialog's answer may show nowhere (a key the dialog takes): a still screen is
        # all there is to wait for. Anything else waits until its text shows.
        drawn, shown = self._drawn(record, provider, prepared.text, blank, read_text=not answer)
        pasted: str | None = None
        if answer or _is_command(prepared.text):
            # A command or a dialog's answer starts no turn; it is taken when it leaves
            # the screen it was drawn on. The CLI was at rest or asking, so no spinner
            # can change that screen.
            pasted = drawn
        self.delivery.submit(record.pane, provider)
        outcome_if_cut_off(200, {"success": True})  # typed: a repeated key must not retype
        # A paste never drawn may have been dropped (see `_dropped`): typed once more.
        repaste = None if shown or pasted is not None else blank
        self._confirm(record, provider, prepared, before, busy_before, pasted, repaste)

    def _confirm(
        self,
        record: TerminalRecord,
        provider: Provider,
        prepared: PreparedMessage,
        before: TurnRecord | None,
        busy_before: int,
        pasted: str | None,
        repaste: str | None,
    ) -> None:
        """Wait until the CLI took the message (`_taken`); InputNotAcceptedError if never.

        With `resubmit_after`, a message still in the input box is submitted again; one
        never drawn whose box shows empty on a redrawn screen is pasted again, once.
        """
        watcher = self.reader.watcher
        seen = watcher.evaluations_of(record.id)
        deadline = time.monotonic() + self.timings.accept_timeout
        again = provider.resubmit_after
        resubmit_at = None if again is None else time.monotonic() + again
        while True:
            self._require_alive(record)
            if self._taken(record, before, busy_before, pasted):
                return
            now = time.monotonic()
            remaining = deadline - now
            if remaining <= 0:
                raise InputNotAcceptedError(
                    f"terminal {record.id}: the CLI did not take the input (no new turn "
                    f"started within {self.timings.accept_timeout:g}s)"
                )
            if resubmit_at is not None and again is not None and now >= resubmit_at:
                # Again each `resubmit_after` while the message waits in the input box: a
                # loaded CLI can read the second Enter as a newline too.
                resubmit_at = now + again
                screen = self.reader.screen(record)
                if provider.input_pending(screen):
                    self.delivery.submit(record.pane, provider)
                elif repaste is not None and self._dropped(record, repaste, screen):
                    logger.warning(
                        "terminal %s: the CLI dropped the paste (its input box is empty "
                        "again); pasting once more",
                        record.id,
                    )
                    repaste = None
                    self.delivery.paste(record.pane, prepared)
                    self._drawn(record, provider, prepared.text, screen, read_text=True)
                    self.delivery.submit(record.pane, provider)
                    deadline = time.monotonic() + self.timings.accept_timeout
                    resubmit_at = time.monotonic() + again
                continue
            wait = remaining if resubmit_at is None else min(remaining, resubmit_at - now)
            seen = watcher.wait_evaluated(record.id, seen, max(wait, 0.0))

    def _taken(
        self,
        record: TerminalRecord,
        before: TurnRecord | None,
        busy_before: int,
        pasted: str | None,
    ) -> bool:
        """Whether the CLI took the message as a new turn (or ran the command)."""
        status, turns = self._state(record)
        if pasted is not None:
            return self.reader.screen(record) != pasted
        if turns is not None:
            return turns.started > (before.started if before is not None else 0)
        live = self.reader.watcher.get(record.id)
        if live is not None and live.busy_count > busy_before:
            return True
        return status in (TerminalStatus.PROCESSING, TerminalStatus.WAITING_USER_ANSWER)

    def _dropped(self, record: TerminalRecord, before_paste: str, screen: str) -> bool:
        """Whether a paste never drawn was lost, not merely late (asked once `input_pending`
        reads an empty input box on `screen`).

        Lost: the CLI has drawn since the paste (one that stopped reading its input draws
        nothing, and would read a second copy) and is at rest, no turn open (one that took
        the message shows itself busy at once, before its turn record says so).
        """
        if screen == before_paste:
            return False
        status, turns = self._state(record)
        return status in _READY and not (turns is not None and turns.open)

    def _drawn(
        self, record: TerminalRecord, provider: Provider, text: str, blank: str, *, read_text: bool
    ) -> tuple[str, bool]:
        """The screen once the paste shows on it and it has been still for a moment, and
        whether it showed (False: `paste_wait` ran out).

        Shown: the screen differs from `blank` (before the paste) and, with `read_text`,
        the provider's `paste_shown` reads the text on it. Still: no change for the
        provider's `paste_settle` seconds. Woken by each evaluation of this terminal's
        screen model (every write to its pane), never by polling; after `paste_wait`
        seconds the screen as it is then (the submit keys follow anyway, as for a CLI no
        rule reads).
        """
        watcher = self.reader.watcher
        seen = watcher.evaluations_of(record.id)
        started = time.monotonic()
        deadline = started + provider.paste_wait
        screen, changed_at = self.reader.screen(record), started
        while True:
            # When the screen model last read pane output, if that was after the paste.
            changed_at = max(changed_at, watcher.last_output(record.id))
            now = time.monotonic()
            shown = screen != blank or not read_text
            if shown and read_text:
                shown = provider.paste_shown(screen, text)
            if shown and now - changed_at >= provider.paste_settle:
                logger.debug("terminal %s: paste drawn in %.3fs", record.id, now - started)
                return screen, True
            if now >= deadline:
                logger.warning(
                    "terminal %s: the paste did not show within %gs; submitting anyway",
                    record.id,
                    provider.paste_wait,
                )
                return screen, False
            wake = deadline if not shown else min(deadline, changed_at + provider.paste_settle)
            seen = watcher.wait_evaluated(record.id, seen, wake - now)
            self._require_alive(record)
            current = self.reader.screen(record)
            if current != screen:
                screen, changed_at = current, time.monotonic()

    # -- keys and liveness ------------------------------------------------------------------

    def exit_terminal(self, terminal_id: str) -> None:
        """Ask the CLI to quit with its own exit keys; nothing is typed once it has exited.

        A key pressed again (Ctrl-C Ctrl-C) waits until the screen shows the first one
        read (at most `key_read_limit`): a busy CLI that reads both at once can take them
        for one unknown input and stay.
        """
        record = self.reader.record(terminal_id)
        provider, _ = self.runtime.provider(record)
        with self.runtime.lock_for(terminal_id):
            keys = provider.exit_keys
            for index, key in enumerate(keys):
                if self.reader.exited(record):
                    return
                before = self.reader.screen(record)
                self.tmux.send_keys(record.pane, [key])
                if index + 1 < len(keys) and keys[index + 1] == key:
                    self._until_screen_moves(record, before, self.timings.key_read_limit)

    def _until_screen_moves(self, record: TerminalRecord, before: str, limit: float) -> None:
        """Until the screen differs from `before` or `limit` seconds pass; woken by the
        terminal's evaluations, never by polling."""
        watcher = self.reader.watcher
        seen = watcher.evaluations_of(record.id)
        deadline = time.monotonic() + limit
        while self.reader.screen(record) == before:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            seen = watcher.wait_evaluated(record.id, seen, left)

    def require_alive(self, record: TerminalRecord) -> None:
        """TerminalExitedError (409) once the terminal's CLI has exited."""
        self._require_alive(record)

    def _require_alive(self, record: TerminalRecord) -> None:
        if self.reader.exited(record):
            raise TerminalExitedError(
                f"terminal {record.id}: the agent CLI has exited; input refused"
            )


def _is_command(text: str) -> bool:
    """A slash command (`/rename x`): one line the CLI runs itself, starting no turn."""
    stripped = text.strip()
    return stripped.startswith("/") and "\n" not in stripped
