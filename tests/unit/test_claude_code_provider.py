"""ClaudeCodeProvider on screens and timelines recorded from the real Claude Code 2.1.328.

The fixtures come from `tests/e2e/record_claude.py`: each `<name>--<status>.txt` is one
screen whose true status the recorder knew, each `<scenario>.timeline.jsonl` a full turn
captured every 250 ms with the model server's view (turn open or closed) and how much of
the hook log existed at that moment.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from baton.providers.base import AgentProfile, TerminalContext, TurnRecord
from baton.providers.claude_code import (
    HOOK_LOG_FILE,
    ClaudeCodeProvider,
    claude_config_path,
    hook_settings,
    trust_workspace,
)
from baton.providers.claude_hooks import HookLog, TurnState
from baton.status import TerminalStatus

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "screens" / "claude_code"
# The CLI redraws a moment after the model's last byte: one poll of slack after closing.
GRACE_SECONDS = 1.5
SCREENS = sorted(
    path
    for path in FIXTURES.glob("*--*.txt")
    if path.stem.split("--")[1] not in ("history", "answer")
)
TIMELINES = sorted(FIXTURES.glob("*.timeline.jsonl"))
HISTORIES = sorted(FIXTURES.glob("*--history.txt"))


def _context(tmp_path: Path, instructions: str = "Be the tester.") -> TerminalContext:
    profile = AgentProfile(name="tester", description="", instructions=instructions)
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
    assert statuses == {"idle", "processing", "completed", "waiting_user_answer", "error"}
    assert len(TIMELINES) >= 5


@pytest.mark.parametrize("path", SCREENS, ids=lambda path: path.name)
def test_recorded_screen_reads_as_its_true_status(path: Path) -> None:
    expected = TerminalStatus(path.stem.split("--")[1])
    assert ClaudeCodeProvider().detect_status(path.read_text(encoding="utf-8")) is expected


def _check_timeline(header: dict[str, Any], statuses: list[tuple[dict[str, Any], str]]) -> None:
    final = header["final"]
    closed_at = header["t_closed"]
    assert closed_at is not None, "the recorded turn never closed"
    settled = False
    for sample, status in statuses:
        where = f"{header['scenario']} t={sample['t']} phase={sample['phase']}"
        if sample["phase"] == "before":
            assert status in ("idle", "completed"), where
        elif sample["phase"] == "open":
            assert status == "processing", where
        elif sample["phase"] == "closed":
            if status == final:
                settled = True
            elif settled or sample["t"] > closed_at + GRACE_SECONDS:
                pytest.fail(f"{where}: {status} after the turn closed (expected {final})")
            else:
                assert status == "processing", where
    assert settled, f"{header['scenario']}: never reached {final}"


@pytest.mark.parametrize("path", TIMELINES, ids=lambda path: path.stem)
def test_timeline_from_the_screen_alone_has_no_wrong_transition(path: Path) -> None:
    header, samples = _timeline(path)
    provider = ClaudeCodeProvider()
    _check_timeline(header, [(s, str(provider.detect_status(s["screen"]))) for s in samples])


@pytest.mark.parametrize("path", TIMELINES, ids=lambda path: path.stem)
def test_timeline_with_hooks_has_no_wrong_transition(path: Path, tmp_path: Path) -> None:
    header, samples = _timeline(path)
    hooks = path.with_name(path.name.replace(".timeline.jsonl", ".hooks.jsonl"))
    hook_lines = hooks.read_text(encoding="utf-8").splitlines(keepends=True)
    ctx = _context(tmp_path)
    ctx.runtime_dir.mkdir(parents=True)
    statuses = []
    for sample in samples:
        (ctx.runtime_dir / HOOK_LOG_FILE).write_text(
            "".join(hook_lines[: sample["hook_lines"]]), encoding="utf-8"
        )
        statuses.append((sample, str(ClaudeCodeProvider().status(sample["screen"], ctx))))
    _check_timeline(header, statuses)


@pytest.mark.parametrize("path", HISTORIES, ids=lambda path: path.stem)
def test_last_answer_from_the_scrollback(path: Path) -> None:
    answer = path.with_name(path.name.replace("--history", "--answer")).read_text("utf-8")
    extracted = ClaudeCodeProvider().extract_last_message(path.read_text(encoding="utf-8"))
    # The CLI renders markdown (list continuations are indented): compare line by line.
    assert [line.strip() for line in extracted.splitlines()] == [
        line.strip() for line in answer.strip().splitlines()
    ]


def test_last_message_prefers_the_stop_hook(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    ctx.runtime_dir.mkdir(parents=True)
    hooks = (FIXTURES / "paste.hooks.jsonl").read_text(encoding="utf-8")
    (ctx.runtime_dir / HOOK_LOG_FILE).write_text(hooks, encoding="utf-8")
    answer = (FIXTURES / "paste--answer.txt").read_text(encoding="utf-8").strip()
    assert ClaudeCodeProvider().last_message("no screen text", ctx) == answer


def test_last_message_reads_the_transcript_when_the_hook_has_no_text(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    ctx.runtime_dir.mkdir(parents=True)
    transcript = tmp_path / "session.jsonl"
    entries = [
        {"type": "user", "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "RESULT: PASS"}]}},
        {"type": "system", "content": "turn duration"},
    ]
    transcript.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    events = [
        {"hook_event_name": "UserPromptSubmit", "transcript_path": str(transcript)},
        {"hook_event_name": "Stop", "transcript_path": str(transcript)},
    ]
    (ctx.runtime_dir / HOOK_LOG_FILE).write_text(
        "".join(json.dumps(e) + "\n" for e in events), encoding="utf-8"
    )
    assert ClaudeCodeProvider().last_message("", ctx) == "RESULT: PASS"


def test_narrative_words_in_the_answer_never_read_as_work() -> None:
    screen = (FIXTURES / "narrative--completed.txt").read_text(encoding="utf-8")
    assert "running and working" in screen
    assert ClaudeCodeProvider().detect_status(screen) is TerminalStatus.COMPLETED


def test_an_open_turn_in_the_hooks_outweighs_a_resting_screen(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    ctx.runtime_dir.mkdir(parents=True)
    (ctx.runtime_dir / HOOK_LOG_FILE).write_text(
        json.dumps({"hook_event_name": "UserPromptSubmit"}) + "\n", encoding="utf-8"
    )
    screen = (FIXTURES / "turn1--completed.txt").read_text(encoding="utf-8")
    assert ClaudeCodeProvider().status(screen, ctx) is TerminalStatus.PROCESSING
    dialog = (FIXTURES / "permission-bash--waiting_user_answer.txt").read_text(encoding="utf-8")
    assert ClaudeCodeProvider().status(dialog, ctx) is TerminalStatus.WAITING_USER_ANSWER


def test_a_stop_before_a_new_prompt_hook_does_not_hide_new_work(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    ctx.runtime_dir.mkdir(parents=True)
    events = [{"hook_event_name": "UserPromptSubmit"}, {"hook_event_name": "Stop"}]
    (ctx.runtime_dir / HOOK_LOG_FILE).write_text(
        "".join(json.dumps(e) + "\n" for e in events), encoding="utf-8"
    )
    working = (FIXTURES / "turn2-middle--processing.txt").read_text(encoding="utf-8")
    assert ClaudeCodeProvider().status(working, ctx) is TerminalStatus.PROCESSING


def test_startup_keys_step_to_yes_then_confirm() -> None:
    provider = ClaudeCodeProvider()
    for name in ("first-start-trust", "first-start-bypass"):
        screen = (FIXTURES / f"{name}--waiting_user_answer.txt").read_text(encoding="utf-8")
        assert provider.startup_keys(screen) == ("Down",)
        lines = screen.splitlines()
        moved = [
            line.replace("❯ ", "  ", 1)
            if "❯ No, exit" in line
            else line.replace("  Yes", "❯ Yes", 1)
            if line.strip().startswith("Yes, I")
            else line
            for line in lines
        ]
        assert provider.startup_keys("\n".join(moved)) == ("Enter",)
    idle = (FIXTURES / "startup--idle.txt").read_text(encoding="utf-8")
    assert provider.startup_keys(idle) == ()
    permission = (FIXTURES / "permission-bash--waiting_user_answer.txt").read_text("utf-8")
    assert provider.startup_keys(permission) == ()


def test_launch_adds_hooks_and_instructions_without_touching_user_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    ctx = _context(tmp_path)
    spec = ClaudeCodeProvider().launch(ctx)
    assert spec.argv[0] == "claude"
    assert "--dangerously-skip-permissions" in spec.argv
    settings = json.loads(Path(spec.argv[spec.argv.index("--settings") + 1]).read_text())
    assert settings["skipDangerousModePermissionPrompt"] is True
    assert set(settings["hooks"]) == {"UserPromptSubmit", "Stop", "StopFailure", "Notification"}
    instructions = Path(spec.argv[spec.argv.index("--append-system-prompt-file") + 1])
    assert instructions.read_text(encoding="utf-8") == "Be the tester."
    if os.geteuid() == 0:
        assert spec.env["IS_SANDBOX"] == "1"
    assert not (home / ".claude.json").exists()  # never created for the user


def test_hook_command_appends_one_line_per_event(tmp_path: Path) -> None:
    log = tmp_path / HOOK_LOG_FILE
    (command,) = {
        hook["command"]
        for groups in hook_settings(log)["hooks"].values()
        for group in groups
        for hook in group["hooks"]
    }
    argv = shlex.split(command)
    assert argv[1:3] == ["-I", "-S"]  # the standard-library recorder: no site, no Baton
    for event in ("UserPromptSubmit", "Stop"):
        completed = subprocess.run(
            argv,
            input=json.dumps({"hook_event_name": event, "last_assistant_message": "a\nb"}),
            capture_output=True,
            text=True,
            check=False,
        )
        assert completed.returncode == 0
        assert completed.stdout == ""
    reader = HookLog(log)
    assert reader.turn_state() is TurnState.FINISHED
    close = reader.last_close()
    assert close is not None and close["last_assistant_message"] == "a\nb"


def test_hook_log_ignores_a_partly_written_line(tmp_path: Path) -> None:
    log = tmp_path / HOOK_LOG_FILE
    log.write_text(json.dumps({"hook_event_name": "UserPromptSubmit"}) + '\n{"hook_', "utf-8")
    reader = HookLog(log)
    assert reader.turn_state() is TurnState.OPEN
    with log.open("a", encoding="utf-8") as handle:
        handle.write('event_name": "StopFailure"}\n')
    assert reader.turn_state() is TurnState.FAILED


def test_trust_workspace_changes_one_key_only(tmp_path: Path) -> None:
    config = tmp_path / ".claude.json"
    original = {
        "oauthAccount": {"emailAddress": "me@example.com"},
        "projects": {"/other": {"hasTrustDialogAccepted": False, "allowedTools": ["Bash"]}},
    }
    config.write_text(json.dumps(original), encoding="utf-8")
    config.chmod(0o600)
    project = tmp_path / "project"
    assert trust_workspace(config, project) is True
    data = json.loads(config.read_text(encoding="utf-8"))
    assert data["oauthAccount"] == original["oauthAccount"]
    assert data["projects"]["/other"] == original["projects"]["/other"]
    assert data["projects"][str(project)] == {"hasTrustDialogAccepted": True}
    assert config.stat().st_mode & 0o777 == 0o600
    assert not config.with_name(".claude.json.lock").exists()
    before = config.stat().st_mtime_ns
    assert trust_workspace(config, project) is True
    assert config.stat().st_mtime_ns == before  # already trusted: not rewritten


def test_trust_workspace_leaves_a_missing_or_broken_config_alone(tmp_path: Path) -> None:
    config = tmp_path / ".claude.json"
    assert trust_workspace(config, tmp_path) is False
    assert not config.exists()
    config.write_text("{not json", encoding="utf-8")
    assert trust_workspace(config, tmp_path) is False
    assert config.read_text(encoding="utf-8") == "{not json"


def test_config_path_follows_claude_config_dir(tmp_path: Path) -> None:
    assert claude_config_path({"HOME": "/h"}) == Path("/h/.claude.json")
    env = {"HOME": "/h", "CLAUDE_CONFIG_DIR": str(tmp_path)}
    assert claude_config_path(env) == tmp_path / ".claude.json"


# -- answers that quote every pattern (recorded by tests/e2e/record_quoting.py) ---------------


def test_every_pattern_has_a_recorded_quoting_answer(tmp_path: Path) -> None:
    from tests.e2e.record_quoting import CLAUDE_QUOTES

    for name, text in CLAUDE_QUOTES.items():
        screen = (FIXTURES / f"quote_{name}--completed.txt").read_text(encoding="utf-8")
        first = text.splitlines()[0].lstrip("❯●⎿ ")
        # Quoted twice: in the echoed prompt and in the answer.
        assert screen.count(first) >= 2, name
        ctx = _context(tmp_path / name)
        ctx.runtime_dir.mkdir(parents=True)
        hooks = FIXTURES / f"quote_{name}.hooks.jsonl"
        shutil.copyfile(hooks, ctx.runtime_dir / HOOK_LOG_FILE)
        assert ClaudeCodeProvider().detect_status(screen) is TerminalStatus.COMPLETED, name
        assert ClaudeCodeProvider().status(screen, ctx) is TerminalStatus.COMPLETED, name


def test_resume_launch_resumes_the_session_of_its_hook_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    ctx = _context(tmp_path)
    provider = ClaudeCodeProvider()
    assert provider.resume_launch(ctx) is None  # no hook record: nothing to resume
    session = "6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f"
    log = ctx.runtime_dir / "claude-hooks.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    # A turn the killed CLI left open: once set aside, it no longer reads as processing.
    log.write_text(json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": session}))
    log.write_text(log.read_text() + "\n")
    spec = provider.resume_launch(ctx)
    assert spec is not None
    assert spec.argv[-2:] == ["--resume", session]
    assert not log.exists() and list(ctx.runtime_dir.glob("claude-hooks.*.jsonl"))


def test_turn_record_counts_prompts_and_is_open_until_stop(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    ctx.runtime_dir.mkdir()
    log = ctx.runtime_dir / HOOK_LOG_FILE
    provider = ClaudeCodeProvider()
    assert provider.turn_record(ctx) == TurnRecord(started=0, open=False)

    def hook(name: str) -> None:
        with log.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"hook_event_name": name}) + "\n")

    hook("UserPromptSubmit")
    assert provider.turn_record(ctx) == TurnRecord(started=1, open=True)
    hook("Notification")
    hook("Stop")
    assert provider.turn_record(ctx) == TurnRecord(started=1, open=False)
    hook("UserPromptSubmit")
    hook("StopFailure")
    assert provider.turn_record(ctx) == TurnRecord(started=2, open=False)


# After `claude --resume` of a CLI killed mid-turn (shortened from a real pane): the
# dead turn's prompt, no answer, an empty input box, nothing working.
_RULE = "─" * 200
RESUMED_MID_TURN = f"""    Validation: ran the project test command from the prompt.

