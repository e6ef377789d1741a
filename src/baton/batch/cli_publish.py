"""The publishing options of `baton batch run`, `merge` and `publish`, shared by all three."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from baton.batch.ledger import BatchRecord
    from baton.batch.publish import PublishRequest
    from baton.batch.worktrees import Repository

__all__ = ["publish_and_report", "publish_options", "publish_request"]


def publish_options(required: bool) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """`--push REMOTE` and the pull-request options: the same on publish, merge and run."""
    options = (
        click.option(
            "--push",
            "remote",
            required=required,
            default=None,
            help="The remote to push PASS branches to.",
        ),
        click.option(
            "--open-prs", is_flag=True, help="Open a pull request for each (GITHUB_TOKEN)."
        ),
        click.option("--github-api", default="https://api.github.com", show_default=True),
        click.option(
            "--github-repo", default=None, help="OWNER/NAME (default: from the remote's URL)."
        ),
        click.option(
            "--base-branch", default=None, help="The PRs' base (default: the checkout's)."
        ),
    )

    def apply(command: Callable[..., None]) -> Callable[..., None]:
        for option in reversed(options):
            command = option(command)
        return command

    return apply


def publish_request(
    remote: str | None,
    open_prs: bool,
    github_api: str,
    github_repo: str | None,
    base_branch: str | None,
) -> PublishRequest | None:
    from baton.batch.publish import PublishRequest
    from baton.errors import ConfigError

    if remote is None:
        if open_prs:
            raise ConfigError("--open-prs needs --push REMOTE (a pull request's branch is pushed)")
        return None
    return PublishRequest(remote, open_prs, github_api, github_repo, base_branch)


def publish_and_report(
    repository: Repository, record: BatchRecord, request: PublishRequest
) -> bool:
    """Push (and open pull requests for) the PASS branches; True when every one went."""
    from baton.batch.publish import publish_batch

    github = request.github(repository, os.environ.get("GITHUB_TOKEN"))
    results = publish_batch(repository, record, request.remote, github)
    for result in results:
        extra = f"; pull request: {result.pull_request}" if result.pull_request else ""
        click.echo(f"{result.feature}: {result.pushed}{extra}")
    return not any(r.pushed != "pushed" or r.pull_request.startswith("error") for r in results)
