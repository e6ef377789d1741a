"""The backend seam: submit a feature job, see whether it ended, stop it, close.

Small on purpose, like an httpx transport: the scheduler (`runner.py`) decides what runs
and when; a backend only runs `run_feature_job` somewhere and reports back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from baton.batch.job import FeatureJob, FeatureOutcome, Progress

__all__ = ["Backend", "BackendConfig", "JobHandle", "LocalBackendConfig"]


class LocalBackendConfig(BaseModel):
    """Run jobs as threads of the batch process, each driving one `baton run` subprocess."""

    model_config = ConfigDict(frozen=True)
    type: Literal["local"] = "local"


BackendConfig = Annotated[LocalBackendConfig, Field(discriminator="type")]


class JobHandle(Protocol):
    """One submitted job."""

    job: FeatureJob

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

    def stop(self, handle: JobHandle) -> None:
        """Ask the job to stop between turns (its state saved, resumable)."""
        ...

    def close(self) -> None:
        """Stop every job still running and wait for them."""
        ...
