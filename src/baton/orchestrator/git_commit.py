"""POST_GIT_COMMIT: on PASS, commit exactly what the agents changed, and nothing else.

When a new run starts in a git work tree, its starting point is recorded as a
`git_start` event: the commit (HEAD) and the paths that were already changed or
untracked. A tree that was dirty at start is never committed to (one warning at start),
since the agents' changes could not be told from the person's. On PASS the paths under
WD that differ from the starting commit, or are new and not ignored, are staged and
committed by name; Baton's own files (`WD/.tmp/`, the state file) never are.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baton.errors import GitCommitError
from baton.orchestrator.config import Settings
from baton.orchestrator.events import EventKind, RunEvents
from baton.orchestrator.prompts import EXPLORE_MARKER
from baton.orchestrator.review import extract_test_evidence
from baton.orchestrator.runlog import RunLog
from baton.orchestrator.state import RunState

__all__ = ["GitStart", "commit_message", "commit_on_pass", "record_git_start"]

_EVIDENCE_LINES = 20
_SUBJECT_WIDTH = 72


@dataclass(frozen=True)
class GitStart:
    """Where the work tree stood when the run started."""

    commit: str | None  # None: a repository without any commit yet
    dirty: tuple[str, ...]  # changed or untracked paths (repository-relative), Baton's left out

    @classmethod
    def from_event(cls, record: Mapping[str, Any]) -> GitStart:
        return cls(record.get("commit"), tuple(record.get("dirty") or ()))


class _Git:
    """`git` in one work tree, with literal pathspecs; GitCommitError on failure."""

    def __init__(self, wd: Path) -> None:
        self.wd = wd

    def __call__(self, *args: str, stdin: bytes | None = None) -> str:
        env = {**os.environ, "GIT_LITERAL_PATHSPECS": "1", "GIT_TERMINAL_PROMPT": "0"}
        try:
            completed = subprocess.run(
                ["git", *args],
                cwd=self.wd,
                input=stdin,
                capture_output=True,
                env=env,
                timeout=120,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise GitCommitError(f"git {args[0]}: {error}") from None
        if completed.returncode != 0:
            detail = completed.stderr.decode("utf-8", "replace").strip().splitlines()
            raise GitCommitError(f"git {args[0]} failed: {detail[-1] if detail else 'no output'}")
        return completed.stdout.decode("utf-8", "surrogateescape")

    def root(self) -> Path | None:
        try:
            return Path(self("rev-parse", "--show-toplevel").strip())
        except GitCommitError:
            return None

    def head(self) -> str | None:
        try:
            return self("rev-parse", "--verify", "--quiet", "HEAD").strip() or None
        except GitCommitError:
            return None

    def status_paths(self) -> list[str]:
        """Every changed, staged or untracked path (not ignored), repository-relative."""
        out = self("status", "--porcelain=v1", "-z", "--untracked-files=all")
        entries = out.split("\0")
        paths: list[str] = []
        index = 0
        while index < len(entries):
            entry = entries[index]
            index += 1
            if len(entry) < 4:
                continue
            paths.append(entry[3:])
            if entry[0] in "RC":  # a rename names its source next
                paths.append(entries[index])
                index += 1
        return paths


def _excluded(settings: Settings, root: Path) -> list[str]:
    """Repository-relative prefixes of Baton's own files."""
    own = [settings.wd / ".tmp", settings.state_path]
    prefixes = []
    for path in own:
        try:
            relative = Path(os.path.realpath(path)).relative_to(os.path.realpath(root))
        except ValueError:
            continue
        prefixes.append(relative.as_posix())
    return prefixes


def _keep(path: str, excluded: Sequence[str]) -> bool:
    return not any(path == prefix or path.startswith(prefix + "/") for prefix in excluded)


