"""`RunState` and its version-1 JSON file, shared with the shell script.

Either tool resumes the other's run, so the shell script's fields keep their names and
shapes; Baton adds a few of its own (`current_cycle`, `current_step`, `awaiting`,
`explore_sent`, `archive_dir`, `output_files`, `restarts`, `exit_complete`, `command`) that the
shell script ignores and that default sensibly when a shell-written file lacks them.
Writes are atomic: a crash leaves either the old file or the new one, never a torn one.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

from baton.errors import StateFileError
from baton.hints import RunCommand, baton_command
from baton.orchestrator.awaiting import Awaiting
from baton.orchestrator.crashpoints import crash_point
from baton.private import new_private_dirs
from baton.roles import ROLES

__all__ = [
    "DEFAULT_STATE_FILE_NAME",
    "FINAL_STATUSES",
    "NO_FEEDBACK",
    "OUTPUT_KEYS",
    "PHASES",
    "STATE_VERSION",
    "TERMINAL_KEYS",
    "FinalStatus",
    "Phase",
    "RunState",
    "Step",
    "load_state",
    "read_state_json",
    "remove_stale_temp_files",
    "resume_command",
    "save_state",
    "should_auto_resume",
    "write_json_atomic",
]

DEFAULT_STATE_FILE_NAME = "codex-3agents-loop-state.json"  # in WD/.tmp unless STATE_FILE says

STATE_VERSION = 1


class Phase(StrEnum):
    """`current_phase`: where the round stands; `done` once the run has its result."""

    ANALYST = "analyst"
    PROGRAMMER = "programmer"
    TESTER = "tester"
    DONE = "done"


class FinalStatus(StrEnum):
    """`final_status`: RUNNING until the tester's PASS or the last round's FAIL."""

    RUNNING = "RUNNING"
    PASS = "PASS"
    FAIL = "FAIL"


class Step(StrEnum):
    """`current_step` of a review phase: the author's turn or its peer's review."""

    AUTHOR = "author"
    REVIEW = "review"


PHASES: tuple[str, ...] = tuple(phase.value for phase in Phase)
FINAL_STATUSES: tuple[str, ...] = tuple(status.value for status in FinalStatus)
TERMINAL_KEYS: tuple[str, ...] = tuple(role.terminal_key for role in ROLES)
OUTPUT_KEYS: tuple[str, ...] = tuple(role.output_key for role in ROLES)
NO_FEEDBACK = "None yet."


def _now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class RunState:
    """Where a run stands; saved after every agent answer so a resume loses nothing."""

    api: str = ""
    provider: str = ""
    wd: str = ""
    prompt: str = ""
    current_round: int = 1
    current_phase: Phase = Phase.ANALYST
    final_status: FinalStatus = FinalStatus.RUNNING
    session_name: str = ""
    terminals: dict[str, str] = field(default_factory=lambda: dict.fromkeys(TERMINAL_KEYS, ""))
    feedback: str = NO_FEEDBACK
    analyst_feedback: str = NO_FEEDBACK
    programmer_feedback: str = NO_FEEDBACK
    outputs: dict[str, str] = field(default_factory=lambda: dict.fromkeys(OUTPUT_KEYS, ""))
    updated_at: str = ""
    # Baton's additions (ignored by the shell script):
    current_cycle: int = 1
    current_step: Step = Step.AUTHOR
    awaiting: Awaiting | None = None  # the prompt going out, saved just before it is typed
    explore_sent: list[str] = field(default_factory=list)
    archive_dir: str = ""
    output_files: dict[str, str] = field(default_factory=dict)  # output key -> archived copy
    restarts: dict[str, int] = field(default_factory=dict)  # terminal key -> agents brought back
    # False while a Baton run is live; True once its exit path (final save, cleanup) is
    # done. None: not written by Baton (treated as done).
    exit_complete: bool | None = None
    # How the run was started (argv, directory, settings from the environment): what the
    # resume hint repeats. None in files written before it was kept, or by the shell script.
    command: RunCommand | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # unknown fields, kept on save
    # Unknown keys inside `terminals` / `outputs` (a newer writer's), kept on save too.
    nested_extra: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Held while the state is written: the team's last terminals are recorded by another
    # thread while the first agent works, and the later of two saves must land last.
    save_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Callers may pass the plain strings of the file ("tester"); keep the enums whole.
        self.current_phase = Phase(self.current_phase)
        self.final_status = FinalStatus(self.final_status)
        self.current_step = Step(self.current_step)

    def peer_feedback(self, phase: Phase) -> str:
        """The latest notes of the phase's peer reviewer, for the author's next prompt."""
        if phase == Phase.ANALYST:
            return self.analyst_feedback
        if phase == Phase.PROGRAMMER:
            return self.programmer_feedback
        raise ValueError(f"the {phase} phase has no peer review")

    def set_peer_feedback(self, phase: Phase, notes: str) -> None:
        """Keep the peer reviewer's notes of a review phase (`NO_FEEDBACK` once approved)."""
        if phase == Phase.ANALYST:
            self.analyst_feedback = notes
        elif phase == Phase.PROGRAMMER:
            self.programmer_feedback = notes
        else:
            raise ValueError(f"the {phase} phase has no peer review")

    def to_json(self) -> dict[str, Any]:
        """The version-1 document: the shell script's fields, then Baton's additions."""
        document: dict[str, Any] = dict(self.extra)
        document.update(
            {
                "version": STATE_VERSION,
                "updated_at": self.updated_at,
                "api": self.api,
                "provider": self.provider,
                "wd": self.wd,
                "prompt": self.prompt,
                "current_round": self.current_round,
                "current_phase": self.current_phase.value,
                "final_status": self.final_status.value,
                "session_name": self.session_name,
                "terminals": {
                    **{key: self.terminals.get(key, "") for key in TERMINAL_KEYS},
                    **self.nested_extra.get("terminals", {}),
                },
                "feedback": self.feedback,
                "analyst_feedback": self.analyst_feedback,
                "programmer_feedback": self.programmer_feedback,
                "outputs": {
                    **{key: self.outputs.get(key, "") for key in OUTPUT_KEYS},
                    **self.nested_extra.get("outputs", {}),
                },
                "current_cycle": self.current_cycle,
                "current_step": self.current_step.value,
                "awaiting": self.awaiting.to_json() if self.awaiting else None,
                "explore_sent": list(self.explore_sent),
                "archive_dir": self.archive_dir,
                "output_files": dict(self.output_files),
                "restarts": dict(self.restarts),
                "exit_complete": self.exit_complete,
            }
        )
        if self.command is not None:
            document["command"] = self.command.to_json()
        return document

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunState:
        """Read a version-1 document leniently: bad round → 1, bad phase → analyst."""
        known = (set(cls.__dataclass_fields__) | {"version"}) - {"extra", "nested_extra"}
        state = cls(
            api=_text(data.get("api")),
            provider=_text(data.get("provider")),
            wd=_text(data.get("wd")),
            prompt=_text(data.get("prompt")),
            current_round=_positive_int(data.get("current_round"), 1),
            current_phase=_choice(data.get("current_phase"), Phase, Phase.ANALYST),
            final_status=_choice(data.get("final_status"), FinalStatus, FinalStatus.RUNNING),
            session_name=_text(data.get("session_name")),
            terminals=_string_map(data.get("terminals"), TERMINAL_KEYS),
            feedback=_text(data.get("feedback"), NO_FEEDBACK),
            analyst_feedback=_text(data.get("analyst_feedback"), NO_FEEDBACK),
            programmer_feedback=_text(data.get("programmer_feedback"), NO_FEEDBACK),
            outputs=_string_map(data.get("outputs"), OUTPUT_KEYS),
            updated_at=_text(data.get("updated_at")),
            current_cycle=_positive_int(data.get("current_cycle"), 1),
            current_step=_choice(data.get("current_step"), Step, Step.AUTHOR),
            awaiting=Awaiting.from_json(data.get("awaiting")),
            explore_sent=[s for s in data.get("explore_sent") or [] if isinstance(s, str)]
            if isinstance(data.get("explore_sent"), list)
            else [],
            archive_dir=_text(data.get("archive_dir")),
            output_files=_string_map(data.get("output_files"), OUTPUT_KEYS, keep_empty=False),
            restarts=_counts(data.get("restarts"), TERMINAL_KEYS),
            exit_complete=data.get("exit_complete")
            if isinstance(data.get("exit_complete"), bool)
            else None,
            command=RunCommand.from_json(data.get("command")),
        )
        state.extra = {key: value for key, value in data.items() if key not in known}
        for name, keys in (("terminals", TERMINAL_KEYS), ("outputs", OUTPUT_KEYS)):
            section = data.get(name)
            if isinstance(section, dict):
                unknown = {key: value for key, value in section.items() if key not in keys}
                if unknown:
                    state.nested_extra[name] = unknown
        return state


