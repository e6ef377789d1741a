"""The processes a host keeps for its feature jobs: where their sockets live, how they are
started so that no job owns them, and how they are ended.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["alive", "end", "socket_dir", "spawn_detached"]


def socket_dir(work_root: Path) -> Path:
    """The host's private directory for sockets (tmux's, the fork servers'), by work root."""
    digest = hashlib.sha256(str(work_root.resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"baton-host-{os.getuid()}-{digest}"


# Run by a short-lived launcher: the server it starts is its child, not the job's.
_LAUNCHER = """
import subprocess, sys
with open(sys.argv[1], "ab") as log:
    server = subprocess.Popen(
        sys.argv[2:], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )
print(server.pid)
"""


def spawn_detached(command: list[str], env: dict[str, str], log: Path) -> int:
    """Start a host's daemon as a grandchild in a session of its own, output to `log`; its pid.

    A Ray worker kills its direct children when it exits (Ray's
    RAY_kill_child_processes_on_worker_exit, on by default): the host's server went with
    it, and the next batch's jobs started another. Started by a launcher that exits at
    once, the server belongs to no job (docs/batch.md: the one Ray setting that still
    ends it).
    """
    try:
        launched = subprocess.run(
            [sys.executable, "-c", _LAUNCHER, str(log), *command],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return int(launched.stdout.strip())
    except (OSError, ValueError, subprocess.SubprocessError) as error:
        raise OSError(f"{command[:4]} did not start: {error}") from None


def alive(pid: int) -> bool:
    """True while `pid` runs. The server is no child of ours, so nothing here reaps it; an
    ended one is gone once its parent (init, or a container's first process) reaps it, and
    a zombie until then, which counts as ended."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def end(pid: int) -> None:
    """SIGTERM, then SIGKILL after 15 s: `pid` is gone on return."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
        for _tick in range(150):
            if not alive(pid):
                return
            time.sleep(0.1)
        os.kill(pid, signal.SIGKILL)
