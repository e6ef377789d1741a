"""One notification when a batch ends, through the channels `baton run` is configured with.

Each feature's own loop already notifies its end (PASS, FAIL, an error) through the same
settings, so the batch adds only its own end: how many passed, what it cost.
"""

from __future__ import annotations

from collections.abc import Mapping

from baton.batch.ledger import BatchRecord, FeatureStatus
from baton.errors import BatonError
from baton.orchestrator.config import load_settings
from baton.orchestrator.notify import Notification, Notifier
from baton.orchestrator.runlog import RunLog

__all__ = ["batch_end_notification", "notify_batch_end"]


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


def notify_batch_end(batch: BatchRecord, environ: Mapping[str, str], log: RunLog) -> None:
    """Send the batch's end to the configured channels; a failure is one warning."""
    try:
        settings_env = {k: v for k, v in environ.items() if k not in ("PROMPT", "PROMPT_FILE")}
        notifier = Notifier.from_settings(load_settings(None, settings_env, {}), log)
    except BatonError as error:
        log.warning(f"no batch notification: {error}")
        return
    try:
        if notifier.channels:
            notifier.send(batch_end_notification(batch))
    finally:
        notifier.close()
