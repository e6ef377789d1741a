"""The one logging path: RunLog's lines and the server's, both through stdlib logging."""

from __future__ import annotations

import io
import logging
import re
import sys

import pytest

from baton.logs import RUN_LOGGER, LineHandler, log_to_stderr
from baton.orchestrator.runlog import RunLog, format_duration

LINE = re.compile(r"^\[\d\d:\d\d:\d\d\] ")


def test_lines_read_as_before_time_prefix_message() -> None:
    stream = io.StringIO()
    log = RunLog(stream)
    log.info("round 1/3 · analyst phase: analyst (terminal t1) is working")
    log.warning("no analyst output to build on; 100% sure")
    first, second = stream.getvalue().splitlines()
    assert LINE.match(first) and LINE.match(second)
    assert first[11:] == "baton: round 1/3 · analyst phase: analyst (terminal t1) is working"
    assert second[11:] == "baton: warning: no analyst output to build on; 100% sure"


def test_a_run_prints_under_its_own_prefix() -> None:
    stream = io.StringIO()
    RunLog(stream, prefix="baton demo").info("sample project in /tmp/x")
    assert stream.getvalue()[11:] == "baton demo: sample project in /tmp/x\n"


def test_records_go_through_the_stdlib_logger() -> None:
    """Any handler on `baton.run` sees what RunLog says: it is one logging path."""
    seen: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = seen.append  # type: ignore[method-assign]
    logger = logging.getLogger(RUN_LOGGER)
    logger.addHandler(handler)
    try:
        RunLog(io.StringIO()).warning("late answer")
    finally:
        logger.removeHandler(handler)
    assert [(r.levelno, r.getMessage()) for r in seen] == [(logging.WARNING, "late answer")]


def test_without_a_stream_the_current_stderr_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    log = RunLog()
    replaced = io.StringIO()
    monkeypatch.setattr(sys, "stderr", replaced)
    log.info("after the redirect")
    assert replaced.getvalue().endswith("baton: after the redirect\n")


def test_a_closed_stream_does_not_end_the_run() -> None:
    stream = io.StringIO()
    stream.close()
    RunLog(stream).info("nobody listens")  # no exception


def test_the_server_logger_prints_the_same_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    replaced = io.StringIO()
    monkeypatch.setattr(sys, "stderr", replaced)
    logger = log_to_stderr("baton.test-server", prefix="baton serve")
    log_to_stderr("baton.test-server", prefix="baton serve")  # added once, not twice
    assert sum(isinstance(h, LineHandler) for h in logger.handlers) == 1
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logger.exception("unexpected error")
    lines = replaced.getvalue().splitlines()
    assert LINE.match(lines[0]) and lines[0][11:] == "baton serve: error: unexpected error"
    assert lines[-1] == "RuntimeError: boom"


def test_durations_are_short() -> None:
    assert [format_duration(s) for s in (4.5, 42, 185, 3720)] == ["4.5s", "42s", "3m05s", "1h02m"]
