"""GeminiCliProvider on screens and timelines recorded from the real Gemini CLI 0.61.0.

The fixtures come from `tests/e2e/record_gemini.py`: each `<name>--<status>.txt` is one
screen whose true status the recorder knew, each `<scenario>.timeline.jsonl` a full turn
captured every 250 ms with the model server's view (turn open or closed) and how much of
the hook log existed then, each `<scenario>.hooks.jsonl` that hook log.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from baton.providers.base import AgentProfile, TerminalContext, TurnRecord
from baton.providers.gemini_cli import HOOK_LOG_FILE, GeminiCliProvider
from baton.providers.gemini_home import HOOK_NAME
from baton.providers.gemini_hooks import transcript_usage
from baton.providers.gemini_screen import detect_status, extract_last_message, input_pending
from baton.status import TerminalStatus
from baton.usage import Usage

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "screens" / "gemini_cli"
# The CLI redraws a moment after the model's last byte: some slack after closing.
GRACE_SECONDS = 1.5
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
    """Every capture while the model had the turn open reads `processing`; every capture
    settled after it closed reads the turn's final status."""
    header, samples = _timeline(path)
    hook_lines = (path.parent / f"{header['scenario']}.hooks.jsonl").read_text().splitlines()
    ctx = _context(tmp_path)
    ctx.runtime_dir.mkdir()
    log = ctx.runtime_dir / HOOK_LOG_FILE
    checked = 0
    for sample in samples:
        provider = GeminiCliProvider()
        log.write_text("".join(line + "\n" for line in hook_lines[: sample["hook_lines"]]))
        status = provider.status(sample["screen"], ctx)
        if sample["phase"] == "open":
            assert status is TerminalStatus.PROCESSING, sample
            checked += 1
        elif sample["phase"] == "closed" and sample["t"] > header["t_closed"] + GRACE_SECONDS:
            assert status.value == header["final"], sample
            checked += 1
    assert checked


def _plain(text: str) -> list[str]:
    """Lines as the CLI's markdown renderer leaves them: indentation and bullets aside."""
    lines = [re.sub(r"\s+", " ", line.strip().lstrip("*").strip()) for line in text.split("\n")]
    return [line for line in lines if line]


@pytest.mark.parametrize("path", HISTORIES, ids=lambda path: path.name)
def test_last_answer_from_the_scrollback(path: Path) -> None:
    answer = path.with_name(path.name.replace("--history", "--answer")).read_text("utf-8")
    # Gemini CLI renders answers as markdown (lists indented by one); the text is kept.
    assert _plain(extract_last_message(path.read_text("utf-8"))) == _plain(answer)


def test_quoted_markers_never_change_the_status() -> None:
    screen = (FIXTURES / "quote--completed.txt").read_text("utf-8")
    assert detect_status(screen) is TerminalStatus.COMPLETED
    answer = extract_last_message(screen)
    assert "✕ [API Error: quoted, not real]" in answer
    assert "(esc to cancel, 3s)" in answer


def test_a_message_left_in_the_input_box_is_pending() -> None:
    resting = (FIXTURES / "startup--idle.txt").read_text("utf-8")
    assert not input_pending(resting)
    stuck = resting.replace(
        " *   Type your message or @path/to/file", " * [Pasted Text: 40 lines]\n"
    )
    assert stuck != resting
    assert input_pending(stuck)
    assert GeminiCliProvider().input_pending(stuck)


# -- launch, home, records ----------------------------------------------------------------


def _user_home(tmp_path: Path) -> Path:
    dot = tmp_path / "home" / ".gemini"
    (dot / "tmp").mkdir(parents=True)
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "hooks": {"AfterAgent": [{"hooks": [{"type": "command", "command": "users-own"}]}]},
        "general": {"vimMode": True, "enableAutoUpdate": True},
    }
    (dot / "settings.json").write_text(json.dumps(settings))
    (dot / "GEMINI.md").write_text("The user's own memory.\n")
    (dot / "oauth_creds.json").write_text("{}")
    return dot


