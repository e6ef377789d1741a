"""One agent step in one call (CAO's `POST /terminals/run-step`, the handoff path).

Create a worker (or reuse one), type the prompt in, wait until the agent has worked and
rests again, read its last message, and delete the worker it created. CAO's `handoff`
MCP tool and `cao agent handoff` both drive workers through this call.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from baton.errors import BadRequestError, ServerError, StepFailedError
from baton.server.creation import CreateRequest
from baton.server.events import EventFilter, EventHub
from baton.server.records import TerminalRecord
from baton.server.terminals import TerminalService
from baton.status import TerminalStatus

__all__ = ["StepRequest", "StepResult", "StepRunner", "StepTimings"]

_WORKING = (TerminalStatus.PROCESSING, TerminalStatus.WAITING_USER_ANSWER)

Wait = Callable[[float], None]  # block until the terminal's next event, or at most so long


@dataclass(frozen=True)
class StepRequest:
    """What the caller asks for (CAO's RunStepRequest fields Baton acts on)."""

    provider: str
    agent: str
    prompt: str
    timeout: float = 600.0
    session_name: str | None = None
    reuse_terminal_id: str | None = None
    teardown: bool = True
    working_directory: str | None = None
    caller_id: str | None = None
    allowed_tools: tuple[str, ...] | None = None
    # The caller's key for this step: its outcome stays readable under it (for a client
    # whose request timed out), via `GET /handoff-results/{job_id}`.
    job_id: str | None = None


@dataclass(frozen=True)
class StepResult:
    terminal_id: str
    last_message: str
    status: str = str(TerminalStatus.COMPLETED)

    def as_json(self) -> dict[str, Any]:
        return {
            "terminal_id": self.terminal_id,
            "last_message": self.last_message,
            "status": self.status,
            "replayed": False,
        }


@dataclass(frozen=True)
class StepTimings:
    """How the wait for the answer reads the terminal."""

    # Between reads without events (no hub, or a status read from tmux, which publishes
    # none); with events, a read follows each of the terminal's events instead.
    poll_seconds: float = 0.1
    # With events, the longest wait for one before the status is read again anyway.
    event_cap_seconds: float = 1.0
    # A post-input `idle` counts as done once the agent was seen working and `idle`
    # held this long (an agent may settle back to its idle prompt without an answer mark).
    idle_stable_seconds: float = 1.0
    # A rest that never showed work (a very fast turn) counts as done after this long.
    unseen_work_seconds: float = 5.0


class StepRunner:
    """Runs steps over the terminal service, woken by its status events.

    Without `events` (and in tests, with an injected `clock`/`sleep`) it reads the status
    every `poll_seconds` instead.
    """

    def __init__(
        self,
        terminals: TerminalService,
        *,
        events: EventHub | None = None,
        timings: StepTimings | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.terminals = terminals
        self.events = events
        self.timings = timings or StepTimings()
        self.clock = clock
        self.sleep = sleep

    def run(self, request: StepRequest) -> StepResult:
        """The step's answer; StepFailedError when the worker crashed or ran long.

        With a `job_id`, the outcome is also recorded under it: `running`, then
        `completed` (before the worker is deleted) or `error`.
        """
        if request.job_id is None:
            return self._run(request)
        self.terminals.registry.record_handoff(request.job_id, "running")
        try:
            return self._run(request)
        except ServerError as error:
            terminal_id = getattr(error, "terminal_id", None)
            self.terminals.registry.record_handoff(
                request.job_id, "error", terminal_id=terminal_id, error_message=str(error)
            )
            raise

    def _run(self, request: StepRequest) -> StepResult:
        deadline = self.clock() + request.timeout
        if request.reuse_terminal_id is not None:
            record = self.terminals.record(request.reuse_terminal_id)
            if record.provider != request.provider:
                raise BadRequestError(
                    f"terminal {record.id} runs provider {record.provider!r}, "
                    f"not {request.provider!r}"
                )
            created = False
        else:
            record = self._create(request, deadline)
            created = True
        terminal_id = record.id
        before = self.terminals.status(record)
        if before is TerminalStatus.ERROR:
            raise StepFailedError(
                f"terminal {terminal_id} reached ERROR status before the prompt was sent",
                kind="error",
                terminal_id=terminal_id,
            )
        with self._changes(record) as wait:
            try:
                self.terminals.send_input(terminal_id, request.prompt)
            except ServerError as error:
                raise StepFailedError(
                    f"terminal {terminal_id}: {error}", kind="error", terminal_id=terminal_id
                ) from None
            self._wait_for_answer(record, before, deadline, request.timeout, wait)
        last_message = self.terminals.get_output(terminal_id, "last")
        if request.job_id is not None:
            self.terminals.registry.record_handoff(
                request.job_id, "completed", terminal_id=terminal_id, last_message=last_message
            )
        if created and request.teardown:
            self.terminals.delete_terminal(terminal_id)
        return StepResult(terminal_id=terminal_id, last_message=last_message)

    def _create(self, request: StepRequest, deadline: float) -> TerminalRecord:
        working_directory = request.working_directory
        if working_directory is None and request.caller_id is not None:
            working_directory = self._caller_directory(request.caller_id)
        described = self.terminals.create_terminal(
            CreateRequest(
                agent_profile=request.agent,
                provider=request.provider,
                working_directory=working_directory,
                session_name=request.session_name,
                new_session=request.session_name is None,
                caller_id=request.caller_id,
                allowed_tools=request.allowed_tools,
            )
        )
        record = self.terminals.record(described["id"])
        # A CLI may flicker busy once right after it first rests (Codex does): wait for a
        # ready status within the step's time rather than failing on the first read.
        status = TerminalStatus(described["status"])
        with self._changes(record) as wait:
            while not status.is_at_rest:
                if status is TerminalStatus.ERROR or self.clock() >= deadline:
                    raise StepFailedError(
                        f"terminal {record.id} did not reach a ready status (it is {status})",
                        kind="error" if status is TerminalStatus.ERROR else "timeout",
                        terminal_id=record.id,
                    )
                wait(deadline - self.clock())
                status = self.terminals.status(record)
        return record

    @contextlib.contextmanager
    def _changes(self, record: TerminalRecord) -> Iterator[Wait]:
        """A wait that ends at the terminal's next event (or its cap), for a `with` block."""
        if self.events is None:
            yield lambda timeout: self.sleep(max(0.0, min(timeout, self.timings.poll_seconds)))
            return
        with self.events.watching(EventFilter(frozenset({record.id}))) as changes:

            def wait(timeout: float) -> None:
                from_events = self.terminals.answers_from_memory(record.id)
                cap = self.timings.event_cap_seconds if from_events else self.timings.poll_seconds
                changes.wait(max(0.0, min(timeout, cap)))

            yield wait

    def _caller_directory(self, caller_id: str) -> str | None:
        """The supervisor's current directory, so a worker starts where it works."""
        record = self.terminals.registry.get_terminal(caller_id)
        if record is None:
            return None
        return self.terminals.tmux.pane_current_path(record.pane) or record.working_directory

    def _wait_for_answer(
        self,
        record: TerminalRecord,
        before: TerminalStatus,
        deadline: float,
        timeout: float,
        wait: Wait,
    ) -> None:
        """Return once the agent worked and rests again; StepFailedError otherwise."""
        sent = self.clock()
        seen_working = False
        idle_since: float | None = None
        while True:
            status = self.terminals.status(record)
            now = self.clock()
            if status is TerminalStatus.ERROR:
                raise StepFailedError(
                    f"terminal {record.id} reached ERROR status",
                    kind="error",
                    terminal_id=record.id,
                )
            if status in _WORKING:
                seen_working = True
                idle_since = None
            elif status is TerminalStatus.COMPLETED:
                # A `completed` left over from the previous turn is not this answer.
                if seen_working or before is not TerminalStatus.COMPLETED:
                    return
                if now - sent >= self.timings.unseen_work_seconds:
                    return
            elif status is TerminalStatus.IDLE:
                idle_since = now if idle_since is None else idle_since
                if seen_working and now - idle_since >= self.timings.idle_stable_seconds:
                    return
            if now >= deadline:
                raise StepFailedError(
                    f"step on terminal {record.id} did not complete within {timeout:g}s",
                    kind="timeout",
                    terminal_id=record.id,
                )
            # Wake at the next event, or when a rest would have lasted long enough to count.
            wake = deadline
            if idle_since is not None and seen_working:
                wake = min(wake, idle_since + self.timings.idle_stable_seconds)
            elif status is TerminalStatus.COMPLETED:
                wake = min(wake, sent + self.timings.unseen_work_seconds)
            wait(wake - now)
