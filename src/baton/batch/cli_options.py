"""What every `baton batch` command shares: the `--repo` option and the exit code."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import click

__all__ = ["exit_with", "repo_option"]

repo_option = click.option(
    "--repo",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    default=Path("."),
    help="The git repository (default: the current one).",
)


def exit_with(action: Callable[[], int]) -> None:
    """Run `action` and exit with its code; a Baton error becomes its one line and code."""
    from baton.exits import exit_code_for

    sys.exit(exit_code_for(action))
