"""The pane launcher's env file: what it takes from the server, and what it refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from baton.server.pane_launcher import _read_launch


def _env_file(tmp_path: Path, **extra: object) -> str:
    path = tmp_path / ".launch-gate.env.json"
    document = {"environment": {"A": "1"}, "directory": "/", "argv": ["true"], **extra}
    path.write_text(json.dumps(document))
    return str(path)


def test_the_priority_travels_with_the_command(tmp_path: Path) -> None:
    assert _read_launch(_env_file(tmp_path, nice=10)) == ({"A": "1"}, "/", ["true"], "", 10)
    assert _read_launch(_env_file(tmp_path))[4] == 0  # a file without one: the server's


@pytest.mark.parametrize("nice", [-1, 20, "10"])
def test_a_priority_out_of_range_is_refused_and_the_file_removed(
    tmp_path: Path, nice: object
) -> None:
    path = _env_file(tmp_path, nice=nice)
    with pytest.raises(ValueError, match="nice value is not 0-19"):
        _read_launch(path)
    assert not Path(path).exists()
