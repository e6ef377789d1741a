"""The batch ledger: whole on disk at every moment, private, and its transitions checked."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from baton.batch.ledger import BatchRecord, FeatureRecord, FeatureStatus, Ledger
from baton.batch.limits import default_parallel
from baton.errors import StateFileError

GiB = 1024**3


def _batch(*names: str) -> BatchRecord:
    return BatchRecord(
        id="b",
        repo="/r",
        base_commit="c0",
        backlog="/r/backlog",
        features=[
            FeatureRecord(n, branch=f"baton/{n}", worktree=f"/w/{n}", state_file="s", base="c0")
            for n in names
        ],
    )


def test_the_ledger_round_trips_and_is_private(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "batches" / "b" / "batch.json")
    batch = _batch("one", "two")
    batch.feature("one").move(FeatureStatus.RUNNING)
    batch.feature("one").tokens = 42
    ledger.save(batch)
    loaded = ledger.load()
    assert loaded == batch
    assert loaded.feature("one").started_at is not None
    assert stat.S_IMODE(os.stat(ledger.path).st_mode) == 0o600


def test_a_save_that_fails_midway_leaves_the_last_ledger_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = Ledger(tmp_path / "batch.json")
    batch = _batch("one")
    ledger.save(batch)
    batch.feature("one").move(FeatureStatus.RUNNING)

    def broken_replace(*_args: object) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk gone"):
        ledger.save(batch)
    monkeypatch.undo()
    assert ledger.load().feature("one").status == "queued"
    assert [p.name for p in tmp_path.iterdir()] == ["batch.json"]  # no temp file left


def test_unknown_keys_are_ignored_and_a_bad_status_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "batch.json"
    ledger = Ledger(path)
    ledger.save(_batch("one"))
    data = json.loads(path.read_text())
    data["later_field"] = 1
    data["features"][0]["later_field"] = 2
    path.write_text(json.dumps(data))
    assert ledger.load().feature("one").name == "one"
    data["features"][0]["status"] = "half-done"
    path.write_text(json.dumps(data))
    with pytest.raises(StateFileError, match="malformed"):
        ledger.load()
    path.write_text("{")
    with pytest.raises(StateFileError, match="cannot read the batch ledger"):
        ledger.load()


def test_transitions_final_features_only_leave_by_retry() -> None:
    record = _batch("one").feature("one")
    record.move(FeatureStatus.RUNNING)
    record.move(FeatureStatus.FAIL)
    assert record.ended_at is not None
    for status in (FeatureStatus.RUNNING, FeatureStatus.QUEUED, FeatureStatus.PASS):
        with pytest.raises(ValueError, match="cannot go from FAIL"):
            record.move(status)
    record.requeue()
    assert record.state == FeatureStatus.QUEUED and record.ended_at is None
    with pytest.raises(ValueError, match="cannot go from queued to PASS"):
        record.move(FeatureStatus.PASS)
    record.move(FeatureStatus.CANCELLED)
    assert record.state.final


def test_default_parallel_is_bounded_by_cores_memory_and_eight() -> None:
    assert default_parallel(cores=1, available_bytes=64 * GiB) == 4
    assert default_parallel(cores=16, available_bytes=64 * GiB) == 8
    assert default_parallel(cores=16, available_bytes=2 * GiB) == 3
    assert default_parallel(cores=16, available_bytes=100) == 1


def test_save_if_changed_writes_only_when_more_than_the_time_changed(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "batch.json")
    batch = _batch("one")
    ledger.save_if_changed(batch)  # the first save always writes
    first = ledger.path.stat().st_ino
    ledger.save_if_changed(batch)
    assert ledger.path.stat().st_ino == first  # nothing changed: no new file renamed in
    batch.feature("one").tokens = 7
    ledger.save_if_changed(batch)
    assert ledger.path.stat().st_ino != first
    assert json.loads(ledger.path.read_text())["features"][0]["tokens"] == 7
