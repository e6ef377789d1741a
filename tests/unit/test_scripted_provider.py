"""ScriptedProvider reads status and the last answer from the screen alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton.providers import get_provider
from baton.providers.base import AgentProfile, TerminalContext, TurnRecord
from baton.providers.scripted import ScriptedProvider
from baton.scripted_agent.turns import record_turn
from baton.status import TerminalStatus

HEADER = (
    "Baton scripted agent · profile programmer · /work/p\n"
    "Type a task and press Enter; /exit or Ctrl-D quits.\n\n"
)
ANSWER = (
    "› Fix it [+3 lines]\n"
    "• PROGRAMMER_SUMMARY\n"
    "  Files changed:\n"
    "  - stats/median.py\n"
    "\n"
    "  Behaviour: sorts first.\n"
    "  (written to /work/p/.tmp/agent-responses/programmer_summary.md)\n"
    "─ Worked for 2s ─\n\n"
)


@pytest.fixture
def provider() -> ScriptedProvider:
    return ScriptedProvider()


@pytest.mark.parametrize(
    ("screen", "expected"),
    [
        (HEADER + "›", TerminalStatus.IDLE),
        (HEADER + "› half typed [+2 lines]", TerminalStatus.IDLE),
        (HEADER + "› Fix it\n⠙ Working (3s · esc to interrupt)", TerminalStatus.PROCESSING),
        (HEADER + ANSWER + "›", TerminalStatus.COMPLETED),
        (HEADER + ANSWER + "› next task typed", TerminalStatus.COMPLETED),
        (HEADER + "› x\n✗ Error: ScenarioError: bad json\n\n›", TerminalStatus.ERROR),
        (
            HEADER + "Do you trust the files in this folder? [y/n]",
            TerminalStatus.WAITING_USER_ANSWER,
        ),
        (
            HEADER + "› Fix it\nAllow the scripted agent to start this work? [y/n] yes\n\n",
            TerminalStatus.PROCESSING,
        ),
        ("", TerminalStatus.PROCESSING),
        ("Baton scripted agent · profile programmer", TerminalStatus.PROCESSING),
    ],
    ids=[
        "idle",
        "idle-typed",
        "working",
        "completed",
        "completed-typed",
        "error",
        "dialog",
        "dialog-answered",
        "blank",
        "starting",
    ],
)
def test_detect_status(provider: ScriptedProvider, screen: str, expected: TerminalStatus) -> None:
    assert provider.detect_status(screen) == expected


def test_narrative_words_do_not_make_it_busy(provider: ScriptedProvider) -> None:
    prose = "• I was working and running and exploring.\n  Working (3s · esc to interrupt)\n"
    screen = HEADER + "› q\n" + prose + "─ Worked for 1s ─\n\n›"
    assert provider.detect_status(screen) == TerminalStatus.COMPLETED


def test_answer_history_scrolled_above_a_new_turn_counts_only_the_last(
    provider: ScriptedProvider,
) -> None:
    screen = HEADER + ANSWER + "› again\n⠋ Working (0s · esc to interrupt)"
    assert provider.detect_status(screen) == TerminalStatus.PROCESSING


def test_trailing_spaces_and_blank_lines_are_ignored(provider: ScriptedProvider) -> None:
    screen = HEADER + ANSWER + "›    \n   \n\n"
    assert provider.detect_status(screen) == TerminalStatus.COMPLETED


def test_last_message_is_the_answer_without_furniture(provider: ScriptedProvider) -> None:
    older = "› first\n• Received 1 line(s).\n─ Worked for 1s ─\n\n"
    history = HEADER + older + ANSWER + "›"
    assert provider.extract_last_message(history) == (
        "PROGRAMMER_SUMMARY\nFiles changed:\n- stats/median.py\n\nBehaviour: sorts first."
    )


def test_last_message_of_an_error_turn_is_the_error(provider: ScriptedProvider) -> None:
    history = HEADER + ANSWER + "› x\n✗ Error: boom\n\n›"
    assert provider.extract_last_message(history) == "boom"


def test_last_message_before_any_answer_is_empty(provider: ScriptedProvider) -> None:
    assert provider.extract_last_message(HEADER + "›") == ""


def test_startup_keys_answer_the_trust_dialog_only(provider: ScriptedProvider) -> None:
    assert provider.startup_keys(HEADER + "Do you trust the files in this folder? [y/n]") == ("y",)
    assert provider.startup_keys(HEADER + "›") == ()
    # Answered, the prompt not drawn yet: a second `y` would land in the prompt.
    assert provider.startup_keys(HEADER + "Do you trust the files in this folder? [y/n] yes") == ()


def test_launch_passes_the_profile_as_instructions(tmp_path: Path) -> None:
    provider = get_provider("scripted")
    profile = AgentProfile(name="tester", description="d", instructions="Run the test.\n")
    ctx = TerminalContext("0123abcd", tmp_path, profile, tmp_path / "rt", env={})
    spec = provider.launch(ctx)
    assert spec.argv[1:3] == ["-m", "baton.scripted_agent"]
    instructions = Path(spec.argv[spec.argv.index("--instructions") + 1])
    assert instructions.read_text() == "Run the test.\n"
    assert spec.argv[spec.argv.index("--profile") + 1] == "tester"


def test_turn_record_follows_the_agents_turn_log(tmp_path: Path) -> None:
    provider = get_provider("scripted")
    profile = AgentProfile(name="tester", description="d", instructions="")
    ctx = TerminalContext("0123abcd", tmp_path, profile, tmp_path / "rt", env={})
    spec = provider.launch(ctx)
    log = Path(spec.argv[spec.argv.index("--turn-log") + 1])
    assert log.parent == ctx.runtime_dir
    assert provider.turn_record(ctx) is None  # an agent started without the log
    for event in ("ready", "received"):
        record_turn(log, event)
    assert provider.turn_record(ctx) == TurnRecord(started=1, open=True)
    record_turn(log, "finished")
    record_turn(log, "received")
    record_turn(log, "finished")
    assert provider.turn_record(ctx) == TurnRecord(started=2, open=False)
    record_turn(log, "received")
    record_turn(log, "ready")  # started again (a restart): nothing open, counted afresh
    assert provider.turn_record(ctx) == TurnRecord(started=0, open=False)
