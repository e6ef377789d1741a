"""QwenCodeProvider on screens and timelines recorded from the real Qwen Code 0.24.4.

The fixtures come from `tests/e2e/record_qwen.py`: each `<name>--<status>.txt` is one
screen whose true status the recorder knew, each `<scenario>.timeline.jsonl` a full turn
captured every 250 ms with the model server's view (turn open or closed) and how much of
the hook log existed then, each `<scenario>.hooks.jsonl` that hook log.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from baton.providers.base import AgentProfile, TerminalContext, TurnRecord
from baton.providers.qwen_code import HOOK_LOG_FILE, QwenCodeProvider
from baton.providers.qwen_home import HOOK_EVENTS, HOOK_NAME
from baton.providers.qwen_records import transcript_usage
from baton.providers.qwen_screen import detect_status, extract_last_message, input_pending
from baton.status import TerminalStatus
from baton.usage import Usage

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "screens" / "qwen_code"
SCREENS = sorted(
    path
    for path in FIXTURES.glob("*--*.txt")
    if path.stem.split("--")[1] not in ("history", "answer")
)
TIMELINES = sorted(FIXTURES.glob("*.timeline.jsonl"))
HISTORIES = sorted(FIXTURES.glob("*--history.txt"))


def _context(tmp_path: Path, instructions: str = "Be the analyst.") -> TerminalContext:
    profile = AgentProfile(name="analyst", description="", instructions=instructions)
    return TerminalContext(
        terminal_id="abcd1234",
        working_directory=tmp_path,
        profile=profile,
        runtime_dir=tmp_path / "runtime",
        env={"HOME": str(tmp_path / "home")},
    )


def _timeline(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return json.loads(lines[0]), [json.loads(line) for line in lines[1:]]


def test_fixtures_were_recorded() -> None:
    statuses = {path.stem.split("--")[1] for path in SCREENS}
    assert statuses == {"idle", "processing", "completed", "error"}
    assert len(TIMELINES) >= 4 and len(HISTORIES) >= 4


@pytest.mark.parametrize("path", SCREENS, ids=lambda path: path.name)
def test_recorded_screen_reads_as_its_true_status(path: Path) -> None:
    expected = path.stem.split("--")[1]
    assert detect_status(path.read_text(encoding="utf-8")).value == expected


@pytest.mark.parametrize("path", TIMELINES, ids=lambda path: path.name)
def test_timeline_with_its_hook_log(path: Path, tmp_path: Path) -> None:
    """Every capture while the model had the turn open reads `processing`; the last
    capture, seconds after it closed, reads the turn's final status."""
    header, samples = _timeline(path)
    hook_lines = (path.parent / f"{header['scenario']}.hooks.jsonl").read_text().splitlines()
    ctx = _context(tmp_path)
    ctx.runtime_dir.mkdir()
    log = ctx.runtime_dir / HOOK_LOG_FILE
    opened = 0
    for sample in samples:
        provider = QwenCodeProvider()
        log.write_text("".join(line + "\n" for line in hook_lines[: sample["hook_lines"]]))
        status = provider.status(sample["screen"], ctx)
        if sample["phase"] == "open":
            assert status is TerminalStatus.PROCESSING, sample
            opened += 1
    log.write_text("".join(line + "\n" for line in hook_lines[: samples[-1]["hook_lines"]]))
    assert QwenCodeProvider().status(samples[-1]["screen"], ctx).value == header["final"]
    # A failed request, or a plain reply sent in one go, closes the turn before a capture
    # falls inside it; the turns with shell commands are captured while open.
    assert opened or header["scenario"] in ("apierror", "quote")


def _plain(text: str) -> list[str]:
    """Lines as the CLI's markdown renderer leaves them: indentation, bullets and quote
    bars aside."""
    lines = [re.sub(r"\s+", " ", line.strip().lstrip("*>│").strip()) for line in text.split("\n")]
    return [line for line in lines if line]


@pytest.mark.parametrize("path", HISTORIES, ids=lambda path: path.name)
def test_last_answer_from_the_scrollback(path: Path) -> None:
    answer = path.with_name(path.name.replace("--history", "--answer")).read_text("utf-8")
    assert _plain(extract_last_message(path.read_text("utf-8"))) == _plain(answer)


