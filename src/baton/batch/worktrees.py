"""git for the batch: the repository, one worktree and branch per feature, and their removal.

Only `git worktree add` (a new branch `baton/<feature>`, or the existing one on resume),
`git worktree remove` and read-only commands are used: the user's own checkout, index and
branches are never touched. `.baton/` is added to the repository's `info/exclude`, so the
ledger and the worktrees inside it are never seen as changes.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path

from baton.batch.file_lock import exclusive_lock
from baton.errors import ConfigError, GitCommitError

__all__ = [
    "Repository",
    "ensure_worktree",
    "git",
    "is_merged",
    "remove_worktree",
    "reset_worktree",
    "worktree_lock",
]

BATON_DIR = ".baton"
BATCH_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


def git(cwd: Path, *args: str, check: bool = True, env: Mapping[str, str] | None = None) -> str:
    """Run git in `cwd`; its stdout (stripped). GitCommitError with git's last line on failure."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", **(env or {})}
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=120
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise GitCommitError(f"git {args[0]}: {error}") from None
    if check and done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        raise GitCommitError(f"git {' '.join(args[:2])}: {lines[-1] if lines else 'failed'}")
    return done.stdout.strip()


class Repository:
    """The repository a batch works on: its root and where the batch keeps its files."""

    def __init__(self, path: Path) -> None:
        try:
            self.root = Path(git(Path(path), "rev-parse", "--show-toplevel"))
            common = Path(git(Path(path), "rev-parse", "--git-common-dir"))
        except (GitCommitError, FileNotFoundError, NotADirectoryError):
            raise ConfigError(f"--repo: not a git repository: {path}") from None
        self.common_dir = common if common.is_absolute() else (Path(path) / common).resolve()

    def batch_dir(self, batch_id: str) -> Path:
        if not BATCH_ID.match(batch_id):
            raise ConfigError(
                f"batch id {batch_id!r}: use lowercase letters, digits, '.', '_' or '-'"
            )
        return self.root / BATON_DIR / "batches" / batch_id

    def worktree_path(self, batch_id: str, feature: str) -> Path:
        return self.root / BATON_DIR / "worktrees" / batch_id / feature

    def resolve(self, ref: str) -> str:
        """The commit `ref` names; ConfigError when it names none."""
        try:
            return git(self.root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
        except GitCommitError:
            raise ConfigError(f"--base: {ref!r} is not a commit in {self.root}") from None

    def exclude_baton_dir(self) -> None:
        """Keep `.baton/` out of every status of this repository and its worktrees."""
        exclude = self.common_dir / "info" / "exclude"
        exclude.parent.mkdir(parents=True, exist_ok=True)
        text = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
        if f"/{BATON_DIR}/" not in text.splitlines():
            prefix = "" if not text or text.endswith("\n") else "\n"
            with exclude.open("a", encoding="utf-8") as stream:
                stream.write(f"{prefix}/{BATON_DIR}/\n")

    def branch_exists(self, branch: str) -> bool:
        done = git(self.root, "branch", "--list", branch)
        return bool(done.strip())


def worktree_lock(repo: Repository) -> contextlib.AbstractContextManager[None]:
    """One `git worktree` change at a time per repository: git's own bookkeeping in
    `.git/worktrees/` is not safe against a concurrent add and prune, nor two adds (an add
    reads every other worktree's admin folder, which another add may be half-way writing:
    `failed to read .git/worktrees/<name>/commondir`), and a fetch reading an add's
    placeholder HEAD fails its connectivity check."""
    return exclusive_lock(repo.common_dir / "baton-worktrees.lock")


def ensure_worktree(repo_root: Path, worktree: Path, branch: str, base: str) -> None:
    """The feature's worktree on its branch: created from `base`, or re-attached on resume.

    A new feature is one `git worktree add -b` under the lock (every feature of a batch
    queues on it); only when that fails (the branch exists: a resume, or a worktree
    removed by hand) is the bookkeeping pruned and the existing branch checked out.
    """
    if (worktree / ".git").exists():
        return
    repo = Repository(repo_root)
    worktree.parent.mkdir(parents=True, exist_ok=True)
    with worktree_lock(repo):
        try:
            git(repo.root, "worktree", "add", "-q", "-b", branch, str(worktree), base)
            return
        except GitCommitError:
            if not repo.branch_exists(branch):
                raise
        git(repo.root, "worktree", "prune")
        git(repo.root, "worktree", "add", "-q", str(worktree), branch)


def reset_worktree(worktree: Path) -> None:
    """Back to the branch's last commit, Baton's own `.tmp/` (the evidence) kept."""
    git(worktree, "reset", "--hard", "--quiet")
    git(worktree, "clean", "-fdq", "-e", ".tmp")


def remove_worktree(repo_root: Path, worktree: Path) -> None:
    """Remove a feature's worktree (its branch stays)."""
    repo = Repository(repo_root)
    with worktree_lock(repo):
        if worktree.exists():
            git(repo.root, "worktree", "remove", "--force", str(worktree))
        git(repo.root, "worktree", "prune")


def is_merged(repo_root: Path, branch: str, into: str = "HEAD") -> bool:
    """True when every commit of `branch` is already in `into`."""
    done = subprocess.run(
        ["git", "merge-base", "--is-ancestor", branch, into],
        cwd=repo_root,
        capture_output=True,
        timeout=60,
    )
    return done.returncode == 0
