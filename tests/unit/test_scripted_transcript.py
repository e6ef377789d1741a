"""The scripted agent's copies of received messages survive a restart of the CLI."""

from __future__ import annotations

from pathlib import Path

from baton.scripted_agent.program import ScriptedAgent


def test_a_restarted_agent_numbers_its_messages_after_the_earlier_ones(tmp_path: Path) -> None:
    """A CLI restarted in the same terminal (a stall, a dead tmux server) must not write
    over what the earlier CLI received: tests count every prompt typed from these files."""
    transcripts = tmp_path / "inputs"
    transcripts.mkdir()
    (transcripts / "0001.txt").write_text("first prompt")
    (transcripts / "0002.txt").write_text("second prompt")
    agent = ScriptedAgent(profile_name="tester", directory=tmp_path, transcript_dir=transcripts)
    agent._record("after the restart")
    kept = {path.name: path.read_text() for path in sorted(transcripts.glob("*.txt"))}
    assert kept == {
        "0001.txt": "first prompt",
        "0002.txt": "second prompt",
        "0003.txt": "after the restart",
    }


def test_a_fresh_agent_starts_at_one(tmp_path: Path) -> None:
    transcripts = tmp_path / "inputs"
    agent = ScriptedAgent(profile_name="tester", directory=tmp_path, transcript_dir=transcripts)
    agent._record("hello")
    assert [path.name for path in transcripts.glob("*.txt")] == ["0001.txt"]
