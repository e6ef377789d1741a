"""`baton batch …`: the click group and the commands that run and follow a batch.

What is done with its results afterwards is in `cli_results.py`; the work itself is in
`commands.py`.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from baton.batch.cli_options import exit_with, repo_option
from baton.batch.cli_publish import publish_and_report, publish_options, publish_request
from baton.batch.cli_results import clean, merge, publish, report
from baton.batch.limits import default_parallel

__all__ = ["batch"]


def _pairs(values: tuple[str, ...], option: str) -> dict[str, str]:
    from baton.errors import ConfigError

    pairs = {}
    for value in values:
        key, sep, text = value.partition("=")
        if not sep or not key:
            raise ConfigError(f"{option} {value!r}: expected KEY=VALUE")
        pairs[key.strip()] = text
    return pairs


def _shared_url(url: str | None) -> str | None:
    """A local path as an absolute one (every host resolves it alike); a URL as given."""
    if url is None or "://" in url or (":" in url and not url.startswith(("/", "."))):
        return url
    return str(Path(url).resolve())


@click.group()
def batch() -> None:
    """Many features at once, each a `baton run` in its own git worktree and branch."""


for results_command in (clean, merge, report, publish):  # in cli_results.py
    batch.add_command(results_command)


@batch.command(context_settings={"max_content_width": 100})
@click.argument("backlog", type=click.Path(path_type=Path, exists=True))
@repo_option
@click.option("--base", default="HEAD", show_default=True, help="The ref every branch starts from.")
@click.option("--id", "batch_id", default=None, help="The batch's id (default: backlog name).")
@click.option(
    "--parallel",
    type=click.IntRange(min=1),
    default=None,
    help=f"Loops at once (default here: {default_parallel()}; see docs/batch.md).",
)
@click.option("--provider-cap", multiple=True, help="PROVIDER=N: at most N loops using it.")
@click.option("--max-cost-usd", type=click.FloatRange(min=0), help="Budget for the whole batch.")
@click.option("--max-tokens", type=click.IntRange(min=1), help="Token budget for the batch.")
@click.option("--api", default=None, help="Use this server (default: start one for the batch).")
@click.option("--keep-agents", is_flag=True, help="Leave each loop's agents running at its end.")
@click.option("--set", "settings", multiple=True, help="KEY=VALUE: a `baton run` setting for all.")
@publish_options(required=False)
@click.option(
    "--backend",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="Where loops run: this machine, or a Ray cluster's hosts (docs/scale-out.md).",
)
@click.option(
    "--address",
    default=None,
    help="The Ray cluster (default: RAY_ADDRESS, the one `ray start` set up, else a local one).",
)
@click.option(
    "--remote",
    "shared_remote",
    default=None,
    metavar="URL",
    help="Jobs on any host: the shared git remote (default on Ray: a bare one in the batch).",
)
@click.option(
    "--store",
    default=None,
    type=click.Path(path_type=Path),
    help="Jobs on any host: a folder every host reaches (default on Ray: one in the batch).",
)
@click.option(
    "--lease-ttl",
    type=click.FloatRange(min=1),
    default=30.0,
    show_default=True,
    help="Jobs on any host: seconds a silent host keeps a feature before another takes it.",
)
def run(
    backlog: Path,
    repo: Path,
    base: str,
    batch_id: str | None,
    parallel: int | None,
    provider_cap: tuple[str, ...],
    max_cost_usd: float | None,
    max_tokens: int | None,
    api: str | None,
    keep_agents: bool,
    settings: tuple[str, ...],
    remote: str | None,
    open_prs: bool,
    github_api: str,
    github_repo: str | None,
    base_branch: str | None,
    backend: str,
    address: str | None,
    shared_remote: str | None,
    store: Path | None,
    lease_ttl: float,
) -> None:
    """Run every feature of BACKLOG (a folder of prompt files, or a .toml/.json manifest).

    Run it again (or `baton batch resume ID`) after any stop: finished features are kept,
    interrupted ones resume from their state files, queued ones start. With --push, the
    PASS branches are pushed at the end (and with --open-prs, a pull request opened each).
    """

    def action() -> int:
        from baton.batch.backlog import read_backlog
        from baton.batch.commands import run_batch
        from baton.batch.options import BatchOptions
        from baton.batch.worktrees import Repository
        from baton.errors import ConfigError

        if address and backend != "ray":
            raise ConfigError("--address is for --backend ray")
        values, caps = _run_settings(settings), _provider_caps(provider_cap)
        items = read_backlog(backlog)
        options = BatchOptions(
            # On Ray the cluster's `baton_slot`s decide (0), unless --parallel caps it.
            parallel=parallel or (0 if backend == "ray" else default_parallel()),
            provider_caps=caps,
            max_cost_usd=max_cost_usd,
            max_tokens=max_tokens,
            api=api,
            keep_agents=keep_agents,
            settings=values,
            backend=backend,
            address=address,
            remote=_shared_url(shared_remote),
            store=str(store.resolve()) if store is not None else None,
            lease_ttl=lease_ttl,
        )
        repository = Repository(repo)
        the_id = batch_id or items.default_id
        request = publish_request(remote, open_prs, github_api, github_repo, base_branch)
        if request is not None:
            request.github(repository, os.environ.get("GITHUB_TOKEN"))  # refused before running
        code = run_batch(repository, items, the_id, base, options, os.environ)
        if request is None:
            return code
        from baton.batch.commands import load_batch

        _, record = load_batch(repository, the_id)
        return code if publish_and_report(repository, record, request) else (code or 1)

    exit_with(action)


def _run_settings(settings: tuple[str, ...]) -> dict[str, str]:
    """`--set KEY=VALUE` as the environment variables `baton run` reads."""
    from baton.batch.backlog import setting_env_name
    from baton.errors import ConfigError

    values = {}
    for key, value in _pairs(settings, "--set").items():
        env = setting_env_name(key)
        if env is None:
            raise ConfigError(f"--set {key}: not a baton run setting")
        values[env] = value
    return values


def _provider_caps(provider_cap: tuple[str, ...]) -> dict[str, int]:
    """`--provider-cap NAME=N`: at most N loops at once use that provider."""
    from baton.errors import ConfigError

    caps = {}
    for name, text in _pairs(provider_cap, "--provider-cap").items():
        if not text.isdigit() or int(text) < 1:
            raise ConfigError(f"--provider-cap {name}={text}: expected a positive count")
        caps[name] = int(text)
    return caps


@batch.command()
@click.argument("batch_id", metavar="ID")
@repo_option
def resume(batch_id: str, repo: Path) -> None:
    """Go on with batch ID as it was started."""

    def action() -> int:
        from baton.batch.commands import resume_batch
        from baton.batch.worktrees import Repository

        return resume_batch(Repository(repo), batch_id, os.environ)

    exit_with(action)


@batch.command()
@click.argument("batch_id", metavar="[ID]", required=False)
@click.option("--watch", is_flag=True, help="Redraw every second while the batch runs.")
@repo_option
def status(batch_id: str | None, watch: bool, repo: Path) -> None:
    """The features of batch ID (without ID: every batch of the repository)."""

    def action() -> int:
        from rich.console import Console

        from baton.batch.commands import load_batch
        from baton.batch.status import list_batches, render_status, watch_status
        from baton.batch.worktrees import Repository

        repository = Repository(repo)
        console = Console()
        if batch_id is None:
            list_batches(repository.root / ".baton" / "batches", console)
            return 0
        ledger, record = load_batch(repository, batch_id)
        if watch:
            watch_status(ledger, console, os.environ)
        else:
            render_status(record, ledger.path, console, os.environ)
        return 0

    exit_with(action)


@batch.command()
@click.argument("batch_id", metavar="ID")
@click.argument("feature", required=False)
@repo_option
def cancel(batch_id: str, feature: str | None, repo: Path) -> None:
    """Cancel FEATURE of batch ID (without FEATURE: every unfinished one)."""
    _request(repo, batch_id, "cancel", feature)


@batch.command()
@click.argument("batch_id", metavar="ID")
@click.argument("feature")
@repo_option
def retry(batch_id: str, feature: str, repo: Path) -> None:
    """Queue a finished FEATURE of batch ID again (a FAIL starts a new run on its branch)."""
    _request(repo, batch_id, "retry", feature)


def _request(repo: Path, batch_id: str, action_name: str, feature: str | None) -> None:
    def action() -> int:
        from baton.batch.commands import request
        from baton.batch.worktrees import Repository
        from baton.errors import ConfigError

        try:
            click.echo(request(Repository(repo), batch_id, action_name, feature))
        except KeyError as error:
            raise ConfigError(str(error.args[0])) from None
        except ValueError as error:
            raise ConfigError(str(error)) from None
        return 0

    exit_with(action)


@batch.command()
@click.argument("batch_id", metavar="ID")
@click.argument("feature", required=False)
@click.option("--once", is_flag=True, help="Draw once and exit.")
@repo_option
def watch(batch_id: str, feature: str | None, once: bool, repo: Path) -> None:
    """Watch batch ID live: one row per loop; Enter opens a loop's five agents, Esc comes
    back (with FEATURE: open on that loop). A pipe or --once gets one frame."""

    def action() -> int:
        from rich.console import Console

        from baton.batch.commands import load_batch
        from baton.batch.status import render_status
        from baton.batch.watch import run_batch_watch
        from baton.batch.worktrees import Repository
        from baton.cockpit.watch import run_watch
        from baton.errors import ConfigError

        ledger, record = load_batch(Repository(repo), batch_id)
        console = Console()
        state_file = None
        if feature is not None:
            try:
                state_file = Path(record.feature(feature).state_file)
            except KeyError as error:
                raise ConfigError(str(error.args[0])) from None
            if not state_file.is_file():
                raise ConfigError(f"feature {feature} has not started yet (no {state_file})")
        if not once and console.is_terminal:
            return run_batch_watch(ledger, os.environ, feature=feature, console=console)
        if state_file is None:
            render_status(record, ledger.path, console, os.environ)
            return 0
        return run_watch(state_file, os.environ, once=True, interval=1.0, lines=15)

    exit_with(action)
