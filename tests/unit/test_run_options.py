"""`baton run` options: generated from the settings table, option > env > JSON > default."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from baton.errors import ConfigError
from baton.orchestrator.config import SETTING_KEYS
from baton.orchestrator.config_layers import load_settings
from baton.run_options import option_name

PROMPT = "Add it.\n*** ORIGINAL EXPLORE SUMMARY ***\nx\n*** SCENARIO TEST ***\ny\n"


def _baton(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "baton", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "200"},
    )


def test_help_lists_every_setting_with_env_json_and_default() -> None:
    completed = _baton("run", "--help")
    assert completed.returncode == 0
    text = " ".join(completed.stdout.split())
    for key in SETTING_KEYS:
        assert key.help, f"{key.attribute} has no docstring to show in --help"
        assert option_name(key) in text, key.attribute
        assert re.search(
            rf"\[env {key.env}; JSON {re.escape(key.json_name)}; default: [^\]]+\]", text
        )
    assert "--max-rounds N" in text and "default: 8]" in text
    assert "--resume / --no-resume" in text
    assert "--prompt TEXT" in text and "--prompt-file FILE" in text


def test_option_beats_env_beats_json_beats_default(tmp_path: Path) -> None:
    config = tmp_path / "baton.json"
    config.write_text(
        json.dumps(
            {"limits": {"max_rounds": 3, "max_review_cycles": 4}, "handoff": {"poll_seconds": 7}}
        )
    )
    env = {"MAX_ROUNDS": "5", "MAX_REVIEW_CYCLES": "6", "WD": str(tmp_path), "PROMPT": PROMPT}
    options = {"max_rounds": 9, "max_review_cycles": None, "resume": False, "cleanup_on_exit": True}
    settings = load_settings(config, env, options)
    assert settings.max_rounds == 9  # option
    assert settings.max_review_cycles == 6  # env
    assert settings.poll_seconds == 7  # JSON
    assert settings.response_timeout == 1800  # default
    assert settings.resume is False and settings.cleanup_on_exit is True


def test_prompt_options_come_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.md").write_text(PROMPT.replace("Add it.", "From the file."))
    env = {"PROMPT": PROMPT, "WD": str(tmp_path)}
    by_file = load_settings(None, env, {"prompt_file": Path("p.md")})
    assert by_file.prompt is not None and by_file.prompt.startswith("From the file.")
    assert by_file.prompt_source == f"--prompt-file {tmp_path / 'p.md'}"
    inline = PROMPT.replace("Add it.", "Inline.")
    assert load_settings(None, env, {"prompt": inline}).prompt == inline
    assert load_settings(None, env, {}).prompt == PROMPT


def test_bad_option_values_name_the_option(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^--max-rounds: must be at least 1, got 0$"):
        load_settings(None, {"WD": str(tmp_path)}, {"max_rounds": 0})
    with pytest.raises(ConfigError, match=r"^--start-agent: expected one of analyst, programmer"):
        load_settings(None, {"WD": str(tmp_path)}, {"start_agent": "boss"})
    completed = _baton("run", "--max-rounds", "0", "--wd", str(tmp_path), "--prompt", PROMPT)
    assert completed.returncode == 1
    assert completed.stderr == "baton: error: --max-rounds: must be at least 1, got 0\n"
    completed = _baton("run", "--poll-seconds", "soon")
    assert completed.returncode == 2
    assert "Invalid value for '--poll-seconds'" in completed.stderr
