"""Turns that hang on purpose, as a stalled model stream would (for tests of recovery).

`BATON_SCRIPTED_HANG` names a file of role output keys, one per line (`programmer`). A
prompt for a role named there takes one line away and hangs: the working indicator
turns, nothing else happens, until Esc (or Ctrl-C) interrupts it. The file is shared by
every agent of a team and outlives a restarted agent, so "hang twice" means two turns,
whichever process gets them.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

__all__ = ["HANG_ENV", "take_hang"]

HANG_ENV = "BATON_SCRIPTED_HANG"


def take_hang(path: Path | None, role_key: str) -> bool:
    """Whether this turn of `role_key` hangs; consumes the file's first line naming it."""
    if path is None or not role_key:
        return False
    try:
        descriptor = os.open(path, os.O_RDWR)
    except OSError:
        return False
    with os.fdopen(descriptor, "r+", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        lines = handle.read().splitlines()
        names = [line.strip() for line in lines]
        if role_key not in names:
            return False
        del lines[names.index(role_key)]
        handle.seek(0)
        handle.truncate()
        handle.write("".join(f"{line}\n" for line in lines))
        return True
