"""What another user could read: files not private, secrets on command lines."""

from __future__ import annotations

import stat
from pathlib import Path

__all__ = ["command_lines_containing", "not_private"]


def not_private(root: Path) -> dict[str, str]:
    """Every file under `root` (itself included) not 0600 and directory not 0700: path -> mode.

    Sockets and symlinks are left out (their modes are not what guards them).
    """
    wrong: dict[str, str] = {}
    for path in [root, *root.rglob("*")]:
        if path.is_socket() or path.is_symlink():
            continue
        try:
            mode = stat.S_IMODE(path.lstat().st_mode)
        except FileNotFoundError:
            continue  # removed while walking (a temporary file renamed into place)
        wanted = 0o700 if path.is_dir() else 0o600
        if mode != wanted:
            wrong[str(path.relative_to(root))] = oct(mode)
    return wrong


def command_lines_containing(secret: str) -> dict[int, str]:
    """The processes whose command line shows `secret` (`ps` shows them to everyone)."""
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            line = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if secret.encode() in line:
            found[int(entry.name)] = line.replace(b"\0", b" ").decode("utf-8", "replace")
    return found
