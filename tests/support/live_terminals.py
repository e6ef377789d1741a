"""A followed terminal of the scripted agent, built without tmux, for unit tests."""

from __future__ import annotations

from pathlib import Path

from baton.providers import TerminalContext, get_provider
from baton.server.live_terminal import LiveTerminal
from baton.server.profiles import ProfileStore


def scripted_live_terminal(
    runtime_dir: Path, terminal_id: str = "0123abcd", *, max_log_bytes: int | None = None
) -> LiveTerminal:
    """A `LiveTerminal` whose runtime directory (pane log, signals) is `runtime_dir`."""
    ctx = TerminalContext(
        terminal_id=terminal_id,
        working_directory=runtime_dir,
        profile=ProfileStore().load("programmer"),
        runtime_dir=runtime_dir,
        env={},
    )
    return LiveTerminal(
        terminal_id=terminal_id,
        session_name="team",
        pane_id="%1",
        provider=get_provider("scripted"),
        ctx=ctx,
        columns=80,
        rows=24,
        max_log_bytes=max_log_bytes,
    )
