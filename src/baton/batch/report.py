"""`baton batch report`: one self-contained HTML page for a batch (no scripts, no links out).

Every feature's row (status, round, tokens, cost, branch, commit, time, its error), a
timeline of when each ran, and each feature's whole diff, one collapsible block per file
(`<details>`: no script needed). Everything from the ledger and the diffs is escaped
(jinja2 autoescape): an error line or a `<script>` line in a diff is text, never markup.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from jinja2 import Environment, PackageLoader

from baton.batch.diffs import feature_diff
from baton.batch.ledger import BatchRecord, FeatureRecord
from baton.private import write_private

__all__ = ["render_report", "write_report"]

_WIDTH = 720
_ROW = 22
_LABEL = 120


def _moment(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def _duration(record: FeatureRecord, now: datetime) -> str:
    start, end = _moment(record.started_at), _moment(record.ended_at) or now
    if start is None:
        return ""
    seconds = max(0, int((end - start).total_seconds()))
    return f"{seconds // 60}m{seconds % 60:02d}s"


def _bars(batch: BatchRecord, now: datetime) -> list[dict[str, object]]:
    spans = []
    for record in batch.features:
        start = _moment(record.started_at)
        if start is not None:
            spans.append((record, start, _moment(record.ended_at) or now))
    if not spans:
        return []
    first = min(s for _, s, _ in spans)
    last = max(e for _, _, e in spans)
    scale = _WIDTH / max(1.0, (last - first).total_seconds())
    return [
        {
            "name": record.name,
            "status": record.status,
            "x": round((start - first).total_seconds() * scale, 1),
            "w": max(2.0, round((end - start).total_seconds() * scale, 1)),
            "time": _duration(record, now),
        }
        for record, start, end in spans
    ]


def render_report(batch: BatchRecord, ledger_path: Path) -> str:
    now = datetime.now(UTC)
    tokens, cost = batch.totals()
    environment = Environment(loader=PackageLoader("baton.batch", "templates"), autoescape=True)
    template = environment.get_template("report.html.j2")
    return template.render(
        batch=batch,
        passed=sum(r.status == "PASS" for r in batch.features),
        total=len(batch.features),
        tokens=tokens,
        cost=cost,
        durations={r.name: _duration(r, now) for r in batch.features},
        bars=_bars(batch, now),
        diffs={r.name: feature_diff(r, Path(batch.repo)) for r in batch.features if r.started_at},
        width=_WIDTH,
        label=_LABEL,
        row=_ROW,
        ledger=str(ledger_path),
        now=now.strftime("%Y-%m-%d %H:%M:%S UTC"),
    )


def write_report(batch: BatchRecord, ledger_path: Path) -> Path:
    """`<batch dir>/report.html` (0600); its path."""
    page = ledger_path.parent / "report.html"
    write_private(page, render_report(batch, ledger_path))
    return page
