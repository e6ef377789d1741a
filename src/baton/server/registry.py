"""Sessions, terminals and inbox messages in sqlite, so a restarted server still serves them.

The tmux windows outlive the server (they live in the private tmux server); this file
is what lets a new server process find them again by terminal id. Columns added after
the first release are added to an older database when it is opened (`registry_rows`).

The database runs in WAL mode with `synchronous=NORMAL`: a commit is one append to the
log, no fsync, and survives the server process being killed at any point (only a power
loss may undo the last commits). `last_active` is written in batches
(`baton.server.activity`). Terminal records are also held in memory, written through with
each change, and read from there: `GET /terminals/{id}`, polled many times a second,
reads no database.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import replace
from pathlib import Path
from typing import Any

from baton.private import private_dir, private_file
from baton.server.activity import ActivityBatch
from baton.server.records import (
    InboxMessage,
    MessageStatus,
    SessionRecord,
    TerminalRecord,
    iso_utc,
)
from baton.server.registry_rows import (
    MIGRATIONS,
    SCHEMA,
    TERMINAL_COLUMNS,
    dump_json,
    message_from_row,
    terminal_from_row,
)
from baton.server.storage import storage_errors

__all__ = ["Registry"]

# A handoff result is kept this long (seconds) for a client whose request timed out.
HANDOFF_RESULT_SECONDS = 24 * 3600

# An idempotency key's outcome is kept this long (seconds), and at most this many keys.
IDEMPOTENCY_SECONDS = 24 * 3600
IDEMPOTENCY_MAX_KEYS = 10_000


class Registry:
    """A small thread-safe sqlite store of sessions, terminals and inbox messages."""

    def __init__(self, path: Path) -> None:
        private_dir(path.parent)
        # sqlite gives its journal and WAL files the database file's mode.
        private_file(path)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        self._migrate()
        # Every terminal row as a record; changed only inside the transaction that
        # changes the row, so it never disagrees with the database.
        self._records = {
            row["id"]: terminal_from_row(row) for row in self._db.execute("SELECT * FROM terminals")
        }
        self._committed: dict[str, TerminalRecord | None] = {}  # the open transaction's
        self.activity = ActivityBatch(self._write_activity)

    def _migrate(self) -> None:
        """Add the columns an older database lacks; existing rows get NULL."""
        for table, column, declaration in MIGRATIONS:
            present = {row["name"] for row in self._db.execute(f"PRAGMA table_info({table})")}
            if column not in present:
                self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")

    def close(self) -> None:
        self.activity.close()  # the last touches, before the database closes
        with self._lock:
            self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock, storage_errors(self.path):
            self._db.execute("BEGIN IMMEDIATE")
            self._committed = {}
            try:
                yield self._db
                self._db.execute("COMMIT")
                for terminal_id, record in self._committed.items():
                    if record is None:
                        self._records.pop(terminal_id, None)
                    else:
                        self._records[terminal_id] = record
            except BaseException:
                # sqlite has already rolled back after some failures (a full disk): a
                # second ROLLBACK would hide the real error behind "no transaction".
                if self._db.in_transaction:
                    with suppress(sqlite3.Error):
                        self._db.execute("ROLLBACK")
                raise

    def _fetch(self, query: str, args: Sequence[object] = ()) -> list[sqlite3.Row]:
        with self._lock, storage_errors(self.path):
            return self._db.execute(query, args).fetchall()

    # -- sessions -------------------------------------------------------------------

    def add_session(self, name: str) -> SessionRecord:
        record = SessionRecord(name=name, created_at=time.time())
        with self._transaction() as db:
            db.execute("INSERT INTO sessions VALUES (?, ?)", (record.name, record.created_at))
        return record

    def get_session(self, name: str) -> SessionRecord | None:
        rows = self._fetch("SELECT * FROM sessions WHERE name = ?", (name,))
        return SessionRecord(**dict(rows[0])) if rows else None

    def sessions(self) -> list[SessionRecord]:
        rows = self._fetch("SELECT * FROM sessions ORDER BY created_at")
        return [SessionRecord(**dict(row)) for row in rows]

    def remove_session(self, name: str) -> None:
        with self._transaction() as db:
            db.execute(
                "DELETE FROM inbox WHERE receiver_id IN "
                "(SELECT id FROM terminals WHERE session_name = ?)",
                (name,),
            )
            db.execute("DELETE FROM terminals WHERE session_name = ?", (name,))
            db.execute("DELETE FROM sessions WHERE name = ?", (name,))
            for terminal_id, record in self._records.items():
                if record.session_name == name:
                    self._committed[terminal_id] = None

    # -- terminals ------------------------------------------------------------------

    def add_terminal(self, record: TerminalRecord) -> None:
        values = (
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
            record.caller_id,
            record.last_active,
            dump_json(list(record.group) if record.group is not None else None),
            dump_json(dict(record.metadata) if record.metadata is not None else None),
            dump_json(list(record.allowed_tools) if record.allowed_tools is not None else None),
        )
        columns = ", ".join(TERMINAL_COLUMNS)
        marks = ", ".join("?" for _ in TERMINAL_COLUMNS)
        with self._transaction() as db:
            db.execute(f"INSERT INTO terminals ({columns}) VALUES ({marks})", values)
            self._reload(db, record.id)

    def _reload(self, db: sqlite3.Connection, terminal_id: str) -> None:
        """Inside a transaction: the row as written, held in memory once it commits."""
        rows = db.execute("SELECT * FROM terminals WHERE id = ?", (terminal_id,)).fetchall()
        self._committed[terminal_id] = terminal_from_row(rows[0]) if rows else None

    def get_terminal(self, terminal_id: str) -> TerminalRecord | None:
        touches = self.activity.uncommitted()
        with self._lock:
            record = self._records.get(terminal_id)
        return self._touched(record, touches) if record is not None else None

    @staticmethod
    def _touched(record: TerminalRecord, touches: Mapping[str, float]) -> TerminalRecord:
        """The record with a touch not committed yet."""
        touched = touches.get(record.id)
        if touched is not None and (record.last_active or 0.0) < touched:
            return replace(record, last_active=touched)
        return record

    def terminals(self, session_name: str | None = None) -> list[TerminalRecord]:
        """Every terminal (of one session), oldest first, from memory as `get_terminal`."""
        touches = self.activity.uncommitted()
        with self._lock:  # rows in the order they were added break ties, as sqlite's did
            records = [
                record
                for record in self._records.values()
                if session_name is None or record.session_name == session_name
            ]
        records.sort(key=lambda record: record.created_at)
        return [self._touched(record, touches) for record in records]

    def has_terminal(self, terminal_id: str) -> bool:
        return self.get_terminal(terminal_id) is not None

    def remove_terminal(self, terminal_id: str) -> None:
        self.activity.forget(terminal_id)
        with self._transaction() as db:
            db.execute("DELETE FROM inbox WHERE receiver_id = ?", (terminal_id,))
            db.execute("DELETE FROM terminals WHERE id = ?", (terminal_id,))
            self._committed[terminal_id] = None

    def set_pane(self, terminal_id: str, window_id: str, pane_id: str) -> None:
        """Move the terminal to a new window and pane (its old pane died with its tmux server)."""
        with self._transaction() as db:
            db.execute(
                "UPDATE terminals SET window_id = ?, pane_id = ? WHERE id = ?",
                (window_id, pane_id, terminal_id),
            )
            self._reload(db, terminal_id)

    def touch_terminal(self, terminal_id: str, when: float) -> None:
        """Record activity (input typed in, a status change) at `when` (epoch seconds).

        Kept in memory and committed in a batch: the caller never waits for sqlite.
        """
        self.activity.touch(terminal_id, when)

    def _write_activity(self, touched: Mapping[str, float]) -> None:
        with self._transaction() as db:
            db.executemany(
                "UPDATE terminals SET last_active = max(coalesce(last_active, 0), ?) WHERE id = ?",
                [(when, terminal_id) for terminal_id, when in touched.items()],
            )
            for terminal_id, when in touched.items():
                record = self._records.get(terminal_id)
                if record is not None and (record.last_active or 0.0) < when:
                    self._committed[terminal_id] = replace(record, last_active=when)

    def set_group(self, terminal_id: str, group: Sequence[str] | None) -> bool:
        """Replace the terminal's group; False when the terminal is unknown."""
        value = dump_json(list(group) if group else None)
        with self._transaction() as db:
            cursor = db.execute(
                "UPDATE terminals SET group_json = ? WHERE id = ?", (value, terminal_id)
            )
            self._reload(db, terminal_id)
        return cursor.rowcount > 0

    def set_metadata(self, terminal_id: str, metadata: Mapping[str, Any] | None) -> bool:
        """Replace the terminal's metadata (whole, not merged); False when unknown."""
        value = dump_json(dict(metadata) if metadata is not None else None)
        with self._transaction() as db:
            cursor = db.execute(
                "UPDATE terminals SET metadata_json = ? WHERE id = ?", (value, terminal_id)
            )
            self._reload(db, terminal_id)
        return cursor.rowcount > 0

    # -- inbox ----------------------------------------------------------------------

    def add_message(self, sender_id: str, receiver_id: str, message: str) -> InboxMessage:
        created = time.time()
        with self._transaction() as db:
            cursor = db.execute(
                "INSERT INTO inbox (sender_id, receiver_id, message, status, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (sender_id, receiver_id, message, MessageStatus.PENDING.value, created),
            )
        assert cursor.lastrowid is not None
        return InboxMessage(
            id=cursor.lastrowid,
            sender_id=sender_id,
            receiver_id=receiver_id,
            message=message,
            status=MessageStatus.PENDING,
            created_at=created,
        )

    def messages(
        self, receiver_id: str, *, limit: int, status: MessageStatus | None = None
    ) -> list[InboxMessage]:
        """The receiver's messages, oldest first, at most `limit`."""
        if status is None:
            rows = self._fetch(
                "SELECT * FROM inbox WHERE receiver_id = ? ORDER BY id LIMIT ?",
                (receiver_id, limit),
            )
        else:
            rows = self._fetch(
                "SELECT * FROM inbox WHERE receiver_id = ? AND status = ? ORDER BY id LIMIT ?",
                (receiver_id, status.value, limit),
            )
        return [message_from_row(row) for row in rows]

    def pending_receivers(self) -> list[str]:
        rows = self._fetch(
            "SELECT DISTINCT receiver_id FROM inbox WHERE status = ? ORDER BY receiver_id",
            (MessageStatus.PENDING.value,),
        )
        return [row["receiver_id"] for row in rows]

    def set_message_status(self, message_id: int, status: MessageStatus) -> None:
        with self._transaction() as db:
            db.execute("UPDATE inbox SET status = ? WHERE id = ?", (status.value, message_id))

    # -- handoff results --------------------------------------------------------------

    def record_handoff(self, job_id: str, state: str, **fields: str | None) -> None:
        """Create or update the result of the run-step `job_id` (and forget old ones).

        `fields` are `terminal_id`, `last_message` and `error_message`; unnamed ones keep
        their value.
        """
        now = time.time()
        names = [
            name for name in ("terminal_id", "last_message", "error_message") if name in fields
        ]
        updates = "".join(f", {name} = excluded.{name}" for name in names)
        columns = ", ".join(["job_id", "state", *names, "created_at", "updated_at"])
        marks = ", ".join("?" for _ in range(len(names) + 4))
        values = (job_id, state, *(fields[name] for name in names), now, now)
        with self._transaction() as db:
            db.execute(
                f"INSERT INTO handoff_results ({columns}) VALUES ({marks}) "
                "ON CONFLICT(job_id) DO UPDATE SET state = excluded.state, "
                f"updated_at = excluded.updated_at{updates}",
                values,
            )
            db.execute(
                "DELETE FROM handoff_results WHERE created_at < ?",
                (now - HANDOFF_RESULT_SECONDS,),
            )

    def handoff_result(self, job_id: str) -> dict[str, Any] | None:
        rows = self._fetch("SELECT * FROM handoff_results WHERE job_id = ?", (job_id,))
        if not rows:
            return None
        found = dict(rows[0])
        found["created_at"] = iso_utc(found["created_at"])
        found["updated_at"] = iso_utc(found["updated_at"])
        return found

    # -- idempotency keys ---------------------------------------------------------------

    def claim_key(self, key: str, boot: str) -> dict[str, Any] | None:
        """Record `key` as under way in server process `boot`; None when it was new.

        Otherwise the earlier record: `boot` (the process that took it), `status_code`,
        `content_type` and `body` (None while that request has no outcome). Old keys are
        forgotten here: after IDEMPOTENCY_SECONDS, and the oldest past IDEMPOTENCY_MAX_KEYS.
        """
        now = time.time()
        with self._transaction() as db:
            db.execute("DELETE FROM idempotency WHERE created_at < ?", (now - IDEMPOTENCY_SECONDS,))
            row = db.execute("SELECT * FROM idempotency WHERE key = ?", (key,)).fetchone()
            if row is not None:
                return dict(row)
            db.execute(
                "INSERT INTO idempotency (key, boot, created_at) VALUES (?, ?, ?)",
                (key, boot, now),
            )
            db.execute(
                "DELETE FROM idempotency WHERE key NOT IN "
                "(SELECT key FROM idempotency ORDER BY created_at DESC LIMIT ?)",
                (IDEMPOTENCY_MAX_KEYS,),
            )
        return None

    def key_outcome(self, key: str) -> dict[str, Any] | None:
        """The record of `key` (see `claim_key`), None when unknown."""
        rows = self._fetch("SELECT * FROM idempotency WHERE key = ?", (key,))
        return dict(rows[0]) if rows else None

    def finish_key(self, key: str, status_code: int, content_type: str, body: bytes) -> None:
        """Keep the first outcome of `key`'s request, answered again to every repeat."""
        with self._transaction() as db:
            db.execute(
                "UPDATE idempotency SET status_code = ?, content_type = ?, body = ? WHERE key = ?",
                (status_code, content_type, body, key),
            )

    def release_key(self, key: str) -> None:
        """Forget `key` (its request failed in a way a repeat may try again)."""
        with self._transaction() as db:
            db.execute("DELETE FROM idempotency WHERE key = ?", (key,))