✻ Cogitated for 7s · done 12:54 AM

❯ Round: 1

  Programmer review cycle: 2

  Do this once, as your last action, then stop and wait for the next instruction.

{_RULE}
❯
{_RULE}
  ⏵⏵ bypass permissions on (shift+tab to cycle)
"""


def test_a_resumed_cli_replaying_a_dead_turns_prompt_is_idle_until_its_first_hook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    ctx = _context(tmp_path)
    ctx.runtime_dir.mkdir(parents=True)
    log = ctx.runtime_dir / HOOK_LOG_FILE
    session = "6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f"
    prompt = {"hook_event_name": "UserPromptSubmit", "session_id": session}
    log.write_text(json.dumps(prompt) + "\n", encoding="utf-8")
    provider = ClaudeCodeProvider()
    # The screen alone reads a prompt waiting for its answer; so does a fresh CLI.
    assert provider.detect_status(RESUMED_MID_TURN) is TerminalStatus.PROCESSING
    assert ClaudeCodeProvider().status(RESUMED_MID_TURN, _context(tmp_path / "other")) is (
        TerminalStatus.PROCESSING
    )
    assert provider.resume_launch(ctx) is not None
    assert provider.status(RESUMED_MID_TURN, ctx) is TerminalStatus.IDLE
    # Once the resumed CLI takes a prompt, its hooks decide again.
    log.write_text(json.dumps(prompt) + "\n", encoding="utf-8")
    assert provider.status(RESUMED_MID_TURN, ctx) is TerminalStatus.PROCESSING
