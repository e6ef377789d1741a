"""Files and directories only their owner can read: transcripts, prompts, tokens.

What Baton writes for itself (the registry, pane logs, prompt copies, hook records,
runtime directories) holds whole conversations and sometimes secrets, so it is created
0600 (files) and 0700 (directories) whatever the process umask is, and a directory that
already exists is narrowed to 0700. The process umask is left alone: agent CLIs inherit
it, and the files they write in the user's project must keep the user's usual modes.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

__all__ = [
    "PRIVATE_DIR_MODE",
    "PRIVATE_FILE_MODE",
    "append_json_line",
    "hide_process_from_same_user",
    "new_private_dirs",
    "private_dir",
    "private_file",
    "write_private",
]

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """Create `path` (and missing parents) and make `path` itself 0700."""
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
    os.chmod(path, PRIVATE_DIR_MODE)
    return path


def new_private_dirs(path: Path) -> Path:
    """Create the missing directories of `path`, each 0700; existing ones stay as they are.

    For directories Baton makes inside a user's tree (`WD/.tmp`): new ones are private,
    the user's own are never re-moded.
    """
    missing = [directory for directory in (path, *path.parents) if not directory.exists()]
    for directory in reversed(missing):
        directory.mkdir(mode=PRIVATE_DIR_MODE, exist_ok=True)
        os.chmod(directory, PRIVATE_DIR_MODE)  # mkdir's mode is filtered by the umask
    return path


def private_file(path: Path) -> Path:
    """Create `path` empty if missing, and make it 0600 (existing content is kept)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT, PRIVATE_FILE_MODE)
    try:
        os.fchmod(descriptor, PRIVATE_FILE_MODE)
    finally:
        os.close(descriptor)
    return path


def write_private(path: Path, data: str | bytes) -> Path:
    """Write `data` to `path` (0600) through a temporary file renamed into place."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            os.fchmod(handle.fileno(), PRIVATE_FILE_MODE)
            handle.write(payload)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return path


def hide_process_from_same_user() -> bool:
    """Close this process's /proc files (environ, memory) to other processes of the user.

    For a process that holds the API's master token while agents run as the same user:
    Linux makes a non-dumpable process's /proc/<pid>/environ unreadable to them (and
    refuses them ptrace). Core dumps are off too. False where there is no prctl.
    """
    try:
        import ctypes

        pr_set_dumpable = 4
        return int(ctypes.CDLL(None, use_errno=True).prctl(pr_set_dumpable, 0, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def append_json_line(path: Path, record: object) -> None:
    """Append `record` to `path` as one JSON line, in one write (the file is 0600).

    The one way a CLI's hook or notify program (and the scripted agent) records an event:
    several may fire at once, and one `write` on an `O_APPEND` descriptor keeps lines from
    interleaving, so a reader only ever sees whole records (at worst a last line still
    without its newline).
    """
    line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, PRIVATE_FILE_MODE)
    try:
        os.write(descriptor, line)
    finally:
        os.close(descriptor)