def record_git_start(settings: Settings, events: RunEvents, log: RunLog) -> GitStart | None:
    """Record a new run's starting point (`git_start`); None when WD is not in git."""
    git = _Git(settings.wd)
    root = git.root()
    if root is None:
        if settings.post_git_commit:
            log.warning(f"POST_GIT_COMMIT: {settings.wd} is not in a git work tree; no commit")
        return None
    try:
        excluded = _excluded(settings, root)
        dirty = tuple(p for p in git.status_paths() if _keep(p, excluded))
    except GitCommitError as error:
        log.warning(f"cannot read the git status of {settings.wd}: {error}")
        return None
    start = GitStart(git.head(), dirty)
    events.emit(EventKind.GIT_START, commit=start.commit, dirty=list(dirty), root=str(root))
    if settings.post_git_commit and dirty:
        shown = ", ".join(dirty[:3]) + (f" and {len(dirty) - 3} more" if len(dirty) > 3 else "")
        log.warning(
            f"POST_GIT_COMMIT: the work tree has uncommitted changes ({shown}); "
            "the change will not be committed on PASS"
        )
    return start


def commit_message(state: RunState, run_name: str) -> str:
    """Subject: the request's first line; body: round, run, and the tester's evidence."""
    before, _, after = state.prompt.partition(EXPLORE_MARKER)
    lines = [line.strip() for line in (before.splitlines() + after.splitlines())]
    subject = next((line for line in lines if line and not line.startswith("***")), "")
    subject = subject or "Change made by a Baton run"
    if len(subject) > _SUBJECT_WIDTH:
        subject = subject[: _SUBJECT_WIDTH - 1].rstrip() + "…"
    evidence = extract_test_evidence(state.outputs.get("tester", ""), _EVIDENCE_LINES)
    body = f"Baton run {run_name}: RESULT: PASS in round {state.current_round}."
    return f"{subject}\n\n{body}\n\nTester evidence:\n{evidence.strip()}\n"


def commit_on_pass(
    settings: Settings,
    state: RunState,
    events: RunEvents,
    earlier: Iterable[Mapping[str, Any]],
    log: RunLog,
) -> str | None:
    """Commit the agents' change after a PASS; the new commit, or None (said why)."""
    starts = [e for e in earlier if e.get("event") == EventKind.GIT_START.value]
    if not starts:
        log.info("POST_GIT_COMMIT: no git starting point recorded for this run; no commit")
        return None
    start = GitStart.from_event(starts[0])
    if start.dirty:
        log.info("POST_GIT_COMMIT: not committing; the work tree was dirty when the run started")
        return None
    git = _Git(settings.wd)
    try:
        root = git.root()
        if root is None:
            raise GitCommitError(f"{settings.wd} is no longer in a git work tree")
        excluded = _excluded(settings, root)
        paths = _changed_paths(git, start, excluded)
        if not paths:
            log.info("POST_GIT_COMMIT: the agents changed no files; nothing to commit")
            return None
        listed = "\0".join(paths).encode("utf-8", "surrogateescape") + b"\0"
        git = _Git(root)  # the paths are repository-relative
        git("add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul", stdin=listed)
        message = commit_message(state, Path(state.archive_dir or "run").name)
        git(
            "commit",
            "--quiet",
            f"--message={message}",
            "--pathspec-from-file=-",
            "--pathspec-file-nul",
            stdin=listed,
        )
        commit = git("rev-parse", "HEAD").strip()
    except GitCommitError as error:
        log.warning(f"POST_GIT_COMMIT: no commit: {error}")
        return None
    events.emit(EventKind.GIT_COMMIT, commit=commit, files=paths)
    log.info(f"POST_GIT_COMMIT: committed {len(paths)} file(s) as {commit[:12]}")
    return commit


def _changed_paths(git: _Git, start: GitStart, excluded: Sequence[str]) -> list[str]:
    """Paths under WD that differ from the starting commit, or are new and not ignored."""
    found: set[str] = set()
    if start.commit is not None:
        diff = git("diff", "--name-only", "-z", "--no-renames", start.commit, "--", ".")
        found.update(p for p in diff.split("\0") if p)
    else:
        found.update(p for p in git("ls-files", "-z", "--full-name", "--", ".").split("\0") if p)
    others = git("ls-files", "-z", "--others", "--exclude-standard", "--full-name", "--", ".")
    found.update(p for p in others.split("\0") if p)
    return sorted(p for p in found if _keep(p, excluded))
