"""Sessions and terminals recorded in sqlite, so a restarted server still serves them.

The tmux windows outlive the server (they live in the private tmux server); this file
is what lets a new server process find them again by terminal id.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from baton.private import private_dir, private_file

__all__ = ["Registry", "SessionRecord", "TerminalRecord"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    name TEXT PRIMARY KEY,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS terminals (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    session_name TEXT NOT NULL REFERENCES sessions(name),
    provider TEXT NOT NULL,
    agent_profile TEXT NOT NULL,
    working_directory TEXT NOT NULL,
    window_id TEXT NOT NULL,
    pane_id TEXT NOT NULL,
    runtime_dir TEXT NOT NULL,
    created_at REAL NOT NULL
);
"""


@dataclass(frozen=True)
class SessionRecord:
    name: str
    created_at: float


@dataclass(frozen=True)
class TerminalRecord:
    """Everything needed to find a terminal's pane and rebuild its provider context."""

    id: str
    name: str
    session_name: str
    provider: str
    agent_profile: str
    working_directory: str
    window_id: str
    pane_id: str
    runtime_dir: str
    created_at: float


class Registry:
    """A small thread-safe sqlite store of sessions and terminals."""

    def __init__(self, path: Path) -> None:
        private_dir(path.parent)
        # sqlite gives its journal and WAL files the database file's mode.
        private_file(path)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    # -- sessions -------------------------------------------------------------------

    def add_session(self, name: str) -> SessionRecord:
        record = SessionRecord(name=name, created_at=time.time())
        with self._transaction() as db:
            db.execute("INSERT INTO sessions VALUES (?, ?)", (record.name, record.created_at))
        return record

    def get_session(self, name: str) -> SessionRecord | None:
        with self._lock:
            row = self._db.execute("SELECT * FROM sessions WHERE name = ?", (name,)).fetchone()
        return SessionRecord(**dict(row)) if row else None

    def sessions(self) -> list[SessionRecord]:
        with self._lock:
            rows = self._db.execute("SELECT * FROM sessions ORDER BY created_at").fetchall()
        return [SessionRecord(**dict(row)) for row in rows]

    def remove_session(self, name: str) -> None:
        with self._transaction() as db:
            db.execute("DELETE FROM terminals WHERE session_name = ?", (name,))
            db.execute("DELETE FROM sessions WHERE name = ?", (name,))

    # -- terminals ------------------------------------------------------------------

    def add_terminal(self, record: TerminalRecord) -> None:
        with self._transaction() as db:
            db.execute(
                "INSERT INTO terminals VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.id,
                    record.name,
                    record.session_name,
                    record.provider,
                    record.agent_profile,
                    record.working_directory,
                    record.window_id,
                    record.pane_id,
                    record.runtime_dir,
                    record.created_at,
                ),
            )

    def get_terminal(self, terminal_id: str) -> TerminalRecord | None:
        with self._lock:
            row = self._db.execute(
                "SELECT * FROM terminals WHERE id = ?", (terminal_id,)
            ).fetchone()
        return TerminalRecord(**dict(row)) if row else None

    def terminals(self, session_name: str | None = None) -> list[TerminalRecord]:
        with self._lock:
            if session_name is None:
                rows = self._db.execute("SELECT * FROM terminals ORDER BY created_at").fetchall()
            else:
                rows = self._db.execute(
                    "SELECT * FROM terminals WHERE session_name = ? ORDER BY created_at",
                    (session_name,),
                ).fetchall()
        return [TerminalRecord(**dict(row)) for row in rows]

    def has_terminal(self, terminal_id: str) -> bool:
        return self.get_terminal(terminal_id) is not None

    def remove_terminal(self, terminal_id: str) -> None:
        with self._transaction() as db:
            db.execute("DELETE FROM terminals WHERE id = ?", (terminal_id,))
