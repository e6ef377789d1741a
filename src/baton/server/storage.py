"""A full or failing disk under the state directory, as one clear error (507).

sqlite reports a full disk as `database or disk is full` (SQLITE_FULL) or, when a write
is cut short by a file-size limit or a failing device, `disk I/O error`; the kernel as
ENOSPC, EDQUOT, EFBIG or EIO. Each becomes `StorageFullError`, which the API answers
with 507 and one line, instead of a raw sqlite message behind a 500.
"""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from baton.errors import StorageFullError

__all__ = ["as_storage_error", "storage_errors"]

_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})
_SQLITE_FULL = ("database or disk is full", "disk i/o error")


def as_storage_error(error: BaseException, where: Path | None = None) -> StorageFullError | None:
    """The StorageFullError `error` stands for, or None when it is about something else."""
    place = f" ({where})" if where is not None else ""
    if isinstance(error, sqlite3.OperationalError):
        message = str(error)
        if any(text in message.lower() for text in _SQLITE_FULL):
            return StorageFullError(f"cannot write the server's state{place}: {message}")
    elif isinstance(error, OSError) and error.errno in _FULL_ERRNOS:
        name = f" ({error.filename})" if error.filename else place
        return StorageFullError(f"cannot write the server's state{name}: {error.strerror}")
    return None


@contextmanager
def storage_errors(where: Path | None = None) -> Iterator[None]:
    """Turn a full or failing disk met inside the block into StorageFullError."""
    try:
        yield
    except (sqlite3.OperationalError, OSError) as error:
        mapped = as_storage_error(error, where)
        if mapped is None:
            raise
        raise mapped from error
