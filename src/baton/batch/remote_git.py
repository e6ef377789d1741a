"""git for a feature job on any host: a host-local clone of the shared remote, the feature's
worktree restored from its last checkpoint, and fenced checkpoint pushes.

A checkpoint is one commit whose parent is the feature's real HEAD (the base, or the PASS
commit) and whose tree is the whole work tree, Baton's `.tmp/` included (the state file,
the run record, the archive, any answer file an agent left; lock and temp files left out).
It is pushed to `baton/<feature>` on the remote, replacing the previous checkpoint, with
`--force-with-lease=<ref>:<the sha this holder last saw>`: a compare-and-swap, so a stale
holder can never overwrite newer work. The final push replaces the checkpoint with the
real HEAD, so the branch ends exactly as a local run leaves it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

from baton.batch.file_lock import exclusive_lock
from baton.batch.worktrees import git
from baton.errors import GitCommitError, LeaseLost, StateFileError
from baton.orchestrator.state import read_state_json, write_json_atomic

__all__ = [
    "CHECKPOINT_TRAILER",
    "MARK_NAME",
    "checkout_feature",
    "clone_lock",
    "host_clone",
    "push_fenced",
    "remote_sha",
    "snapshot",
]

CHECKPOINT_TRAILER = "Baton-Checkpoint"
MARK_NAME = "baton-checkpoint.json"  # in .tmp: the remote sha this worktree is at
_NOT_IN_A_CHECKPOINT = (  # Baton's own files in .tmp that are no part of the work
    ":(exclude,glob).tmp/**/*.lock",
    ":(exclude,glob).tmp/**/.*.tmp",
    ":(exclude,glob).tmp/**/*.ack",
    ":(exclude,glob).tmp/**/*.want",
    ":(exclude,glob).tmp/**/batch-loop.json",  # this host's process, not the work
)
_IDENTITY = {
    "GIT_AUTHOR_NAME": "Baton",
    "GIT_AUTHOR_EMAIL": "baton@localhost",
    "GIT_COMMITTER_NAME": "Baton",
    "GIT_COMMITTER_EMAIL": "baton@localhost",
}


def clone_lock(clone: Path) -> contextlib.AbstractContextManager[None]:
    """The host's lock on its clone: fetches and worktree changes take it, one at a time.

    `git worktree add` writes a placeholder HEAD before the real one, and a fetch's
    connectivity check reads every worktree's HEAD: side by side, the fetch fails with
    "did not send all necessary objects".
    """
    return exclusive_lock(clone.parent / f"{clone.name}.lock")


def host_clone(url: str, work_root: Path) -> Path:
    """This host's clone of the remote (made once, fetched on every call); its path.

    The clone is made beside its place and renamed into it once complete: a job killed
    mid-clone (its host lost) leaves no half-made repository that every later job on the
    host would fail to fetch into. One an older run left half-made is made again.
    """
    digest = hashlib.sha256(url.encode()).hexdigest()[:12]
    clone = work_root / "repos" / digest
    with clone_lock(clone):
        if (clone / ".git").is_dir() and not _is_repository(clone):
            shutil.rmtree(clone)
        if (clone / ".git").is_dir():
            git(clone, "fetch", "-q", "--prune", "origin")
        else:
            _clone_into_place(url, clone)
        if not git(clone, "config", "user.email", check=False):
            git(clone, "config", "user.name", "Baton")
            git(clone, "config", "user.email", f"baton@{socket.gethostname()}")
    return clone


def _is_repository(clone: Path) -> bool:
    """Whether git reads `clone` as a repository of its own (a half-made one it does not)."""
    found = git(clone, "rev-parse", "--absolute-git-dir", check=False)
    return bool(found) and Path(found).resolve() == (clone / ".git").resolve()


def _clone_into_place(url: str, clone: Path) -> None:
    """`git clone` beside `clone`, renamed into place once complete (under the clone lock)."""
    partial = clone.with_name(f".{clone.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)  # one a killed job left
    shutil.rmtree(clone, ignore_errors=True)  # a directory with no repository in it
    clone.parent.mkdir(parents=True, exist_ok=True)
    git(clone.parent, "clone", "-q", "--no-checkout", url, partial.name)
    partial.rename(clone)


def remote_sha(clone: Path, branch: str) -> str | None:
    """The branch's sha on the remote as last fetched; None when it is not there."""
    found = git(
        clone, "rev-parse", "--verify", "--quiet", f"refs/remotes/origin/{branch}", check=False
    )
    return found or None


def _is_checkpoint(clone: Path, sha: str) -> bool:
    message = git(clone, "log", "-1", "--format=%B", sha)
    return f"\n{CHECKPOINT_TRAILER}:" in f"\n{message}"


