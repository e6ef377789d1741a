"""Settings: env vars > JSON file > defaults, validation with one line naming the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from baton.errors import ConfigError
from baton.orchestrator.config import AgentOverride, Settings
from baton.orchestrator.config_layers import load_settings

PROMPT = "intro\n*** ORIGINAL EXPLORE SUMMARY ***\nthe code\n*** SCENARIO TEST ***\nrun it\n"


def _env(tmp_path: Path, **values: str) -> dict[str, str]:
    return {"WD": str(tmp_path), **values}


def _config(tmp_path: Path, data: object, name: str = "config.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def test_default_configuration_matches_shell_script(tmp_path: Path) -> None:
    settings = load_settings(None, _env(tmp_path))
    assert settings.max_rounds == 8
    assert settings.max_review_cycles == 3
    assert settings.poll_seconds == 2
    assert settings.min_review_cycles_before_approval == 2
    assert settings.review_evidence_min_match == 3
    assert settings.api == "http://localhost:9889"
    assert settings.provider == "codex"
    assert settings.wd == tmp_path.resolve()
    assert settings.project_test_cmd == ""
    assert settings.require_review_evidence is True
    assert settings.resume is None
    assert settings.condense_explore_on_repeat is True
    assert settings.condense_review_feedback is True
    assert settings.max_feedback_lines == 30
    assert settings.condense_upstream_on_repeat is True
    assert settings.state_path == tmp_path.resolve() / ".tmp/codex-3agents-loop-state.json"
    assert settings.cleanup_on_exit is False
    assert settings.response_timeout == 1800
    assert settings.strict_file_handoff is True
    assert settings.condense_cross_phase is True
    assert settings.max_cross_phase_lines == 40
    assert settings.idle_grace_seconds == 30
    assert settings.token is None


def test_wd_defaults_to_current_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert load_settings(None, {}).wd == tmp_path.resolve()


def test_every_env_var_is_read(tmp_path: Path) -> None:
    prompt_file = tmp_path / "prompt.md"
    prompt_file.write_text(PROMPT)
    env = _env(
        tmp_path,
        API="http://127.0.0.1:1234/",
        PROVIDER="claude_code",
        PROMPT_FILE=str(prompt_file),
        MAX_ROUNDS="2",
        POLL_SECONDS="0.2",
        MAX_REVIEW_CYCLES="5",
        PROJECT_TEST_CMD="make test",
        MIN_REVIEW_CYCLES_BEFORE_APPROVAL="1",
        REQUIRE_REVIEW_EVIDENCE="0",
        REVIEW_EVIDENCE_MIN_MATCH="4",
        RESUME="1",
        CONDENSE_EXPLORE_ON_REPEAT="0",
        CONDENSE_REVIEW_FEEDBACK="0",
        MAX_FEEDBACK_LINES="7",
        CONDENSE_UPSTREAM_ON_REPEAT="0",
        STATE_FILE=str(tmp_path / "s.json"),
        CLEANUP_ON_EXIT="1",
        RESPONSE_TIMEOUT="12.5",
        STRICT_FILE_HANDOFF="0",
        CONDENSE_CROSS_PHASE="0",
        MAX_CROSS_PHASE_LINES="9",
        IDLE_GRACE_SECONDS="0.5",
        BATON_TOKEN="secret",
    )
    s = load_settings(None, env)
    assert (s.api, s.provider, s.max_rounds, s.poll_seconds) == (
        "http://127.0.0.1:1234",
        "claude_code",
        2,
        0.2,
    )
    assert (s.max_review_cycles, s.project_test_cmd, s.min_review_cycles_before_approval) == (
        5,
        "make test",
        1,
    )
    assert (s.require_review_evidence, s.review_evidence_min_match, s.resume) == (False, 4, True)
    assert not s.condense_explore_on_repeat and not s.condense_review_feedback
    assert not s.condense_upstream_on_repeat and not s.condense_cross_phase
    assert (s.max_feedback_lines, s.max_cross_phase_lines) == (7, 9)
    assert s.state_path == tmp_path / "s.json"
    assert s.cleanup_on_exit and not s.strict_file_handoff
    assert (s.response_timeout, s.idle_grace_seconds, s.token) == (12.5, 0.5, "secret")
    assert s.prompt == PROMPT


def test_empty_env_var_counts_as_unset(tmp_path: Path) -> None:
    config = _config(tmp_path, {"limits": {"max_rounds": 4}})
    settings = load_settings(config, _env(tmp_path, MAX_ROUNDS="", POLL_SECONDS="", RESUME=""))
    assert settings.max_rounds == 4
    assert settings.poll_seconds == 2
    assert settings.resume is None


def test_env_beats_json_beats_default(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        {
            "limits": {"max_rounds": 4, "max_review_cycles": 6},
            "handoff": {"idle_grace_seconds": 0.25},
        },
    )
    settings = load_settings(config, _env(tmp_path, MAX_ROUNDS="3"))
    assert settings.max_rounds == 3  # env
    assert settings.max_review_cycles == 6  # JSON
    assert settings.idle_grace_seconds == 0.25  # JSON fraction
    assert settings.poll_seconds == 2  # default


def test_json_covers_every_section(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    (tmp_path / "p.md").write_text(PROMPT)
    config = _config(
        tmp_path,
        {
            "api": "http://127.0.0.1:9",
            "provider": "scripted",
            "wd": "project",
            "prompt_file": "p.md",
            "project_test_cmd": "tox",
            "limits": {"max_rounds": 1, "max_review_cycles": 2},
            "review": {
                "min_cycles_before_approval": 1,
                "require_evidence": False,
                "evidence_min_match": 2,
            },
            "condensation": {
                "explore_on_repeat": False,
                "review_feedback": False,
                "max_feedback_lines": 5,
                "upstream_on_repeat": False,
                "cross_phase": False,
                "max_cross_phase_lines": 6,
            },
            "handoff": {
                "poll_seconds": 0.1,
                "response_timeout": 60,
                "idle_grace_seconds": 1,
                "strict": False,
            },
            "state": {"file": "state.json", "resume": False, "cleanup_on_exit": True},
            "agents": {"programmer": {"provider": "claude_code"}, "tester": {"profile": "qa"}},
        },
    )
    s = load_settings(config, {})
    assert s.wd == (tmp_path / "project").resolve()  # relative to the config file
    assert s.prompt == PROMPT
    assert s.state_path == (tmp_path / "state.json").resolve()
    assert (s.provider, s.project_test_cmd, s.max_rounds, s.max_review_cycles) == (
        "scripted",
        "tox",
        1,
        2,
    )
    assert (s.min_review_cycles_before_approval, s.require_review_evidence) == (1, False)
    assert s.review_evidence_min_match == 2
    assert (s.max_feedback_lines, s.max_cross_phase_lines) == (5, 6)
    assert (s.poll_seconds, s.response_timeout, s.idle_grace_seconds) == (0.1, 60, 1)
    assert s.strict_file_handoff is False and s.resume is False and s.cleanup_on_exit is True
    assert s.provider_for("programmer") == "claude_code"
    assert s.provider_for("analyst") == "scripted"
    assert s.profile_for("tester") == "qa"
    assert s.profile_for("peer_analyst") == "peer_system_analyst"


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"MAX_ROUNDS": "many"}, "MAX_ROUNDS: expected a whole number, got 'many'"),
        ({"MAX_ROUNDS": "0"}, "MAX_ROUNDS: must be at least 1"),
        ({"POLL_SECONDS": "fast"}, "POLL_SECONDS: expected a number of seconds"),
        ({"POLL_SECONDS": "0"}, "POLL_SECONDS: must be greater than 0"),
        ({"IDLE_GRACE_SECONDS": "-1"}, "IDLE_GRACE_SECONDS: must be at least 0"),
        ({"RESPONSE_TIMEOUT": "nan"}, "RESPONSE_TIMEOUT: expected a finite number"),
        ({"STRICT_FILE_HANDOFF": "maybe"}, "STRICT_FILE_HANDOFF: expected 1 or 0"),
        ({"API": "localhost:9889"}, "API: expected an http:// or https:// URL"),
        ({"PROMPT_FILE": "/nonexistent/prompt.md"}, "PROMPT_FILE: no such file"),
    ],
)
def test_bad_env_value_is_one_line_naming_the_key(
    tmp_path: Path, env: dict[str, str], needle: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        load_settings(None, _env(tmp_path, **env))
    message = str(raised.value)
    assert needle in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ('{"limits": {"max_rounds": 3,}}', "invalid JSON at line 1"),
        ('{"a":' * 100_000 + "1" + "}" * 100_000, "invalid JSON: nested too deeply"),
        ("[1, 2]", "the top level must be a JSON object"),
        ({"limits": {"max_round": 3}}, "unknown key limits.max_round"),
        ({"speed": 3}, "unknown key speed"),
        ({"limits": {"max_rounds": "x"}}, "limits.max_rounds: expected a whole number"),
        ({"limits": {"max_rounds": 2.5}}, "limits.max_rounds: expected a whole number"),
        ({"limits": {"max_rounds": 0}}, "limits.max_rounds: must be at least 1"),
        ({"handoff": {"poll_seconds": True}}, "handoff.poll_seconds: expected a number"),
        ({"handoff": 3}, "handoff: expected an object"),
        ({"agents": {"boss": {"provider": "codex"}}}, "agents.boss: unknown role"),
        ({"agents": {"tester": {"model": "x"}}}, "unknown key agents.tester.model"),
        ({"agents": {"tester": {"provider": ""}}}, "agents.tester.provider: expected a non-empty"),
        ({"prompt_file": "missing.md"}, "prompt_file: no such file"),
        ({"agents": {"tester": "qa"}}, "agents.tester: expected an object"),
        ({"limits": {"max_cost_usd": "x"}}, "limits.max_cost_usd: expected a number of US dollars"),
        ({"handoff": {"response_timeout": 1e999}}, "handoff.response_timeout: expected a finite"),
        ({"state": {"resume": "maybe"}}, "state.resume: expected 1 or 0"),
    ],
)
def test_bad_json_is_one_line_naming_the_key(tmp_path: Path, data: object, needle: str) -> None:
    config = _config(tmp_path, data)
    with pytest.raises(ConfigError) as raised:
        load_settings(config, _env(tmp_path))
    assert needle in str(raised.value)
    assert "\n" not in str(raised.value)


def test_env_values_are_read_like_the_shell_reads_them(tmp_path: Path) -> None:
    env = _env(tmp_path, RESUME=" on ", MAX_ROUNDS=" 4 ", STATE_FILE="~/baton-state.json")
    settings = load_settings(None, env)
    assert (settings.resume, settings.max_rounds) == (True, 4)
    assert settings.state_path == Path.home() / "baton-state.json"


def test_a_bad_value_is_blamed_on_the_layer_that_set_it(tmp_path: Path) -> None:
    config = _config(tmp_path, {"limits": {"max_rounds": 0}})
    with pytest.raises(ConfigError, match=r"config\.json: limits\.max_rounds: must be at least 1"):
        load_settings(config, _env(tmp_path))
    # The env var wins over the file: a good env value hides the file's bad one.
    assert load_settings(config, _env(tmp_path, MAX_ROUNDS="2")).max_rounds == 2
    with pytest.raises(ConfigError, match=r"^MAX_ROUNDS: must be at least 1, got '0'$"):
        load_settings(config, _env(tmp_path, MAX_ROUNDS="0"))


def test_missing_config_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_settings(tmp_path / "nope.json", {})


def test_prompt_file_wins_over_prompt(tmp_path: Path) -> None:
    prompt_file = tmp_path / "p.md"
    prompt_file.write_text(PROMPT)
    settings = load_settings(None, _env(tmp_path, PROMPT="ignored", PROMPT_FILE=str(prompt_file)))
    assert settings.prompt == PROMPT


def test_env_prompt_overrides_json_prompt_file(tmp_path: Path) -> None:
    (tmp_path / "p.md").write_text("not used")
    config = _config(tmp_path, {"prompt_file": "p.md"})
    settings = load_settings(config, _env(tmp_path, PROMPT=PROMPT))
    assert settings.prompt == PROMPT


def test_prompt_without_markers_is_rejected_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"PROMPT: missing the line '\*\*\* ORIGINAL EXPLORE"):
        load_settings(None, _env(tmp_path, PROMPT="just do it"))


def test_settings_built_directly_with_overrides(tmp_path: Path) -> None:
    settings = Settings(
        api="http://127.0.0.1:5555",
        provider="scripted",
        wd=tmp_path,
        prompt=PROMPT,
        poll_seconds=0.2,
        idle_grace_seconds=1,
        agents={"tester": AgentOverride(provider="codex")},
    )
    assert settings.max_rounds == 8
    assert settings.prompt_parts is not None
    assert settings.prompt_parts.scenario_test == "run it"
    assert settings.provider_for("tester") == "codex"
    with pytest.raises(ConfigError, match="MAX_REVIEW_CYCLES: must be at least 1"):
        Settings(wd=tmp_path, max_review_cycles=0)
    with pytest.raises(ConfigError, match=r"agents\.boss: unknown role"):
        Settings(wd=tmp_path, agents={"boss": AgentOverride()})


def test_token_is_not_shown_in_repr(tmp_path: Path) -> None:
    assert "secret" not in repr(Settings(wd=tmp_path, token="secret"))


def test_wd_must_be_a_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="WD: not a directory"):
        load_settings(None, {"WD": str(tmp_path / "missing")})
