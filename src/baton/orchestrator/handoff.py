"""The handoff: send a prompt, then wait for the role's response file.

An agent hands its answer over by writing its response file
(`baton.orchestrator.response_files`). The orchestrator clears a stale file, sends the
prompt, then polls the terminal status and the file until one of these happens (seeds
000, 002, 004):

- status `error`                                   → AgentErrorStatus
- file present and status idle/completed           → read it, archive it, return it
- idle/completed without the file for IDLE_GRACE_SECONDS (counted only once the agent
  has started, i.e. shown any other status, or after a startup guard of the same length)
                                                   → a short reminder naming the file and
                                                     the command (MAX_FILE_REMINDERS times,
                                                     each followed by a new grace), then
                                                     strict: MissingResponseError,
                                                     else the terminal's last output
- working, but no progress for STALL_SECONDS       → AgentStalled (`stall_watch`)
- still working after RESPONSE_TIMEOUT             → HandoffTimeout
- `processing` while the file sits complete and unchanged for max(IDLE_GRACE_SECONDS,
  30 s)                                            → one warning naming the likely cause;
  after a further IDLE_GRACE_SECONDS the file is taken (a server that never sees the
  CLI finish, such as a stock cao-server with Codex 0.169)
- idle then completed after the prompt counts as having started (an agent too quick to
  be seen working)

Between two status reads it waits at most POLL_SECONDS. With a `ChangeWaiter` (inotify on
the response directory plus the server's status events, `baton.orchestrator.watchers`)
the wait ends as soon as the file is completed or the status changes; after the file
appears the status is read at once and then every 20 ms for a moment, then at doubling
intervals up to POLL_SECONDS (`baton.orchestrator.handoff_pace`), so a server without
status events still hands off in milliseconds.

A dialog (`waiting_user_answer`) is said once, and every status change goes to the
`on_status` hook (`baton.orchestrator.handoff_status`).

Every answer read, and a stale file found before a prompt, is moved into the run's
`Archive` (`baton.orchestrator.archive`), never deleted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from baton.errors import (
    AgentErrorStatus,
    BatonError,
    HandoffError,
    HandoffTimeout,
    MissingResponseError,
)
from baton.orchestrator.archive import Archive, Response
from baton.orchestrator.handoff_pace import ChangeWaiter, HandoffTimings, Pace, StuckFile
from baton.orchestrator.handoff_status import StatusHook, report_status, track_waiting
from baton.orchestrator.response_files import (
    ensure_response_dir,
    file_reminder,
    resolve_role,
    response_path_for,
)
from baton.orchestrator.runlog import RunLog, format_duration
from baton.orchestrator.stall_watch import StallRule, StallWatch
from baton.roles import Role
from baton.status import TerminalStatus

__all__ = [
    "AgentApi",
    "Handoff",
    "Response",
]

_AT_REST = (TerminalStatus.IDLE.value, TerminalStatus.COMPLETED.value)
# How much of a broken CLI's last output an error line quotes.
_SHOWN_LIMIT = 300


class AgentApi(Protocol):
    """The three API calls a handoff needs (ApiClient has them)."""

    def send_input(self, terminal_id: str, message: str) -> None: ...

    def get_status(self, terminal_id: str) -> TerminalStatus: ...

    def get_last_output(self, terminal_id: str) -> str: ...


@dataclass
class _Wait:
    """What one wait for an answer has seen so far (see the module docstring's rules)."""

    role: Role
    terminal_id: str
    path: Path
    who: str  # "<Role> (terminal <id>)", as every line about the wait names it
    strict: bool
    started: float
    reminders_left: int
    next_heartbeat: float
    pace: Pace
    stuck: StuckFile
    stall: StallWatch | None
    agent_started: bool = False  # shown a working status, or idle then completed
    seen_idle: bool = False
    idle_since: float | None = None  # when the current rest without the file began
    waiting_since: float | None = None  # when the current dialog began
    previous: TerminalStatus | None = None  # the status read before this one


class Handoff:
    """Sends prompts and collects answers through response files, per the rules above."""

    def __init__(
        self,
        api: AgentApi,
        wd: Path,
        *,
        archive: Archive,
        timings: HandoffTimings | None = None,
        strict: bool = True,
        max_file_reminders: int = 0,
        on_reminder: Callable[[Role, str, int], None] | None = None,
        log: RunLog | None = None,
        on_status: StatusHook | None = None,
        state_file: Path | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        waiter: ChangeWaiter | None = None,
        stall: StallRule | None = None,
    ) -> None:
        self.api = api
        self.wd = Path(wd).resolve()
        self.archive = archive
        self.timings = timings or HandoffTimings()
        self.strict = strict
        self.max_file_reminders = max_file_reminders
        self.on_reminder = on_reminder  # (role, terminal id, reminder number) after each
        self.log = log or RunLog()
        self.on_status = on_status
        self.state_file = state_file
        self._clock = clock
        self._sleep = sleep
        self.waiter = waiter
        self.stall = stall if stall is not None and stall.seconds > 0 else None
        self._reminded: dict[str, int] = {}  # reminders sent per role, over the run

    def response_path_for(self, role: str | Role) -> Path:
        return response_path_for(role, self.wd)

    def ensure_response_dir(self) -> Path:
        return ensure_response_dir(self.wd)

    def clear_stale_response(self, role: str | Role) -> None:
        """Move a leftover response file to the archive as `NNN-<role>-stale.md`.

        It is out of the way (never taken for the coming answer) yet not silently lost:
        it may be an answer that arrived while no run was waiting for it.
        """
        path = self.response_path_for(role)
        if not path.is_file():
            return
        try:
            archived = self.archive.store_file(path, role, suffix="-stale")
        except OSError as error:
            raise HandoffError(f"cannot move the stale {path} aside: {error.strerror}") from None
        self.log.warning(f"a stale {path.name} was left over; archived to {archived}")

    def send_and_wait(self, terminal_id: str, role: str | Role, message: str) -> str:
        """Clear the stale file, send the prompt, wait for the answer; return its text."""
        return self.send_and_receive(terminal_id, role, message).text

    def send_and_receive(
        self,
        terminal_id: str,
        role: str | Role,
        message: str | Callable[[], str],
        *,
        deliver: Callable[[str, str], None] | None = None,
    ) -> Response:
        """The one send-and-wait path (the loop's turns and `send_and_wait`): clear the
        stale file, send, wait for the answer.

        `message` may be a builder, called once the stale file is out of the way (a prompt
        that records what it has shown is built only when it goes out).
        `deliver(terminal_id, message)` sends it (the API's `send_input` by default); the
        loop's `TurnRunner` passes its own, which records the send in the run state.
        """
        self.ensure_response_dir()
        self.clear_stale_response(role)
        text = message() if callable(message) else message
        (deliver or self.api.send_input)(terminal_id, text)
        return self.wait_for_response(terminal_id, role)

    def wait_for_response_file(self, terminal_id: str, role: str | Role) -> str:
        """Wait for the role's answer (see the module docstring); return its text."""
        return self.wait_for_response(terminal_id, role).text

    def wait_for_response(
        self,
        terminal_id: str,
        role: str | Role,
        *,
        strict: bool | None = None,
        reminders: int | None = None,
    ) -> Response:
        """Wait for the role's answer (see the module docstring); return it archived.

        `strict` overrides STRICT_FILE_HANDOFF for this wait, `reminders` MAX_FILE_REMINDERS.
        """
        role = resolve_role(role)
        started = self._clock()
        path = self.response_path_for(role)
        wait = _Wait(
            role=role,
            terminal_id=terminal_id,
            path=path,
            who=f"{role.title} (terminal {terminal_id})",
            strict=self.strict if strict is None else strict,
            started=started,
            reminders_left=self.max_file_reminders if reminders is None else reminders,
            next_heartbeat=started + self.timings.heartbeat_seconds,
            pace=Pace(self.timings.poll_seconds),
            stuck=StuckFile(path, self.timings.idle_grace_seconds),
            stall=self.stall.watch(terminal_id, role.output_key, started, self.timings.poll_seconds)
            if self.stall is not None
            else None,
        )
        told: TerminalStatus | None = None  # the status a status event just brought, if any
        while True:
            status = told if told is not None else self.api.get_status(terminal_id)
            now = self._clock()
            self._note_status(wait, status, now)
            if status == TerminalStatus.ERROR:
                raise AgentErrorStatus(
                    f"{wait.who} reported status error while working{self._shown(terminal_id)}"
                )
            if status in _AT_REST:
                response = self._at_rest(wait, status, now)
            else:
                response = self._working(wait, status, now)
            if response is not None:
                return response
            if now >= wait.next_heartbeat:
                self.log.info(
                    f"{wait.who} still working: {format_duration(now - started)}, {status}"
                )
                wait.next_heartbeat = now + self.timings.heartbeat_seconds
            told = self._wait(terminal_id, status, path, wait.pace)

    def _note_status(self, wait: _Wait, status: TerminalStatus, now: float) -> None:
        """Tell the hook about a changed status; say when a dialog opens or work resumes."""
        if status != wait.previous:
            report_status(
                self.on_status, self.log, wait.role, wait.terminal_id, status, wait.previous
            )
            wait.previous = status
        wait.waiting_since = track_waiting(
            self.log, wait.role, wait.who, status, wait.waiting_since, now, self.state_file
        )

    def _at_rest(self, wait: _Wait, status: TerminalStatus, now: float) -> Response | None:
        """Idle or completed: the file if written, else the startup guard, grace and reminders.

        Returns the answer when the wait is over (the file, or the fallback output).
        """
        if wait.path.is_file():
            return self._take_file(wait.path, wait.role, wait.who, now - wait.started)
        # idle → completed after the prompt: it answered (too fast to show working).
        wait.seen_idle = wait.seen_idle or status == TerminalStatus.IDLE
        wait.agent_started = wait.agent_started or (
            wait.seen_idle and status == TerminalStatus.COMPLETED
        )
        if not wait.agent_started and now - wait.started >= self.timings.idle_grace_seconds:
            self.log.warning(
                f"{wait.who} never showed it started working within "
                f"IDLE_GRACE_SECONDS={self.timings.idle_grace_seconds:g}; "
                "counting its idle time from now"
            )
            wait.agent_started = True
        if not wait.agent_started:
            return None
        if wait.idle_since is None:
            wait.idle_since = now
            return None
        if now - wait.idle_since < self.timings.idle_grace_seconds:
            return None
        if wait.reminders_left <= 0:
            return self._no_file(
                wait.terminal_id, wait.role, wait.path, wait.who, status, wait.strict
            )
        wait.reminders_left -= 1
        self._remind(wait.terminal_id, wait.role, wait.path, wait.who)
        wait.idle_since = None
        return None

    def _working(self, wait: _Wait, status: TerminalStatus, now: float) -> Response | None:
        """Any other status: the agent has started; a stuck file is taken, a timeout raised."""
        wait.agent_started = True
        wait.idle_since = None
        if status != TerminalStatus.WAITING_USER_ANSWER and wait.stuck.check(
            now, wait.who, status, self.log
        ):
            return self._take_file(wait.path, wait.role, wait.who, now - wait.started)
        if wait.stall is not None and not wait.path.is_file():
            wait.stall.observe(wait.who, status, now)  # AgentStalled when there is no progress
        timeout = self.timings.response_timeout
        if now - wait.started >= timeout:
            raise HandoffTimeout(
                f"{wait.who} is still {status} after RESPONSE_TIMEOUT={timeout:g}s"
            )
        return None

    def _wait(
        self, terminal_id: str, status: TerminalStatus, path: Path, pace: Pace
    ) -> TerminalStatus | None:
        """Wait before the next status read; the new status when a status event brought it
        (so it need not be read again).

        Without a waiter this is the plain POLL_SECONDS sleep. With one, the wait ends on a
        file or status event, and `pace` sets how long it may last; a status event from a
        live stream (`GET /events`) says the status, so nothing is read after it.
        """
        if self.waiter is None:
            self._sleep(self.timings.poll_seconds)
            return None
        woke = self.waiter.wait(terminal_id, status, path, pace.interval)
        if woke is None:
            pace.slow_down()
            return None
        if woke == "file":
            # Read the status afresh: the stream's last word on this terminal may predate
            # the file (or the agent itself, when it was just brought back).
            if self.waiter.latest_status(terminal_id) is None:
                pace.hurry()  # no live status stream: read again soon
            return None
        # A stream that is behind the last read (its event does not move on from `status`)
        # is read afresh; an error too: the event may be late, about a CLI already replaced.
        told = self.waiter.status_after(terminal_id, status)
        return None if told == TerminalStatus.ERROR else told

    def _remind(self, terminal_id: str, role: Role, path: Path, who: str) -> None:
        """Ask an agent at rest without its response file to write it (MAX_FILE_REMINDERS)."""
        self.log.warning(
            f"{who} is at rest but has not written {path.name} after "
            f"IDLE_GRACE_SECONDS={self.timings.idle_grace_seconds:g}; reminding it"
        )
        self.api.send_input(terminal_id, file_reminder(path))
        self._reminded[role.output_key] = self._reminded.get(role.output_key, 0) + 1
        if self.on_reminder is not None:
            self.on_reminder(role, terminal_id, self._reminded[role.output_key])

    def recover_archived(self, role: str | Role, prompt_file: str | None) -> Response | None:
        """The answer to `prompt_file` if it was already archived (the run died right after)."""
        if not prompt_file:
            return None
        role = resolve_role(role)
        recovered = self.archive.recover(role, Path(prompt_file))
        if recovered is not None:
            self.log.info(
                f"{role.title} had already answered before the run stopped: {recovered.archived_to}"
            )
        return recovered

    def take_if_present(self, terminal_id: str, role: str | Role) -> Response | None:
        """Take the role's response file if it is there (an agent that wrote it, then died)."""
        role = resolve_role(role)
        path = self.response_path_for(role)
        if not path.is_file():
            return None
        return self._take_file(path, role, f"{role.title} (terminal {terminal_id})", 0.0)

    def _shown(self, terminal_id: str) -> str:
        """`; the CLI showed: <its last words>` on one line, or nothing when it cannot say."""
        try:
            shown = self.api.get_last_output(terminal_id)
        except BatonError:
            return ""
        words = " ".join(shown.split())
        if not words:
            return ""
        if len(words) > _SHOWN_LIMIT:
            words = "…" + words[-_SHOWN_LIMIT:]
        return f"; the CLI showed: {words}"

    def _take_file(self, path: Path, role: Role, who: str, elapsed: float) -> Response:
        response = self.archive.take(path, role)
        self.log.info(
            f"{who} answered after {format_duration(elapsed)}; archived to {response.archived_to}"
        )
        return response

    def _no_file(
        self,
        terminal_id: str,
        role: Role,
        path: Path,
        who: str,
        status: TerminalStatus,
        strict: bool,
    ) -> Response:
        grace = f"IDLE_GRACE_SECONDS={self.timings.idle_grace_seconds:g}"
        if strict:
            raise MissingResponseError(
                f"{who} is {status} but did not write {path} within {grace} "
                "(STRICT_FILE_HANDOFF=1; set it to 0 to fall back to the terminal output)"
            )
        text = self.api.get_last_output(terminal_id)
        try:
            archived = self.archive.store_text(text, role)
        except OSError as error:
            raise HandoffError(f"cannot archive the output of {who}: {error.strerror}") from None
        self.log.warning(
            f"{who} did not write {path} within {grace}; using its last terminal output "
            f"instead (archived to {archived})"
        )
        return Response(text=text, archived_to=archived, from_file=False)
