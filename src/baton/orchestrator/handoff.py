"""Response files: where each role answers, the instruction that asks for it, and the wait.

An agent hands its answer over by writing `WD/.tmp/agent-responses/<role file>` (see
`baton.roles`). The orchestrator clears a stale file, sends the prompt, then polls the
terminal status and the file until one of these happens (seeds 000, 002, 004):

- status `error`                                   → AgentErrorStatus
- file present and status idle/completed           → read it, archive it, return it
- idle/completed without the file for IDLE_GRACE_SECONDS (counted only once the agent
  has started, i.e. shown any other status, or after a startup guard of the same length)
                                                   → a short reminder naming the file and
                                                     the command (MAX_FILE_REMINDERS times,
                                                     each followed by a new grace), then
                                                     strict: MissingResponseError,
                                                     else the terminal's last output
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

A dialog (`waiting_user_answer`) is said once, naming `baton answer` and `baton attach`,
and so is the agent resuming after it; every status change goes to the `on_status` hook
(the run record's `status` events).

Every answer read is moved (never deleted) to `WD/.tmp/<run timestamp>/NNN-<role>.md`; a
leftover file found before a prompt goes there too, as `NNN-<role>-stale.md`.
"""

from __future__ import annotations

import os
import re
import secrets
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from baton.errors import (
    AgentErrorStatus,
    BatonError,
    ConfigError,
    HandoffError,
    HandoffTimeout,
    MissingResponseError,
)
from baton.orchestrator.crashpoints import crash_point
from baton.orchestrator.handoff_pace import ChangeWaiter, Pace, StuckFile
from baton.orchestrator.runlog import RunLog, format_duration
from baton.roles import RESPONSE_DIR_NAME, ROLE_BY_OUTPUT, ROLE_BY_TERMINAL, Role
from baton.status import TerminalStatus

__all__ = [
    "AgentApi",
    "Archive",
    "Handoff",
    "Response",
    "StatusHook",
    "ensure_response_dir",
    "file_reminder",
    "resolve_role",
    "response_dir",
    "response_file_command",
    "response_file_instruction",
    "response_path_for",
    "waiting_hint",
]

_AT_REST = (TerminalStatus.IDLE.value, TerminalStatus.COMPLETED.value)
# How much of a broken CLI's last output an error line quotes.
_SHOWN_LIMIT = 300


# Called with (role, terminal id, status, previous status or None) when a wait sees a change.
StatusHook = Callable[[Role, str, str, str | None], None]


def waiting_hint(role: Role, state_file: Path | None = None) -> str:
    """The exact commands that answer or show a waiting agent (logged and in the event)."""
    key = role.terminal_key
    where = f" --state-file {shlex.quote(str(state_file))}" if state_file is not None else ""
    return (
        f"`baton answer {key} TEXT{where}` (a menu wants `--key KEY` instead of TEXT) "
        f"or `baton attach {key}{where}`"
    )


class AgentApi(Protocol):
    """The three API calls a handoff needs (ApiClient has them)."""

    def send_input(self, terminal_id: str, message: str) -> None: ...

    def get_status(self, terminal_id: str) -> str: ...

    def get_last_output(self, terminal_id: str) -> str: ...


def resolve_role(role: str | Role) -> Role:
    """A Role from itself, its output key (`analyst_review`) or terminal key (`peer_analyst`)."""
    if isinstance(role, Role):
        return role
    found = ROLE_BY_OUTPUT.get(role) or ROLE_BY_TERMINAL.get(role)
    if found is None:
        raise ValueError(f"unknown role {role!r}")
    return found


def response_dir(wd: Path) -> Path:
    """`WD/.tmp/agent-responses` (absolute)."""
    return Path(wd).resolve() / RESPONSE_DIR_NAME


def response_path_for(role: str | Role, wd: Path) -> Path:
    """The absolute response file of a role."""
    return response_dir(wd) / resolve_role(role).response_file


def ensure_response_dir(wd: Path) -> Path:
    """Create the response directory with its parents; return it."""
    directory = response_dir(wd)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigError(f"WD: cannot create {directory}: {error.strerror}") from None
    return directory


