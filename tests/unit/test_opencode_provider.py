"""OpenCodeProvider on screens and timelines recorded from the real OpenCode 1.18.33.

The fixtures come from `tests/e2e/record_opencode.py`: each `<name>--<status>.txt` is one
screen whose true status the recorder knew, each `<scenario>.timeline.jsonl` a full turn
captured every 250 ms with the model server's view (turn open or closed) and how much of
the plugin's record existed then, each `<scenario>.hooks.jsonl` that record.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from baton.errors import BadRequestError
from baton.providers.base import AgentProfile, TerminalContext, TurnRecord
from baton.providers.opencode import EVENT_LOG_FILE, OpenCodeProvider
from baton.providers.opencode_config import (
    CONTENT_VARIABLE,
    EVENTS_VARIABLE,
    PLUGIN_FILE,
    ROLE_FILE,
)
from baton.providers.opencode_screen import box_text, detect_status, extract_last_message
from baton.status import TerminalStatus
from baton.usage import Usage

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "screens" / "opencode"
# The CLI redraws a moment after the model's last byte: some slack after closing.
GRACE_SECONDS = 1.5
SCREENS = sorted(
    path
    for path in FIXTURES.glob("*--*.txt")
    if path.stem.split("--")[1] not in ("history", "answer")
)
TIMELINES = sorted(FIXTURES.glob("*.timeline.jsonl"))
HISTORIES = sorted(FIXTURES.glob("*--history.txt"))


def _screen(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def _context(tmp_path: Path, instructions: str = "Be the analyst.", **env: str) -> TerminalContext:
    profile = AgentProfile(name="analyst", description="", instructions=instructions)
    return TerminalContext(
        terminal_id="abcd1234",
        working_directory=tmp_path,
        profile=profile,
        runtime_dir=tmp_path / "runtime",
        env={"HOME": str(tmp_path / "home"), **env},
    )


def _timeline(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return json.loads(lines[0]), [json.loads(line) for line in lines[1:]]


def test_fixtures_were_recorded() -> None:
    statuses = {path.stem.split("--")[1] for path in SCREENS}
    assert statuses == {"idle", "processing", "completed", "error", "waiting_user_answer"}
    assert len(TIMELINES) >= 4 and len(HISTORIES) >= 4


@pytest.mark.parametrize("path", SCREENS, ids=lambda path: path.name)
def test_recorded_screen_reads_as_its_true_status(path: Path) -> None:
    expected = path.stem.split("--")[1]
    assert detect_status(path.read_text(encoding="utf-8")).value == expected


@pytest.mark.parametrize("path", TIMELINES, ids=lambda path: path.name)
def test_timeline_with_its_plugin_record(path: Path, tmp_path: Path) -> None:
    """Every capture while the model had the turn open reads `processing`; every capture
    settled after it closed reads the turn's final status."""
    header, samples = _timeline(path)
    record = (path.parent / f"{header['scenario']}.hooks.jsonl").read_text().splitlines()
    ctx = _context(tmp_path)
    ctx.runtime_dir.mkdir()
    log = ctx.runtime_dir / EVENT_LOG_FILE
    checked = 0
    for sample in samples:
        provider = OpenCodeProvider()
        log.write_text("".join(line + "\n" for line in record[: sample["hook_lines"]]))
        status = provider.status(sample["screen"], ctx)
        if sample["phase"] == "open":
            assert status is TerminalStatus.PROCESSING, sample
            checked += 1
        elif sample["phase"] == "closed" and sample["t"] > header["t_closed"] + GRACE_SECONDS:
            assert status.value == header["final"], sample
            checked += 1
    assert checked


def _plain(text: str) -> list[str]:
    """Lines as the CLI's markdown renderer leaves them: indentation and blank lines aside."""
    lines = [re.sub(r"\s+", " ", line.strip()) for line in text.split("\n")]
    return [line for line in lines if line]


@pytest.mark.parametrize("path", HISTORIES, ids=lambda path: path.name)
def test_last_answer_from_the_screen(path: Path) -> None:
    answer = path.with_name(path.name.replace("--history", "--answer")).read_text("utf-8")
    assert _plain(extract_last_message(path.read_text("utf-8"))) == _plain(answer)


def test_quoted_markers_never_change_the_status() -> None:
    screen = _screen("quote--completed.txt")
    assert detect_status(screen) is TerminalStatus.COMPLETED
    answer = extract_last_message(screen)
    assert "▣  Build · GPT-5.1 · interrupted" in answer
    assert "esc interrupt" in answer and "Permission required" in answer


def test_a_failed_turn_shows_its_error_as_the_last_message() -> None:
    assert extract_last_message(_screen("apierror--error.txt")) == "scripted model failure"


