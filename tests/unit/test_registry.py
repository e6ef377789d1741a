"""The sqlite registry: old databases gain the new columns; labels and inboxes round-trip."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from baton.server.activity import ActivityBatch
from baton.server.records import MessageStatus, TerminalRecord
from baton.server.registry import Registry

# The schema of the first release, before caller_id, last_active, group and metadata.
_FIRST_SCHEMA = """
CREATE TABLE sessions (name TEXT PRIMARY KEY, created_at REAL NOT NULL);
CREATE TABLE terminals (
    id TEXT PRIMARY KEY, name TEXT NOT NULL,
    session_name TEXT NOT NULL REFERENCES sessions(name),
    provider TEXT NOT NULL, agent_profile TEXT NOT NULL, working_directory TEXT NOT NULL,
    window_id TEXT NOT NULL, pane_id TEXT NOT NULL, runtime_dir TEXT NOT NULL,
    created_at REAL NOT NULL
);
"""


def _record(terminal_id: str, **extra: object) -> TerminalRecord:
    return TerminalRecord(
        id=terminal_id,
        name=f"tester-{terminal_id[:4]}",
        session_name="team",
        provider="scripted",
        agent_profile="tester",
        working_directory="/work",
        window_id="@1",
        pane_id="%1",
        runtime_dir="/state/terminals/x",
        created_at=1.0,
        **extra,  # type: ignore[arg-type]
    )


def test_an_old_database_gains_the_new_columns_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "baton.db"
    with sqlite3.connect(path) as db:
        db.executescript(_FIRST_SCHEMA)
        db.execute("INSERT INTO sessions VALUES ('team', 1.0)")
        db.execute(
            "INSERT INTO terminals VALUES "
            "('0123abcd', 'tester-0123', 'team', 'scripted', 'tester', '/work', '@1', '%1', "
            "'/state/terminals/0123abcd', 1.0)"
        )
    registry = Registry(path)
    try:
        old = registry.get_terminal("0123abcd")
        assert old is not None
        assert (old.caller_id, old.last_active, old.group, old.metadata) == (None, None, None, None)
        registry.touch_terminal("0123abcd", 42.0)
        assert registry.set_group("0123abcd", ["a", "b"])
        assert registry.set_metadata("0123abcd", {"k": [1, 2]})
        updated = registry.get_terminal("0123abcd")
        assert updated is not None
        assert updated.last_active == 42.0
        assert updated.group == ("a", "b")
        assert updated.metadata == {"k": [1, 2]}
        assert registry.add_message("x", "0123abcd", "hello").status is MessageStatus.PENDING
    finally:
        registry.close()
    # Opening it again changes nothing.
    again = Registry(path)
    try:
        assert again.get_terminal("0123abcd") == updated
    finally:
        again.close()


def test_new_terminals_keep_caller_group_and_metadata(tmp_path: Path) -> None:
    registry = Registry(tmp_path / "baton.db")
    try:
        registry.add_session("team")
        registry.add_terminal(
            _record("aaaa1111", caller_id="bbbb2222", group=("x",), metadata={"m": 1})
        )
        found = registry.get_terminal("aaaa1111")
        assert found is not None
        assert (found.caller_id, found.group, found.metadata) == ("bbbb2222", ("x",), {"m": 1})
        assert not registry.set_group("ffffffff", ["x"])
        assert not registry.set_metadata("ffffffff", None)
    finally:
        registry.close()


def test_inbox_messages_keep_order_and_status(tmp_path: Path) -> None:
    registry = Registry(tmp_path / "baton.db")
    try:
        first = registry.add_message("s", "r", "one")
        second = registry.add_message("s", "r", "two")
        registry.add_message("s", "other", "three")
        assert registry.pending_receivers() == ["other", "r"]
        registry.set_message_status(first.id, MessageStatus.DELIVERED)
        assert [m.message for m in registry.messages("r", limit=10)] == ["one", "two"]
        pending = registry.messages("r", limit=10, status=MessageStatus.PENDING)
        assert [m.id for m in pending] == [second.id]
        assert len(registry.messages("r", limit=1)) == 1
        registry.add_session("team")
        registry.add_terminal(_record("r0000000"))
        registry.add_message("s", "r0000000", "gone with its terminal")
        registry.remove_terminal("r0000000")
        assert registry.messages("r0000000", limit=10) == []
    finally:
        registry.close()


def test_activity_is_seen_at_once_and_committed_by_close(tmp_path: Path) -> None:
    """A touch is read back before its batch is committed, and close commits it: a
    restarted server finds it. The database is in WAL mode."""
    registry = Registry(tmp_path / "registry.sqlite")
    registry.add_session("team")
    registry.add_terminal(_record("0a1b2c3d", last_active=5.0))
    with registry._lock:  # sqlite busy: the touch does not wait for it
        registry.activity.touch("0a1b2c3d", 7.0)
    registry.touch_terminal("0a1b2c3d", 6.0)  # older than the last: ignored
    assert registry.get_terminal("0a1b2c3d").last_active == 7.0  # type: ignore[union-attr]
    registry.close()
    reopened = Registry(tmp_path / "registry.sqlite")
    assert reopened.get_terminal("0a1b2c3d").last_active == 7.0  # type: ignore[union-attr]
    (mode,) = reopened._db.execute("PRAGMA journal_mode").fetchone()
    assert mode == "wal"
    reopened.close()


def test_a_batch_committed_between_the_row_read_and_the_overlay_is_not_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer thread may commit while a read is under way: the touch is then either in
    the row or in the overlay the read took first, never in neither."""
    registry = Registry(tmp_path / "registry.sqlite")
    registry.add_session("team")
    registry.add_terminal(_record("0a1b2c3d", last_active=5.0))
    registry.activity.touch("0a1b2c3d", 7.0)
    fetch = registry._fetch

    def fetch_then_the_writer_commits(*args: Any) -> Any:
        rows = fetch(*args)
        registry.activity.flush()  # the writer's commit lands right after the row read
        return rows

    monkeypatch.setattr(registry, "_fetch", fetch_then_the_writer_commits)
    assert registry.get_terminal("0a1b2c3d").last_active == 7.0  # type: ignore[union-attr]
    registry.activity.touch("0a1b2c3d", 8.0)
    assert [record.last_active for record in registry.terminals("team")] == [8.0]
    registry.close()


