"""Shared fixtures. `baton_server` is a real `baton serve` on a free port (see tests/support)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# The test helpers live in the `tests.support` package next to this file.
_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from tests.support.server import ServerProcess, running_baton_server  # noqa: E402


@pytest.fixture
def baton_server(tmp_path: Path) -> Iterator[ServerProcess]:
    """`baton serve` with its own state dir and private tmux server, gone afterwards."""
    with running_baton_server(tmp_path) as server:
        yield server
