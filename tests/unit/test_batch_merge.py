"""`baton batch merge`: PASS branches into baton/integration, real git, the checkout untouched."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from baton.batch.backlog import Backlog, Feature
from baton.batch.ledger import FeatureStatus, new_batch
from baton.batch.merge import merge_batch
from baton.batch.options import BatchOptions
from baton.batch.worktrees import Repository

PROMPT = "p\n*** ORIGINAL EXPLORE SUMMARY ***\nx\n*** SCENARIO TEST ***\ny\n"


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def _branch(repo: Path, name: str, files: dict[str, str]) -> None:
    _git(repo, "switch", "-q", "-c", name, "main")
    for path, text in files.items():
        (repo / path).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", name)
    _git(repo, "switch", "-q", "main")


def test_pass_branches_merge_in_order_conflicts_and_test_failures_are_left_out(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "shared.txt").write_text("base\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    _branch(repo, "baton/a", {"a.txt": "a\n", "shared.txt": "from a\n"})
    _branch(repo, "baton/b", {"b.txt": "b\n"})
    _branch(repo, "baton/c", {"shared.txt": "from c\n"})  # conflicts with a
    _branch(repo, "baton/d", {"broken": "x\n"})  # the test fails with it
    _branch(repo, "baton/e", {"e.txt": "e\n"})  # FAIL: never merged
    repository = Repository(repo)
    repository.exclude_baton_dir()
    names = "abcde"
    backlog = Backlog(tmp_path / "backlog", tuple(Feature(n, PROMPT) for n in names))
    batch = new_batch(repository, "b", backlog, "main", BatchOptions(parallel=1))
    for name in names:
        batch.feature(name).move(FeatureStatus.RUNNING)
        batch.feature(name).move(FeatureStatus.FAIL if name == "e" else FeatureStatus.PASS)

    worktree, results = merge_batch(repository, batch, "test ! -e broken")
    outcomes = {r.feature: (r.outcome, r.detail) for r in results}
    assert outcomes["a"][0] == "merged" and outcomes["b"][0] == "merged"
    assert outcomes["c"] == ("conflict", "conflicts in shared.txt")
    assert outcomes["d"][0] == "tests failed"
    assert "e" not in outcomes
    assert sorted(p.name for p in worktree.iterdir() if p.suffix == ".txt") == [
        "a.txt",
        "b.txt",
        "shared.txt",
    ]
    assert _git(worktree, "status", "--porcelain") == ""  # nothing half-merged left
    # The user's checkout stays where it was.
    assert _git(repo, "branch", "--show-current") == "main"
    assert _git(repo, "status", "--porcelain") == ""
    assert not (repo / "a.txt").exists()
    saved = json.loads((repository.batch_dir("b") / "merge.json").read_text())
    assert [r["outcome"] for r in saved["results"]] == [
        "merged",
        "merged",
        "conflict",
        "tests failed",
    ]

    _, again = merge_batch(repository, batch, "test ! -e broken")
    assert [r.outcome for r in again][:2] == ["already merged", "already merged"]

    from baton.batch.commands import clean_batch
    from baton.batch.worktrees import ensure_worktree

    for name in "ac":
        record = batch.feature(name)
        ensure_worktree(repo, Path(record.worktree), record.branch, record.base)
    from baton.batch.ledger import Ledger, ledger_path

    Ledger(ledger_path(repository, "b")).save(batch)
    assert clean_batch(repository, "b", finished=False) == ["a"]  # in baton/integration
