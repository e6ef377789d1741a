"""The batch's ledger: `.baton/batches/<id>/batch.json`, one record per feature.

Only the batch's driver writes it, always whole (temp file + rename, 0600), so a batch
killed at any moment leaves a ledger that is either the one before or the one after a
change. Transitions are checked: a final feature is never started again except by
`retry`, which puts it back in the queue.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from baton.errors import StateFileError
from baton.orchestrator.state import DEFAULT_STATE_FILE_NAME, write_json_atomic

if TYPE_CHECKING:
    from baton.batch.backlog import Backlog
    from baton.batch.options import BatchOptions
    from baton.batch.worktrees import Repository

__all__ = [
    "BatchRecord",
    "FeatureRecord",
    "FeatureStatus",
    "Ledger",
    "add_new_features",
    "ledger_path",
    "new_batch",
    "now_iso",
]

LEDGER_VERSION = 1


class FeatureStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    PASS = "PASS"
    FAIL = "FAIL"
    ERROR = "error"
    CANCELLED = "cancelled"

    @property
    def final(self) -> bool:
        return self not in (FeatureStatus.QUEUED, FeatureStatus.RUNNING)


_ALLOWED = {
    FeatureStatus.QUEUED: {FeatureStatus.RUNNING, FeatureStatus.CANCELLED},
    # back to queued: the batch stopped it (budget, its own end) and it resumes later
    FeatureStatus.RUNNING: {*FeatureStatus, FeatureStatus.QUEUED} - {FeatureStatus.RUNNING},
}


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class FeatureRecord:
    """What the batch knows about one feature; progress fields come from its run's files."""

    name: str
    branch: str
    worktree: str
    state_file: str
    base: str
    status: str = FeatureStatus.QUEUED.value
    round: int = 0
    phase: str = ""
    tokens: int = 0
    cost_usd: float = 0.0
    started_at: str | None = None
    ended_at: str | None = None
    exit_code: int | None = None
    error: str | None = None
    attempts: int = 0
    commit: str | None = None
    loop_seconds: float = 0.0  # the last attempt's `baton run` subprocess, start to exit
    job_seconds: float = 0.0  # the last attempt's whole job (worktree, loop, session closed)
    host: str | None = None  # where its last attempt ran (the backend's name for the host)

    @property
    def state(self) -> FeatureStatus:
        return FeatureStatus(self.status)

    def move(self, to: FeatureStatus) -> None:
        """Change status, refusing a transition the ledger does not allow (ValueError)."""
        if to == self.state:
            return
        if to not in _ALLOWED.get(self.state, set()):
            raise ValueError(f"feature {self.name}: cannot go from {self.status} to {to.value}")
        self.status = to.value
        if to == FeatureStatus.RUNNING:
            self.started_at = now_iso()
            self.ended_at = None
        elif to.final:
            self.ended_at = now_iso()

    def requeue(self) -> None:
        """`retry`: a final feature goes back to the queue for another attempt."""
        self.status = FeatureStatus.QUEUED.value
        self.ended_at = None
        self.exit_code = None
        self.error = None


@dataclass
class BatchRecord:
    """The whole batch: where it runs, what it was asked, and its features in order."""

    id: str
    repo: str
    base_commit: str
    backlog: str
    options: dict[str, Any] = field(default_factory=dict)
    features: list[FeatureRecord] = field(default_factory=list)
    status: str = "running"  # running | done | budget reached | stopped
    api: str | None = None
    created_at: str = field(default_factory=now_iso)
    updated_at: str = field(default_factory=now_iso)
    version: int = LEDGER_VERSION

    def feature(self, name: str) -> FeatureRecord:
        for record in self.features:
            if record.name == name:
                return record
        known = ", ".join(r.name for r in self.features)
        raise KeyError(f"batch {self.id} has no feature {name!r} (features: {known})")

    def totals(self) -> tuple[int, float]:
        return sum(r.tokens for r in self.features), sum(r.cost_usd for r in self.features)

    @property
    def all_final(self) -> bool:
        return all(r.state.final for r in self.features)


class Ledger:
    """Reads and writes one batch's `batch.json`."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._saved: dict[str, Any] | None = None  # what the last save wrote, but its time

    def exists(self) -> bool:
        return self.path.is_file()

    def load(self) -> BatchRecord:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise StateFileError(f"no batch ledger at {self.path}") from None
        except (OSError, ValueError, RecursionError) as error:
            raise StateFileError(f"cannot read the batch ledger {self.path}: {error}") from None
        try:
            return _record_from(data)
        except (TypeError, KeyError, ValueError) as error:
            raise StateFileError(f"batch ledger {self.path} is malformed: {error}") from None

    def save(self, record: BatchRecord) -> None:
        record.updated_at = now_iso()
        data = asdict(record)
        write_json_atomic(self.path, data)
        self._saved = {**data, "updated_at": None}

    def save_if_changed(self, record: BatchRecord) -> None:
        """Save unless nothing but the time would change (the driver ticks twice a second;
        each save is a temporary file, an fsync and a rename)."""
        if self._saved is None or {**asdict(record), "updated_at": None} != self._saved:
            self.save(record)


def _record_from(data: dict[str, Any]) -> BatchRecord:
    known = {f.name for f in fields(FeatureRecord)}
    features = [
        FeatureRecord(**{k: v for k, v in f.items() if k in known}) for f in data["features"]
    ]
    for feature in features:
        FeatureStatus(feature.status)  # ValueError on an unknown status
    batch_known = {f.name for f in fields(BatchRecord)} - {"features"}
    values = {k: v for k, v in data.items() if k in batch_known}
    return BatchRecord(**values, features=features)


def ledger_path(repo: Repository, batch_id: str) -> Path:
    """Where a batch's ledger lives in the user's repository."""
    return repo.batch_dir(batch_id) / "batch.json"


def new_batch(
    repo: Repository, batch_id: str, backlog: Backlog, base: str, options: BatchOptions
) -> BatchRecord:
    """A fresh ledger record: every feature queued on its own branch and worktree."""
    base_commit = repo.resolve(base)
    batch = BatchRecord(
        id=batch_id,
        repo=str(repo.root),
        base_commit=base_commit,
        backlog=str(backlog.source),
        options=asdict(options),
    )
    add_new_features(repo, batch, backlog)
    return batch


def add_new_features(repo: Repository, batch: BatchRecord, backlog: Backlog) -> list[str]:
    """Features of the backlog the ledger does not know yet, appended as queued."""
    known = {r.name for r in batch.features}
    added = []
    for feature in backlog.features:
        if feature.name in known:
            continue
        worktree = repo.worktree_path(batch.id, feature.name)
        base = repo.resolve(feature.base) if feature.base else batch.base_commit
        batch.features.append(
            FeatureRecord(
                name=feature.name,
                branch=feature.branch,
                worktree=str(worktree),
                state_file=str(worktree / ".tmp" / DEFAULT_STATE_FILE_NAME),
                base=base,
            )
        )
        added.append(feature.name)
    return added
