"""How the registry's rows look on disk: the schema, its migrations, and row conversions.

Columns added after the first release are added to an older database when it is opened
(`MIGRATIONS`); JSON columns that fail to parse (a hand-edited row) read as absent.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from baton.server.records import InboxMessage, MessageStatus, TerminalRecord

__all__ = [
    "MIGRATIONS",
    "SCHEMA",
    "TERMINAL_COLUMNS",
    "dump_json",
    "message_from_row",
    "terminal_from_row",
]

SCHEMA = """
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
CREATE TABLE IF NOT EXISTS inbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    sender_id TEXT NOT NULL,
    receiver_id TEXT NOT NULL,
    message TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS inbox_receiver ON inbox(receiver_id, status, id);
CREATE TABLE IF NOT EXISTS handoff_results (
    job_id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    terminal_id TEXT,
    last_message TEXT,
    error_message TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS idempotency (
    key TEXT PRIMARY KEY,
    boot TEXT NOT NULL,
    status_code INTEGER,
    content_type TEXT,
    body BLOB,
    created_at REAL NOT NULL
);
"""
# (table, column, declaration) added since the first schema; applied when missing.
MIGRATIONS: tuple[tuple[str, str, str], ...] = (
    ("terminals", "caller_id", "TEXT"),
    ("terminals", "last_active", "REAL"),
    ("terminals", "group_json", "TEXT"),
    ("terminals", "metadata_json", "TEXT"),
    ("terminals", "allowed_tools_json", "TEXT"),
)

TERMINAL_COLUMNS = (
    "id",
    "name",
    "session_name",
    "provider",
    "agent_profile",
    "working_directory",
    "window_id",
    "pane_id",
    "runtime_dir",
    "created_at",
    "caller_id",
    "last_active",
    "group_json",
    "metadata_json",
    "allowed_tools_json",
)


def dump_json(value: object) -> str | None:
    return None if value is None else json.dumps(value)


def _load(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None  # a hand-edited row: treat the label as absent


def terminal_from_row(row: sqlite3.Row) -> TerminalRecord:
    data = dict(row)
    group = _load(data.pop("group_json", None))
    metadata = _load(data.pop("metadata_json", None))
    tools = _load(data.pop("allowed_tools_json", None))
    return TerminalRecord(
        **data,
        allowed_tools=tuple(str(tool) for tool in tools) if isinstance(tools, list) else None,
        group=tuple(str(part) for part in group) if isinstance(group, list) and group else None,
        metadata=metadata if isinstance(metadata, dict) else None,
    )


def message_from_row(row: sqlite3.Row) -> InboxMessage:
    data = dict(row)
    data["status"] = MessageStatus(data["status"])
    return InboxMessage(**data)
