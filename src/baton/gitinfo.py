"""What git says about the working directory: the commit a run starts from, the change since.

Both answers are best effort: a directory that is not a git repository (or a machine
without git) gives `None`, never an error, because the run and its report go on without it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = ["diff_stat", "git_head"]

_TIMEOUT = 30


def _git(wd: Path, *args: str) -> str | None:
    try:
        completed = subprocess.run(
            ["git", "-C", str(wd), *args],
            capture_output=True,
            text=True,
            timeout=_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return completed.stdout if completed.returncode == 0 else None


def git_head(wd: Path) -> str | None:
    """The commit `HEAD` names in `wd`, or None (not a repository, no commit yet, no git)."""
    output = _git(Path(wd), "rev-parse", "--verify", "--quiet", "HEAD")
    head = (output or "").strip()
    return head or None


def diff_stat(wd: Path, base: str) -> str | None:
    """`git diff --stat <base>` in `wd` (the working tree against where the run started).

    Untracked files are not in a plain diff; they are listed after it, so files the agents
    created are not missing from the change. None when git cannot say.
    """
    if not base or base.startswith("-"):
        return None
    stat = _git(Path(wd), "diff", "--stat", base, "--")
    if stat is None:
        return None
    untracked = _git(Path(wd), "ls-files", "--others", "--exclude-standard")
    lines = [
        line for line in (untracked or "").splitlines() if line and not line.startswith(".tmp/")
    ]
    if lines:
        stat += "untracked (new) files:\n" + "".join(f"  {line}\n" for line in lines)
    return stat