def test_uncommitted_touches_are_the_newest_of_those_pending_and_being_written() -> None:
    started, release = threading.Event(), threading.Event()

    def slow_write(batch: Mapping[str, float]) -> None:
        started.set()
        release.wait(10)

    batch = ActivityBatch(slow_write, interval=60)
    batch.touch("a", 7.0)
    assert started.wait(10)  # 7.0 is being written
    batch.touch("a", 6.0)  # older, pending behind it
    batch.touch("b", 1.0)
    assert batch.uncommitted() == {"a": 7.0, "b": 1.0}
    release.set()
    batch.close()
    assert batch.uncommitted() == {}


def test_terminal_reads_come_from_memory_and_follow_every_change(tmp_path: Path) -> None:
    """`get_terminal` reads no database; each write that commits shows in the next read,
    and a write that fails (rolled back) shows nowhere."""
    registry = Registry(tmp_path / "baton.db")
    registry.add_session("team")
    registry.add_terminal(_record("t1"))
    registry.add_terminal(_record("t2"))
    registry.set_metadata("t1", {"ticket": "42"})
    registry.set_group("t1", ["reviewers"])
    registry.set_pane("t1", "@7", "%7")
    registry._write_activity({"t1": 5.0})
    fresh = registry.get_terminal("t1")
    assert fresh is not None
    assert (fresh.metadata, fresh.group, fresh.pane_id, fresh.last_active) == (
        {"ticket": "42"},
        ("reviewers",),
        "%7",
        5.0,
    )
    # What a new server reads from the file is what memory held; lists agree with reads.
    reopened = Registry(tmp_path / "baton.db")
    assert reopened.get_terminal("t1") == fresh
    assert registry.terminals("team") == reopened.terminals() == [fresh, _record("t2")]
    assert registry.terminals("other") == []
    reopened.close()

    with pytest.raises(RuntimeError), registry._transaction() as db:
        db.execute("UPDATE terminals SET pane_id = '%9' WHERE id = 't1'")
        registry._reload(db, "t1")
        raise RuntimeError("the commit never happens")
    assert registry.get_terminal("t1") == fresh

    registry.remove_terminal("t2")
    assert registry.get_terminal("t2") is None
    assert registry.terminals() == [fresh]
    registry.remove_session("team")
    assert registry.get_terminal("t1") is None
    registry.close()
