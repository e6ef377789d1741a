"""A wait on one terminal's evaluations: woken by its own, never by another terminal's."""

from __future__ import annotations

import threading
from pathlib import Path

from tests.support.live_terminals import scripted_live_terminal

from baton.server.live import ScreenWatcher
from baton.server.live_terminal import LiveTerminal
from baton.server.tmux import TmuxServer


def test_a_wait_on_one_terminal_ignores_the_others_and_wakes_on_its_own(
    tmp_path: Path,
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    mine = scripted_live_terminal(tmp_path / "a", "0000000a")
    other = scripted_live_terminal(tmp_path / "b", "0000000b")
    tmux = TmuxServer(tmp_path / "tmux.sock", tmp_path / "tmux.conf")  # never started
    watcher = ScreenWatcher(tmux, lambda *_: None)
    try:
        _wait_on_one(watcher, mine, other)
    finally:
        watcher.stop()


def _wait_on_one(watcher: ScreenWatcher, mine: LiveTerminal, other: LiveTerminal) -> None:
    seen = mine.evaluations.count
    woke_with: list[int] = []
    waiter = threading.Thread(target=lambda: woke_with.append(mine.evaluations.wait_past(seen, 30)))
    waiter.start()
    watcher.evaluate(other)
    watcher.evaluate(other)
    waiter.join(0.2)
    assert waiter.is_alive() and not woke_with  # another terminal's output: still waiting
    watcher.evaluate(mine)
    waiter.join(10)
    assert woke_with == [seen + 1]
    # An evaluation that came before the wait began is not waited for again.
    assert mine.evaluations.wait_past(seen, 30) == seen + 1
