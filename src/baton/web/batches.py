"""The batches a server was told about: `PUT /baton/batches/{id}` from `baton batch`.

A batch announces its ledger (`batch.json`, written atomically by its driver) once its
server is known; the cockpit reads the ledger on demand and lists one row per loop,
each linked to its run's page when that loop's `baton run` announced itself too.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from baton.batch.ledger import Ledger
from baton.batch.report import write_report
from baton.errors import BadRequestError, BatonError, NotFoundError
from baton.private import private_dir, write_private
from baton.web.runs import RunDirectory

__all__ = ["BATCH_ID_PATTERN", "BatchAnnouncement", "BatchDirectory"]

BATCH_ID_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"
_BATCH_ID = re.compile(BATCH_ID_PATTERN)


@dataclass(frozen=True)
class BatchAnnouncement:
    """Where a batch's ledger is, and when it said so."""

    batch_id: str
    ledger: str
    announced_at: str = ""

    @classmethod
    def from_body(cls, batch_id: str, body: Any) -> BatchAnnouncement:
        if not _BATCH_ID.match(batch_id):
            raise BadRequestError(f"batch id {batch_id!r} is not a batch id")
        ledger = body.get("ledger") if isinstance(body, dict) else None
        if not isinstance(ledger, str) or not Path(ledger).is_absolute():
            raise BadRequestError('the body must be {"ledger": "/absolute/path/batch.json"}')
        moment = datetime.now(UTC).isoformat(timespec="seconds")
        return cls(batch_id=batch_id, ledger=ledger, announced_at=moment)


class BatchDirectory:
    """Announcements kept as `<state dir>/batches/<id>.json`; ledgers read on demand."""

    def __init__(self, directory: Path, runs: RunDirectory) -> None:
        self.directory = directory
        self.runs = runs

    def announce(self, announcement: BatchAnnouncement) -> None:
        private_dir(self.directory)
        path = self.directory / f"{announcement.batch_id}.json"
        write_private(path, json.dumps(asdict(announcement), indent=2))

    def get(self, batch_id: str) -> BatchAnnouncement | None:
        if not _BATCH_ID.match(batch_id):
            return None
        try:
            data = json.loads((self.directory / f"{batch_id}.json").read_text(encoding="utf-8"))
            return BatchAnnouncement(**{k: str(data[k]) for k in ("batch_id", "ledger")})
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def all(self) -> list[BatchAnnouncement]:
        try:
            names = sorted(path.stem for path in self.directory.glob("*.json"))
        except OSError:
            return []
        return [found for found in (self.get(name) for name in names) if found is not None]

    def views(self) -> list[dict[str, Any]]:
        """Each announced batch with its loops, for the index."""
        sessions = {a.state_file: a.session for a in self.runs.all()}
        return [self._view(announcement, sessions) for announcement in self.all()]

    def _view(self, announcement: BatchAnnouncement, sessions: dict[str, str]) -> dict[str, Any]:
        try:
            batch = Ledger(Path(announcement.ledger)).load()
        except BatonError as error:
            return {"id": announcement.batch_id, "problem": str(error), "loops": []}
        tokens, cost = batch.totals()
        loops = [
            {
                "name": feature.name,
                "status": feature.status,
                "round": feature.round,
                "phase": feature.phase,
                "tokens": feature.tokens,
                "cost_usd": round(feature.cost_usd, 4),
                "session": sessions.get(str(Path(feature.state_file).absolute())),
                "error": feature.error,
            }
            for feature in batch.features
        ]
        return {
            "id": batch.id,
            "status": batch.status,
            "repo": batch.repo,
            "tokens": tokens,
            "cost_usd": round(cost, 4),
            "loops": loops,
        }

    def report_html(self, batch_id: str) -> str:
        """`baton batch report`'s page, written beside the ledger as that command does."""
        announcement = self.get(batch_id)
        if announcement is None:
            raise NotFoundError(f"no batch {batch_id!r} announced")
        ledger = Path(announcement.ledger)
        try:
            return write_report(Ledger(ledger).load(), ledger).read_text(encoding="utf-8")
        except (BatonError, OSError) as error:
            raise NotFoundError(f"no report for batch {batch_id}: {error}") from None
