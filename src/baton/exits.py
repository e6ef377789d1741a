"""Every command's errors as one line on stderr and an exit code, in one place.

`baton`'s commands (and `baton batch`'s) call `exit_code_for(action)`: a Baton error is
never a traceback, and the codes are the ones a shell expects (130 for Ctrl-C, 128 + the
signal that stopped a run).
"""

from __future__ import annotations

from collections.abc import Callable

import click

from baton.errors import BatonError, BudgetExhausted, PromptError, RunInterrupted

__all__ = ["EXIT_FAILURE", "EXIT_INTERRUPTED", "exit_code_for"]

EXIT_FAILURE = 1
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C


def exit_code_for(action: Callable[[], int]) -> int:
    """Run `action`; turn every Baton error into one line on stderr and an exit code."""
    try:
        return action()
    except KeyboardInterrupt:  # Ctrl-C before the run's own signal handling is in place
        click.echo("baton: interrupted", err=True)
        return EXIT_INTERRUPTED
    except RunInterrupted as interrupted:
        click.echo(f"baton: {interrupted}", err=True)
        return 128 + interrupted.signum
    except BudgetExhausted as exhausted:
        click.echo(f"baton: {exhausted}", err=True)
        return EXIT_FAILURE
    except PromptError as error:  # one line, then what a prompt looks like
        click.echo(f"baton: error: {error}", err=True)
        click.echo(error.example, err=True)
        return EXIT_FAILURE
    except BatonError as error:
        click.echo(f"baton: error: {error}", err=True)
        return EXIT_FAILURE
