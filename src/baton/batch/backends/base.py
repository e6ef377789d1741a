"""The backend seam: submit a feature job, see whether it ended, stop it, close.

Small on purpose, like an httpx transport: the scheduler (`runner.py`) decides what runs
and when; a backend only runs `run_feature_job` somewhere and reports back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from baton.batch.job import FeatureJob, FeatureOutcome, Progress

__all__ = ["Backend", "BackendConfig", "JobHandle", "LocalBackendConfig", "RayBackendConfig"]


class LocalBackendConfig(BaseModel):
    """Run jobs as threads of the batch process, each driving one `baton run` subprocess."""

    model_config = ConfigDict(frozen=True)
    type: Literal["local"] = "local"


class RayBackendConfig(BaseModel):
    """Run each job as a Ray task on a host with a free `baton_slot` (docs/scale-out.md)."""

    model_config = ConfigDict(frozen=True)
    type: Literal["ray"] = "ray"
    # None: RAY_ADDRESS, else the cluster `ray start` set up on this host ("auto"), else a
    # local one-machine cluster started for this batch (to try it out).
    address: str | None = None
    namespace: str = "baton"
    # A job lost with its node (or its worker) runs again elsewhere, resuming its state.
    max_retries: int = Field(default=3, ge=0)
    local_slots: int = Field(default=4, ge=1)  # `baton_slot`s of a cluster started here


BackendConfig = Annotated[LocalBackendConfig | RayBackendConfig, Field(discriminator="type")]


class JobHandle(Protocol):
    """One submitted job."""

    job: FeatureJob

    @property
    def host(self) -> str | None:
        """Where the job runs (None until it has started somewhere)."""
        ...

    def done(self) -> bool: ...

    def outcome(self) -> FeatureOutcome:
        """The job's outcome; only once `done()`."""
        ...


class Backend(Protocol):
    def submit(
        self,
        job: FeatureJob,
        on_progress: Callable[[Progress], None] | None = None,
        on_done: Callable[[], None] | None = None,
    ) -> JobHandle:
        """Start the job; `on_done` (from any thread) once `done()` turns true."""
        ...

    def capacity(self) -> int | None:
        """How many jobs it can run at once now (None: the batch's `--parallel` decides)."""
        ...

    def stop(self, handle: JobHandle) -> None:
        """Ask the job to stop between turns (its state saved, resumable)."""
        ...

    def close(self) -> None:
        """Stop every job still running and wait for them."""
        ...
