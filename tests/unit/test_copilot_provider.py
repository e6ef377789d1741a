"""CopilotCliProvider on screens and timelines recorded from the real Copilot CLI 1.0.102.

The fixtures come from `tests/e2e/record_copilot.py`: each `<name>--<status>.txt` is one
screen whose true status the recorder knew, each `<scenario>.timeline.jsonl` a full turn
captured every 250 ms with the model server's view (turn open or closed) and how much of
the hook log and the session file existed then, each `<scenario>.hooks.jsonl` and
`<scenario>.session.jsonl` those files. `resumed-*.txt` are screens of CLIs restarted
with `--resume`, which redraw the old conversation.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from baton.providers.base import AgentProfile, TerminalContext, TurnRecord
from baton.providers.copilot_cli import HOOK_LOG_FILE, SESSION_ID_FILE, CopilotCliProvider
from baton.providers.copilot_home import HOOK_EVENTS, HOOK_NAME, INSTRUCTIONS_FILE
from baton.providers.copilot_screen import (
    detect_status,
    extract_last_message,
    input_pending,
    parse_screen,
)
from baton.screen import normalize_screen
from baton.status import TerminalStatus
from baton.usage import Usage

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "screens" / "copilot"
SCREENS = sorted(
    path
    for path in FIXTURES.glob("*--*.txt")
    if path.stem.split("--")[1] not in ("history", "answer")
)
TIMELINES = sorted(FIXTURES.glob("*.timeline.jsonl"))
HISTORIES = sorted(FIXTURES.glob("*--history.txt"))
SESSION = "0f0e0d0c-1b2a-4c3d-8e4f-5a6b7c8d9e0f"


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


def _session_file(ctx: TerminalContext, session: str) -> Path:
    path = ctx.runtime_dir / "copilot-home" / "session-state" / session / "events.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _text(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def _working(screen: str) -> bool:
    """Whether the footer (the screen's last line) says the CLI is working."""
    return "Working" in normalize_screen(screen).rsplit("\n", 1)[-1]


def test_fixtures_were_recorded() -> None:
    statuses = {path.stem.split("--")[1] for path in SCREENS}
    assert statuses == {"idle", "processing", "completed", "error", "waiting_user_answer"}
    assert len(TIMELINES) >= 5 and len(HISTORIES) >= 4


@pytest.mark.parametrize("path", SCREENS, ids=lambda path: path.name)
def test_recorded_screen_reads_as_its_true_status(path: Path) -> None:
    expected = path.stem.split("--")[1]
    assert detect_status(path.read_text(encoding="utf-8")).value == expected


@pytest.mark.parametrize("path", TIMELINES, ids=lambda path: path.name)
def test_timeline_with_its_hook_log_and_session_file(path: Path, tmp_path: Path) -> None:
    """Every capture while the model had the turn open reads `processing`; once the CLI
    recorded the turn's end (its hooks and session file are whole), every capture whose
    screen shows that end reads the turn's final status, `Working` footer or not."""
    header, samples = _timeline(path)
    hook_lines = (path.parent / f"{header['scenario']}.hooks.jsonl").read_text().splitlines()
    events = (path.parent / f"{header['scenario']}.session.jsonl").read_text().splitlines()
    session = json.loads(events[0])["data"]["sessionId"]
    ctx = _context(tmp_path)
    ctx.runtime_dir.mkdir()
    (ctx.runtime_dir / SESSION_ID_FILE).write_text(session + "\n")
    log, session_file = ctx.runtime_dir / HOOK_LOG_FILE, _session_file(ctx, session)
    opened = ended = 0
    for sample in samples:
        log.write_text("".join(line + "\n" for line in hook_lines[: sample["hook_lines"]]))
        session_file.write_text("".join(line + "\n" for line in events[: sample["session_lines"]]))
        status = CopilotCliProvider().status(sample["screen"], ctx)
        if sample["phase"] == "open":
            assert status is TerminalStatus.PROCESSING, sample
            opened += 1
        recorded = (sample["hook_lines"], sample["session_lines"]) == (len(hook_lines), len(events))
        if recorded and parse_screen(sample["screen"]).last_marker() in ("answer", "error"):
            assert status.value == header["final"], sample
            ended += 1
    assert ended, "no capture after the turn's end"
    # A failed request, or a plain reply sent in one go, closes the turn before a capture
    # falls inside it; the turns with shell commands are captured while open.
    assert opened or header["scenario"] in ("apierror", "quote")


def _plain(text: str) -> list[str]:
    """Lines as the CLI's markdown renderer leaves them: indentation and bullets aside."""
    lines = [re.sub(r"\s+", " ", line.strip().lstrip("-•").strip()) for line in text.split("\n")]
    return [line for line in lines if line]


@pytest.mark.parametrize("path", HISTORIES, ids=lambda path: path.name)
def test_last_answer_from_the_scrollback(path: Path) -> None:
    answer = path.with_name(path.name.replace("--history", "--answer")).read_text("utf-8")
    assert _plain(extract_last_message(path.read_text("utf-8"))) == _plain(answer)


def test_quoted_markers_never_change_the_status() -> None:
    screen = _text("quote--completed.txt")
    assert detect_status(screen) is TerminalStatus.COMPLETED
    answer = extract_last_message(screen)
    assert "✗ 400 quoted, not real" in answer
    assert "◉ Working · 1.1 KiB esc esc interrupt" in answer
    assert "Confirm folder trust" in answer


def test_a_message_left_in_the_input_box_is_pending() -> None:
    resting = _text("startup--idle.txt")
    assert not input_pending(resting)
    typed = [
        sample["screen"]
        for sample in _timeline(FIXTURES / "turn2.timeline.jsonl")[1]
        if "@ files · # issues" in sample["screen"]
    ]
    assert typed
    assert input_pending(typed[0])
    assert CopilotCliProvider().input_pending(typed[0])
    assert CopilotCliProvider().paste_shown(typed[0], "then mv it into place).")
    folded = resting.replace("\n❯\n", "\n❯ [Paste #1 - 151 lines]\n")
    assert folded != resting
    assert input_pending(folded)
    assert CopilotCliProvider().paste_shown(folded, "Context line 149: keep this in mind.")
    assert not CopilotCliProvider().paste_shown(resting, "Context line 149: keep this in mind.")


def test_dialogs_wait_for_a_person_and_trust_is_answered_at_startup() -> None:
    trust = _text("trust--waiting_user_answer.txt")
    provider = CopilotCliProvider()
    assert provider.startup_keys(trust) == ("Enter",)
    assert provider.startup_keys(_text("startup--idle.txt")) == ()
    assert detect_status(_text("ask--waiting_user_answer.txt")) is (
        TerminalStatus.WAITING_USER_ANSWER
    )


# -- launch and home -----------------------------------------------------------------------


def _user_dir(tmp_path: Path) -> Path:
    dot = tmp_path / "home" / ".copilot"
    (dot / "session-state").mkdir(parents=True)
    settings = {
        "model": "gpt-5.4",
        "hooks": {"Stop": [{"type": "command", "command": "users-own"}]},
        "ide": {"autoConnect": True, "openDiffOnEdit": False},
        "autoUpdate": True,
        "disableAllHooks": True,
    }
    (dot / "settings.json").write_text("// the user's own comment\n" + json.dumps(settings))
    (dot / "config.json").write_text('{"firstLaunchAt": "2026-01-01"}\n')
    (dot / "mcp-config.json").write_text('{"mcpServers": {}}\n')
    (dot / INSTRUCTIONS_FILE).write_text("The user's own instructions.\n")
    return dot


def test_launch_builds_a_copilot_home_over_the_users_own(tmp_path: Path) -> None:
    user = _user_dir(tmp_path)
    before = {path: path.read_bytes() for path in user.iterdir() if path.is_file()}
    ctx = _context(tmp_path, instructions="You are the BATON analyst.")
    spec = CopilotCliProvider().launch(ctx)
    session = (ctx.runtime_dir / SESSION_ID_FILE).read_text().strip()
    assert spec.argv == [
        "copilot",
        "--allow-all",
        "--mode=interactive",
        "--no-auto-update",
        "--disable-client-telemetry",
        f"--session-id={session}",
    ]
    assert re.fullmatch(
        r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", session
    ), session
    assert spec.env["COPILOT_ALLOW_ALL"] == "true"
    home = Path(spec.env["COPILOT_HOME"])
    assert home.parent == ctx.runtime_dir
    # The user's files are the user's (symlinks), and never written.
    for name in ("config.json", "mcp-config.json", "session-state"):
        assert (home / name).resolve() == user / name
    assert {path: path.read_bytes() for path in user.iterdir() if path.is_file()} == before
    settings = json.loads((home / "settings.json").read_text())
    assert settings["model"] == "gpt-5.4"
    assert settings["ide"] == {"autoConnect": False, "openDiffOnEdit": False}
    assert settings["autoUpdate"] is False
    assert settings["disableAllHooks"] is False
    assert settings["showTipsOnStartup"] is False
    stop = settings["hooks"]["Stop"]
    assert stop[0]["command"] == "users-own"
    ours = stop[1]["hooks"][0]
    assert ours["name"] == HOOK_NAME
    assert "-I -S" in ours["command"] and "hook_recorder.py" in ours["command"]
    assert str(ctx.runtime_dir / HOOK_LOG_FILE) in ours["command"]
    assert set(settings["hooks"]) == set(HOOK_EVENTS)
    # The user's personal instructions first, then the role profile.
    instructions = (home / INSTRUCTIONS_FILE).read_text()
    assert instructions == "The user's own instructions.\n\nYou are the BATON analyst.\n"


def test_the_users_copilot_home_variable_is_followed_and_relaunch_doubles_nothing(
    tmp_path: Path,
) -> None:
    """COPILOT_HOME names the user's directory; after a server restart the terminal's
    environment is the CLI's own, which carries Baton's COPILOT_HOME: ~/.copilot is used."""
    own = tmp_path / "elsewhere"
    own.mkdir()
    (own / "settings.json").write_text(json.dumps({"model": "m-from-copilot-home"}))
    ctx = _context(tmp_path)
    moved = TerminalContext(**{**ctx.__dict__, "env": {**ctx.env, "COPILOT_HOME": str(own)}})
    spec = CopilotCliProvider().launch(moved)
    settings = json.loads((Path(spec.env["COPILOT_HOME"]) / "settings.json").read_text())
    assert settings["model"] == "m-from-copilot-home"
    _user_dir(tmp_path)
    first = CopilotCliProvider().launch(ctx)
    read_back = TerminalContext(**{**ctx.__dict__, "env": {**ctx.env, **first.env}})
    again = CopilotCliProvider().launch(read_back)
    settings = json.loads((Path(again.env["COPILOT_HOME"]) / "settings.json").read_text())
    names = [group.get("hooks", [{}])[0].get("name") for group in settings["hooks"]["Stop"]]
    assert names.count(HOOK_NAME) == 1, names
    assert settings["model"] == "gpt-5.4"
    text = (Path(again.env["COPILOT_HOME"]) / INSTRUCTIONS_FILE).read_text()
    assert text.count("Be the analyst.") == 1


def test_the_hook_command_records_an_event_without_baton_on_its_path(tmp_path: Path) -> None:
    """The command Copilot CLI runs, run the same way: isolated, no site-packages."""
    ctx = _context(tmp_path)
    spec = CopilotCliProvider().launch(ctx)
    settings = json.loads((Path(spec.env["COPILOT_HOME"]) / "settings.json").read_text())
    command = settings["hooks"]["Stop"][-1]["hooks"][0]["command"]
    event = {"hook_event_name": "Stop", "session_id": SESSION, "stop_reason": "end_turn"}
    done = subprocess.run(
        shlex.split(command), input=json.dumps(event), capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout) == (0, "")
    [line] = (ctx.runtime_dir / HOOK_LOG_FILE).read_text(encoding="utf-8").splitlines()
    assert json.loads(line)["stop_reason"] == "end_turn"


# -- the CLI's records ---------------------------------------------------------------------


def _event(kind: str, data: dict[str, Any], at: str, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "data": data, "id": "e", "timestamp": f"2026-11-28T08:00:{at}Z", **extra}


def _usage(tokens: tuple[int, int, int], model: str = "qwen3-coder-plus") -> dict[str, Any]:
    usage = {"model": model, "inputTokens": tokens[0], "cacheReadTokens": tokens[1]}
    return {"usage": {**usage, "outputTokens": tokens[2], "cacheWriteTokens": 0, "cost": 0.0}}


def _records(tmp_path: Path) -> tuple[TerminalContext, Path, Path]:
    """A session of two prompts: the first answered after a tool call, the second open."""
    ctx = _context(tmp_path)
    ctx.runtime_dir.mkdir(parents=True)
    (ctx.runtime_dir / SESSION_ID_FILE).write_text(SESSION + "\n")
    session_file = _session_file(ctx, SESSION)
    events = [
        _event("session.start", {"sessionId": SESSION}, "00.000"),
        _event("user.message", {"content": "first"}, "01.000"),
        _event("session.usage_record", _usage((1000, 300, 10)), "02.000"),
        _event("assistant.message", {"content": "", "toolRequests": [{"name": "bash"}]}, "02.1"),
        _event("session.usage_record", _usage((1200, 900, 20)), "03.000"),
        _event("assistant.message", {"content": "The first answer.", "toolRequests": []}, "03.1"),
        _event("user.message", {"content": "second"}, "05.000"),
        _event("session.usage_record", _usage((1500, 1200, 30)), "06.000", agentId="sub-1"),
        _event("assistant.message", {"content": "A subagent's words."}, "06.1", agentId="sub-1"),
        _event("assistant.message", {"content": "The second answer."}, "07.000"),
    ]
    session_file.write_text("".join(json.dumps(event) + "\n" for event in events))
    common = {"session_id": SESSION, "transcript_path": str(session_file)}
    hooks = [
        {**common, "hook_event_name": "SessionStart", "timestamp": "2026-11-28T08:00:00.900Z"},
        {**common, "hook_event_name": "UserPromptSubmit", "timestamp": "2026-11-28T08:00:00.950Z"},
        {**common, "hook_event_name": "Stop", "timestamp": "2026-11-28T08:00:04.000Z"},
        {**common, "hook_event_name": "UserPromptSubmit", "timestamp": "2026-11-28T08:00:04.950Z"},
    ]
    log = ctx.runtime_dir / HOOK_LOG_FILE
    log.write_text("".join(json.dumps(event) + "\n" for event in hooks))
    return ctx, log, session_file


def _append(path: Path, event: dict[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(event) + "\n")


def test_turns_usage_and_answer_from_the_clis_records(tmp_path: Path) -> None:
    ctx, log, session_file = _records(tmp_path)
    provider = CopilotCliProvider()
    assert provider.turn_record(ctx) == TurnRecord(started=2, open=True)
    resting = _text("turn1--completed.txt")
    assert provider.status(resting, ctx) is TerminalStatus.PROCESSING
    # Its calls so far, the turn not over yet: the token meter waits for the rest.
    assert provider.usage(ctx) == Usage(3700, 2400, 60, "qwen3-coder-plus", complete=False)
    _append(log, {"hook_event_name": "Stop", "session_id": SESSION})
    _append(session_file, _event("hook.start", {"hookType": "agentStop"}, "07.100"))
    assert provider.turn_record(ctx) == TurnRecord(started=2, open=False)
    assert provider.status(resting, ctx) is TerminalStatus.COMPLETED
    # The main agent's last reply after the latest prompt, a subagent's aside.
    assert provider.last_message(resting, ctx) == "The second answer."
    # Every model call counts, a subagent's too.
    assert provider.usage(ctx) == Usage(
        input_tokens=3700,
        cached_input_tokens=2400,
        output_tokens=60,
        model="qwen3-coder-plus",
        complete=True,
    )


def test_an_answer_read_right_after_stop_waits_for_the_session_file(tmp_path: Path) -> None:
    """The `Stop` hook runs before Copilot CLI writes the turn's last events: an answer
    read at once is the session file's, once it has them, not the half-revealed screen."""
    ctx, log, session_file = _records(tmp_path)
    lines = session_file.read_text().splitlines(keepends=True)
    session_file.write_text("".join(lines[:-1]))  # the final answer not written yet
    _append(log, {"hook_event_name": "Stop", "session_id": SESSION})
    provider = CopilotCliProvider()
    half_shown = _text("turn1--completed.txt")

    def catch_up() -> None:
        time.sleep(0.3)
        with session_file.open("a", encoding="utf-8") as handle:
            handle.write(lines[-1])
            handle.write(json.dumps(_event("hook.start", {"hookType": "agentStop"}, "07.1")))
            handle.write("\n")

    writer = threading.Thread(target=catch_up)
    writer.start()
    try:
        assert provider.last_message(half_shown, ctx) == "The second answer."
    finally:
        writer.join()


def test_the_answer_still_revealed_after_stop_reads_completed(tmp_path: Path) -> None:
    """Copilot CLI says `Working` while it reveals a streamed answer after the turn ended;
    a prompt typed then starts a turn of its own (seen with 1.0.102), so Stop wins."""
    ctx, log, _ = _records(tmp_path)
    _append(log, {"hook_event_name": "Stop", "session_id": SESSION})
    revealing = [
        sample["screen"]
        for sample in _timeline(FIXTURES / "turn1.timeline.jsonl")[1]
        if sample["phase"] == "closed"
        and _working(sample["screen"])
        and "\n ● ANALYST_SUMMARY" in sample["screen"]
    ]
    assert revealing
    assert detect_status(revealing[-1]) is TerminalStatus.PROCESSING
    assert CopilotCliProvider().status(revealing[-1], ctx) is TerminalStatus.COMPLETED


def test_a_session_error_after_the_prompt_fails_the_turn(tmp_path: Path) -> None:
    """A failed turn fires no Stop (only `ErrorOccurred`, once per retry too): the session
    file's `session.error` ends it."""
    ctx, _, session_file = _records(tmp_path)
    provider = CopilotCliProvider()
    error = _event("session.error", {"message": "400 scripted model failure"}, "06.000")
    # An error from before the latest prompt is not its end.
    _append(session_file, {**error, "timestamp": "2026-11-28T08:00:04.000Z"})
    assert provider.turn_record(ctx) == TurnRecord(started=2, open=True)
    _append(session_file, error)
    assert provider.turn_record(ctx) == TurnRecord(started=2, open=False)
    screen = _text("apierror--error.txt")
    assert provider.status(screen, ctx) is TerminalStatus.ERROR
    assert provider.last_message(screen, ctx) == "400 scripted model failure"
    # While the failed turn's screen still says it works, it works.
    assert provider.status(_text("turn1-middle--processing.txt"), ctx) is (
        TerminalStatus.PROCESSING
    )


def test_an_interrupted_turn_follows_the_screen_again(tmp_path: Path) -> None:
    ctx, _, _ = _records(tmp_path)
    provider = CopilotCliProvider()
    cancelled = _text("cancel--idle.txt")
    assert detect_status(cancelled) is TerminalStatus.IDLE
    provider.interrupted(ctx)
    assert provider.status(cancelled, ctx) is TerminalStatus.IDLE
    assert provider.turn_record(ctx) == TurnRecord(started=2, open=False)


def test_an_abort_in_the_session_file_ends_the_turn_too(tmp_path: Path) -> None:
    """Ctrl-C pressed by a person in the pane, not through the API: the CLI writes `abort`."""
    ctx, _, session_file = _records(tmp_path)
    provider = CopilotCliProvider()
    _append(session_file, _event("abort", {"reason": "user_initiated"}, "09.000"))
    assert provider.turn_record(ctx) == TurnRecord(started=2, open=False)
    assert provider.status(_text("cancel--idle.txt"), ctx) is TerminalStatus.IDLE


def test_a_rewritten_session_file_is_read_again_from_its_start(tmp_path: Path) -> None:
    """A prompt cancelled before any reply is taken back: the CLI rewrites the file."""
    ctx, _, session_file = _records(tmp_path)
    provider = CopilotCliProvider()
    assert provider.usage(ctx) == Usage(3700, 2400, 60, "qwen3-coder-plus", complete=False)
    lines = session_file.read_text().splitlines()
    session_file.write_text("".join(line + "\n" for line in lines[:4]))
    assert provider.usage(ctx) == Usage(1000, 300, 10, "qwen3-coder-plus", complete=False)


def test_resume_uses_the_session_and_replays_read_idle_until_a_prompt(tmp_path: Path) -> None:
    ctx, log, _ = _records(tmp_path)
    provider = CopilotCliProvider()
    spec = provider.resume_launch(ctx)
    assert spec is not None
    assert spec.argv[-1] == f"--resume={SESSION}"
    assert spec.argv[:2] == ["copilot", "--allow-all"]
    # The dead CLI's log was set aside: its open turn does not hold the new CLI busy.
    assert not log.exists()
    assert provider.turn_record(ctx) == TurnRecord(started=0, open=False)
    # `--resume` redraws the old conversation: a failed turn, a turn cut short.
    for name in ("resumed-error.txt", "resumed-midturn.txt"):
        replayed = _text(name)
        assert detect_status(replayed) is not TerminalStatus.IDLE, name
        assert provider.status(replayed, ctx) is TerminalStatus.IDLE, name
        # A CLI that was not resumed reads such a screen as it is.
        assert CopilotCliProvider().status(replayed, _context(tmp_path / name)) is (
            detect_status(replayed)
        )
    _append(log, {"hook_event_name": "UserPromptSubmit", "session_id": SESSION})
    assert provider.status(_text("resumed-error.txt"), ctx) is TerminalStatus.ERROR
    assert provider.status(_text("resumed-midturn.txt"), ctx) is TerminalStatus.PROCESSING


def test_a_session_without_a_prompt_is_started_afresh(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    provider = CopilotCliProvider()
    assert provider.resume_launch(ctx) is None  # never launched
    provider.launch(ctx)
    session = (ctx.runtime_dir / SESSION_ID_FILE).read_text().strip()
    path = _session_file(ctx, session)
    path.write_text(json.dumps(_event("session.start", {"sessionId": session}, "00.0")) + "\n")
    assert provider.resume_launch(ctx) is None  # no prompt taken: nothing to resume
