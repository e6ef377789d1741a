"""For tests of fork servers: an API that never answers, a clean environment, an ended pid."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def silent_api() -> Iterator[str]:
    """An API that takes connections and never answers: a `baton run` waits on it."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


def clean_env(**extra: str) -> dict[str, str]:
    """The few variables a loop needs from this environment, and `extra`."""
    keep = ("PATH", "HOME", "LANG", "PYTHONPATH", "VIRTUAL_ENV")
    return {**{k: os.environ[k] for k in keep if k in os.environ}, **extra}


def gone(pid: int) -> bool:
    """Exited: no such process, or a zombie its new parent has not reaped yet."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")
