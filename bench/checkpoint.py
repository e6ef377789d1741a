"""What one checkpoint costs a feature job on a shared remote, by the size of the repository.

A job on a shared remote checkpoints before every prompt (docs/scale-out.md): a snapshot
commit of the whole work tree and a fenced push. This bench makes a bare remote and a
host's worktree of `--files` files (30 lines each), then for `--turns` turns changes one
file and adds an answer under `.tmp`, as a turn does, and times Baton's checkpoint
(`snapshot` + `push_fenced`) beside the anchor, a plain `git add -A`, `git commit` and
`git push` of the same change in a clone of its own. Wall time and the CPU of every git
process, median over the turns.

    .venv/bin/python bench/checkpoint.py [--files 3000] [--turns 10]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src")]

from baton.batch.remote_git import checkout_feature, host_clone, push_fenced, snapshot  # noqa: E402

STATE = "codex-3agents-loop-state.json"
IDENTITY = ["-c", "user.name=Bench", "-c", "user.email=bench@localhost"]


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _remote(root: Path, files: int) -> Path:
    source = root / "source"
    for n in range(files):
        path = source / f"pkg{n // 100}" / f"mod{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"value_{n}_{line} = {line}  # {'x' * 40}\n" for line in range(30)))
    (source / ".gitignore").write_text(".tmp/\n")
    _git(source, "init", "-q", "-b", "main")
    _git(source, "add", "-A")
    _git(source, *IDENTITY, "commit", "-q", "-m", "base")
    bare = root / "remote.git"
    _git(root, "clone", "-q", "--bare", str(source), str(bare))
    # A push may start `git gc --auto`: in the foreground, so none outlives the bench.
    _git(bare, "config", "gc.autoDetach", "false")
    return bare


def _cpu() -> float:
    """CPU-seconds of this process and every child it has waited for."""
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _turn(tree: Path, n: int) -> None:
    (tree / "pkg0" / "mod0.py").write_text(f"turn = {n}\n")
    answers = tree / ".tmp" / "run"
    answers.mkdir(parents=True, exist_ok=True)
    (answers / f"{n:03d}-answer.md").write_text(f"answer {n}\n" * 50)


def _timed(turns: int, tree: Path, checkpoint: Callable[[int], None]) -> tuple[float, float]:
    walls, cpus = [], []
    for n in range(turns):
        _turn(tree, n)
        started, cpu = time.perf_counter(), _cpu()
        checkpoint(n)
        walls.append(time.perf_counter() - started)
        cpus.append(_cpu() - cpu)
    return statistics.median(walls) * 1000, statistics.median(cpus) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--turns", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="baton-bench-checkpoint-") as tmp:
        root = Path(tmp)
        bare = _remote(root, args.files)
        size = sum(p.stat().st_size for p in (root / "source").rglob("*.py")) / 1e6
        print(f"{args.files} files, {size:.1f} MB; {args.turns} turns, medians")

        clone = host_clone(str(bare), root / "host")
        worktree = root / "host" / "wt" / "feature"
        checkout_feature(clone, worktree, "baton/feature", "main", STATE)
        expected: list[str | None] = [None]

        def baton(n: int) -> None:
            sha = snapshot(worktree, f"checkpoint {n}")
            push_fenced(worktree, "baton/feature", sha, expected[0], str(bare))
            expected[0] = sha

        plain_tree = root / "plain"
        _git(root, "clone", "-q", str(bare), str(plain_tree))
        _git(plain_tree, "checkout", "-q", "-b", "plain")

        def plain(n: int) -> None:
            _git(plain_tree, "add", "-A", "-f", ".")
            _git(plain_tree, *IDENTITY, "commit", "-q", "-m", f"turn {n}")
            _git(plain_tree, "push", "-q", "origin", "plain")

        for label, tree, checkpoint in (
            ("baton checkpoint", worktree, baton),
            ("git add/commit/push", plain_tree, plain),
        ):
            wall, cpu = _timed(args.turns, tree, checkpoint)
            print(f"  {label:>20}: {wall:6.1f} ms, {cpu:6.1f} ms of CPU")


if __name__ == "__main__":
    main()
