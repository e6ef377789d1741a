"""The `baton` command line: parse, call, map errors to one line and an exit code."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import click

from baton import __version__
from baton.errors import BatonError, RunInterrupted

__all__ = ["cli", "main"]

EXIT_FAILURE = 1
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C


def _exit_code_for(action: Callable[[], int]) -> int:
    """Run `action`; turn every Baton error into one line on stderr and an exit code."""
    try:
        return action()
    except KeyboardInterrupt:  # Ctrl-C before the run's own signal handling is in place
        click.echo("baton: interrupted", err=True)
        return EXIT_INTERRUPTED
    except RunInterrupted as interrupted:
        click.echo(f"baton: {interrupted}", err=True)
        return 128 + interrupted.signum
    except BatonError as error:
        click.echo(f"baton: error: {error}", err=True)
        return EXIT_FAILURE


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="baton")
def cli() -> None:
    """Run a team of terminal coding agents until the scenario test passes."""


@cli.command()
@click.argument("config", required=False, type=click.Path(path_type=Path, dir_okay=False))
def run(config: Path | None) -> None:
    """Run the analyst → review → programmer → review → tester loop.

    Configuration comes from environment variables (API, PROVIDER, WD, PROMPT,
    PROMPT_FILE, MAX_ROUNDS, …), then the optional JSON CONFIG file, then defaults.
    """

    def action() -> int:
        from baton.orchestrator.config import load_settings
        from baton.orchestrator.loop import run_orchestrator

        return run_orchestrator(load_settings(config, os.environ))

    sys.exit(_exit_code_for(action))


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default=9889, show_default=True, type=int, help="Port to bind.")
@click.option(
    "--state-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Where terminals are recorded (default: $BATON_STATE_DIR or ~/.local/state/baton).",
)
@click.option(
    "--profiles-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Directory of role profiles that override the built-in ones.",
)
def serve(host: str, port: int, state_dir: Path | None, profiles_dir: Path | None) -> None:
    """Serve the CAO-compatible terminal API, running agent CLIs in tmux."""
    from baton.server.app import ServerOptions, serve_forever

    def action() -> int:
        options = ServerOptions.from_environment(
            host=host, port=port, state_dir=state_dir, profiles_dir=profiles_dir
        )
        serve_forever(options)
        return 0

    sys.exit(_exit_code_for(action))


@cli.command()
@click.option(
    "--dir",
    "directory",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Where to create the sample project (default: a new temporary directory).",
)
@click.option(
    "--keep",
    is_flag=True,
    help="Leave the agents' tmux session running at the end, to look around in it.",
)
def demo(directory: Path | None, keep: bool) -> None:
    """Run the whole loop on a sample project with the built-in scripted agent."""
    from baton.demo import run_demo

    sys.exit(_exit_code_for(lambda: run_demo(directory, keep=keep)))


@cli.command()
@click.argument("state_file", required=False, type=click.Path(path_type=Path, dir_okay=False))
def status(state_file: Path | None) -> None:
    """Show where a run stands, from its state file (default: STATE_FILE or WD/.tmp/…)."""
    from baton.orchestrator.state_view import show_status

    sys.exit(_exit_code_for(lambda: show_status(state_file, os.environ)))


def main() -> None:
    """Console-script entry point; Ctrl-C at any moment is one line and exit code 130."""
    try:
        cli()
    except KeyboardInterrupt:
        click.echo("baton: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
