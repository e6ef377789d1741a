"""`baton worker`: this host joins a Ray cluster with N loop slots (docs/scale-out.md).

The same as `ray start --address=HEAD --resources='{"baton_slot": N}'`, after checking
what a loop needs on this host, so a host that cannot run one says so before it joins.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import click

__all__ = ["AGENT_CLIS", "REQUIRED", "join_command", "missing_tools", "worker"]

REQUIRED = {"tmux": "the agents' terminals", "git": "the features' worktrees and branches"}
AGENT_CLIS = {"codex": "the codex provider", "claude": "the claude_code provider"}


def missing_tools(path: str | None = None) -> tuple[list[str], list[str]]:
    """(problems that stop the join, warnings): one line per tool not on PATH."""
    problems = [
        f"{tool} is not on PATH (needed for {why})"
        for tool, why in REQUIRED.items()
        if shutil.which(tool, path=path) is None
    ]
    warnings = [
        f"{tool} is not on PATH: loops using {why} cannot run on this host"
        for tool, why in AGENT_CLIS.items()
        if shutil.which(tool, path=path) is None
    ]
    return problems, warnings


def _ray_binary() -> str:
    beside = Path(sys.executable).with_name("ray")
    return str(beside) if beside.is_file() else (shutil.which("ray") or "ray")


def join_command(address: str, slots: int, *, block: bool = False) -> list[str]:
    """The `ray start` line that makes this host a worker with `slots` loop slots."""
    command = [
        _ray_binary(),
        "start",
        f"--address={address}",
        f"--resources={json.dumps({'baton_slot': slots})}",
        "--disable-usage-stats",
    ]
    return [*command, "--block"] if block else command


@click.command()
@click.option("--address", required=True, help="The head node, HOST:PORT (its `ray start --head`).")
@click.option("--slots", type=click.IntRange(min=1), required=True, help="Loops this host runs.")
@click.option("--block", is_flag=True, help="Stay in the foreground until the node stops.")
@click.option("--dry-run", is_flag=True, help="Check the tools and print the command only.")
def worker(address: str, slots: int, block: bool, dry_run: bool) -> None:
    """Join a Ray cluster as a host with SLOTS loop slots (`baton batch run --backend ray`)."""
    problems, warnings = missing_tools()
    for line in warnings:
        click.echo(f"baton worker: warning: {line}", err=True)
    for line in problems:
        click.echo(f"baton worker: error: {line}", err=True)
    if problems:
        sys.exit(1)
    command = join_command(address, slots, block=block)
    click.echo(shlex.join(command))
    if dry_run:
        return
    try:
        sys.exit(subprocess.call(command))
    except FileNotFoundError:
        click.echo("baton worker: error: ray is not installed: pip install 'baton[ray]'", err=True)
        sys.exit(1)
