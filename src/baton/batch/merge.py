"""`baton batch merge`: every PASS branch into `baton/integration`, tested after each merge.

The merges happen in the batch's own integration worktree
(`.baton/worktrees/<id>/_integration`, on `baton/integration`, from the batch's base), so
the user's checkout is never touched. A merge that conflicts is aborted and left out with
the conflicting paths; a merge after which the test command fails is undone and left out
with the test's last line. Branches already in `baton/integration` are skipped, so merge
can run again as more features pass. The results go to `<batch dir>/merge.json`.
"""

from __future__ import annotations

import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from baton.batch.ledger import BatchRecord, FeatureStatus, now_iso
from baton.batch.worktrees import Repository, ensure_worktree, git, is_merged
from baton.errors import GitCommitError
from baton.orchestrator.state import write_json_atomic

__all__ = ["INTEGRATION_BRANCH", "MergeResult", "merge_batch"]

INTEGRATION_BRANCH = "baton/integration"
_IDENTITY = ("-c", "user.name=Baton", "-c", "user.email=baton@localhost")
_TEST_TIMEOUT_SECONDS = 1800


@dataclass(frozen=True)
class MergeResult:
    feature: str
    branch: str
    outcome: str  # merged | already merged | conflict | tests failed | error
    detail: str = ""


def merge_batch(
    repo: Repository, batch: BatchRecord, test_command: str | None
) -> tuple[Path, list[MergeResult]]:
    """Merge every PASS feature in ledger order; the integration worktree and the results."""
    worktree = repo.worktree_path(batch.id, "_integration")
    ensure_worktree(repo.root, worktree, INTEGRATION_BRANCH, batch.base_commit)
    identity = () if _has_identity(worktree) else _IDENTITY
    results = []
    for record in batch.features:
        if record.state != FeatureStatus.PASS:
            continue
        if is_merged(worktree, record.branch):
            results.append(MergeResult(record.name, record.branch, "already merged"))
            continue
        results.append(_merge_one(worktree, record.name, record.branch, identity, test_command))
    write_json_atomic(
        repo.batch_dir(batch.id) / "merge.json",
        {
            "branch": INTEGRATION_BRANCH,
            "worktree": str(worktree),
            "at": now_iso(),
            "results": [asdict(r) for r in results],
        },
    )
    return worktree, results


def _has_identity(worktree: Path) -> bool:
    return bool(git(worktree, "config", "user.email", check=False))


def _merge_one(
    worktree: Path, name: str, branch: str, identity: tuple[str, ...], test_command: str | None
) -> MergeResult:
    message = f"Merge {branch} (baton batch)"
    try:
        git(worktree, *identity, "merge", "--no-ff", "--no-edit", "-m", message, branch)
    except GitCommitError:
        conflicts = git(worktree, "diff", "--name-only", "--diff-filter=U", check=False)
        git(worktree, "merge", "--abort", check=False)
        paths = ", ".join(conflicts.split()) or "see git"
        return MergeResult(name, branch, "conflict", f"conflicts in {paths}")
    if test_command:
        code, last = _run_tests(worktree, test_command)
        if code != 0:
            git(worktree, "reset", "--hard", "--quiet", "HEAD~1")
            return MergeResult(name, branch, "tests failed", f"exit {code}: {last}")
    return MergeResult(name, branch, "merged", git(worktree, "rev-parse", "--short", "HEAD"))


def _run_tests(worktree: Path, command: str) -> tuple[int, str]:
    try:
        done = subprocess.run(
            command,
            shell=True,
            cwd=worktree,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_TEST_TIMEOUT_SECONDS,
        )
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {_TEST_TIMEOUT_SECONDS} s"
    lines = (done.stdout + done.stderr).strip().splitlines()
    return done.returncode, lines[-1] if lines else ""
