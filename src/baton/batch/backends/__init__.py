"""Where feature jobs run: `local` (threads on this machine) now; others share `Backend`."""

from baton.batch.backends.base import Backend, BackendConfig, JobHandle, LocalBackendConfig
from baton.batch.backends.local import LocalBackend

__all__ = ["Backend", "BackendConfig", "JobHandle", "LocalBackend", "LocalBackendConfig", "make"]


def make(config: BackendConfig) -> Backend:
    """The backend a config describes."""
    return LocalBackend(config)
