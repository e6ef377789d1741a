"""Where feature jobs run: `local` (threads on this machine) or `ray` (a cluster's hosts)."""

from baton.batch.backends.base import (
    Backend,
    BackendConfig,
    JobHandle,
    LocalBackendConfig,
    RayBackendConfig,
)
from baton.batch.backends.local import LocalBackend
from baton.errors import ConfigError

__all__ = [
    "Backend",
    "BackendConfig",
    "JobHandle",
    "LocalBackend",
    "LocalBackendConfig",
    "RayBackendConfig",
    "make",
]

INSTALL_RAY = "the ray backend needs Ray: pip install 'baton[ray]'"


def make(config: BackendConfig) -> Backend:
    """The backend a config describes; ConfigError in one line when Ray is not installed."""
    if isinstance(config, RayBackendConfig):
        try:
            from baton.batch.backends.ray_backend import RayBackend
        except ImportError:
            raise ConfigError(INSTALL_RAY) from None
        return RayBackend(config)
    return LocalBackend(config)
