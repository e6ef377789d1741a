"""`baton batch status` and `baton batch list`: the ledger as a table, read-only."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from baton.batch.ledger import BatchRecord, FeatureRecord, FeatureStatus, Ledger
from baton.cockpit.live import ServerProbe
from baton.errors import StateFileError
from baton.orchestrator.driver_lock import DriverRecord, current_driver

__all__ = ["list_batches", "render_status", "status_view", "watch_status"]

_STYLE = {"PASS": "green", "FAIL": "red", "error": "red", "running": "cyan", "cancelled": "dim"}
_COLUMNS = (
    "feature",
    "status",
    "round/phase",
    "agents busy",
    "tokens",
    "cost",
    "branch",
    "host",
    "time",
)


def _moment(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def _elapsed(record: FeatureRecord, now: datetime) -> str:
    if not record.started_at:
        return ""
    end = _moment(record.ended_at) if record.ended_at else now
    seconds = max(0, int((end - _moment(record.started_at)).total_seconds()))
    return f"{seconds // 60}m{seconds % 60:02d}s"


def _agents_busy(record: FeatureRecord, probe: ServerProbe | None) -> str:
    """`busy/total` of a running feature's agents, as its server says now ('' if unknown)."""
    if probe is None or record.state != FeatureStatus.RUNNING:
        return ""
    try:
        data = json.loads(Path(record.state_file).read_text(encoding="utf-8"))
        terminals = [str(t) for t in (data.get("terminals") or {}).values() if t]
    except (OSError, ValueError, AttributeError):
        return ""
    statuses = [probe.status(t) for t in terminals]
    if not statuses or all(s is None for s in statuses):
        return ""
    return f"{sum(s == 'processing' for s in statuses)}/{len(statuses)}"


def _row(
    record: FeatureRecord, now: datetime, probe: ServerProbe | None, marker: str = ""
) -> list[str]:
    status = escape(record.status + (f" ({record.error})" if record.error else ""))
    style = _STYLE.get(record.status)
    return [
        marker + record.name,
        f"[{style}]{status}[/]" if style else status,
        f"{record.round}/{record.phase}" if record.round else "",
        _agents_busy(record, probe),
        str(record.tokens),
        f"${record.cost_usd:.2f}",
        record.branch,
        escape(record.host or ""),
        _elapsed(record, now),
    ]


def status_view(
    batch: BatchRecord,
    ledger_path: Path,
    environ: Mapping[str, str],
    driver: DriverRecord | None,
    selected: int | None = None,
) -> Group:
    """One row per feature, then the batch's totals and who drives it (`driver`, as the
    caller read it: a watch acts on the same read); `selected` marks a row (▶) for the
    interactive watch."""
    now = datetime.now(UTC)
    table = Table(title=f"batch {batch.id} — {batch.status}", title_justify="left")
    for column in _COLUMNS:  # one line per feature: a long value ends in `…`, never wraps
        right = column in ("tokens", "cost")
        table.add_column(
            column, justify="right" if right else "left", no_wrap=True, overflow="ellipsis"
        )
    probe = ServerProbe.for_environment(batch.api, environ) if driver and batch.api else None
    try:
        for index, record in enumerate(batch.features):
            marker = "" if selected is None else ("▶ " if index == selected else "  ")
            table.add_row(*_row(record, now, probe, marker))
    finally:
        if probe is not None:
            probe.close()
    tokens, cost = batch.totals()
    driven = f"driven by {driver.describe()}" if driver else "no driver running"
    total = f"total: {tokens} tokens, ${cost:.2f}; {driven}; ledger: {ledger_path}"
    return Group(table, Text(total, no_wrap=True, overflow="ellipsis"))


def render_status(
    batch: BatchRecord, ledger_path: Path, console: Console, environ: Mapping[str, str]
) -> None:
    console.print(status_view(batch, ledger_path, environ, current_driver(ledger_path)))


def watch_status(
    ledger: Ledger, console: Console, environ: Mapping[str, str], interval: float = 1.0
) -> None:
    """The status table, redrawn every `interval` until the batch has no driver (or Ctrl-C)."""
    with Live(console=console, auto_refresh=False) as live:
        while True:
            try:
                batch = ledger.load()
            except StateFileError:
                time.sleep(interval)  # a ledger being replaced: read it on the next turn
                continue
            # One read of the driver for the frame and the decision: a driver letting go
            # (its record emptied, its lock not yet released) shows as unrecorded and the
            # watch goes on, so the last frame always says that no driver runs.
            driver = current_driver(ledger.path)
            live.update(status_view(batch, ledger.path, environ, driver), refresh=True)
            if driver is None:
                return
            time.sleep(interval)


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
