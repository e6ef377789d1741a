"""Terminal inboxes: messages queued for a terminal and typed in when it rests (as CAO does).

They are typed through the same path as `POST …/input` (`InputSender`), without
queueing there: a message finds the receiver busy (or another sender typing) and stays
`pending` for the next rest.

A message is delivered only while its receiver is `idle` or `completed`, one per rest:
after a delivery the next message waits until the receiver has been seen working and
resting again (or `settle_seconds` passed without it ever looking busy). A courier
thread retries pending messages; posting a message also tries at once.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

from baton.errors import NotFoundError, ServerError, TerminalBusyError
from baton.server.records import InboxMessage, MessageStatus, iso_utc
from baton.server.terminals import TerminalService

__all__ = ["InboxService", "message_json"]

logger = logging.getLogger("baton.server.inbox")


def message_json(message: InboxMessage) -> dict[str, Any]:
    """An inbox message as CAO's `GET …/inbox/messages` shows it."""
    return {
        "id": message.id,
        "sender_id": message.sender_id,
        "receiver_id": message.receiver_id,
        "message": message.message,
        "status": message.status.value,
        "created_at": iso_utc(message.created_at),
    }


@dataclass
class _Delivery:
    """The last delivery to one receiver, so the next waits for the next rest."""

    at: float
    seen_busy: bool = False


class InboxService:
    """Queues messages per terminal and delivers them when the receiver rests."""

    def __init__(
        self,
        terminals: TerminalService,
        *,
        poll_seconds: float = 0.5,
        settle_seconds: float = 5.0,
    ) -> None:
        self.terminals = terminals
        self.registry = terminals.registry
        self.poll_seconds = poll_seconds
        self.settle_seconds = settle_seconds
        self._deliveries: dict[str, _Delivery] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the API ------------------------------------------------------------------------

    def post(self, receiver_id: str, sender_id: str, message: str) -> InboxMessage:
        """Queue `message` for `receiver_id` and try to deliver it now."""
        self.terminals.record(receiver_id)  # NotFoundError for an unknown receiver
        queued = self.registry.add_message(sender_id, receiver_id, message)
        self.deliver_pending(receiver_id)
        self._wake.set()
        return queued

    def messages(
        self, terminal_id: str, *, limit: int, status: MessageStatus | None
    ) -> list[InboxMessage]:
        self.terminals.record(terminal_id)
        return self.registry.messages(terminal_id, limit=limit, status=status)

    # -- delivery -------------------------------------------------------------------------

    def deliver_pending(self, terminal_id: str) -> bool:
        """Type the oldest pending message in if the receiver rests; True when one went in.

        Whatever learns that a terminal came to rest (a status event) may call this for
        the quickest delivery; the courier thread catches everything else.
        """
        with self._lock_for(terminal_id):
            pending = self.registry.messages(terminal_id, limit=1, status=MessageStatus.PENDING)
            if not pending:
                return False
            message = pending[0]
            try:
                record = self.terminals.record(terminal_id)
            except NotFoundError:
                self.registry.set_message_status(message.id, MessageStatus.FAILED)
                return False
            status = self.terminals.status(record)
            if not self._ready(terminal_id, status.is_at_rest, str(status)):
                return False
            # Marked before typing, so a rest seen while typing cannot deliver it twice.
            self.registry.set_message_status(message.id, MessageStatus.DELIVERED)
            try:
                # Not queued: the courier must not block; a sender already in the
                # terminal's input queue goes first, and this message waits for a rest.
                self.terminals.send_input(terminal_id, message.message, queue=False)
            except TerminalBusyError:
                self.registry.set_message_status(message.id, MessageStatus.PENDING)
                return False
            except ServerError as error:  # the CLI exited, or never took the input
                self._fail(message, error)
                return False
            with self._guard:
                self._deliveries[terminal_id] = _Delivery(at=time.monotonic())
            return True

    def _ready(self, terminal_id: str, at_rest: bool, status: str) -> bool:
        """At rest, and (after a delivery) busy and at rest again, or long enough quiet."""
        with self._guard:
            last = self._deliveries.get(terminal_id)
            if last is not None and not at_rest and status != "error":
                last.seen_busy = True
            if not at_rest:
                return False
            if last is None or last.seen_busy:
                return True
            return time.monotonic() - last.at >= self.settle_seconds

    def _fail(self, message: InboxMessage, error: ServerError) -> None:
        logger.warning("inbox message %s to %s failed: %s", message.id, message.receiver_id, error)
        self.registry.set_message_status(message.id, MessageStatus.FAILED)

    def _lock_for(self, terminal_id: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(terminal_id, threading.Lock())

    # -- the courier --------------------------------------------------------------------

    def start(self) -> None:
        """Start the courier thread that retries pending messages (idempotent)."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="baton-inbox", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                for receiver in self.registry.pending_receivers():
                    if self._stop.is_set():
                        return
                    self.deliver_pending(receiver)
            except Exception:  # keep delivering; the next round may succeed
                logger.exception("inbox courier round failed")
            self._wake.wait(self.poll_seconds)
            self._wake.clear()