def test_launch_builds_a_home_over_the_users_own(tmp_path: Path) -> None:
    user = _user_home(tmp_path)
    before = {path: path.read_bytes() for path in user.iterdir() if path.is_file()}
    ctx = _context(tmp_path, instructions="You are the BATON analyst.")
    spec = GeminiCliProvider().launch(ctx)
    assert spec.argv == ["gemini", "--approval-mode", "yolo", "--skip-trust"]
    home = Path(spec.env["GEMINI_CLI_HOME"]) / ".gemini"
    assert home.parent.parent == ctx.runtime_dir
    # The user's files are the user's (symlinks), and never written.
    assert (home / "oauth_creds.json").resolve() == user / "oauth_creds.json"
    assert (home / "tmp").resolve() == user / "tmp"
    assert {path: path.read_bytes() for path in user.iterdir() if path.is_file()} == before
    settings = json.loads((home / "settings.json").read_text())
    assert settings["security"] == {"auth": {"selectedType": "gemini-api-key"}}
    assert settings["general"] == {
        "vimMode": True,
        "enableAutoUpdate": False,
        "enableAutoUpdateNotification": False,
    }
    assert settings["privacy"] == {"usageStatisticsEnabled": False}
    assert settings["telemetry"] == {"enabled": False}
    after = settings["hooks"]["AfterAgent"]
    assert after[0]["hooks"][0]["command"] == "users-own"
    ours = after[1]["hooks"][0]
    assert ours["name"] == HOOK_NAME
    assert "-I -S" in ours["command"] and "hook_recorder.py" in ours["command"]
    assert str(ctx.runtime_dir / HOOK_LOG_FILE) in ours["command"]
    assert set(settings["hooks"]) == {"AfterAgent", "BeforeAgent", "SessionStart", "Notification"}
    memory = (home / "GEMINI.md").read_text()
    assert memory == "The user's own memory.\n\nYou are the BATON analyst.\n"


