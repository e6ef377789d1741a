"""The commands Baton prints: the executable as the shell runs it, the run's own start."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import pytest

from baton.errors import ApiHttpError, ApiUnreachableError, ConfigError, RunInterrupted
from baton.hints import RunCommand, baton_command, baton_executable
from baton.orchestrator.state import RunState, load_state, resume_command, save_state
from baton.orchestrator.stop_lines import resumable, stopped_line


def _script(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "baton"
    script.write_text("#!/bin/sh\n", encoding="utf-8")
    script.chmod(0o755)
    return script


def test_baton_on_path_is_named_by_its_name(tmp_path: Path) -> None:
    script = _script(tmp_path / "venv" / "bin")
    link_dir = tmp_path / "local" / "bin"
    link_dir.mkdir(parents=True)
    (link_dir / "baton").symlink_to(script)
    assert baton_executable(str(script), {"PATH": str(link_dir)}) == ["baton"]


def test_baton_not_on_path_is_named_by_its_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = _script(tmp_path / "venv" / "bin")
    other = _script(tmp_path / "elsewhere")  # another Baton on PATH is not this one
    assert baton_executable(str(script), {"PATH": str(other.parent)}) == [str(script)]
    monkeypatch.chdir(tmp_path)
    assert baton_executable("venv/bin/baton", {"PATH": ""}) == [str(script)]


def test_baton_run_as_a_module_is_named_as_one() -> None:
    assert baton_executable("/x/baton/__main__.py", {}) == [sys.executable, "-m", "baton"]
    assert baton_executable("/x/bin/pytest", {}) == [sys.executable, "-m", "baton"]


def test_a_command_quotes_its_words_and_makes_paths_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    line = baton_command("status", Path("my runs/state.json"), executable=["baton"])
    assert shlex.split(line) == ["baton", "status", str(tmp_path / "my runs" / "state.json")]


def test_the_run_command_keeps_safe_settings_and_repeats_from_its_directory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "argv", ["/venv/bin/baton", "run", "loop.json", "--max-rounds", "3"])
    environ = {
        "WD": "/src/app",
        "PROMPT_FILE": "feature.md",
        "PROMPT": "a long prompt",
        "RESUME": "0",
        "NTFY_TOPIC": "secret-topic",
        "HOME": "/home/me",
        "MAX_COST_USD": "",
    }
    command = RunCommand.current(["WD", "PROMPT", "RESUME", "NTFY_TOPIC", "MAX_COST_USD"], environ)
    assert command.argv == ("run", "loop.json", "--max-rounds", "3")
    assert command.env == {"PROMPT_FILE": "feature.md", "WD": "/src/app"}
    line = command.shell_line(["baton"])
    assert line == (
        f"cd {shlex.quote(os.getcwd())} && PROMPT_FILE=feature.md WD=/src/app "
        "baton run loop.json --max-rounds 3"
    )
    assert RunCommand.from_json(command.to_json()) == command


def test_the_command_field_round_trips_and_old_files_still_read(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    command = RunCommand(("run", "Add a flag", "--test", "pytest -q"), "/work", {"API": "x"})
    save_state(RunState(wd="/work", command=command), path)
    assert load_state(path).command == command
    # A file without the field (older Baton, the shell script) or with a foreign shape.
    save_state(RunState(wd="/work"), path)
    assert "command" not in path.read_text(encoding="utf-8")
    assert load_state(path).command is None
    assert RunCommand.from_json({"argv": "run", "cwd": "/x"}) is None


def test_the_resume_command_repeats_the_start_or_names_the_state_file(tmp_path: Path) -> None:
    state_path = tmp_path / "state.json"
    started = RunCommand(("run", "loop.json"), str(tmp_path), {})
    line = resume_command(RunState(command=started), state_path)
    assert line.startswith(f"cd {shlex.quote(str(tmp_path))} && ")
    assert line.endswith(" run loop.json")
    old = RunState(api="http://127.0.0.1:9999", wd=str(tmp_path), provider="codex")
    words = shlex.split(resume_command(old, state_path))
    assert words[words.index("run") :] == [
        "run",
        "--state-file",
        str(state_path),
        "--wd",
        str(tmp_path),
        "--api",
        "http://127.0.0.1:9999",
        "--provider",
        "codex",
    ]


def test_only_errors_a_resume_can_get_past_are_resumable() -> None:
    assert resumable(None)
    assert resumable(RunInterrupted(2))
    assert resumable(ApiUnreachableError("nothing answers"))
    assert resumable(ApiHttpError("GET", "/x", 500, "boom"))
    assert not resumable(ConfigError("bad value"))
    assert not resumable(ApiHttpError("POST", "/sessions", 400, "unknown provider"))


def test_the_stopped_line_resumes_only_what_a_resume_can_fix(tmp_path: Path) -> None:
    from baton.errors import BudgetExhausted

    path = tmp_path / "state.json"
    state = RunState(command=RunCommand(("run",), str(tmp_path), {}))
    assert "; resume with: cd " in stopped_line(state, path, RunInterrupted(2))
    exhausted = BudgetExhausted("spent", budget="MAX_TOKENS", limit=1, spent=2)
    assert "; raise MAX_TOKENS, then resume with: cd " in stopped_line(state, path, exhausted)
    line = stopped_line(state, path, ConfigError("bad"))
    assert line.endswith("; fix the error below before running again")
    demo = stopped_line(state, path, RunInterrupted(2), "its agents end with the demo")
    assert demo.endswith("; its agents end with the demo")
