"""Checks made before the first terminal is created, each failing with one line.

A run that can only fail later (an unwritable WD or state file, an API that is some other
web service) must fail before five agent CLIs exist, or they are left behind and the
user is told to resume a run that never saved anything.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from baton.errors import ApiError, ApiHttpError, ConfigError, StateFileError
from baton.orchestrator.client import ApiClient
from baton.orchestrator.config import Settings
from baton.orchestrator.response_files import response_dir

__all__ = ["check_api", "check_before_start", "check_state_path", "check_wd"]


def check_before_start(settings: Settings, api: ApiClient) -> None:
    """WD, STATE_FILE and API, in that order; ConfigError/StateFileError/ApiError naming it."""
    check_wd(settings.wd)
    check_state_path(settings.state_path)
    check_api(api)


def check_wd(wd: Path) -> None:
    """WD is a directory where the response directory can be made and written."""
    if not wd.is_dir():
        raise ConfigError(f"WD: not a directory: {wd}")
    directory = response_dir(wd)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        _probe_write(directory)
    except OSError as error:
        raise ConfigError(f"WD: cannot write in {directory}: {error.strerror}") from None


def check_state_path(path: Path) -> None:
    """STATE_FILE is a file (or can become one) in a directory Baton can write."""
    if path.is_dir():
        raise StateFileError(f"STATE_FILE: {path} is a directory, not a file")
    if path.exists() and not os.access(path, os.R_OK | os.W_OK):
        raise StateFileError(f"STATE_FILE: {path} is not readable and writable")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _probe_write(path.parent)
    except OSError as error:
        raise StateFileError(
            f"STATE_FILE: cannot write in {path.parent}: {error.strerror}"
        ) from None


def check_api(api: ApiClient) -> None:
    """The API answers, and as a CAO server: `/health` (or, lacking it, `/sessions`) in JSON."""
    try:
        answer = api.health()
    except ApiHttpError as error:
        if error.status_code != 404:
            raise ApiError(
                f"API {api.base_url} is not a CAO API server: GET /health answered "
                f"HTTP {error.status_code}"
            ) from None
    except ApiError as error:
        if "not JSON" not in str(error):
            raise
        raise ApiError(
            f"API {api.base_url} is not a CAO API server: GET /health did not answer JSON"
        ) from None
    else:
        if "status" in answer:
            return
        raise ApiError(
            f"API {api.base_url} is not a CAO API server: GET /health has no `status` field"
        )
    try:
        api.list_sessions()  # a server without /health: its sessions route must speak JSON
    except ApiHttpError as error:
        raise ApiError(
            f"API {api.base_url} is not a CAO API server: no /health, and GET /sessions "
            f"answered HTTP {error.status_code}"
        ) from None
    except ApiError as error:
        if "not JSON" not in str(error):
            raise
        raise ApiError(
            f"API {api.base_url} is not a CAO API server: GET /sessions did not answer JSON"
        ) from None


def _probe_write(directory: Path) -> None:
    """Create and remove a file in `directory` (os.access misses read-only mounts)."""
    handle, name = tempfile.mkstemp(prefix=".baton-probe.", dir=directory)
    os.close(handle)
    with contextlib.suppress(OSError):
        os.unlink(name)
