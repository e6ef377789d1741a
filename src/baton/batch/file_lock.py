"""`exclusive_lock`: one process at a time on a lock file (flock), for a batch's shared
places on a host: the repository's worktrees, a host's clone, a host's server."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ["exclusive_lock"]


@contextlib.contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive flock on `path` (made, with its folder, if missing) until the
    block ends; released by the kernel if the process dies holding it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