def _mark(worktree: Path) -> dict[str, Any]:
    try:
        data = json.loads((worktree / ".tmp" / MARK_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_mark(worktree: Path, sha: str | None, **extra: Any) -> None:
    """Record which remote sha this worktree matches (a rerun here may keep it)."""
    write_json_atomic(worktree / ".tmp" / MARK_NAME, {**_mark(worktree), "sha": sha, **extra})


def checkout_feature(
    clone: Path, worktree: Path, branch: str, base: str, state_name: str
) -> str | None:
    """The feature's worktree as the remote has it; the remote sha (None: a new feature).

    A worktree this host already has is kept when the remote still holds what it last
    pushed or restored (it is then at least as new); otherwise it is made again from the
    remote: a checkpoint's parent as HEAD and its tree as the work tree, or the base.
    """
    sha = remote_sha(clone, branch)
    if (worktree / ".git").exists() and _mark(worktree).get("sha", "") == sha:
        return sha
    with clone_lock(clone):
        if worktree.exists():
            git(clone, "worktree", "remove", "--force", str(worktree), check=False)
            shutil.rmtree(worktree, ignore_errors=True)
        git(clone, "worktree", "prune")
        worktree.parent.mkdir(parents=True, exist_ok=True)
        if sha is None:
            git(clone, "worktree", "add", "-q", "-B", branch, str(worktree), base)
        elif not _is_checkpoint(clone, sha):
            git(clone, "worktree", "add", "-q", "-B", branch, str(worktree), sha)
        else:
            git(
                clone,
                "worktree",
                "add",
                "-q",
                "--no-checkout",
                "-B",
                branch,
                str(worktree),
                f"{sha}^",
            )
            git(worktree, "read-tree", "-u", "--reset", sha)  # the snapshot, .tmp included
            git(worktree, "reset", "-q")  # the index back to HEAD: the work is uncommitted again
    _rehome_state(worktree / ".tmp" / state_name, worktree)
    write_mark(worktree, sha, restored_from=sha)
    return sha


def _rehome_state(state_file: Path, worktree: Path) -> None:
    """Point a restored state file's paths (wd, archive, answers) at this host's worktree."""
    if not state_file.is_file():
        return
    data = read_state_json(state_file)
    old = str(data.get("wd") or "")
    new = str(worktree.resolve())
    if not old or old == new:
        return

    def moved(value: Any) -> Any:
        if isinstance(value, str) and (value == old or value.startswith(old + "/")):
            return new + value[len(old) :]
        if isinstance(value, dict):
            return {key: moved(item) for key, item in value.items()}
        if isinstance(value, list):
            return [moved(item) for item in value]
        return value

    try:
        write_json_atomic(state_file, moved(data))
    except OSError as error:
        raise StateFileError(
            f"cannot rewrite the restored state file {state_file}: {error}"
        ) from None


def _git_dir(worktree: Path) -> Path:
    """The worktree's own git directory, read from its `.git` file (no git process: a
    checkpoint runs before every prompt)."""
    dot_git = worktree / ".git"
    if dot_git.is_dir():
        return dot_git
    with contextlib.suppress(OSError):
        text = dot_git.read_text(encoding="utf-8").strip()
        if text.startswith("gitdir: "):
            found = Path(text.removeprefix("gitdir: "))
            return found if found.is_absolute() else (worktree / found).resolve()
    return Path(git(worktree, "rev-parse", "--absolute-git-dir"))


def snapshot(worktree: Path, message: str) -> str:
    """A checkpoint commit of the whole work tree on top of HEAD (HEAD itself is not moved).

    Its index is HEAD's tree read over the index the last checkpoint left: the entries
    HEAD shares with it keep their file stats, so `git add` hashes only the files changed
    since (an index read from HEAD alone has none: each checkpoint, one per turn, hashed
    the whole repository again; now only a worktree's first does). It is the job's own,
    never the worktree's, so nothing an agent stages or marks there changes a checkpoint.
    """
    index = _git_dir(worktree) / "baton-checkpoint.index"
    env = {"GIT_INDEX_FILE": str(index)}
    try:
        git(worktree, "read-tree", "--reset", "HEAD", env=env)
        # `.tm[p]`, not `.tmp`: git fails an add whose pathspec names an ignored path
        # outright, so a project that ignores `.tmp/` could never checkpoint.
        git(worktree, "add", "-A", "--", ".", ":(exclude,glob).tm[p]/**", env=env)
        if (worktree / ".tmp").is_dir():
            git(worktree, "add", "-A", "-f", "--", ".tmp", *_NOT_IN_A_CHECKPOINT, env=env)
        tree = git(worktree, "write-tree", env=env)
    except GitCommitError:
        for stale in (index, index.with_name(f"{index.name}.lock")):  # the next starts anew
            with contextlib.suppress(OSError):
                stale.unlink()
        raise
    text = f"{message}\n\n{CHECKPOINT_TRAILER}: 1\n"
    return git(worktree, "commit-tree", tree, "-p", "HEAD", "-m", text, env=_IDENTITY)


def push_fenced(
    worktree: Path, branch: str, sha: str, expected: str | None, url: str | None = None
) -> None:
    """Push `sha` to the remote branch (at `url`, default origin's) only if the branch is
    still at `expected`.

    LeaseLost when the remote refused it (someone else moved the branch); GitCommitError
    for any other failure. It pushes to the remote's URL, not to `origin`, so it leaves
    the clone's `refs/remotes/origin/*` alone: they are written only by `host_clone`'s
    fetch, under the host's lock, which a push beside it would otherwise race.
    """
    ref = f"refs/heads/{branch}"
    lease = f"--force-with-lease={ref}:{expected or ''}"
    url = url or git(worktree, "remote", "get-url", "--push", "origin")
    command = ["git", "push", "--porcelain", "--no-verify", lease, url, f"{sha}:{ref}"]
    try:
        done = subprocess.run(
            command,
            cwd=worktree,
            capture_output=True,
            text=True,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
            timeout=120,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise GitCommitError(f"git push: {error}") from None
    if done.returncode == 0:
        return
    said = f"{done.stdout}\n{done.stderr}"
    if "stale info" in said or "[rejected]" in said or "fetch first" in said:
        raise LeaseLost(f"the push to {branch} was refused: the remote branch moved")
    lines = done.stderr.strip().splitlines()
    raise GitCommitError(f"git push {branch}: {lines[-1] if lines else 'failed'}")
