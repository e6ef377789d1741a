"""`baton batch watch ID`: every loop of a batch as one row, live; Enter opens one loop's
five agents (what `baton watch` shows), Esc comes back to the batch.

Keys on the batch table: ↑/↓ (or k/j, Tab/shift-Tab) pick a feature, Enter (or →) opens
it, c cancels it and r retries it (each asks y to confirm; the request goes to the
running driver, as `baton batch cancel`/`retry` do), q quits. In a loop: 1-5 or Tab
pick an agent, as in `baton watch`; Esc (or b, ←) goes back to the table. A feature that
has not started has no agents yet: the table says so.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console, Group, RenderableType
from rich.text import Text

from baton.batch.hosts import reach_hint
from baton.batch.ledger import BatchRecord, Ledger
from baton.batch.status import status_view
from baton.cockpit.watch import KeyReader, Watcher, open_watcher, split_keys
from baton.errors import BatonError, StateFileError
from baton.orchestrator.driver_lock import current_driver

__all__ = ["BatchWatch", "run_batch_watch"]

_QUIT = ("q", "Q", "\x03", "\x04")
_DOWN = ("\x1b[B", "j", "\t")
_UP = ("\x1b[A", "k", "\x1b[Z")
_OPEN = ("\r", "\n", "\x1b[C", "l")
_BACK = ("\x1b", "b", "B", "\x1b[D", "h")
_STEER = {"c": "cancel", "r": "retry"}


@dataclass
class BatchWatch:
    """The view's state between refreshes: the batch, the picked row, the opened loop."""

    ledger: Ledger
    environ: Mapping[str, str]
    tail_lines: int = 15
    selected: int = 0
    batch: BatchRecord | None = None
    loop: Watcher | None = None
    loop_name: str = ""
    message: str = ""
    problem: str = ""
    confirming: tuple[str, str] | None = None  # (action, feature) waiting for `y`
    size: tuple[int, int] = (200, 50)  # the terminal's columns and rows

    # --- input ---

    def handle_key(self, key: str) -> bool:
        """Apply one key; False when the view should end."""
        if key in _QUIT:
            return False
        if self.loop is not None:
            if key in _BACK:
                self.close_loop()
                return True
            return self.loop.handle_key(key)
        if self.confirming is not None:
            (action, name), self.confirming = self.confirming, None
            self.message = self._steer(action, name) if key in ("y", "Y") else "not sent"
            return True
        count = len(self.batch.features) if self.batch else 0
        if count and key in _STEER:
            name = self.batch.features[self.selected].name  # type: ignore[union-attr]
            self.confirming = (_STEER[key], name)
            self.message = f"{_STEER[key]} {name}? y to confirm, any other key not"
        elif count and key in _DOWN:
            self.selected = (self.selected + 1) % count
            self.message = ""
        elif count and key in _UP:
            self.selected = (self.selected - 1) % count
            self.message = ""
        elif count and key in _OPEN:
            self.open_loop(self.batch.features[self.selected].name)  # type: ignore[union-attr]
        return True

    def open_loop(self, name: str) -> None:
        """Show the feature's five agents; a feature not started yet stays a message."""
        assert self.batch is not None
        index, record = next(
            ((i, r) for i, r in enumerate(self.batch.features) if r.name == name), (None, None)
        )
        if index is None or record is None:
            self.message = f"no feature {name} in batch {self.batch.id}"
            return
        self.selected = index
        state_file = Path(record.state_file)
        elsewhere = reach_hint(record)
        if elsewhere is not None and not state_file.is_file():
            self.message = elsewhere
            return
        if not state_file.is_file():
            self.message = f"{name} has not started yet: no agents to show"
            return
        try:
            self.loop = open_watcher(state_file, self.environ, self.tail_lines)
        except StateFileError as error:
            self.message = f"{name}: {error}"
            return
        self.loop_name, self.message = name, ""

    def _steer(self, action: str, name: str) -> str:
        """`baton batch cancel`/`retry` for one feature; its one-line answer."""
        from baton.batch.commands import request
        from baton.batch.worktrees import Repository

        assert self.batch is not None
        try:
            return request(Repository(Path(self.batch.repo)), self.batch.id, action, name)
        except KeyError as error:
            return str(error.args[0])
        except BatonError as error:
            return str(error)

    def close_loop(self) -> None:
        if self.loop is not None and self.loop.probe is not None:
            self.loop.probe.close()
        self.loop, self.loop_name = None, ""

    # --- data ---

    def refresh(self) -> None:
        """Re-read the ledger (keeping the last good one while it is replaced) and the loop."""
        try:
            self.batch = self.ledger.load()
            self.problem = ""
        except StateFileError as error:
            if self.batch is None:
                raise
            self.problem = str(error)
        self.selected = min(self.selected, max(0, len(self.batch.features) - 1))
        if self.loop is not None:
            # The loop's frame, one row shorter: the line naming the batch is above it.
            self.loop.fit(self.size[0], self.size[1] - 1)
            self.loop.refresh()

    # --- drawing ---

    def render(self) -> RenderableType:
        assert self.batch is not None
        if self.loop is not None:
            title = Text.assemble(
                (f"batch {self.batch.id} › {self.loop_name}", "bold"),
                "   Esc: back to the batch · q quit",
                no_wrap=True,
                overflow="ellipsis",
            )
            return Group(title, self.loop.render())
        footer = Text(
            "keys: ↑/↓ pick a feature · Enter: its five agents · c cancel · r retry · q quit"
            if self.size[0] >= 80
            else "keys: ↑/↓ pick · Enter open · c cancel · r retry · q quit",
            style="bold",
            no_wrap=True,
            overflow="ellipsis",
        )
        if self.message:
            footer.append(f"\n{self.message}", "yellow")
        if self.problem:
            footer.append(f"\n{self.problem}", "red")
        driver = current_driver(self.ledger.path)
        table = status_view(self.batch, self.ledger.path, self.environ, driver, self.selected)
        return Group(table, footer)


def run_batch_watch(
    ledger: Ledger,
    environ: Mapping[str, str],
    *,
    feature: str | None = None,
    interval: float = 1.0,
    console: Console | None = None,
) -> int:
    """The batch live until `q` (opened on `feature`'s loop when given)."""
    console = console or Console()
    view = BatchWatch(ledger=ledger, environ=environ)
    view.refresh()
    if feature is not None:
        view.open_loop(feature)
    try:
        _loop(view, console, interval)
    finally:
        view.close_loop()
    return 0


def _loop(view: BatchWatch, console: Console, interval: float) -> None:
    from rich.live import Live

    def draw(live: Live) -> None:
        view.size = (console.size.width, console.size.height)
        view.refresh()
        live.update(view.render(), refresh=True)

    with (
        KeyReader(sys.stdin) as keys,
        Live(view.render(), console=console, screen=True, auto_refresh=False) as live,
    ):
        next_refresh = time.monotonic() + interval
        while True:
            key = keys.read(max(0.0, next_refresh - time.monotonic()))
            if key is not None:
                if not all(view.handle_key(k) for k in split_keys(key)):
                    return
                draw(live)
                continue
            draw(live)
            next_refresh = time.monotonic() + interval
