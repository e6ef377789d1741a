"""A wait on one terminal's evaluations: woken by its own, never by another terminal's."""

from __future__ import annotations

import threading
from pathlib import Path

from baton.providers import TerminalContext, get_provider
from baton.server.live_terminal import LiveTerminal
from baton.server.profiles import ProfileStore


def _live(tmp_path: Path, terminal_id: str) -> LiveTerminal:
    runtime = tmp_path / terminal_id
    runtime.mkdir()
    ctx = TerminalContext(
        terminal_id=terminal_id,
        working_directory=tmp_path,
        profile=ProfileStore().load("programmer"),
        runtime_dir=runtime,
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
    )


def test_a_wait_on_one_terminal_ignores_the_others_and_wakes_on_its_own(
    tmp_path: Path,
) -> None:
    mine, other = _live(tmp_path, "0000000a"), _live(tmp_path, "0000000b")
    seen = mine.evaluations
    woke_with: list[int] = []
    waiter = threading.Thread(target=lambda: woke_with.append(mine.wait_evaluated(seen, 30)))
    waiter.start()
    other.note_evaluated()
    other.note_evaluated()
    waiter.join(0.2)
    assert waiter.is_alive() and not woke_with  # another terminal's output: still waiting
    mine.note_evaluated()
    waiter.join(10)
    assert woke_with == [seen + 1]
    # An evaluation that came before the wait began is not waited for again.
    assert mine.wait_evaluated(seen, 30) == seen + 1