def _text(value: Any, default: str = "") -> str:
    return value if isinstance(value, str) else default


def _positive_int(value: Any, default: int) -> int:
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value if value >= 1 else default
    if isinstance(value, str):
        try:
            number = int(value.strip())
        except ValueError:
            return default
        return number if number >= 1 else default
    return default


_Choice = TypeVar("_Choice", bound=StrEnum)


def _choice(value: Any, choices: type[_Choice], default: _Choice) -> _Choice:
    try:
        return choices(value) if isinstance(value, str) else default
    except ValueError:
        return default


def _string_map(value: Any, keys: tuple[str, ...], *, keep_empty: bool = True) -> dict[str, str]:
    source = value if isinstance(value, dict) else {}
    mapped = {key: _text(source.get(key)) for key in keys}
    return mapped if keep_empty else {key: text for key, text in mapped.items() if text}


def _counts(value: Any, keys: tuple[str, ...]) -> dict[str, int]:
    source = value if isinstance(value, dict) else {}
    return {
        key: count
        for key in keys
        if isinstance(count := source.get(key), int) and not isinstance(count, bool) and count > 0
    }


def write_json_atomic(path: Path, document: dict[str, Any]) -> None:
    """Write JSON via a temp file in the same directory, fsync, rename, fsync the directory."""
    path = Path(path)
    new_private_dirs(path.parent)
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        crash_point("state_written")
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    with contextlib.suppress(OSError):
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


