"""A batch whose jobs run on any host: the shared remote and store, seen from the driver.

The driver pushes the batch's base commits to the shared remote (making a bare
repository there first when the URL is a local path that does not exist yet), hands each
job a `RemoteSpec`, reads where each running job is (`<store>/runs/<feature>/where.json`,
written by the job on its host), and fetches every finished branch back into the user's
repository as `baton/<feature>`, so merge, publish and report work as after a local run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from baton.batch.worktrees import Repository, git
from baton.errors import ConfigError, GitCommitError

__all__ = [
    "BASE_REF_PREFIX",
    "HostPlace",
    "base_ref",
    "default_remote",
    "fetch_branch",
    "place_path",
    "prepare_remote",
    "read_place",
]

BASE_REF_PREFIX = "refs/heads/baton-base/"
PLACE_NAME = "where.json"


def default_remote(batch_dir: Path) -> tuple[str, str]:
    """The remote and store of a one-machine Ray batch: both under the batch's folder."""
    return str(batch_dir / "remote.git"), str(batch_dir / "store")


def base_ref(commit: str) -> str:
    """Where a base commit lives on the remote, so every host's clone fetches it."""
    return f"{BASE_REF_PREFIX}{commit}"


def _is_local_path(url: str) -> bool:
    return url.startswith("/") or url.startswith("file://")


def prepare_remote(repo: Repository, url: str, store: str, bases: set[str]) -> None:
    """The remote holds every base commit; the store exists. ConfigError naming the culprit."""
    if _is_local_path(url):
        path = Path(url.removeprefix("file://"))
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                git(path.parent, "init", "-q", "--bare", str(path))
            except GitCommitError as error:
                raise ConfigError(
                    f"--remote {url}: cannot make a bare repository: {error}"
                ) from None
    try:
        Path(store).mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigError(f"--store {store}: {error}") from None
    refspecs = [f"{commit}:{base_ref(commit)}" for commit in sorted(bases)]
    try:
        git(repo.root, "push", "-q", "--no-verify", url, *refspecs)
    except GitCommitError as error:
        raise ConfigError(f"--remote {url}: cannot push the batch's base there: {error}") from None


def fetch_branch(repo: Repository, url: str, branch: str) -> str | None:
    """The remote's `branch` into the user's repository; its sha, None when not there.

    Forced: the remote branch is the feature's result (a checkpoint replaced by its end).
    A branch checked out in one of the user's worktrees is left alone (GitCommitError).
    """
    git(repo.root, "fetch", "-q", "--no-tags", url, f"+refs/heads/{branch}:refs/heads/{branch}")
    found = git(repo.root, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False)
    return found or None


@dataclass(frozen=True)
class HostPlace:
    """Where a feature's job runs now: its host, that host's server, its state file."""

    host: str
    api: str
    state_file: str
    epoch: int


def place_path(store: Path, feature: str) -> Path:
    return store / "runs" / feature / PLACE_NAME


def read_place(store: str, feature: str) -> HostPlace | None:
    """The place the job's current holder wrote; None before it wrote one."""
    try:
        data = json.loads(place_path(Path(store), feature).read_text(encoding="utf-8"))
        return HostPlace(
            str(data["host"]), str(data["api"]), str(data["state_file"]), int(data["epoch"])
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
