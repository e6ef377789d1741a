"""ScreenWatcher's lifecycle: nothing runs until `start()`, `stop()` ends and frees it."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from baton.server.live import ScreenWatcher
from baton.server.tmux import TmuxServer


def _watchers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "baton-screens" and t.is_alive()]


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_the_thread_runs_only_between_start_and_stop(tmp_path: Path) -> None:
    tmux = TmuxServer(tmp_path / "tmux.sock", tmp_path / "tmux.conf")  # never started
    before = (len(_watchers()), _open_fds())
    watcher = ScreenWatcher(tmux, lambda *_: None, interval=0.05)
    assert len(_watchers()) == before[0]  # made, not started
    with watcher as started:
        assert started is watcher and len(_watchers()) == before[0] + 1
        assert watcher.start() is watcher and len(_watchers()) == before[0] + 1  # once
    assert (len(_watchers()), _open_fds()) == before  # thread ended, descriptors closed
    watcher.stop()  # twice is harmless
    with pytest.raises(RuntimeError, match="cannot start again"):
        watcher.start()