def test_the_input_box_and_a_paste_in_it() -> None:
    resting = _screen("turn1--completed.txt")
    provider = OpenCodeProvider()
    assert box_text(resting) == "" and not provider.input_pending(resting)
    assert box_text(_screen("startup--idle.txt")) == ""
    lines = resting.split("\n")
    box = next(i for i, line in enumerate(lines) if line.startswith("  ┃  Build auto")) - 2
    typed = "\n".join([*lines[:box], "  ┃  fix the median", *lines[box + 1 :]])
    assert typed != resting
    assert provider.input_pending(typed)
    assert provider.paste_shown(typed, "fix the median")
    assert not provider.paste_shown(typed, "fix the mean")
    # Words already in the transcript do not count as the paste.
    assert not provider.paste_shown(resting, "Analysis number: 1")
    folded = typed.replace("fix the median", "[Pasted ~154 lines]")
    assert provider.paste_shown(folded, "a long text\n" * 154)


# -- launch and configuration -----------------------------------------------------------------


def _content(env: dict[str, str]) -> dict[str, Any]:
    content = json.loads(env[CONTENT_VARIABLE])
    assert isinstance(content, dict)
    return content


def test_launch_adds_the_role_and_the_plugin_to_the_users_content(tmp_path: Path) -> None:
    users = {"model": "anthropic/claude-x", "instructions": ["docs/rules.md"], "plugin": ["x"]}
    ctx = _context(tmp_path, "You are the BATON analyst.", **{CONTENT_VARIABLE: json.dumps(users)})
    spec = OpenCodeProvider().launch(ctx)
    assert spec.argv == ["opencode", "--auto"]
    role = ctx.runtime_dir / ROLE_FILE
    assert role.read_text() == "You are the BATON analyst.\n"
    assert role.stat().st_mode & 0o777 == 0o600
    content = _content(spec.env)
    assert content["model"] == "anthropic/claude-x"
    assert content["instructions"] == ["docs/rules.md", str(role)]
    assert content["plugin"] == ["x", PLUGIN_FILE.as_uri()]
    assert content["autoupdate"] is False
    assert spec.env[EVENTS_VARIABLE] == str(ctx.runtime_dir / EVENT_LOG_FILE)
    assert PLUGIN_FILE.is_file()


def test_relaunch_with_an_environment_read_back_from_the_running_cli(tmp_path: Path) -> None:
    """After a server restart the terminal's environment is the CLI's own, which carries
    Baton's content: nothing is doubled."""
    ctx = _context(tmp_path)
    first = OpenCodeProvider().launch(ctx)
    read_back = _context(tmp_path, **first.env)
    content = _content(OpenCodeProvider().launch(read_back).env)
    assert content["instructions"] == [str(ctx.runtime_dir / ROLE_FILE)]
    assert content["plugin"] == [PLUGIN_FILE.as_uri()]


@pytest.mark.parametrize("raw", ["{not json", "[1, 2]"])
def test_a_users_content_that_is_no_json_object_is_refused_in_one_line(
    tmp_path: Path, raw: str
) -> None:
    with pytest.raises(BadRequestError, match=CONTENT_VARIABLE) as caught:
        OpenCodeProvider().launch(_context(tmp_path, **{CONTENT_VARIABLE: raw}))
    assert "\n" not in str(caught.value)


# -- the plugin's record ---------------------------------------------------------------------

SESSION = "ses_ddf06330effeAWLHHt08QZrOX9"
CHILD = "ses_child0000000000000000001"


def _assistant(ident: str, parent: str, **fields: Any) -> dict[str, Any]:
    info = {"id": ident, "parentID": parent, "role": "assistant", "sessionID": SESSION}
    return {"type": "message.updated", "properties": {"info": {**info, **fields}}}


def _status(session: str, kind: str) -> dict[str, Any]:
    return {
        "type": "session.status",
        "properties": {"sessionID": session, "status": {"type": kind}},
    }


def _record(ctx: TerminalContext, *events: dict[str, Any]) -> Path:
    ctx.runtime_dir.mkdir(parents=True, exist_ok=True)
    log = ctx.runtime_dir / EVENT_LOG_FILE
    with log.open("a") as handle:
        for event in events:
            handle.write(json.dumps(event) + "\n")
    return log