def test_quoted_markers_never_change_the_status() -> None:
    screen = (FIXTURES / "quote--completed.txt").read_text("utf-8")
    assert detect_status(screen) is TerminalStatus.COMPLETED
    answer = extract_last_message(screen)
    assert "✕ [API Error: quoted, not real]" in answer
    assert "Enter to steer" in answer


def test_a_message_left_in_the_input_box_is_pending() -> None:
    resting = (FIXTURES / "startup--idle.txt").read_text("utf-8")
    assert not input_pending(resting)
    stuck = resting.replace(
        "*   Type your message or @path/to/file", "* [Pasted Content 5452 chars]"
    )
    assert stuck != resting
    assert input_pending(stuck)
    assert QwenCodeProvider().input_pending(stuck)
    # The placeholder quoted inside a typed message is not the placeholder.
    quoted = resting.replace(
        "*   Type your message or @path/to/file",
        "* QUOTE BACK:\n  *   Type your message or @path/to/file",
    )
    assert input_pending(quoted)


# -- launch, home, records ----------------------------------------------------------------


def _user_dir(tmp_path: Path) -> Path:
    dot = tmp_path / "home" / ".qwen"
    (dot / "projects").mkdir(parents=True)
    settings = {
        "security": {"auth": {"selectedType": "openai"}},
        "model": {"name": "qwen3-coder-plus"},
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "users-own"}]}]},
        "general": {"vimMode": True, "enableAutoUpdate": True},
        "disableAllHooks": True,
    }
    (dot / "settings.json").write_text(json.dumps(settings))
    (dot / ".env").write_text("OPENAI_API_KEY=sk-users-own\n")
    (dot / "QWEN.md").write_text("The user's own memory.\n")
    return dot


def test_launch_builds_a_qwen_home_over_the_users_own(tmp_path: Path) -> None:
    user = _user_dir(tmp_path)
    before = {path: path.read_bytes() for path in user.iterdir() if path.is_file()}
    ctx = _context(tmp_path, instructions="You are the BATON analyst.")
    spec = QwenCodeProvider().launch(ctx)
    assert spec.argv == [
        "qwen",
        "--approval-mode",
        "yolo",
        "--append-system-prompt=You are the BATON analyst.",
    ]
    home = Path(spec.env["QWEN_HOME"])
    assert home.parent == ctx.runtime_dir
    # The user's files are the user's (symlinks), and never written.
    for name in (".env", "QWEN.md", "projects"):
        assert (home / name).resolve() == user / name
    assert {path: path.read_bytes() for path in user.iterdir() if path.is_file()} == before
    settings = json.loads((home / "settings.json").read_text())
    assert settings["security"] == {"auth": {"selectedType": "openai"}}
    assert settings["model"] == {"name": "qwen3-coder-plus"}
    assert settings["general"] == {"vimMode": True, "enableAutoUpdate": False}
    assert settings["privacy"] == {"usageStatisticsEnabled": False}
    assert settings["telemetry"] == {"enabled": False}
    assert settings["ui"] == {"enableFollowupSuggestions": False}
    assert set(settings["memory"].values()) == {False}
    assert settings["disableAllHooks"] is False
    stop = settings["hooks"]["Stop"]
    assert stop[0]["hooks"][0]["command"] == "users-own"
    ours = stop[1]["hooks"][0]
    assert ours["name"] == HOOK_NAME
    assert "-I -S" in ours["command"] and "hook_recorder.py" in ours["command"]
    assert str(ctx.runtime_dir / HOOK_LOG_FILE) in ours["command"]
    assert set(settings["hooks"]) == set(HOOK_EVENTS)


def test_the_users_qwen_home_variable_is_followed_and_relaunch_doubles_nothing(
    tmp_path: Path,
) -> None:
    """QWEN_HOME names the user's directory; after a server restart the terminal's
    environment is the CLI's own, which carries Baton's QWEN_HOME: ~/.qwen is used."""
    own = tmp_path / "elsewhere"
    own.mkdir()
    (own / "settings.json").write_text(json.dumps({"model": {"name": "m-from-qwen-home"}}))
    ctx = _context(tmp_path)
    moved = TerminalContext(**{**ctx.__dict__, "env": {**ctx.env, "QWEN_HOME": str(own)}})
    spec = QwenCodeProvider().launch(moved)
    settings = json.loads((Path(spec.env["QWEN_HOME"]) / "settings.json").read_text())
    assert settings["model"] == {"name": "m-from-qwen-home"}
    _user_dir(tmp_path)
    first = QwenCodeProvider().launch(ctx)
    read_back = TerminalContext(**{**ctx.__dict__, "env": {**ctx.env, **first.env}})
    again = QwenCodeProvider().launch(read_back)
    settings = json.loads((Path(again.env["QWEN_HOME"]) / "settings.json").read_text())
    names = [group["hooks"][0].get("name") for group in settings["hooks"]["Stop"]]
    assert names.count(HOOK_NAME) == 1, names
    assert settings["model"] == {"name": "qwen3-coder-plus"}