def response_file_instruction(path: Path, *, token: str | None = None) -> str:
    """The block appended to every prompt: write the whole answer atomically to `path`.

    The heredoc delimiter carries a random token so no line of the answer can end it, and
    its quotes stop the shell from expanding `$`, backticks or quotes in the answer.
    """
    path = Path(path)
    return "\n".join(
        [
            "RESPONSE FILE INSTRUCTION",
            "When you have finished, write your complete final response (the whole answer "
            "described above, not a summary of it) to this file:",
            f"  {path}",
            "Write it to a temporary name in the same directory first and then rename it into "
            "place, so the file never exists half-written. Use this shell command, with your "
            "response between the two delimiter lines (keep the quotes around the first "
            "delimiter so the shell leaves $, backticks and quotes in your text alone):",
            "",
            *response_file_command(path, token=token),
            "",
            "Do this once, as your last action, then stop and wait for the next instruction.",
        ]
    )


def response_file_command(path: Path, *, token: str | None = None) -> list[str]:
    """The shell lines that write a response atomically to `path` (heredoc, then `mv`)."""
    path = Path(path)
    token = token or secrets.token_hex(4)
    delimiter = f"BATON_END_{token.upper()}"
    # The temporary name shares no `.md` suffix with the real one, so nothing that looks
    # for the response file can mistake it for the answer.
    temporary = path.with_name(f".{path.stem}.{token}.partial")
    directory = shlex.quote(str(path.parent))
    quoted_tmp, quoted_final = shlex.quote(str(temporary)), shlex.quote(str(path))
    return [
        f"mkdir -p {directory} && cat > {quoted_tmp} <<'{delimiter}'",
        "<your complete final response>",
        delimiter,
        f"mv -f {quoted_tmp} {quoted_final}",
    ]


def file_reminder(path: Path) -> str:
    """The short message sent to an agent that rests without having written `path`."""
    return "\n".join(
        [
            f"REMINDER: your response file {path} does not exist yet.",
            "Write your complete final response (the whole answer, not a summary) to it now "
            "with this shell command, then stop:",
            "",
            *response_file_command(path),
        ]
    )


class Archive:
    """Numbered copies of every answer, under `WD/.tmp/<run timestamp>/`, never deleted."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._sequence = _highest_sequence(self.directory)

    @classmethod
    def for_run(cls, wd: Path, started: datetime | None = None) -> Archive:
        """The archive of a run started at `started` (now by default)."""
        stamp = (started or datetime.now()).strftime("%Y%m%d-%H%M%S")
        return cls(Path(wd).resolve() / ".tmp" / stamp)

    def _next_path(self, role: Role, suffix: str = "") -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        while True:
            self._sequence += 1
            candidate = self.directory / f"{self._sequence:03d}-{role.output_key}{suffix}.md"
            if not candidate.exists():
                return candidate

    def store_file(self, source: Path, role: str | Role, *, suffix: str = "") -> Path:
        """Move `source` into the archive (a rename: nothing is copied or lost).

        `suffix` marks what is not an answer to the current prompt (`-stale`).
        """
        target = self._next_path(resolve_role(role), suffix)
        os.replace(source, target)
        return target

    def store_text(self, text: str, role: str | Role, *, suffix: str = "") -> Path:
        """Write `text` into the archive: a fallback terminal output, or a prompt (`-prompt`).

        Written to a dotted temp name and renamed, so a numbered copy is never half-written.
        """
        target = self._next_path(resolve_role(role), suffix)
        temporary = target.with_name(f".{target.name}.tmp")
        with temporary.open("w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, target)
        return target

    def remove_temp_files(self) -> None:
        """Drop the temp copies a killed run left half-written (`.NNN-<role>.md.tmp`)."""
        if self.directory.is_dir():
            for leftover in self.directory.glob(".*.md.tmp"):
                leftover.unlink(missing_ok=True)

    def answers_after(self, role: str | Role, prompt_file: Path) -> list[Path]:
        """The role's answers archived after `prompt_file` (its `NNN-<role>-prompt.md`).

        A run killed between archiving an answer and saving the state finds the answer
        here instead of waiting for a response file that was already moved.
        """
        found = re.match(r"(\d+)-", Path(prompt_file).name)
        if found is None or not self.directory.is_dir():
            return []
        after = int(found.group(1))
        pattern = re.compile(rf"(\d+)-{re.escape(resolve_role(role).output_key)}\.md")
        matches = [
            (int(match.group(1)), entry)
            for entry in self.directory.iterdir()
            if (match := pattern.fullmatch(entry.name)) and int(match.group(1)) > after
        ]
        return [entry for _, entry in sorted(matches)]


def _highest_sequence(directory: Path) -> int:
    if not directory.is_dir():
        return 0
    numbers = [
        int(match.group(1))
        for entry in directory.iterdir()
        if (match := re.match(r"(\d+)-", entry.name))
    ]
    return max(numbers, default=0)


@dataclass(frozen=True)
class Response:
    """An agent's answer, where its archived copy lives, and whether it came from a file."""

    text: str
    archived_to: Path | None
    from_file: bool = True


