"""`cancel` and `retry` from another shell: a request file the batch's driver applies.

Only the driver writes the ledger. A command run while a driver holds the batch drops a
request in `<batch dir>/requests/`; the driver applies it on its next tick. With no driver,
the command takes the batch's lock itself and applies the request to the ledger directly.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

from baton.batch.ledger import BatchRecord, FeatureRecord, FeatureStatus
from baton.batch.worktrees import reset_worktree
from baton.errors import ConfigError

__all__ = ["Request", "apply_to_idle", "prepare_retry", "read_requests", "write_request"]


@dataclass(frozen=True)
class Request:
    action: str  # cancel | retry
    feature: str | None  # None: every feature (cancel only)


def _dir(batch_dir: Path) -> Path:
    return batch_dir / "requests"


def write_request(batch_dir: Path, request: Request) -> None:
    folder = _dir(batch_dir)
    folder.mkdir(parents=True, exist_ok=True)
    name = f"{uuid.uuid4().hex}.json"
    temporary = folder / f".{name}.tmp"
    temporary.write_text(json.dumps({"action": request.action, "feature": request.feature}))
    os.replace(temporary, folder / name)


def read_requests(batch_dir: Path) -> list[Request]:
    """The waiting requests, oldest first; each is removed once read."""
    folder = _dir(batch_dir)
    if not folder.is_dir():
        return []
    files = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
    found = []
    for path in files:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            found.append(Request(str(data["action"]), data.get("feature")))
        except (OSError, ValueError, KeyError):
            pass
        path.unlink(missing_ok=True)
    return found


def prepare_retry(record: FeatureRecord) -> None:
    """A final feature back in the queue: a finished run's state set aside, its tree reset.

    A cancelled or errored RUNNING state file is kept, so the retry resumes it. A run that
    ended (PASS/FAIL) is kept as `<state>.attempt-N` and the worktree goes back to its
    branch (the run records under `.tmp/` stay), so the retry starts a new run.
    """
    if not record.state.final:
        raise ConfigError(f"feature {record.name} is {record.status}; only a finished one retries")
    state = Path(record.state_file)
    if record.state in (FeatureStatus.PASS, FeatureStatus.FAIL) and state.exists():
        state.rename(state.with_name(f"{state.name}.attempt-{record.attempts + 1}"))
        if Path(record.worktree).exists():
            reset_worktree(Path(record.worktree))
    record.attempts += 1
    record.requeue()


def apply_to_idle(batch: BatchRecord, request: Request) -> list[str]:
    """Apply a request to a batch nobody drives; the features it changed."""
    names = [request.feature] if request.feature else [f.name for f in batch.features]
    changed = []
    for name in names:
        record = batch.feature(name)
        if request.action == "retry":
            prepare_retry(record)
            changed.append(name)
        elif not record.state.final:
            record.move(FeatureStatus.CANCELLED)
            record.error = "cancelled"
            changed.append(name)
    return changed
