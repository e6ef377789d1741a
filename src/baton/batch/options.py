"""BatchOptions: what `baton batch run` was asked, kept in the ledger for `resume`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baton.batch.backends import BackendConfig, LocalBackendConfig, RayBackendConfig
from baton.batch.remote_batch import SharedRemote

__all__ = ["BatchOptions"]


@dataclass
class BatchOptions:
    """What `baton batch run` was asked; kept in the ledger so `resume` runs the same batch."""

    parallel: int
    provider_caps: dict[str, int] = field(default_factory=dict)
    max_cost_usd: float | None = None
    max_tokens: int | None = None
    api: str | None = None
    keep_agents: bool = False
    settings: dict[str, str] = field(default_factory=dict)  # env name -> value, for every feature
    backend: str = "local"  # where jobs run: local, ray (docs/scale-out.md)
    address: str | None = None  # the Ray cluster (None: RAY_ADDRESS, `ray start`'s, or a local one)
    # Jobs on any host (docs/scale-out.md): the shared git remote and the shared store.
    # On Ray both default to folders of the batch (one machine); None elsewhere: local jobs.
    remote: str | None = None
    store: str | None = None
    lease_ttl: float = 30.0  # a host silent this long loses its features' leases

    def shared(self, batch_dir: Path) -> SharedRemote | None:
        """The shared remote and store when jobs run from them; None for local jobs."""
        if self.remote is None and self.store is None and self.backend != "ray":
            return None
        default = SharedRemote.in_batch(batch_dir)
        return SharedRemote(self.remote or default.url, self.store or default.store)

    def backend_config(self) -> BackendConfig:
        if self.backend == "ray":
            return RayBackendConfig(address=self.address)
        return LocalBackendConfig()

    @classmethod
    def from_ledger(cls, data: Mapping[str, Any]) -> BatchOptions:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})
