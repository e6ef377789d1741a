"""The runs a server was told about: announcements checked, kept, read back, forgotten."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton.errors import BadRequestError
from baton.web.runs import Announcement, RunDirectory
from baton.web.views import screen_tail


def test_an_announcement_is_kept_privately_and_read_back(tmp_path: Path) -> None:
    runs = RunDirectory(tmp_path / "runs")
    first = Announcement.from_body("baton-1", {"state_file": "/w/.tmp/a.json", "wd": "/w"})
    runs.announce(first)
    assert runs.get("baton-1") == first
    assert (tmp_path / "runs").stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "runs" / "baton-1.json").stat().st_mode & 0o777 == 0o600
    runs.announce(Announcement.from_body("baton-1", {"state_file": "/w/.tmp/b.json"}))
    assert [a.state_file for a in runs.all()] == ["/w/.tmp/b.json"]
    runs.forget("baton-1")
    assert runs.get("baton-1") is None and runs.all() == []


@pytest.mark.parametrize(
    ("session", "body", "problem"),
    [
        ("../x", {"state_file": "/a"}, "is not a session name"),
        ("baton-1", ["/a"], "must be a JSON object"),
        ("baton-1", {}, "state_file must be an absolute path"),
        ("baton-1", {"state_file": "relative.json"}, "state_file must be an absolute path"),
        ("baton-1", {"state_file": "/a", "wd": 3}, "wd must be a path"),
    ],
)
def test_a_bad_announcement_is_refused_in_one_line(
    session: str, body: object, problem: str
) -> None:
    with pytest.raises(BadRequestError, match=problem):
        Announcement.from_body(session, body)


def test_unreadable_announcements_are_skipped(tmp_path: Path) -> None:
    runs = RunDirectory(tmp_path)
    (tmp_path / "broken.json").write_text("{not json")
    (tmp_path / "wrong.json").write_text('{"session": 1}')
    assert runs.all() == []
    assert runs.get("../broken") is None
    assert RunDirectory(tmp_path / "missing").all() == []


def test_a_screen_tail_keeps_the_last_lines_with_something() -> None:
    screen = "\n".join(f"line {n}" for n in range(30)) + "\n\n   \n"
    tail = screen_tail(screen, lines=3)
    assert tail == "line 27\nline 28\nline 29"
