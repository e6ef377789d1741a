"""`baton batch status` and `baton batch list`: the ledger as a table, read-only."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.table import Table

from baton.batch.ledger import BatchRecord, FeatureRecord, Ledger
from baton.orchestrator.driver_lock import current_driver

__all__ = ["list_batches", "render_status"]

_STYLE = {"PASS": "green", "FAIL": "red", "error": "red", "running": "cyan", "cancelled": "dim"}


def _elapsed(record: FeatureRecord, now: datetime) -> str:
    if not record.started_at:
        return ""
    start = datetime.strptime(record.started_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    end = (
        datetime.strptime(record.ended_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        if record.ended_at
        else now
    )
    seconds = max(0, int((end - start).total_seconds()))
    return f"{seconds // 60}m{seconds % 60:02d}s"


def render_status(batch: BatchRecord, ledger_path: Path, console: Console) -> None:
    """One row per feature, then the batch's totals and who drives it."""
    now = datetime.now(UTC)
    table = Table(title=f"batch {batch.id} — {batch.status}", title_justify="left")
    for column in ("feature", "status", "round/phase", "tokens", "cost", "branch", "time"):
        table.add_column(column, justify="right" if column in ("tokens", "cost") else "left")
    for record in batch.features:
        where = f"{record.round}/{record.phase}" if record.round else ""
        status = record.status + (f" ({record.error})" if record.error else "")
        table.add_row(
            record.name,
            f"[{_STYLE.get(record.status, '')}]{status}[/]" if record.status in _STYLE else status,
            where,
            str(record.tokens),
            f"${record.cost_usd:.2f}",
            record.branch,
            _elapsed(record, now),
        )
    console.print(table)
    tokens, cost = batch.totals()
    driver = current_driver(ledger_path)
    driven = f"driven by {driver.describe()}" if driver else "no driver running"
    console.print(f"total: {tokens} tokens, ${cost:.2f}; {driven}; ledger: {ledger_path}")


def list_batches(batches_dir: Path, console: Console) -> None:
    """Every batch of the repository: id, status, counts."""
    table = Table(title="batches", title_justify="left")
    for column in ("id", "status", "features", "PASS", "FAIL/error", "updated"):
        table.add_column(column)
    paths = sorted(batches_dir.glob("*/batch.json")) if batches_dir.is_dir() else []
    for path in paths:
        try:
            batch = Ledger(path).load()
        except Exception as error:  # one unreadable ledger must not hide the others
            table.add_row(path.parent.name, f"unreadable: {error}", "", "", "", "")
            continue
        statuses = [r.status for r in batch.features]
        table.add_row(
            batch.id,
            batch.status,
            str(len(statuses)),
            str(statuses.count("PASS")),
            str(statuses.count("FAIL") + statuses.count("error")),
            batch.updated_at,
        )
    console.print(table)