def _two_turns(tmp_path: Path) -> TerminalContext:
    ctx = _context(tmp_path)
    tokens = {"input": 900, "output": 40, "reasoning": 10, "cache": {"read": 300, "write": 20}}
    _record(
        ctx,
        {"type": "baton.loaded"},
        {"type": "chat.message", "sessionID": SESSION, "messageID": "msg_u1"},
        _status(SESSION, "busy"),
        _assistant("msg_a1", "msg_u1", tokens=tokens, cost=0.01, modelID="gpt-5.1"),
        {
            "type": "text.finished",
            "sessionID": SESSION,
            "messageID": "msg_a1",
            "partID": "p1",
            "text": "The first answer.",
        },
        # A subagent: its turns are not the terminal's, its tokens are.
        {"type": "session.created", "properties": {"info": {"id": CHILD, "parentID": SESSION}}},
        {"type": "chat.message", "sessionID": CHILD, "messageID": "msg_c1"},
        _status(CHILD, "idle"),
        _assistant(
            "msg_c2", "msg_c1", tokens={"input": 100, "output": 5}, cost=0.002, modelID="gpt-5-nano"
        ),
        _status(SESSION, "idle"),
        {"type": "chat.message", "sessionID": SESSION, "messageID": "msg_u2"},
        _status(SESSION, "busy"),
        _assistant(
            "msg_a2", "msg_u2", tokens={"input": 1000, "output": 50}, cost=0.02, modelID="gpt-5.1"
        ),
        {
            "type": "text.finished",
            "sessionID": SESSION,
            "messageID": "msg_a2",
            "partID": "p2",
            "text": "The second answer.",
        },
    )
    return ctx


def test_turns_usage_and_answer_from_the_plugins_record(tmp_path: Path) -> None:
    ctx = _two_turns(tmp_path)
    provider = OpenCodeProvider()
    assert provider.turn_record(ctx) == TurnRecord(started=2, open=True)
    resting = _screen("turn1--completed.txt")
    # The record holds the second turn open: a resting screen is not its end.
    assert provider.status(resting, ctx) is TerminalStatus.PROCESSING
    _record(
        ctx,
        _status(SESSION, "idle"),
        {"type": "session.idle", "properties": {"sessionID": SESSION}},
    )
    assert provider.turn_record(ctx) == TurnRecord(started=2, open=False)
    assert provider.status(resting, ctx) is TerminalStatus.COMPLETED
    assert provider.last_message(resting, ctx) == "The second answer."
    # Prompt tokens include cache reads and writes; reasoning is output; cost is OpenCode's.
    assert provider.usage(ctx) == Usage(
        input_tokens=900 + 300 + 20 + 100 + 1000,
        cached_input_tokens=300,
        output_tokens=50 + 5 + 50,
        model="gpt-5.1",
        cost_usd=pytest.approx(0.032),  # type: ignore[arg-type]
    )


def test_a_turn_that_failed_reads_error_with_its_message(tmp_path: Path) -> None:
    ctx = _two_turns(tmp_path)
    error = {"name": "APIError", "data": {"message": "quota exceeded", "statusCode": 429}}
    _record(
        ctx,
        {"type": "session.error", "properties": {"sessionID": SESSION, "error": error}},
        _status(SESSION, "idle"),
    )
    provider = OpenCodeProvider()
    # Whatever the screen shows of the turn, the record says it failed.
    for name in ("turn1--completed.txt", "apierror--error.txt", "turn1-last--processing.txt"):
        assert provider.status(_screen(name), ctx) is TerminalStatus.ERROR, name
    assert provider.last_message(_screen("apierror--error.txt"), ctx) == "quota exceeded"


def test_an_interrupted_turn_rests_idle(tmp_path: Path) -> None:
    ctx = _two_turns(tmp_path)
    aborted = {"name": "MessageAbortedError", "data": {"message": "Aborted"}}
    _record(ctx, _assistant("msg_a2", "msg_u2", error=aborted), _status(SESSION, "idle"))
    provider = OpenCodeProvider()
    assert provider.status(_screen("cancel--idle.txt"), ctx) is TerminalStatus.IDLE


