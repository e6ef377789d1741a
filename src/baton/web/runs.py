"""The runs a server has been told about: `PUT /baton/runs/{session}` from `baton run`.

`baton serve` knows sessions and terminals, not the orchestrator's files. A run announces
itself when it starts or resumes (its session, state file and working directory); the
cockpit then reads that state file and its run record on demand, so nothing here goes
stale but the path. Each announcement is one small private JSON file under the server's
state directory, so a restarted server still knows its runs.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from baton.errors import BadRequestError
from baton.private import private_dir, write_private

__all__ = ["SESSION_PATTERN", "Announcement", "RunDirectory"]

SESSION_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
_SESSION = re.compile(SESSION_PATTERN)


@dataclass(frozen=True)
class Announcement:
    """What a run said about itself: where its state file is, and when it said so."""

    session: str
    state_file: str
    wd: str = ""
    announced_at: str = ""

    @classmethod
    def from_body(cls, session: str, body: Any) -> Announcement:
        """The request's JSON, checked: BadRequestError naming the field that is wrong."""
        if not _SESSION.match(session):
            raise BadRequestError(f"session name {session!r} is not a session name")
        if not isinstance(body, dict):
            raise BadRequestError('the body must be a JSON object: {"state_file": "/abs/path"}')
        state_file = body.get("state_file")
        if not isinstance(state_file, str) or not Path(state_file).is_absolute():
            raise BadRequestError("state_file must be an absolute path")
        wd = body.get("wd", "")
        if not isinstance(wd, str):
            raise BadRequestError("wd must be a path")
        moment = datetime.now(UTC).isoformat(timespec="seconds")
        return cls(session=session, state_file=state_file, wd=wd, announced_at=moment)


class RunDirectory:
    """Announcements kept as `<state dir>/runs/<session>.json`."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def announce(self, announcement: Announcement) -> None:
        private_dir(self.directory)
        path = self.directory / f"{announcement.session}.json"
        write_private(path, json.dumps(asdict(announcement), indent=2))

    def get(self, session: str) -> Announcement | None:
        if not _SESSION.match(session):
            return None
        return self._read(self.directory / f"{session}.json")

    def all(self) -> list[Announcement]:
        """Every announcement, the newest first (unreadable files are skipped)."""
        try:
            paths = sorted(self.directory.glob("*.json"))
        except OSError:
            return []
        found = [a for a in (self._read(path) for path in paths) if a is not None]
        return sorted(found, key=lambda a: a.announced_at, reverse=True)

    def forget(self, session: str) -> None:
        if _SESSION.match(session):
            (self.directory / f"{session}.json").unlink(missing_ok=True)

    @staticmethod
    def _read(path: Path) -> Announcement | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict):
            return None
        fields = {k: data.get(k) for k in ("session", "state_file", "wd", "announced_at")}
        text = {k: v for k, v in fields.items() if isinstance(v, str)}
        if len(text) != len(fields):
            return None
        return Announcement(**text)
