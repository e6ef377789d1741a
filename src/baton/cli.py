"""The `baton` command line: parse, call, map errors to one line and an exit code."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from baton import __version__
from baton.errors import ConfigError, RunInterrupted
from baton.exits import EXIT_INTERRUPTED, exit_code_for
from baton.run_options import setting_options
from baton.server.pane_launcher import MAX_NICE

__all__ = ["cli", "main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="baton")
def cli() -> None:
    """Run a team of terminal coding agents until the scenario test passes."""


@cli.command(context_settings={"max_content_width": 100})
@click.argument("argument", required=False, metavar="[CONFIG.json | PROMPT_FILE | REQUEST]")
@click.option(
    "--test",
    "test_command",
    default=None,
    metavar="CMD",
    help="The scenario test of a REQUEST in words: the command that passes once it is done "
    "(also the project test command unless PROJECT_TEST_CMD is set).",
)
@setting_options
def run(argument: str | None, test_command: str | None, **options: Any) -> None:
    """Run the analyst → review → programmer → review → tester loop.

    The argument is an existing JSON config file (*.json), an existing prompt file (any
    other file), or the feature request in words: `baton run "Add a --json flag to the
    export command" --test "pytest -q tests/test_export.py"`. `baton new` writes a prompt
    template to fill in instead.

    Every setting is an option, an environment variable (API, PROVIDER, WD, PROMPT,
    PROMPT_FILE, MAX_ROUNDS, …) and a key of the optional JSON CONFIG file; an option
    wins over the environment, which wins over the file, which wins over the default.
    """

    def action() -> int:
        # Imported here, inside the error mapping: Ctrl-C while they load is one line too.
        from baton.hints import RunCommand
        from baton.orchestrator.config import SETTING_KEYS
        from baton.orchestrator.config_layers import load_settings
        from baton.orchestrator.loop import run_orchestrator
        from baton.orchestrator.request import run_inputs
        from baton.private import hide_process_from_same_user

        if os.environ.get("BATON_TOKEN"):
            hide_process_from_same_user()  # the agents must not read it from /proc
        config, chosen = run_inputs(argument, test_command, options, os.environ)
        command = RunCommand.current([key.env for key in SETTING_KEYS], os.environ)
        return run_orchestrator(load_settings(config, os.environ, chosen), command=command)

    sys.exit(exit_code_for(action))


@cli.command()
@click.argument(
    "path", required=False, default="feature.md", type=click.Path(path_type=Path, dir_okay=False)
)
def new(path: Path) -> None:
    """Write a commented prompt template to PATH (default feature.md); never overwrites.

    Fill in its three parts, then `baton run PATH`.
    """
    from baton.hints import baton_command
    from baton.orchestrator.request import write_template

    def action() -> int:
        written = write_template(path)
        click.echo(f"wrote {written}; fill it in, then run: {baton_command('run', written)}")
        return 0

    sys.exit(exit_code_for(action))


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default="9889", show_default=True, help="Port to bind.")
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
@click.option(
    "--max-message-bytes",
    default=None,
    help="Largest message accepted, in UTF-8 bytes (default: $BATON_MAX_MESSAGE_BYTES or 4 MiB).",
)
@click.option(
    "--max-pane-log-bytes",
    type=click.IntRange(min=0),
    default=None,
    help="Rotate a terminal's pane log to pane.log.1 at this size (default 64 MiB; 0: never).",
)
@click.option(
    "--keep-transcripts",
    is_flag=True,
    help="Keep a deleted terminal's runtime folder (pane log, the CLI's records).",
)
@click.option(
    "--agent-nice",
    type=click.IntRange(min=0, max=MAX_NICE),
    default=None,
    help="Run the agent CLIs this many nice values below the server (default 0: level).",
)
def serve(
    host: str,
    port: str,
    state_dir: Path | None,
    profiles_dir: Path | None,
    max_message_bytes: str | None,
    max_pane_log_bytes: int | None,
    keep_transcripts: bool,
    agent_nice: int | None,
) -> None:
    """Serve the CAO-compatible terminal API, running agent CLIs in tmux."""
    from baton.logs import SERVER_LOGGER, log_to_stderr
    from baton.server.app import ServerOptions, serve_forever
    from baton.server.delivery import parse_message_limit
    from baton.server.security import require_token_for_remote
    from baton.web import install_web

    log_to_stderr(SERVER_LOGGER, prefix="baton serve")

    def action() -> int:
        options = ServerOptions.from_environment(
            host=host[1:-1] if host.startswith("[") and host.endswith("]") else host,
            port=_port(port),
            state_dir=state_dir,
            profiles_dir=profiles_dir,
            max_message_bytes=(
                parse_message_limit(max_message_bytes, name="--max-message-bytes")
                if max_message_bytes is not None
                else None
            ),
            keep_transcripts=keep_transcripts,
            max_pane_log_bytes=max_pane_log_bytes,
            agent_nice=agent_nice,
        )
        require_token_for_remote(options.host, options.token)
        serve_forever(options, extensions=(install_web,))
        return 0

    sys.exit(exit_code_for(lambda: _interruptible(action)))


def _interruptible(action: Callable[[], int]) -> int:
    """Run `action`; Ctrl-C at any moment (starting, serving) ends in RunInterrupted.

    The server stops gracefully on SIGINT and returns; the handler installed here is the
    one it hands the signal back to, so the interruption is still seen afterwards.
    """
    seen: list[int] = []

    def on_sigint(signum: int, _frame: object) -> None:
        seen.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        code = action()
    except KeyboardInterrupt:
        seen.append(signal.SIGINT)
        code = 0
    finally:
        signal.signal(signal.SIGINT, previous)
    if seen:
        raise RunInterrupted(signal.SIGINT)
    return code


def _port(raw: str) -> int:
    """A TCP port number from `--port`; one line naming the flag otherwise."""
    try:
        port = int(raw)
    except ValueError:
        raise ConfigError(f"--port must be a number between 0 and 65535, got {raw!r}") from None
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port must be between 0 and 65535, got {port}")
    return port


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
@click.option(
    "--batch",
    "as_batch",
    is_flag=True,
    help="Run a sample backlog of three features in parallel (`baton batch`).",
)
def demo(directory: Path | None, keep: bool, as_batch: bool) -> None:
    """Run the whole loop on a sample project with the built-in scripted agent."""
    if as_batch:
        from baton.demo.batch_runner import run_batch_demo

        sys.exit(exit_code_for(lambda: run_batch_demo(directory)))
    from baton.demo import run_demo

    sys.exit(exit_code_for(lambda: run_demo(directory, keep=keep)))


@cli.command()
@click.argument("state_file", required=False, type=click.Path(path_type=Path, dir_okay=False))
def status(state_file: Path | None) -> None:
    """Show where a run stands, from its state file (default: STATE_FILE or WD/.tmp/…)."""
    from baton.cockpit.state_view import show_status

    sys.exit(exit_code_for(lambda: show_status(state_file, os.environ)))


@cli.command()
@click.argument("state_file", required=False, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--once", is_flag=True, help="Print one frame and exit (for scripts and logs).")
@click.option(
    "--interval",
    default=1.0,
    show_default=True,
    type=click.FloatRange(0.1),
    help="Seconds between refreshes.",
)
@click.option(
    "--lines",
    default=15,
    show_default=True,
    type=click.IntRange(1, 500),
    help="Screen lines shown.",
)
def watch(state_file: Path | None, once: bool, interval: float, lines: int) -> None:
    """Watch a run's five agents live (keys: 1-5 or Tab pick an agent, q quits).

    Works from any terminal while `baton run` runs elsewhere, and on a finished run
    (then from the state file and events.jsonl alone).
    """
    from baton.cockpit.state_view import default_state_file
    from baton.cockpit.watch import run_watch

    path = state_file or default_state_file(os.environ)
    sys.exit(
        exit_code_for(
            lambda: run_watch(path, os.environ, once=once, interval=interval, lines=lines)
        )
    )


@cli.command()
@click.argument("state_file", required=False, type=click.Path(path_type=Path, dir_okay=False))
def report(state_file: Path | None) -> None:
    """Write an HTML report of a run beside its archive and print a short summary.

    The page is self-contained (no network needed): outcome, a timeline of the five
    agents, every review cycle and test verdict, prompt and answer sizes, tokens and
    cost, and the change (git diff --stat) since the run's starting commit.
    """
    from baton.cockpit.report import write_report
    from baton.cockpit.state_view import default_state_file

    def action() -> int:
        written = write_report(state_file or default_state_file(os.environ))
        click.echo(written.summary)
        click.echo(f"report: {written.path}")
        return 0

    sys.exit(exit_code_for(action))


_STATE_FILE_OPTION = click.option(
    "--state-file",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="The run's state file (default: STATE_FILE or WD/.tmp/codex-3agents-loop-state.json).",
)


@cli.command()
@click.argument("role")
@click.argument("text", required=False)
@click.option(
    "--key",
    "keys",
    multiple=True,
    help="Press a key after TEXT (repeatable, in order): 1, y, Enter, Escape, Down, C-c …",
)
@click.option("--force", is_flag=True, help="Send even if the agent is not waiting for an answer.")
@_STATE_FILE_OPTION
def answer(
    role: str, text: str | None, keys: tuple[str, ...], force: bool, state_file: Path | None
) -> None:
    """Answer an agent that waits for you: type TEXT (submitted) and/or press keys.

    ROLE is analyst, peer_analyst, programmer, peer_programmer or tester. A question
    dialog usually wants a key (`--key 1`, `--key Enter`), a free question wants TEXT.
    """
    from baton.cockpit.control import answer_agent, find_agent
    from baton.cockpit.state_view import default_state_file

    def action() -> int:
        agent = find_agent(state_file or default_state_file(os.environ), role)
        click.echo(answer_agent(agent, text, keys, os.environ, force=force))
        return 0

    sys.exit(exit_code_for(action))


@cli.command()
@click.argument("role")
@click.option("--print", "print_only", is_flag=True, help="Print the tmux command instead.")
@_STATE_FILE_OPTION
def attach(role: str, print_only: bool, state_file: Path | None) -> None:
    """Attach to an agent's tmux window on `baton serve` (Ctrl-b d detaches).

    The status line lists the five agents' windows; Ctrl-b w picks another.
    """
    import shlex

    from baton.cockpit.control import attach_command, exec_attach, find_agent
    from baton.cockpit.state_view import default_state_file

    def action() -> int:
        agent = find_agent(state_file or default_state_file(os.environ), role)
        command = attach_command(agent, os.environ)
        if print_only:
            click.echo(shlex.join(command))
            return 0
        exec_attach(command, os.environ)
        return 0

    sys.exit(exit_code_for(action))


def _add_batch_group() -> None:
    from baton.batch.cli import batch
    from baton.batch.worker import worker

    cli.add_command(batch)
    cli.add_command(worker)


@cli.command("fork-server", hidden=True)
@click.argument("descriptor", type=int, required=False)
@click.option("--listen", type=click.Path(path_type=Path), help="a host's: this socket")
def fork_server(descriptor: int | None, listen: Path | None) -> None:
    """A batch's or a host's fork server (internal): each loop a fork of this, imported."""
    # Everything `baton run` imports, once, here: what each forked loop no longer does.
    import baton.hints
    import baton.orchestrator.loop
    import baton.orchestrator.request
    import baton.private  # noqa: F401
    from baton.batch.forkserver_serve import load_http_client, serve, serve_host

    load_http_client()
    if listen is not None:
        serve_host(listen, main)
    elif descriptor is not None:
        serve(descriptor, main)
    else:
        raise click.UsageError("give the control socket's descriptor or --listen PATH")


_add_batch_group()


def main() -> None:
    """Console-script entry point; Ctrl-C at any moment is one line and exit code 130."""
    try:
        cli()
    except KeyboardInterrupt:
        click.echo("baton: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
