"""The batch's notifications: each feature's end the loop did not tell, and the batch's end.

Each feature's own loop notifies its PASS or FAIL, and an error that stopped it, through
the channels its settings name. What a loop cannot tell — a feature that never started
(its worktree, its settings), a loop that crashed, a feature cancelled (its loop was
stopped by a signal, which a loop does not report) — the batch sends, once per feature
(`event: feature_end`), through the same channels; and one more when the batch ends
(`event: batch_end`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from baton.batch.ledger import BatchRecord, FeatureRecord, FeatureStatus
from baton.errors import BatonError, StateFileError
from baton.orchestrator.config_layers import load_settings
from baton.orchestrator.notify import Notification, Notifier
from baton.orchestrator.runlog import RunLog

__all__ = [
    "BatchNotifier",
    "batch_end_notification",
    "feature_end_notification",
    "loop_told_its_end",
    "notify_batch_end",
]

_LOOP_NOTIFIED = ("run_end", "error")


def batch_end_notification(batch: BatchRecord) -> Notification:
    counts = {status: 0 for status in FeatureStatus}
    for record in batch.features:
        counts[record.state] += 1
    tokens, cost = batch.totals()
    passed, total = counts[FeatureStatus.PASS], len(batch.features)
    others = ", ".join(
        f"{n} {status.value}" for status, n in counts.items() if n and status != FeatureStatus.PASS
    )
    message = f"{passed}/{total} PASS" + (f" ({others})" if others else "")
    message += f"; {tokens} tokens, ${cost:.2f}; see: baton batch status {batch.id}"
    ok = passed == total
    return Notification(
        event="batch_end",
        title=f"baton batch {batch.id}: {batch.status}",
        message=message,
        priority="default" if ok else "high",
        tags=("white_check_mark",) if ok else ("warning",),
        fields={"batch": batch.id, "repo": batch.repo, "status": batch.status},
    )


def feature_end_notification(batch_id: str, record: FeatureRecord) -> Notification:
    """A feature that ended without its loop saying so: `error` or `cancelled`, and why."""
    why = record.error or record.status
    message = (
        f"{record.name}: {record.status} ({why}); branch {record.branch}, "
        f"worktree {record.worktree}; see: baton batch status {batch_id}"
    )
    return Notification(
        event="feature_end",
        title=f"baton batch {batch_id}: {record.name} {record.status}",
        message=message,
        priority="high" if record.state == FeatureStatus.ERROR else "default",
        tags=("warning",) if record.state == FeatureStatus.ERROR else ("no_entry_sign",),
        fields={
            "batch": batch_id,
            "feature": record.name,
            "status": record.status,
            "error": record.error,
            "branch": record.branch,
            "state_file": record.state_file,
        },
    )


def loop_told_its_end(state_file: Path, since: str | None = None) -> bool:
    """Whether the loop's last attempt (begun at or after `since`, an ISO time) notified its
    own end: a `run_end`, or an `error` it stopped on — not the interruption a cancel is."""
    from baton.cockpit.record import load_run  # the cockpit reads what the loop leaves

    try:
        events = load_run(state_file).events if state_file.is_file() else []
    except (StateFileError, OSError):
        return False
    for event in reversed(events):
        if since and str(event.get("ts") or "")[:19] < since[:19]:
            return False  # an earlier attempt's: this one never got as far as its record
        name = event.get("event")
        if name in ("run_start", "run_resume"):
            return False
        if name == "run_end" and event.get("final_status") in ("PASS", "FAIL"):
            return True
        if name == "error" and event.get("error") != "RunInterrupted":
            return True
    return False


class BatchNotifier:
    """The batch's channels, opened once (the settings every feature shares)."""

    def __init__(self, batch_id: str, environ: Mapping[str, str], log: RunLog) -> None:
        self.batch_id = batch_id
        self.log = log
        self._sent: set[tuple[str, int]] = set()
        try:
            settings_env = {k: v for k, v in environ.items() if k not in ("PROMPT", "PROMPT_FILE")}
            self.notifier: Notifier | None = Notifier.from_settings(
                load_settings(None, settings_env, {}), log
            )
        except BatonError as error:
            log.warning(f"no batch notifications: {error}")
            self.notifier = None

    def feature_end(self, record: FeatureRecord) -> None:
        """Tell an `error` or `cancelled` end the loop did not tell itself; once per attempt."""
        if record.state not in (FeatureStatus.ERROR, FeatureStatus.CANCELLED):
            return
        key = (record.name, record.attempts)
        if key in self._sent or loop_told_its_end(Path(record.state_file), record.started_at):
            return
        self._sent.add(key)
        self._send(feature_end_notification(self.batch_id, record))

    def batch_end(self, batch: BatchRecord) -> None:
        self._send(batch_end_notification(batch))

    def _send(self, notification: Notification) -> None:
        if self.notifier is not None and self.notifier.channels:
            self.notifier.notify(notification)  # a burst of feature ends: one notification

    def close(self) -> None:
        if self.notifier is not None:
            self.notifier.close()


def notify_batch_end(batch: BatchRecord, environ: Mapping[str, str], log: RunLog) -> None:
    """Send the batch's end to the configured channels; a failure is one warning."""
    notifier = BatchNotifier(batch.id, environ, log)
    try:
        notifier.batch_end(batch)
    finally:
        notifier.close()
