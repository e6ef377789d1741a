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
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from baton.orchestrator.runlog import RunLog

__all__ = [
    "GATE_VARIABLE",
    "ack_path_for",
    "state_digest",
    "wait_for_checkpoint",
    "want_path_for",
    "write_digest",
]

GATE_VARIABLE = "BATON_CHECKPOINT_GATE"
_WAIT_SECONDS = 120.0
_PAUSE_SECONDS = 0.02


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
        if time.monotonic() > deadline:
            log.warning(f"no checkpoint of {state_path} within {wait_seconds:.0f}s; going on")
            return
        time.sleep(_PAUSE_SECONDS)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return ""
