"""Which host a feature's loop runs on, and how to reach it from here."""

from __future__ import annotations

import socket

from baton.batch.ledger import FeatureRecord

__all__ = ["host_name", "reach_hint"]


def host_name(host: str) -> str:
    """The machine a ledger's `host` names (Ray's `hostname/<node id>` → `hostname`)."""
    return host.split("/", 1)[0]


def reach_hint(record: FeatureRecord, here: str | None = None) -> str | None:
    """One line saying how to reach a loop on another machine; None when it runs here.

    Its agents live in that host's `baton serve` and its state file on that host's disk,
    so attach and answer run there.
    """
    if not record.host:
        return None
    machine = host_name(record.host)
    if machine == (here or socket.gethostname()):
        return None
    return (
        f"{record.name} runs on {machine}: ssh {machine}, then `baton watch "
        f"{record.state_file}` (attach/answer with `baton attach ROLE --state-file "
        f"{record.state_file}` there)"
    )
