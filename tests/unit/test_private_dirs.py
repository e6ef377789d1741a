"""Directories Baton makes in a user's tree are private; the user's own keep their mode."""

from __future__ import annotations

from pathlib import Path

from baton.orchestrator.response_files import ensure_response_dir
from baton.orchestrator.state import write_json_atomic


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_the_response_dir_and_its_new_parent_are_private(tmp_path: Path) -> None:
    wd = tmp_path / "project"
    wd.mkdir(mode=0o755)
    wd.chmod(0o755)
    directory = ensure_response_dir(wd)
    assert (_mode(wd / ".tmp"), _mode(directory)) == (0o700, 0o700)
    assert _mode(wd) == 0o755  # the user's project is left as it was


def test_a_new_state_dir_is_private_and_an_existing_one_is_left_alone(tmp_path: Path) -> None:
    write_json_atomic(tmp_path / "new" / "state.json", {"version": 1})
    assert _mode(tmp_path / "new") == 0o700
    assert _mode(tmp_path / "new" / "state.json") == 0o600
    mine = tmp_path / "mine"
    mine.mkdir()
    mine.chmod(0o750)
    write_json_atomic(mine / "state.json", {"version": 1})
    assert _mode(mine) == 0o750