def _session(tmp_path: Path) -> tuple[TerminalContext, Path]:
    ctx = _context(tmp_path)
    ctx.runtime_dir.mkdir(parents=True)
    transcript = tmp_path / "session.jsonl"

    def response(number: int, tokens: tuple[int, int, int], **extra: Any) -> dict[str, Any]:
        event = {
            "event.name": "qwen-code.api_response",
            "response_id": f"chatcmpl-{number}",
            "model": "qwen3-coder-plus",
            "input_token_count": tokens[0],
            "cached_content_token_count": tokens[1],
            "output_token_count": tokens[2],
            "thoughts_token_count": 7,
            "auth_type": "openai",
            **extra,
        }
        return {"type": "system", "subtype": "ui_telemetry", "systemPayload": {"uiEvent": event}}

    def said(text: str) -> dict[str, Any]:
        return {"type": "assistant", "message": {"role": "model", "parts": [{"text": text}]}}

    entries: list[dict[str, Any]] = [
        {"type": "user", "message": {"role": "user", "parts": [{"text": "first"}]}},
        response(1, (1000, 300, 10)),
        {"type": "assistant", "message": {"parts": [{"functionCall": {"name": "x"}}]}},
        {"type": "tool_result", "message": {"role": "user", "parts": []}},
        response(2, (1200, 900, 20)),
        said("The first answer."),
        {"type": "user", "message": {"role": "user", "parts": [{"text": "second"}]}},
        response(3, (1500, 1200, 30), subagent_name="managed-auto-memory-extractor"),
        said("The second answer."),
    ]
    transcript.write_text("".join(json.dumps(entry) + "\n" for entry in entries))
    common = {"session_id": "a1b2c3d4-0000-4000-8000-000000000001"}
    common["transcript_path"] = str(transcript)
    events = [
        {**common, "hook_event_name": "SessionStart", "source": "startup"},
        {**common, "hook_event_name": "UserPromptSubmit", "prompt_id": "p########0"},
        {**common, "hook_event_name": "UserPromptSubmit", "prompt_id": "p########0"},
        {**common, "hook_event_name": "Stop", "last_assistant_message": "The first answer."},
        {**common, "hook_event_name": "UserPromptSubmit", "prompt_id": "p########1"},
    ]
    log = ctx.runtime_dir / HOOK_LOG_FILE
    log.write_text("".join(json.dumps(event) + "\n" for event in events))
    return ctx, log


def test_turns_usage_and_answer_from_the_clis_records(tmp_path: Path) -> None:
    ctx, log = _session(tmp_path)
    provider = QwenCodeProvider()
    # The first prompt's request after its tool result is not a new prompt.
    assert provider.turn_record(ctx) == TurnRecord(started=2, open=True)
    resting = (FIXTURES / "turn1--completed.txt").read_text("utf-8")
    assert provider.status(resting, ctx) is TerminalStatus.PROCESSING
    with log.open("a") as handle:
        handle.write(json.dumps({"hook_event_name": "Stop", "session_id": "x"}) + "\n")
    assert provider.turn_record(ctx) == TurnRecord(started=2, open=False)
    assert provider.status(resting, ctx) is TerminalStatus.COMPLETED
    # The Stop hook gave no message: the session file's last answer.
    assert provider.last_message(resting, ctx) == "The second answer."
    # Every request counts, a subagent's too; an OpenAI endpoint's output includes thoughts.
    assert provider.usage(ctx) == Usage(3700, 2400, 60, "qwen3-coder-plus", complete=True)


def _step(kind: str, **message: Any) -> dict[str, Any]:
    return {"type": kind, "message": message}


