"""A checkpoint before each new prompt, when a feature job on a shared remote asks for it.

A feature job running on any host (`baton.batch.remote_job`) pushes the work tree and the
state file to the shared remote as the loop moves on. So that a host lost mid-turn redoes
only the turn in flight, the answers before it must be pushed before the next prompt goes
out: with `BATON_CHECKPOINT_GATE=<state file>` in its environment, `baton run` writes the
digest of the state file as saved to `<state file>.want` before each new prompt, and waits
until the job, having pushed that state, writes the same digest to `<state file>.ack` (a
state saved again meanwhile is asked for, and acknowledged, in its place). So there is
one checkpoint per turn, taken while the loop stands still. Without the variable
nothing waits. A job that does not answer within a while (its remote unreachable) only
delays the turn, with a warning.

The files are the truth; a `Doorbell` on each side says "look now": the loop rings the
job's as it asks, the job rings the loop's once it has pushed, so a checkpoint starts and
is seen the moment it can, not on the next tick of a timer. A bell lost, or one that
could not be had, only leaves that side looking on a short timer instead.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from baton.orchestrator.runlog import RunLog

__all__ = [
    "GATE_VARIABLE",
    "Doorbell",
    "ack_path_for",
    "bell_name",
    "state_digest",
    "wait_for_checkpoint",
    "want_path_for",
    "write_digest",
]

GATE_VARIABLE = "BATON_CHECKPOINT_GATE"
_WAIT_SECONDS = 120.0
_PAUSE_SECONDS = 0.02  # how often a loop without its bell looks for the acknowledgement
_RECHECK_SECONDS = 0.05  # how often a loop with its bell looks at its own state meanwhile


def ack_path_for(state_path: Path) -> Path:
    """Where the job acknowledges a checkpoint: beside the state file, `<name>.ack`."""
    return state_path.with_name(state_path.name + ".ack")


def want_path_for(state_path: Path) -> Path:
    """Where the loop asks for a checkpoint: beside the state file, `<name>.want`."""
    return state_path.with_name(state_path.name + ".want")


def write_digest(path: Path, digest: str) -> None:
    """Write a digest atomically (a reader never sees half of one)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(digest, encoding="utf-8")
    os.replace(temporary, path)


def state_digest(state_path: Path) -> str:
    """The sha256 of the state file's bytes (OSError when it cannot be read)."""
    return hashlib.sha256(Path(state_path).read_bytes()).hexdigest()


def wait_for_checkpoint(log: RunLog, wait_seconds: float = _WAIT_SECONDS) -> None:
    """Return once the saved state is checkpointed, or at once without a gate.

    The state may be saved again while the loop waits (the team's last terminals are
    recorded from another thread as they come up): the loop then asks for the new state,
    and the job acknowledges whichever state it pushed, so the two meet on the latest.
    """
    named = os.environ.get(GATE_VARIABLE)
    if not named:
        return
    state_path = Path(named)
    ack, want = ack_path_for(state_path), want_path_for(state_path)
    asked = ""
    deadline = time.monotonic() + wait_seconds
    with Doorbell.listening(bell_name(state_path, "ack")) as bell:
        while True:
            try:
                current = state_digest(state_path)
            except OSError:
                return
            if _read(ack) == current:
                return  # this very state is pushed already
            if current != asked:
                try:
                    write_digest(want, current)
                except OSError as error:
                    log.warning(f"cannot ask for a checkpoint of {state_path}: {error}; going on")
                    return
                asked = current
                Doorbell.ring(bell_name(state_path, "want"))
            if time.monotonic() > deadline:
                log.warning(f"no checkpoint of {state_path} within {wait_seconds:.0f}s; going on")
                return
            if bell is None:
                time.sleep(_PAUSE_SECONDS)
            else:
                bell.wait(_RECHECK_SECONDS)


def bell_name(state_path: Path, side: Literal["want", "ack"]) -> str:
    """The doorbell of one side of one state file's gate (the job's `want`, the loop's `ack`)."""
    digest = hashlib.sha256(str(Path(state_path).resolve()).encode()).hexdigest()[:32]
    return f"baton-gate-{digest}-{side}"


class Doorbell:
    """A wake-up across processes of one host: a datagram to an abstract Unix socket.

    Abstract names live in the kernel, not on disk (nothing to clean up, nothing in a
    checkpoint). A ring carries no data, so anyone able to ring can only make the other
    side look at the files a moment early.
    """

    def __init__(self, name: str) -> None:
        """Listen on `name` (OSError when another process listens there already)."""
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            self._socket.bind(_address(name))
        except OSError:
            self._socket.close()
            raise
        self._socket.setblocking(False)

    @classmethod
    @contextlib.contextmanager
    def listening(cls, name: str) -> Iterator[Doorbell | None]:
        """The bell while the block runs; None when it cannot be had (then poll)."""
        try:
            bell = cls(name)
        except OSError:
            yield None
            return
        try:
            yield bell
        finally:
            bell.close()

    def wait(self, timeout: float) -> bool:
        """Whether it rang within `timeout` seconds (every ring so far is taken)."""
        ready, _, _ = select.select([self._socket], [], [], timeout)
        rang = False
        with contextlib.suppress(BlockingIOError, InterruptedError):
            while True:
                self._socket.recv(16)
                rang = True
        return rang or bool(ready)

    def close(self) -> None:
        self._socket.close()

    @staticmethod
    def ring(name: str) -> None:
        """Ring `name`'s bell; nothing when nobody listens (or its queue is full of rings)."""
        with (
            socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sender,
            contextlib.suppress(OSError),
        ):
            sender.setblocking(False)
            sender.sendto(b"!", _address(name))


def _address(name: str) -> bytes:
    return b"\0" + name.encode()


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return ""
