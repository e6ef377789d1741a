"""A pane log is bounded: rotated to pane.log.1 once read past the limit, the model intact."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.live_terminals import scripted_live_terminal

from baton.server.live_terminal import PANE_LOG, PREVIOUS_PANE_LOG, LiveTerminal

LIMIT = 1024


def _live(tmp_path: Path, limit: int | None = LIMIT) -> LiveTerminal:
    return scripted_live_terminal(tmp_path, max_log_bytes=limit)


def _append(path: Path, data: bytes) -> None:
    """Write as tmux's `cat >> pane.log` does: O_APPEND, from its own descriptor."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def test_the_log_is_rotated_once_read_past_the_limit_and_the_screen_follows(
    tmp_path: Path,
) -> None:
    live = _live(tmp_path)
    log = tmp_path / PANE_LOG
    writer = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)  # stays open, as cat's
    try:
        for line in range(60):
            os.write(writer, f"line {line:03d} {'x' * 40}\r\n".encode())
            live.screen()
        assert log.stat().st_size < LIMIT  # never more than the limit plus one read's worth
        previous = tmp_path / PREVIOUS_PANE_LOG
        assert previous.stat().st_size >= LIMIT
        assert os.stat(previous).st_mode & 0o777 == 0o600
        os.write(writer, b"after rotation\r\n")
    finally:
        os.close(writer)
    screen = live.screen()
    assert screen.splitlines()[-1] == "after rotation"
    assert screen.splitlines()[-2].startswith("line 059 ")
    assert log.read_bytes().endswith(b"after rotation\r\n")  # the writer's bytes land at the start


def test_a_log_that_grew_since_the_read_is_not_cut(tmp_path: Path) -> None:
    live = _live(tmp_path)
    log = tmp_path / PANE_LOG
    _append(log, b"a" * (LIMIT + 10))
    with live.lock:
        size = log.stat().st_size
        live.offset = size  # as if read just now …
        _append(log, b"unread")  # … and the pane wrote more before the rotation
        assert live.rotate_log() is False
    assert log.read_bytes().endswith(b"unread")


def test_no_limit_means_no_rotation(tmp_path: Path) -> None:
    live = _live(tmp_path, limit=0)
    log = tmp_path / PANE_LOG
    _append(log, b"z" * (LIMIT * 4))
    live.screen()
    assert log.stat().st_size == LIMIT * 4
    assert not (tmp_path / PREVIOUS_PANE_LOG).exists()
