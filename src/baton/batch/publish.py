"""`baton batch publish`: push PASS branches to a remote, and open a pull request for each.

Pushing names the branch (`git push REMOTE baton/<f>:baton/<f>`), so the user's checkout
is never touched. Pull requests go through the GitHub REST API (`POST
/repos/{owner}/{repo}/pulls`) at a configurable base URL (GitHub Enterprise, or a local
stand-in in tests) with GITHUB_TOKEN; the title and body are the PASS commit's message.
Results go to `<batch dir>/publish.json`; one failure is one line, the others go on.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

from baton.batch.ledger import BatchRecord, FeatureStatus, now_iso
from baton.batch.worktrees import Repository, git
from baton.errors import ConfigError, GitCommitError
from baton.orchestrator.state import write_json_atomic

__all__ = [
    "GitHub",
    "PublishRequest",
    "PublishResult",
    "github_for",
    "github_repo_of",
    "publish_batch",
    "push_branch",
]

_GITHUB_REMOTE = re.compile(r"github\.com[:/](?P<repo>[^/\s]+/[^/\s]+?)(?:\.git)?/?$")


@dataclass(frozen=True)
class PublishResult:
    feature: str
    branch: str
    pushed: str  # pushed | error: …
    pull_request: str = ""  # its URL, "exists", error: …, or "" when not asked


@dataclass(frozen=True)
class PublishRequest:
    """What `--push REMOTE [--open-prs …]` asks for, on `publish`, `merge` or `run`."""

    remote: str
    open_prs: bool = False
    github_api: str = "https://api.github.com"
    github_repo: str | None = None
    base_branch: str | None = None

    def github(self, repo: Repository, token: str | None) -> GitHub | None:
        """Where pull requests go (None without --open-prs); ConfigError if it can't be told."""
        if not self.open_prs:
            return None
        return github_for(
            repo, self.remote, self.github_api, self.github_repo, self.base_branch, token
        )


@dataclass(frozen=True)
class GitHub:
    """Where pull requests are opened."""

    api: str  # https://api.github.com, or a GitHub Enterprise / test base URL
    repo: str  # owner/name
    token: str
    base_branch: str


def github_repo_of(url: str) -> str | None:
    """`owner/name` of a GitHub remote URL (https or ssh), else None."""
    found = _GITHUB_REMOTE.search(url.strip())
    return found.group("repo") if found else None


def publish_batch(
    repo: Repository, batch: BatchRecord, remote: str, github: GitHub | None
) -> list[PublishResult]:
    """Push every PASS branch (and open its pull request); the results, also saved."""
    results = []
    with httpx.Client(timeout=30) as client:
        for record in batch.features:
            if record.state != FeatureStatus.PASS:
                continue
            pushed = push_branch(repo, remote, record.branch)
            if pushed != "pushed":
                results.append(PublishResult(record.name, record.branch, pushed))
                continue
            pull = _open_pull(client, repo.root, record.branch, github) if github else ""
            results.append(PublishResult(record.name, record.branch, pushed, pull))
    write_json_atomic(
        repo.batch_dir(batch.id) / "publish.json",
        {"remote": remote, "at": now_iso(), "results": [asdict(r) for r in results]},
    )
    return results


def push_branch(repo: Repository, remote: str, branch: str) -> str:
    """`pushed`, or `error: …`: the branch by name, so the user's checkout is never touched."""
    try:
        git(repo.root, "push", "--quiet", remote, f"{branch}:{branch}")
    except GitCommitError as error:
        return f"error: {error}"
    return "pushed"


def _open_pull(client: httpx.Client, root: Path, branch: str, github: GitHub) -> str:
    message = git(root, "log", "-1", "--format=%B", branch)
    title, _, body = message.partition("\n")
    url = f"{github.api.rstrip('/')}/repos/{github.repo}/pulls"
    headers = {
        "Authorization": f"Bearer {github.token}",
        "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28",
    }
    payload = {"title": title, "head": branch, "base": github.base_branch, "body": body.strip()}
    try:
        response = client.post(url, json=payload, headers=headers)
    except httpx.HTTPError as error:
        return f"error: {url}: {error}"
    if response.status_code == 201:
        return str(response.json().get("html_url") or "opened")
    detail = response.text[:200].replace("\n", " ")
    if response.status_code == 422 and "already exists" in detail:
        return "exists"
    return f"error: HTTP {response.status_code}: {detail}"


def github_for(
    repo: Repository,
    remote: str,
    api: str,
    github_repo: str | None,
    base: str | None,
    token: str | None,
) -> GitHub:
    """The pull requests' target, from the options, the remote's URL and the checkout."""
    if not token:
        raise ConfigError("--open-prs: set GITHUB_TOKEN (a token that may open pull requests)")
    if github_repo is None:
        url = git(repo.root, "remote", "get-url", remote, check=False)
        github_repo = github_repo_of(url)
        if github_repo is None:
            raise ConfigError(f"--open-prs: {remote} is not a GitHub URL; give --github-repo")
    base_branch = base or git(repo.root, "rev-parse", "--abbrev-ref", "HEAD")
    return GitHub(api=api, repo=github_repo, token=token, base_branch=base_branch)