def _telemetry(name: str) -> dict[str, Any]:
    event = {"event.name": f"qwen-code.{name}", "output_token_count": 5}
    return {"type": "system", "subtype": "ui_telemetry", "systemPayload": {"uiEvent": event}}


CALL = _step("assistant", parts=[{"text": "Running it."}, {"functionCall": {"name": "x"}}])
SAID = _step("assistant", parts=[{"text": "Done."}])
TOOL_RESULT = _step("tool_result", parts=[{"functionResponse": {"name": "x"}}])
PROMPT = _step("user", parts=[{"text": "go"}])


@pytest.mark.parametrize(
    ("steps", "closed"),
    [
        # The model's last message called a tool, or its result has not been answered yet.
        ([PROMPT, _telemetry("api_response"), CALL], False),
        ([PROMPT, _telemetry("api_response"), CALL, TOOL_RESULT], False),
        # The last request is recorded, its message not yet: the message is coming.
        (
            [PROMPT, _telemetry("api_response"), CALL, TOOL_RESULT, _telemetry("api_response")],
            False,
        ),
        # A new prompt opens a turn, whatever the one before said.
        ([PROMPT, _telemetry("api_response"), SAID, PROMPT], False),
        (
            [
                PROMPT,
                _telemetry("api_response"),
                CALL,
                TOOL_RESULT,
                _telemetry("api_response"),
                SAID,
            ],
            True,
        ),
        # A failed request ends the turn, and telemetry after the answer does not reopen it.
        ([PROMPT, _telemetry("api_response"), SAID, PROMPT, _telemetry("api_error")], True),
        ([PROMPT, _telemetry("api_response"), SAID, _telemetry("api_response")], True),
    ],
)
def test_usage_says_whether_the_turn_is_closed(
    steps: list[dict[str, Any]], closed: bool, tmp_path: Path
) -> None:
    """Qwen records a turn as it goes, a moment after its screen shows it done under load:
    the token meter waits for the closing message rather than count part of the turn."""
    transcript = tmp_path / "session.jsonl"
    transcript.write_text("".join(json.dumps(step) + "\n" for step in steps))
    usage = transcript_usage(transcript)
    assert usage is not None
    assert usage.complete is closed


def test_a_busy_screen_is_not_declared_done_by_stop(tmp_path: Path) -> None:
    """Qwen Code may draw the answer for seconds after Stop; Enter then steers the turn."""
    ctx, log = _session(tmp_path)
    with log.open("a") as handle:
        handle.write(json.dumps({"hook_event_name": "Stop"}) + "\n")
    busy = [
        sample["screen"]
        for sample in _timeline(FIXTURES / "turn1.timeline.jsonl")[1]
        if "◆" in sample["screen"] and "esc to cancel)" in sample["screen"]
    ]
    assert busy
    assert QwenCodeProvider().status(busy[-1], ctx) is TerminalStatus.PROCESSING


def test_an_error_on_screen_wins_and_is_the_last_message(tmp_path: Path) -> None:
    ctx, log = _session(tmp_path)
    with log.open("a") as handle:
        handle.write(json.dumps({"hook_event_name": "StopFailure", "error": "x"}) + "\n")
    screen = (FIXTURES / "apierror--error.txt").read_text("utf-8")
    provider = QwenCodeProvider()
    assert provider.status(screen, ctx) is TerminalStatus.ERROR
    assert provider.last_message(screen, ctx).startswith("[API Error:")


def test_an_interrupted_turn_follows_the_screen_again(tmp_path: Path) -> None:
    ctx, _ = _session(tmp_path)
    provider = QwenCodeProvider()
    cancelled = (FIXTURES / "cancel--idle.txt").read_text("utf-8")
    assert provider.status(cancelled, ctx) is TerminalStatus.PROCESSING
    provider.interrupted(ctx)
    assert provider.status(cancelled, ctx) is TerminalStatus.IDLE
    assert provider.turn_record(ctx) == TurnRecord(started=2, open=False)


