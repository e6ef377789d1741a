"""A checkpoint before each new prompt, when a feature job on a shared remote asks for it.

A feature job running on any host (`baton.batch.remote_job`) pushes the work tree and the
state file to the shared remote as the loop moves on. So that a host lost mid-turn redoes
only the turn in flight, the answers before it must be pushed before the next prompt goes
out: with `BATON_CHECKPOINT_GATE=<state file>` in its environment, `baton run` waits before
each new prompt until `<state file>.ack` holds the digest of the state file as saved, which
the job writes once that state is pushed. Without the variable nothing waits. A job that
does not answer within a while (its remote unreachable) only delays the turn, with a warning.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from baton.orchestrator.runlog import RunLog

__all__ = ["GATE_VARIABLE", "ack_path_for", "state_digest", "wait_for_checkpoint"]

GATE_VARIABLE = "BATON_CHECKPOINT_GATE"
_WAIT_SECONDS = 120.0
_PAUSE_SECONDS = 0.02


def ack_path_for(state_path: Path) -> Path:
    """Where the job acknowledges a checkpoint: beside the state file, `<name>.ack`."""
    return state_path.with_name(state_path.name + ".ack")


def state_digest(state_path: Path) -> str:
    """The sha256 of the state file's bytes (OSError when it cannot be read)."""
    return hashlib.sha256(Path(state_path).read_bytes()).hexdigest()


def wait_for_checkpoint(log: RunLog, wait_seconds: float = _WAIT_SECONDS) -> None:
    """Return once the saved state is checkpointed, or at once without a gate."""
    named = os.environ.get(GATE_VARIABLE)
    if not named:
        return
    state_path = Path(named)
    try:
        wanted = state_digest(state_path)
    except OSError:
        return
    ack = ack_path_for(state_path)
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            if ack.read_text(encoding="utf-8").strip() == wanted:
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            log.warning(f"no checkpoint of {state_path} within {wait_seconds:.0f}s; going on")
            return
        time.sleep(_PAUSE_SECONDS)