def test_a_question_the_agent_asks_waits_for_the_user(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    record = (FIXTURES / "question.hooks.jsonl").read_text().splitlines()
    _record(ctx, *(json.loads(line) for line in record))
    provider = OpenCodeProvider()
    # Even on a screen that has not drawn the question yet.
    assert provider.status(_screen("turn1-first--processing.txt"), ctx) is (
        TerminalStatus.WAITING_USER_ANSWER
    )
    asked = next(json.loads(line) for line in record if "question.asked" in line)
    reply = {"type": "question.replied", "properties": {"requestID": asked["properties"]["id"]}}
    _record(ctx, reply)
    assert provider.status(_screen("turn1-first--processing.txt"), ctx) is (
        TerminalStatus.PROCESSING
    )


def test_resume_uses_the_session_of_the_last_prompt(tmp_path: Path) -> None:
    ctx = _two_turns(tmp_path)
    log = ctx.runtime_dir / EVENT_LOG_FILE
    provider = OpenCodeProvider()
    spec = provider.resume_launch(ctx)
    assert spec is not None
    assert spec.argv == ["opencode", "--auto", "--session", SESSION]
    assert EVENTS_VARIABLE in spec.env and CONTENT_VARIABLE in spec.env
    # The dead CLI's record was set aside: its open turn does not hold the new CLI busy.
    assert not log.exists()
    assert provider.turn_record(ctx) is None
    # No prompt recorded: the CLI starts afresh.
    assert OpenCodeProvider().resume_launch(_context(tmp_path / "other")) is None


def test_a_launched_cli_is_starting_until_its_plugin_loaded(tmp_path: Path) -> None:
    """OpenCode draws its box while it loads and drops keys typed then."""
    ctx = _context(tmp_path)
    provider = OpenCodeProvider()
    provider.launch(ctx)
    resting = _screen("startup--idle.txt")
    assert provider.status(resting, ctx) is TerminalStatus.PROCESSING
    _record(ctx, {"type": "baton.loaded"})
    assert provider.status(resting, ctx) is TerminalStatus.IDLE
    # A provider that did not launch this CLI (a restarted server) reads the screen.
    assert OpenCodeProvider().status(resting, _context(tmp_path / "x")) is TerminalStatus.IDLE


def test_opencode_keys() -> None:
    assert OpenCodeProvider.interrupt_keys == ("Escape",)
    assert OpenCodeProvider.after_interrupt_keys == ("Escape",)
    busy = _screen("turn1-middle--processing.txt")
    later = busy.replace("⬝", "■", 3)
    assert OpenCodeProvider.progress_view(busy) == OpenCodeProvider.progress_view(later)


@pytest.mark.parametrize(
    ("last", "expected"),
    [
        ({"finish": "stop", "time": {"created": 1, "completed": 2}}, TerminalStatus.COMPLETED),
        (
            {"finish": "tool-calls", "time": {"created": 1, "completed": 2}},
            TerminalStatus.PROCESSING,
        ),
        ({"finish": "stop", "time": {"created": 1}}, TerminalStatus.PROCESSING),
    ],
)
def test_the_final_answer_stored_ends_the_turn_before_the_session_rests(
    tmp_path: Path, last: dict[str, Any], expected: TerminalStatus
) -> None:
    ctx = _two_turns(tmp_path)
    _record(ctx, _assistant("msg_a3", "msg_u2", **last))
    provider = OpenCodeProvider()
    # The last busy screen: its footer still without a duration, the bar still moving.
    busy = _screen("turn1-last--processing.txt")
    assert provider.status(busy, ctx) is expected
    # Nothing is typed into the CLI until its session rests.
    assert provider.turn_record(ctx) == TurnRecord(started=2, open=True)
    answered = expected is TerminalStatus.COMPLETED
    assert (provider.last_message(busy, ctx) == "The second answer.") is answered
    # A screen showing a newer prompt after the footer is not this turn's end.
    lines = _screen("turn1-last--processing.txt").split("\n")
    footer = max(i for i, line in enumerate(lines) if "▣  Build" in line)
    newer = [*lines[: footer + 1], "", "  ┃", "  ┃  Round: 2", "  ┃", *lines[footer + 1 :]]
    assert provider.status("\n".join(newer), ctx) is TerminalStatus.PROCESSING


def test_a_resumed_cli_rests_whatever_its_sessions_last_turn_shows(tmp_path: Path) -> None:
    """Restarted on the session of a CLI killed mid-turn, OpenCode shows that turn as it
    was left: a footer with no end, as a failed turn's. The new CLI took no prompt yet."""
    screen = _screen("resumed-killed.txt")
    assert detect_status(screen) is TerminalStatus.ERROR  # the screen alone cannot tell
    ctx = _context(tmp_path)
    record = (FIXTURES / "resumed.hooks.jsonl").read_text().splitlines()
    _record(ctx, *(json.loads(line) for line in record))
    provider = OpenCodeProvider()
    assert provider.status(screen, ctx) is TerminalStatus.IDLE
    assert provider.turn_record(ctx) is None


def test_the_second_esc_waits_for_the_first_to_arm_the_interrupt() -> None:
    """Two Escs read together are one Alt-Esc, which interrupts nothing: the server sends
    the second (the after-interrupt key) once the screen shows the first taken."""
    provider = OpenCodeProvider()
    assert not provider.interrupt_taken(_screen("cancel-busy--processing.txt"))
    assert provider.interrupt_taken(_screen("cancel-armed--processing.txt"))
    assert provider.interrupt_taken(_screen("cancel--idle.txt"))  # the turn ended anyway
    assert not provider.interrupt_taken("\n" * 40)  # a view being drawn
