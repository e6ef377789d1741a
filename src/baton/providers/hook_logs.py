"""Each terminal's hook log, as the providers whose CLIs run hook commands keep them.

Claude Code, Qwen Code, Gemini CLI and Copilot CLI each append their hook events to one
file in the terminal's runtime directory (OpenCode's plugin does the same with its
events). A provider keeps one incremental reader per file, sets the file aside when the
CLI is resumed (a turn the dead CLI left open would otherwise read as still running once
the new one rests), and remembers which logs belong to a resumed CLI: its screen replays
the dead CLI's last turn until it takes a prompt.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from baton.providers.base import TerminalContext

__all__ = ["HookLogs"]

Reader = TypeVar("Reader")


class HookLogs(Generic[Reader]):
    """The readers of one provider's hook log files, one per terminal."""

    def __init__(self, file_name: str, reader: Callable[[Path], Reader]) -> None:
        self.file_name = file_name
        self._reader = reader
        self._readers: dict[Path, Reader] = {}
        self._resumed: set[Path] = set()

    def path(self, ctx: TerminalContext) -> Path:
        return ctx.runtime_dir / self.file_name

    def of(self, ctx: TerminalContext) -> Reader:
        """The terminal's reader, made on first use and kept (it reads incrementally)."""
        path = self.path(ctx)
        reader = self._readers.get(path)
        if reader is None:
            reader = self._readers[path] = self._reader(path)
        return reader

    def set_aside(self, ctx: TerminalContext) -> None:
        """Keep the dead CLI's log under a new name; the next CLI's log starts empty."""
        path = self.path(ctx)
        if path.exists():
            path.replace(path.with_name(f"{path.stem}.{time.time_ns()}.jsonl"))
        self._readers.pop(path, None)
        self._resumed.discard(path)

    def mark_resumed(self, ctx: TerminalContext) -> None:
        """The terminal's CLI is being resumed: its screen will replay the past."""
        self._resumed.add(self.path(ctx))

    def launched_fresh(self, ctx: TerminalContext) -> None:
        """The terminal's CLI starts a new conversation: nothing on its screen is replayed."""
        self._resumed.discard(self.path(ctx))

    def resumed(self, ctx: TerminalContext) -> bool:
        """Whether the terminal's CLI was resumed (and has not been launched afresh since)."""
        return self.path(ctx) in self._resumed