def test_resume_uses_the_session_the_hooks_named(tmp_path: Path) -> None:
    ctx, log = _session(tmp_path)
    provider = QwenCodeProvider()
    spec = provider.resume_launch(ctx)
    assert spec is not None
    assert spec.argv[-2:] == ["--resume", "a1b2c3d4-0000-4000-8000-000000000001"]
    assert spec.argv[:3] == ["qwen", "--approval-mode", "yolo"]
    # The dead CLI's log was set aside: its open turn does not hold the new CLI busy.
    assert not log.exists()
    assert provider.turn_record(ctx) == TurnRecord(started=0, open=False)
    # No session recorded, or none with a file: the CLI starts afresh.
    assert QwenCodeProvider().resume_launch(_context(tmp_path / "other")) is None
    ctx, _ = _session(tmp_path / "again")
    (tmp_path / "again" / "session.jsonl").unlink()
    assert QwenCodeProvider().resume_launch(ctx) is None


def test_a_launched_cli_is_starting_until_its_session_starts(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    provider = QwenCodeProvider()
    provider.launch(ctx)
    resting = (FIXTURES / "startup--idle.txt").read_text("utf-8")
    assert provider.status(resting, ctx) is TerminalStatus.PROCESSING
    (ctx.runtime_dir / HOOK_LOG_FILE).write_text(
        json.dumps({"hook_event_name": "SessionStart", "session_id": "abcdef12"}) + "\n"
    )
    assert provider.status(resting, ctx) is TerminalStatus.IDLE
    # A provider that did not launch this CLI (a restarted server) reads the screen.
    assert QwenCodeProvider().status(resting, _context(tmp_path / "x")) is TerminalStatus.IDLE


def test_the_hook_command_records_an_event_without_baton_on_its_path(tmp_path: Path) -> None:
    """The command Qwen Code runs, run the same way: isolated, no site-packages."""
    import shlex
    import subprocess

    ctx = _context(tmp_path)
    spec = QwenCodeProvider().launch(ctx)
    settings = json.loads((Path(spec.env["QWEN_HOME"]) / "settings.json").read_text())
    command = settings["hooks"]["Stop"][-1]["hooks"][0]["command"]
    event = {"hook_event_name": "Stop", "session_id": "abcdef12", "last_assistant_message": "é"}
    done = subprocess.run(
        shlex.split(command), input=json.dumps(event), capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout) == (0, "")
    [line] = (ctx.runtime_dir / HOOK_LOG_FILE).read_text(encoding="utf-8").splitlines()
    assert json.loads(line)["last_assistant_message"] == "é"


def test_a_prompt_drawn_after_its_own_cancellation_reads_idle() -> None:
    """Esc before any reply: Qwen Code may draw the prompt under `Request cancelled.`."""
    resting = (FIXTURES / "startup--idle.txt").read_text("utf-8")
    rule = next(line for line in resting.split("\n") if line.startswith("───"))
    cancelled = resting.replace(rule, "  ●\ufe0e Request cancelled.\n  > hello slow\n" + rule, 1)
    assert detect_status(cancelled) is TerminalStatus.IDLE
    waiting = resting.replace(rule, "  > hello slow\n" + rule, 1)
    assert detect_status(waiting) is TerminalStatus.PROCESSING


def test_a_resumed_cli_replaying_its_dead_turn_is_at_rest(tmp_path: Path) -> None:
    """`--resume` after a failed turn shows its prompt with nothing after it."""
    ctx, log = _session(tmp_path)
    failed = (FIXTURES / "apierror--error.txt").read_text("utf-8").split("\n")
    replayed = "\n".join(line for line in failed if "[API Error" not in line)
    assert replayed != "\n".join(failed)
    provider = QwenCodeProvider()
    assert provider.resume_launch(ctx) is not None
    assert provider.status(replayed, ctx) is not TerminalStatus.IDLE  # starting: no SessionStart
    log.write_text(json.dumps({"hook_event_name": "SessionStart", "source": "resume"}) + "\n")
    assert provider.status(replayed, ctx) is TerminalStatus.IDLE
    # Once the resumed CLI takes a prompt, the hooks hold its turn open again.
    with log.open("a") as handle:
        handle.write(json.dumps({"hook_event_name": "UserPromptSubmit", "prompt_id": "n"}) + "\n")
    assert provider.status(replayed, ctx) is TerminalStatus.PROCESSING
    # A CLI that was not resumed reads such a screen as between two steps.
    assert QwenCodeProvider().status(replayed, _session(tmp_path / "b")[0]) is (
        TerminalStatus.PROCESSING
    )
