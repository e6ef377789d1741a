"""BATON_SCRIPTED_HANG: each line naming a role makes one of its turns hang."""

from __future__ import annotations

from pathlib import Path

from baton.scripted_agent.hangs import take_hang


def test_each_line_is_one_hang_of_that_role(tmp_path: Path) -> None:
    hangs = tmp_path / "hangs"
    hangs.write_text("programmer\ntester\nprogrammer\n")
    assert not take_hang(hangs, "analyst")
    assert take_hang(hangs, "programmer")
    assert hangs.read_text() == "tester\nprogrammer\n"
    assert take_hang(hangs, "programmer")
    assert not take_hang(hangs, "programmer")
    assert hangs.read_text() == "tester\n"


def test_no_file_no_hang(tmp_path: Path) -> None:
    assert not take_hang(None, "programmer")
    assert not take_hang(tmp_path / "missing", "programmer")
