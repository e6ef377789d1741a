"""`baton batch clean`, `merge`, `report` and `publish`: what is done with a batch's results."""

from __future__ import annotations

import os
from pathlib import Path

import click

from baton.batch.cli_options import exit_with, repo_option
from baton.batch.cli_publish import publish_and_report, publish_options, publish_request

__all__ = ["clean", "merge", "publish", "report"]


@click.command()
@click.argument("batch_id", metavar="ID")
@click.option("--all", "finished", is_flag=True, help="Every finished feature, merged or not.")
@repo_option
def clean(batch_id: str, finished: bool, repo: Path) -> None:
    """Remove the worktrees of batch ID's merged features (branches stay)."""

    def action() -> int:
        from baton.batch.commands import clean_batch
        from baton.batch.worktrees import Repository

        removed = clean_batch(Repository(repo), batch_id, finished=finished)
        click.echo(f"removed {len(removed)} worktree(s): {', '.join(removed) or 'none'}")
        return 0

    exit_with(action)


@click.command()
@click.argument("batch_id", metavar="ID")
@click.option(
    "--test-cmd",
    default=None,
    help="Run after each merge; a failing merge is undone (default: PROJECT_TEST_CMD).",
)
@publish_options(required=False)
@repo_option
def merge(
    batch_id: str,
    test_cmd: str | None,
    remote: str | None,
    open_prs: bool,
    github_api: str,
    github_repo: str | None,
    base_branch: str | None,
    repo: Path,
) -> None:
    """Merge batch ID's PASS branches into baton/integration, testing after each merge.

    With --push REMOTE, the PASS branches and baton/integration are pushed too (and with
    --open-prs, a pull request is opened for each PASS branch).
    """

    def action() -> int:
        from baton.batch.commands import load_batch
        from baton.batch.merge import INTEGRATION_BRANCH, merge_batch
        from baton.batch.publish import push_branch
        from baton.batch.worktrees import Repository

        repository = Repository(repo)
        _, record = load_batch(repository, batch_id)
        request = publish_request(remote, open_prs, github_api, github_repo, base_branch)
        if request is not None:
            request.github(repository, os.environ.get("GITHUB_TOKEN"))  # refused before merging
        command = test_cmd or os.environ.get("PROJECT_TEST_CMD") or None
        worktree, results = merge_batch(repository, record, command)
        for result in results:
            click.echo(f"{result.feature}: {result.outcome} {result.detail}".rstrip())
        click.echo(f"{INTEGRATION_BRANCH} in {worktree}")
        left = [r for r in results if r.outcome not in ("merged", "already merged")]
        published = True
        if request is not None:
            published = publish_and_report(repository, record, request)
            pushed = push_branch(repository, request.remote, INTEGRATION_BRANCH)
            click.echo(f"{INTEGRATION_BRANCH}: {pushed}")
            published = published and pushed == "pushed"
        return 1 if left or not published else 0

    exit_with(action)


@click.command()
@click.argument("batch_id", metavar="ID")
@repo_option
def report(batch_id: str, repo: Path) -> None:
    """Write batch ID's report: one self-contained HTML page beside its ledger."""

    def action() -> int:
        from baton.batch.commands import load_batch
        from baton.batch.report import write_report
        from baton.batch.worktrees import Repository

        ledger, record = load_batch(Repository(repo), batch_id)
        click.echo(f"report: {write_report(record, ledger.path)}")
        return 0

    exit_with(action)


@click.command()
@click.argument("batch_id", metavar="ID")
@publish_options(required=True)
@repo_option
def publish(
    batch_id: str,
    remote: str,
    open_prs: bool,
    github_api: str,
    github_repo: str | None,
    base_branch: str | None,
    repo: Path,
) -> None:
    """Push batch ID's PASS branches to REMOTE; with --open-prs, a pull request for each."""

    def action() -> int:
        from baton.batch.commands import load_batch
        from baton.batch.publish import PublishRequest
        from baton.batch.worktrees import Repository

        repository = Repository(repo)
        _, record = load_batch(repository, batch_id)
        request = PublishRequest(remote, open_prs, github_api, github_repo, base_branch)
        return 0 if publish_and_report(repository, record, request) else 1

    exit_with(action)