def test_launch_without_a_users_gemini_directory(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    spec = GeminiCliProvider().launch(ctx)
    home = Path(spec.env["GEMINI_CLI_HOME"]) / ".gemini"
    assert (home / "GEMINI.md").read_text() == "Be the analyst.\n"
    assert "hooks" in json.loads((home / "settings.json").read_text())
    # Launching again (a restart) rebuilds it cleanly.
    GeminiCliProvider().launch(ctx)


@pytest.mark.parametrize(
    ("env", "interactive_switch"),
    [
        ({}, None),
        ({"CI": "true"}, "true"),
        ({"GITHUB_ACTIONS": "true"}, "true"),
        # Gemini CLI 0.61 reads only the exact word "true" as a CI job.
        ({"CI": "1", "GITHUB_ACTIONS": "false"}, None),
    ],
)
def test_launch_in_a_ci_job_keeps_the_cli_interactive(
    tmp_path: Path, env: dict[str, str], interactive_switch: str | None
) -> None:
    """With CI=true or GITHUB_ACTIONS=true the CLI would run headless and exit at launch."""
    ctx = _context(tmp_path)
    spec = GeminiCliProvider().launch(replace(ctx, env={**ctx.env, **env}))
    assert spec.env.get("GEMINI_CLI_INTEGRATION_TEST") == interactive_switch
    assert spec.argv == ["gemini", "--approval-mode", "yolo", "--skip-trust"]


def _session(tmp_path: Path) -> tuple[TerminalContext, Path]:
    ctx = _context(tmp_path)
    ctx.runtime_dir.mkdir()
    transcript = tmp_path / "session.jsonl"
    entries: list[dict[str, Any]] = [
        {"sessionId": "a1b2c3d4-0000-4000-8000-000000000001", "kind": "main"},
        {"id": "u1", "type": "user", "content": [{"text": "first"}]},
        {
            "id": "g1",
            "type": "gemini",
            "content": "",
            "tokens": {"input": 1000, "output": 10, "cached": 300, "thoughts": 5, "tool": 0},
            "model": "gemini-2.5-pro",
        },
        {"$set": {"lastUpdated": "now"}},
        {
            "id": "g2",
            "type": "gemini",
            "content": "The first answer.",
            "tokens": {"input": 1200, "output": 20, "cached": 900, "thoughts": 0},
            "model": "gemini-2.5-pro",
        },
        {"id": "u2", "type": "user", "content": [{"text": "second"}]},
        {
            "id": "g3",
            "type": "gemini",
            "content": "The second answer.",
            "tokens": {"input": 1500, "output": 30, "cached": 1200},
            "model": "gemini-2.5-flash",
        },
    ]
    transcript.write_text("".join(json.dumps(entry) + "\n" for entry in entries))
    common = {"session_id": "a1b2c3d4-0000-4000-8000-000000000001"}
    common["transcript_path"] = str(transcript)
    events = [
        {**common, "hook_event_name": "SessionStart", "source": "startup"},
        {**common, "hook_event_name": "BeforeAgent", "prompt": "first"},
        {**common, "hook_event_name": "AfterAgent", "prompt_response": "x"},
        {**common, "hook_event_name": "BeforeAgent", "prompt": "second"},
    ]
    log = ctx.runtime_dir / HOOK_LOG_FILE
    log.write_text("".join(json.dumps(event) + "\n" for event in events))
    return ctx, log


def test_turns_usage_and_answer_from_the_clis_records(tmp_path: Path) -> None:
    ctx, log = _session(tmp_path)
    provider = GeminiCliProvider()
    assert provider.turn_record(ctx) == TurnRecord(started=2, open=True)
    resting = (FIXTURES / "turn1--completed.txt").read_text("utf-8")
    # The hooks hold the second turn open: a resting screen is not its end.
    assert provider.status(resting, ctx) is TerminalStatus.PROCESSING
    with log.open("a") as handle:
        handle.write(json.dumps({"hook_event_name": "AfterAgent", "session_id": "x"}) + "\n")
    assert provider.turn_record(ctx) == TurnRecord(started=2, open=False)
    assert provider.status(resting, ctx) is TerminalStatus.COMPLETED
    assert provider.last_message(resting, ctx) == "The second answer."
    assert provider.usage(ctx) == Usage(3700, 2400, 65, "gemini-2.5-flash", complete=True)


def _said(content: str, **more: Any) -> dict[str, Any]:
    return {"id": "g", "type": "gemini", "content": content, "tokens": {"input": 9}, **more}


@pytest.mark.parametrize(
    ("lines", "closed"),
    [
        ([_said("Done.")], True),
        # Calling a tool, its result back, or a new prompt: the turn goes on.
        ([_said("", toolCalls=[{"name": "write_file"}])], False),
        ([_said("Writing it.", toolCalls=[{"name": "write_file"}])], False),
        ([_said("Done."), {"id": "u", "type": "user", "content": [{"text": "next"}]}], False),
        # A message first written without its tool calls: it cannot tell.
        ([_said("")], None),
        # Metadata after the answer changes nothing.
        ([_said("Done."), {"$set": {"lastUpdated": "now"}}], True),
    ],
)
def test_usage_says_whether_the_turn_is_closed(
    lines: list[dict[str, Any]], closed: bool | None, tmp_path: Path
) -> None:
    """The token meter waits for a session file written late rather than count part of
    the turn (the hooks say the turn ended before the file may have its last message)."""
    transcript = tmp_path / "session.jsonl"
    prompt = {"id": "u0", "type": "user", "content": [{"text": "go"}]}
    transcript.write_text("".join(json.dumps(line) + "\n" for line in [prompt, *lines]))
    usage = transcript_usage(transcript)
    assert usage is not None and usage.complete is closed


def test_an_answer_drawn_without_its_marker_ends_the_finished_turn(tmp_path: Path) -> None:
    """Gemini CLI draws an answer that opens with a code block without `✦`: the screen
    alone reads as between two steps, the finished hooks and the answer's last line
    under the prompt end the turn. A finish whose answer is not on the screen (a new
    prompt just typed, its turn not yet started) stays processing."""
    ctx, log = _session(tmp_path)
    screen = (FIXTURES / "codeanswer--processing.txt").read_text("utf-8")
    provider = GeminiCliProvider()
    assert provider.status(screen, ctx) is TerminalStatus.PROCESSING
    response = "```python\ndef greet(value):\n    return value\n```"
    with log.open("a") as handle:
        handle.write(json.dumps({"hook_event_name": "AfterAgent", "prompt_response": response}))
        handle.write("\n")
    assert provider.status(screen, ctx) is TerminalStatus.COMPLETED
    stale = screen.replace("    return value", "    return None")
    assert provider.status(stale, ctx) is TerminalStatus.PROCESSING


def test_an_error_on_screen_wins_over_the_finished_turn(tmp_path: Path) -> None:
    ctx, log = _session(tmp_path)
    with log.open("a") as handle:
        handle.write(json.dumps({"hook_event_name": "AfterAgent"}) + "\n")
    screen = (FIXTURES / "apierror--error.txt").read_text("utf-8")
    provider = GeminiCliProvider()
    assert provider.status(screen, ctx) is TerminalStatus.ERROR
    assert provider.last_message(screen, ctx).startswith("[API Error:")


def test_resume_uses_the_session_the_hooks_named(tmp_path: Path) -> None:
    ctx, log = _session(tmp_path)
    provider = GeminiCliProvider()
    spec = provider.resume_launch(ctx)
    assert spec is not None
    assert spec.argv[-2:] == ["--resume", "a1b2c3d4-0000-4000-8000-000000000001"]
    # The dead CLI's log was set aside: its open turn does not hold the new CLI busy.
    assert not log.exists()
    assert provider.turn_record(ctx) is None
    # No session recorded: the CLI starts afresh.
    assert GeminiCliProvider().resume_launch(_context(tmp_path / "other")) is None


def test_gemini_models_have_default_prices() -> None:
    from baton.orchestrator.usage import DEFAULT_PRICES, price_for

    assert price_for("gemini-2.5-pro", DEFAULT_PRICES) == DEFAULT_PRICES["gemini-2.5-pro"]
    lite = price_for("gemini-2.5-flash-lite-preview-09-2025", DEFAULT_PRICES)
    assert lite == DEFAULT_PRICES["gemini-2.5-flash-lite"]


def test_relaunch_with_an_environment_read_back_from_the_running_cli(tmp_path: Path) -> None:
    """After a server restart the terminal's environment is the CLI's own, which carries
    Baton's GEMINI_CLI_HOME: the user's home is still found, nothing is doubled."""
    _user_home(tmp_path)
    ctx = _context(tmp_path, instructions="You are the BATON analyst.")
    first = GeminiCliProvider().launch(ctx)
    read_back = TerminalContext(
        terminal_id=ctx.terminal_id,
        working_directory=ctx.working_directory,
        profile=ctx.profile,
        runtime_dir=ctx.runtime_dir,
        env={**ctx.env, **first.env},
    )
    again = GeminiCliProvider().launch(read_back)
    home = Path(again.env["GEMINI_CLI_HOME"]) / ".gemini"
    settings = json.loads((home / "settings.json").read_text())
    for event in ("BeforeAgent", "AfterAgent"):
        names = [group["hooks"][0].get("name") for group in settings["hooks"][event]]
        assert names.count(HOOK_NAME) == 1, names
    assert (home / "GEMINI.md").read_text() == (
        "The user's own memory.\n\nYou are the BATON analyst.\n"
    )
    assert (
        home / "oauth_creds.json"
    ).resolve() == tmp_path / "home" / ".gemini" / "oauth_creds.json"


def test_a_session_without_a_file_is_not_resumed(tmp_path: Path) -> None:
    """Gemini CLI writes no file for a session whose only turn failed, and exits when
    asked to resume it: the CLI is started afresh instead."""
    ctx, _ = _session(tmp_path)
    (tmp_path / "session.jsonl").unlink()
    assert GeminiCliProvider().resume_launch(ctx) is None


def test_a_launched_cli_is_starting_until_its_session_starts(tmp_path: Path) -> None:
    """The input box is drawn before the CLI initialised; a prompt typed then is queued."""
    ctx = _context(tmp_path)
    provider = GeminiCliProvider()
    provider.launch(ctx)
    resting = (FIXTURES / "startup--idle.txt").read_text("utf-8")
    assert provider.status(resting, ctx) is TerminalStatus.PROCESSING
    assert provider.turn_record(ctx) is None  # nothing says yet whether its hooks run
    (ctx.runtime_dir / HOOK_LOG_FILE).write_text(
        json.dumps({"hook_event_name": "SessionStart", "session_id": "abcdef12"}) + "\n"
    )
    assert provider.status(resting, ctx) is TerminalStatus.IDLE
    # Its hooks run and no prompt started a turn yet: a first prompt is taken only when
    # `BeforeAgent` counts it, never on a screen redrawn without its input box.
    assert provider.turn_record(ctx) == TurnRecord(started=0, open=False)
    # A provider that did not launch this CLI (a restarted server) reads the screen.
    assert GeminiCliProvider().status(resting, _context(tmp_path / "x")) is TerminalStatus.IDLE


def test_the_hook_command_records_an_event_without_baton_on_its_path(tmp_path: Path) -> None:
    """The command Gemini CLI runs, run the same way: isolated, no site-packages."""
    import shlex
    import subprocess

    ctx = _context(tmp_path)
    spec = GeminiCliProvider().launch(ctx)
    settings = json.loads(
        (Path(spec.env["GEMINI_CLI_HOME"]) / ".gemini" / "settings.json").read_text()
    )
    command = settings["hooks"]["AfterAgent"][-1]["hooks"][0]["command"]
    event = {"hook_event_name": "AfterAgent", "session_id": "abcdef12", "prompt": "é"}
    done = subprocess.run(
        shlex.split(command), input=json.dumps(event), capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout) == (0, "")
    [line] = (ctx.runtime_dir / HOOK_LOG_FILE).read_text(encoding="utf-8").splitlines()
    recorded = json.loads(line)
    assert recorded["prompt"] == "é" and recorded["hook_event_name"] == "AfterAgent"
    assert (ctx.runtime_dir / HOOK_LOG_FILE).stat().st_mode & 0o777 == 0o600


def _open_turn(tmp_path: Path, last: dict[str, Any]) -> TerminalContext:
    ctx = _context(tmp_path)
    ctx.runtime_dir.mkdir()
    transcript = tmp_path / "session.jsonl"
    entries = [
        {"id": "u1", "type": "user", "timestamp": "2026-11-25T04:25:10.000Z", "content": []},
        last,
        {"$set": {"lastUpdated": "2026-11-25T04:25:14.200Z"}},
    ]
    transcript.write_text("".join(json.dumps(entry) + "\n" for entry in entries))
    event = {
        "hook_event_name": "BeforeAgent",
        "session_id": "abcdef12",
        "transcript_path": str(transcript),
        "timestamp": "2026-11-25T04:25:12.000Z",
    }
    (ctx.runtime_dir / HOOK_LOG_FILE).write_text(json.dumps(event) + "\n")
    return ctx


@pytest.mark.parametrize(
    ("last", "expected"),
    [
        ({"content": "The answer."}, TerminalStatus.COMPLETED),
        # The previous turn's answer, written before this turn's BeforeAgent.
        ({"content": "Old.", "timestamp": "2026-11-25T04:25:11.000Z"}, TerminalStatus.PROCESSING),
        ({"content": "", "toolCalls": [{"name": "write_file"}]}, TerminalStatus.PROCESSING),
    ],
)
def test_the_final_answer_in_the_session_file_ends_the_turn_before_its_hook_is_logged(
    tmp_path: Path, last: dict[str, Any], expected: TerminalStatus
) -> None:
    entry = {"id": "g1", "type": "gemini", "timestamp": "2026-11-25T04:25:14.126Z", **last}
    ctx = _open_turn(tmp_path, entry)
    provider = GeminiCliProvider()
    resting = (FIXTURES / "turn1--completed.txt").read_text("utf-8")
    assert provider.status(resting, ctx) is expected
    # Nothing is typed into the CLI until its AfterAgent hook is logged.
    assert provider.turn_record(ctx) == TurnRecord(started=1, open=True)
    # A screen still working is never declared done by the file.
    busy = (FIXTURES / "turn1-middle--processing.txt").read_text("utf-8")
    assert provider.status(busy, ctx) is TerminalStatus.PROCESSING
