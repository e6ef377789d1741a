"""The archive: numbered copies of every answer and prompt, never deleted.

Every answer read is moved (never deleted) to `WD/.tmp/<run timestamp>/NNN-<role>.md`; a
leftover file found before a prompt goes there too, as `NNN-<role>-stale.md`, and each
prompt as `NNN-<role>-prompt.md`, just before it is typed: one the server then refused
(nothing typed; it is sent again under the next number) is renamed
`NNN-<role>-prompt-refused.md`. A run killed right after archiving an answer finds it
again here (`answers_after`) instead of waiting for a file that was already moved.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from baton.errors import HandoffError
from baton.orchestrator.crashpoints import crash_point
from baton.orchestrator.response_files import resolve_role
from baton.private import private_dir
from baton.roles import Role

__all__ = ["Archive", "Response"]


@dataclass(frozen=True)
class Response:
    """An agent's answer, where its archived copy lives, and whether it came from a file."""

    text: str
    archived_to: Path | None
    from_file: bool = True


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
        private_dir(self.directory)  # prompts and answers are the user's alone (0700)
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
        with contextlib.suppress(OSError):
            os.chmod(target, 0o600)  # the agent wrote it with its own umask
        return target

    def store_text(self, text: str, role: str | Role, *, suffix: str = "") -> Path:
        """Write `text` into the archive: a fallback terminal output, or a prompt (`-prompt`).

        Written to a dotted temp name and renamed, so a numbered copy is never half-written.
        """
        target = self._next_path(resolve_role(role), suffix)
        temporary = target.with_name(f".{target.name}.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with open(descriptor, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, target)
        return target

    def mark_refused(self, prompt_file: Path) -> Path:
        """Rename a prompt's copy that the server refused (`-prompt-refused`): never typed,
        so the archive's `-prompt` files are the prompts that reached an agent."""
        refused = prompt_file.with_name(prompt_file.name.removesuffix(".md") + "-refused.md")
        os.replace(prompt_file, refused)
        return refused

    def remove_temp_files(self) -> None:
        """Drop the temp copies a killed run left half-written (`.NNN-<role>.md.tmp`)."""
        if self.directory.is_dir():
            for leftover in self.directory.glob(".*.md.tmp"):
                leftover.unlink(missing_ok=True)

    def take(self, path: Path, role: str | Role) -> Response:
        """Read the response file at `path` and move it in: the answer, archived."""
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
            archived = self.store_file(path, role)
        except OSError as error:
            raise HandoffError(f"cannot read and archive {path}: {error.strerror}") from None
        crash_point("answer_archived")
        return Response(text=text, archived_to=archived, from_file=True)

    def recover(self, role: str | Role, prompt_file: Path) -> Response | None:
        """The role's first answer archived after `prompt_file`, or None (see `answers_after`)."""
        found = self.answers_after(role, prompt_file)
        if not found:
            return None
        archived = found[0]
        try:
            text = archived.read_text(encoding="utf-8", errors="replace")
        except OSError as error:
            raise HandoffError(f"cannot read the archived {archived}: {error.strerror}") from None
        return Response(text=text, archived_to=archived, from_file=True)

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