def remove_stale_temp_files(path: Path) -> list[Path]:
    """Delete the temp files a killed writer left beside `path` (`.<name>.*.tmp`).

    Called before a run touches its state file, when no writer of ours is active.
    """
    path = Path(path)
    removed = []
    if path.parent.is_dir():
        for leftover in path.parent.glob(f".{path.name}.*.tmp"):
            with contextlib.suppress(OSError):
                leftover.unlink()
                removed.append(leftover)
    return removed


def save_state(state: RunState, path: Path) -> None:
    """Stamp `updated_at` and write the state file atomically; StateFileError if impossible."""
    try:
        with state.save_lock:
            state.updated_at = _now_iso()
            write_json_atomic(path, state.to_json())
    except OSError as error:
        raise StateFileError(f"cannot write the state file {path}: {error.strerror}") from None


def read_state_json(path: Path) -> dict[str, Any]:
    """The raw JSON object of a state file; StateFileError naming the problem."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise StateFileError(f"no state file at {path}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise StateFileError(f"cannot read the state file {path}: {error}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise StateFileError(
            f"the state file {path} is not valid JSON (line {error.lineno}: {error.msg})"
        ) from None
    except RecursionError:
        raise StateFileError(
            f"the state file {path} is not valid JSON (nested too deeply)"
        ) from None
    if not isinstance(data, dict):
        raise StateFileError(f"the state file {path} does not hold a JSON object")
    version = data.get("version", STATE_VERSION)
    if version != STATE_VERSION and str(version) != str(STATE_VERSION):
        raise StateFileError(f"the state file {path} has version {version!r}; Baton reads 1")
    return data


def load_state(path: Path) -> RunState:
    """Load a state file (see `RunState.from_json` for the lenient defaults)."""
    return RunState.from_json(read_state_json(path))


def should_auto_resume(path: Path) -> bool:
    """True when a state file exists and is still RUNNING (not in phase `done`), or was
    stopped after reaching its result but before its exit was complete.

    An unreadable file raises StateFileError rather than being silently overwritten.
    """
    if not Path(path).is_file():
        return False
    data = read_state_json(path)
    if data.get("exit_complete") is False:
        return True  # stopped before its exit was complete: finish that, never start anew
    return (
        data.get("final_status") == FinalStatus.RUNNING and data.get("current_phase") != Phase.DONE
    )


def resume_command(state: RunState, state_path: Path) -> str:
    """The shell line that resumes this run from any directory: its own start, repeated.

    A state file without `command` (written before it was kept, or by the shell script)
    gets a line naming the state file, the project and the API the run used.
    """
    if state.command is not None:
        return state.command.shell_line()
    words: list[str | Path] = ["run", "--state-file", state_path.absolute()]
    if state.wd:
        words += ["--wd", Path(state.wd).absolute()]
    if state.api:
        words += ["--api", state.api]
    if state.provider:
        words += ["--provider", state.provider]
    return baton_command(*words)
