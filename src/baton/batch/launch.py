"""How a feature job starts its `baton run`: the seam between the job and the process.

A job only needs a process it can wait for, signal and kill. `SubprocessLauncher` starts
`python -m baton run` as a new program (what any host can do); `ForkServer`
(`baton.batch.forkserver`) forks it from a process that has imported Baton already, so
a batch of many loops does not pay for the same imports once per loop.
"""

from __future__ import annotations

import contextlib
import ctypes
import signal
import subprocess
from collections.abc import Mapping, Sequence
from typing import BinaryIO, Protocol

__all__ = ["LoopLauncher", "LoopProcess", "SubprocessLauncher", "die_with_parent", "name_process"]

_PR_SET_PDEATHSIG = 1
_PR_SET_NAME = 15


class LoopProcess(Protocol):
    """A started `baton run`, as much of `subprocess.Popen` as a job uses."""

    pid: int
    returncode: int | None

    def wait(self, timeout: float | None = None) -> int:
        """Its exit code (negative: the signal that ended it); `TimeoutExpired` meanwhile."""
        ...

    def send_signal(self, sig: int) -> None: ...

    def kill(self) -> None: ...


class LoopLauncher(Protocol):
    def launch(
        self, argv: Sequence[str], env: Mapping[str, str], cwd: str, log: BinaryIO
    ) -> LoopProcess:
        """Start `argv` in `cwd` with exactly `env`, its output to `log`, in a session of
        its own (a Ctrl-C reaches the batch, which stops its loops in order), ending with
        SIGTERM when whatever started it dies."""
        ...


def die_with_parent() -> None:
    """In a child: SIGTERM when the thread that started it dies (a killed batch)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class SubprocessLauncher:
    """A new program per loop: what a host without a fork server does."""

    def launch(
        self, argv: Sequence[str], env: Mapping[str, str], cwd: str, log: BinaryIO
    ) -> LoopProcess:
        return subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,
            start_new_session=True,
        )


def name_process(name: str) -> None:
    """This process's name as `ps -o comm` and `top` show it (15 bytes at most)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_NAME, name.encode()[:15])