class Handoff:
    """Sends prompts and collects answers through response files, per the rules above."""

    def __init__(
        self,
        api: AgentApi,
        wd: Path,
        *,
        archive: Archive,
        poll_seconds: float = 2.0,
        idle_grace_seconds: float = 30.0,
        response_timeout: float = 1800.0,
        strict: bool = True,
        max_file_reminders: int = 0,
        on_reminder: Callable[[Role, str, int], None] | None = None,
        log: RunLog | None = None,
        heartbeat_seconds: float = 30.0,
        on_status: StatusHook | None = None,
        state_file: Path | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        waiter: ChangeWaiter | None = None,
    ) -> None:
        self.api = api
        self.wd = Path(wd).resolve()
        self.archive = archive
        self.poll_seconds = poll_seconds
        self.idle_grace_seconds = idle_grace_seconds
        self.response_timeout = response_timeout
        self.strict = strict
        self.max_file_reminders = max_file_reminders
        self.on_reminder = on_reminder  # (role, terminal id, reminder number) after each
        self.log = log or RunLog()
        self.heartbeat_seconds = heartbeat_seconds
        self.on_status = on_status
        self.state_file = state_file
        self._clock = clock
        self._sleep = sleep
        self.waiter = waiter
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
        message: str,
        *,
        deliver: Callable[[str, str], None] | None = None,
    ) -> Response:
        """The one send-and-wait path: clear the stale file, send, wait for the answer.

        `deliver(terminal_id, message)` sends the prompt (the API's `send_input` by default);
        the phase machine passes its own, which also records the send in the run state.
        """
        self.ensure_response_dir()
        self.clear_stale_response(role)
        (deliver or self.api.send_input)(terminal_id, message)
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
        strict = self.strict if strict is None else strict
        path = self.response_path_for(role)
        who = f"{role.title} (terminal {terminal_id})"
        started = self._clock()
        agent_started = False
        idle_since: float | None = None
        waiting_since: float | None = None
        previous: str | None = None
        reminders_left = self.max_file_reminders if reminders is None else reminders
        next_heartbeat = started + self.heartbeat_seconds
        pace = Pace(self.poll_seconds)
        told: str | None = None  # the status a status event just brought, if any
        stuck = StuckFile(path, self.idle_grace_seconds)
        seen_idle = False
        while True:
            status = told if told is not None else self.api.get_status(terminal_id)
            now = self._clock()
            if status != previous:
                self._status_seen(role, terminal_id, status, previous)
                previous = status
            waiting_since = self._track_waiting(role, who, status, waiting_since, now)
            if status == TerminalStatus.ERROR:
                raise AgentErrorStatus(
                    f"{who} reported status error while working{self._shown(terminal_id)}"
                )
            if status in _AT_REST:
                if path.is_file():
                    return self._take_file(path, role, who, now - started)
                # idle → completed after the prompt: it answered (too fast to show working).
                seen_idle = seen_idle or status == TerminalStatus.IDLE
                agent_started = agent_started or (seen_idle and status == TerminalStatus.COMPLETED)
                if not agent_started and now - started >= self.idle_grace_seconds:
                    self.log.warning(
                        f"{who} never showed it started working within "
                        f"IDLE_GRACE_SECONDS={self.idle_grace_seconds:g}; "
                        "counting its idle time from now"
                    )
                    agent_started = True
                if agent_started:
                    if idle_since is None:
                        idle_since = now
                    elif now - idle_since >= self.idle_grace_seconds:
                        if reminders_left <= 0:
                            return self._no_file(terminal_id, role, path, who, status, strict)
                        reminders_left -= 1
                        self._remind(terminal_id, role, path, who)
                        idle_since = None
            else:
                agent_started = True
                idle_since = None
                if status != TerminalStatus.WAITING_USER_ANSWER and stuck.check(
                    now, who, status, self.log
                ):
                    return self._take_file(path, role, who, now - started)
                if now - started >= self.response_timeout:
                    raise HandoffTimeout(
                        f"{who} is still {status} after RESPONSE_TIMEOUT={self.response_timeout:g}s"
                    )
            if now >= next_heartbeat:
                self.log.info(f"{who} still working: {format_duration(now - started)}, {status}")
                next_heartbeat = now + self.heartbeat_seconds
            told = self._wait(terminal_id, status, path, pace)

    def _wait(self, terminal_id: str, status: str, path: Path, pace: Pace) -> str | None:
        """Wait before the next status read; the new status when a status event brought it
        (so it need not be read again).

        Without a waiter this is the plain POLL_SECONDS sleep. With one, the wait ends on a
        file or status event, and `pace` sets how long it may last; a live status stream
        (`GET /events`) says the status, so nothing is read after the event.
        """
        if self.waiter is None:
            self._sleep(self.poll_seconds)
            return None
        woke = self.waiter.wait(terminal_id, status, path, pace.interval)
        if woke is None:
            pace.slow_down()
            return None
        told = self.waiter.latest_status(terminal_id)
        if woke == "file" and told is None:
            pace.hurry()  # no live status stream: read again soon
        return told

    def _track_waiting(
        self, role: Role, who: str, status: str, waiting_since: float | None, now: float
    ) -> float | None:
        """Say once when a dialog opens (naming the commands) and when work resumes.

        Returns when the current wait for a user answer began, or None outside one.
        """
        waiting = status == TerminalStatus.WAITING_USER_ANSWER
        if waiting and waiting_since is None:
            self.log.warning(
                f"{who} is waiting for a user answer (a permission or choice dialog); "
                f"answer it with {waiting_hint(role, self.state_file)}; baton keeps waiting"
            )
            return now
        if not waiting and waiting_since is not None:
            self.log.info(
                f"{who} resumed after waiting {format_duration(now - waiting_since)} "
                f"for an answer; now {status}"
            )
            return None
        return waiting_since

    def _status_seen(self, role: Role, terminal_id: str, status: str, previous: str | None) -> None:
        """Tell the hook (the run record) about a status change; it never stops the wait."""
        if self.on_status is None:
            return
        try:
            self.on_status(role, terminal_id, status, previous)
        except Exception as error:  # a record that cannot be written must not end the run
            self.log.warning(f"cannot record the status of terminal {terminal_id}: {error}")

    def _remind(self, terminal_id: str, role: Role, path: Path, who: str) -> None:
        """Ask an agent at rest without its response file to write it (MAX_FILE_REMINDERS)."""
        self.log.warning(
            f"{who} is at rest but has not written {path.name} after "
            f"IDLE_GRACE_SECONDS={self.idle_grace_seconds:g}; reminding it"
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
        found = self.archive.answers_after(role, Path(prompt_file))
        if not found:
            return None
        archived = found[0]
        try:
            text = archived.read_text(encoding="utf-8", errors="replace")
        except OSError as error:
            raise HandoffError(f"cannot read the archived {archived}: {error.strerror}") from None
        self.log.info(f"{role.title} had already answered before the run stopped: {archived}")
        return Response(text=text, archived_to=archived, from_file=True)

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
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
            archived = self.archive.store_file(path, role)
        except OSError as error:
            raise HandoffError(f"cannot read and archive {path}: {error.strerror}") from None
        crash_point("answer_archived")
        self.log.info(f"{who} answered after {format_duration(elapsed)}; archived to {archived}")
        return Response(text=text, archived_to=archived, from_file=True)

    def _no_file(
        self, terminal_id: str, role: Role, path: Path, who: str, status: str, strict: bool
    ) -> Response:
        grace = f"IDLE_GRACE_SECONDS={self.idle_grace_seconds:g}"
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
