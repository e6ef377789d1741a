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

from baton.batch.job import DEFAULT_STATE_FILE_NAME, RemoteSpec, close_session_of
from baton.batch.ledger import FeatureRecord
from baton.batch.worktrees import Repository, git, worktree_lock
from baton.errors import ConfigError, GitCommitError
from baton.orchestrator.runlog import RunLog

__all__ = [
    "BASE_REF_PREFIX",
    "HostPlace",
    "SharedRemote",
    "base_ref",
    "fetch_branch",
    "place_path",
    "prepare_remote",
    "read_place",
]

BASE_REF_PREFIX = "refs/heads/baton-base/"
PLACE_NAME = "where.json"


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
    with worktree_lock(repo):  # a worktree being added beside it fails the fetch
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


@dataclass(frozen=True)
class SharedRemote:
    """A batch's jobs on any host, seen from its driver: the shared git remote and store."""

    url: str
    store: str

    @classmethod
    def in_batch(cls, batch_dir: Path) -> SharedRemote:
        """The remote and store of a one-machine Ray batch: both under the batch's folder."""
        return cls(str(batch_dir / "remote.git"), str(batch_dir / "store"))

    def describe(self) -> str:
        return f"the remote {self.url} (store {self.store})"

    def spec(self, lease_ttl: float) -> RemoteSpec:
        """What a job needs to run from this remote on any host."""
        return RemoteSpec(self.url, self.store, lease_ttl=lease_ttl)

    def prepare(self, repo: Repository, bases: set[str]) -> None:
        """Every base commit pushed to the remote, the store made (ConfigError otherwise)."""
        prepare_remote(repo, self.url, self.store, bases)

    def place(self, feature: str) -> HostPlace | None:
        return read_place(self.store, feature)

    def close_session(self, feature: str) -> bool:
        """Close the feature's session on the server of the host it ran on; False when
        no host wrote where it runs (the job was local)."""
        place = self.place(feature)
        if place is None:
            return False
        close_session_of(Path(place.state_file), place.api, None)
        return True

    def bring_back(self, repo: Repository, record: FeatureRecord, log: RunLog) -> None:
        """A finished branch into the user's repository, its run record kept beside it."""
        try:
            fetch_branch(repo, self.url, record.branch)
        except GitCommitError as error:
            log.warning(f"{record.name}: {record.branch} not fetched from {self.url}: {error}")
        kept = Path(self.store) / "runs" / record.name / DEFAULT_STATE_FILE_NAME
        if kept.is_file():
            record.state_file = str(kept)
