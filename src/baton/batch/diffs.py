"""Each feature's change as a diff, file by file, for the batch report.

A PASS feature's change is its commit (`base..commit` on its branch). Any other feature's
is what its worktree holds against its base: the agents' edits to tracked files and the
files they added (the loop's own records under `.tmp/` left out). Read-only git only.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from baton.batch.ledger import FeatureRecord
from baton.batch.worktrees import git
from baton.errors import GitCommitError

__all__ = ["FeatureDiff", "FileDiff", "feature_diff", "parse_diff"]

_MAX_CHARS = 400_000  # per feature: a page one can still open
_RECORDS = ".tmp/"
_DIFF = ("--no-color", "--no-ext-diff", "--no-renames")
_HEADER = re.compile(r"^diff --git a/(.*) b/(.*)$")


@dataclass
class FileDiff:
    """One file's part of a diff: its path, counts, and its lines with their kind."""

    path: str
    added: int = 0
    removed: int = 0
    lines: list[tuple[str, str]] = field(default_factory=list)  # (add|del|hunk|meta|ctx, text)


@dataclass
class FeatureDiff:
    """What a feature changed, and a note when that could not be read (or was cut)."""

    source: str  # "commit abc123" or "worktree"
    files: list[FileDiff] = field(default_factory=list)
    note: str = ""


def parse_diff(text: str) -> list[FileDiff]:
    """`git diff` output split per file; every line kept as text, classed for colour."""
    files: list[FileDiff] = []
    for line in text.splitlines():
        match = _HEADER.match(line)
        if match:
            files.append(FileDiff(path=match.group(2)))
        if not files:
            continue
        current = files[-1]
        if match or line.startswith(("index ", "--- ", "+++ ", "new file", "deleted file")):
            kind = "meta"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind, current.added = "add", current.added + 1
        elif line.startswith("-"):
            kind, current.removed = "del", current.removed + 1
        else:
            kind = "ctx"
        current.lines.append((kind, line))
    return files


def feature_diff(record: FeatureRecord, repo_root: Path) -> FeatureDiff:
    """The feature's change against its base; an empty one with a note when unreadable."""
    worktree = Path(record.worktree)
    try:
        if record.commit:
            text = git(repo_root, "diff", *_DIFF, f"{record.base}..{record.commit}")
            source = f"commit {record.commit[:12]}"
        elif worktree.is_dir():
            text = _worktree_diff(worktree, record.base)
            source = "worktree"
        else:
            return FeatureDiff("worktree", note="no worktree and no commit: nothing to show")
    except GitCommitError as error:
        return FeatureDiff("", note=str(error))
    note = ""
    if len(text) > _MAX_CHARS:
        text = text[:_MAX_CHARS].rsplit("\n", 1)[0]
        note = f"cut at {_MAX_CHARS} characters; the whole diff: git diff {record.base[:12]}"
    return FeatureDiff(source, parse_diff(text), note)


def _worktree_diff(worktree: Path, base: str) -> str:
    tracked = git(worktree, "diff", *_DIFF, base, "--", ".", f":!{_RECORDS}")
    added = [
        path
        for path in git(worktree, "ls-files", "--others", "--exclude-standard").splitlines()
        if path and not path.startswith(_RECORDS)
    ]
    parts = [tracked] if tracked else []
    for path in added:
        done = subprocess.run(
            ["git", "diff", *_DIFF, "--no-index", "--", "/dev/null", path],
            cwd=worktree,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=60,
        )
        parts.append(done.stdout.strip())
    return "\n".join(parts)
