"""`baton run ARG`: a config file, a prompt file or the request in words; `baton new`."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from baton.cli import cli
from baton.errors import ConfigError, PromptError
from baton.orchestrator.prompts import (
    EXPLORE_MARKER,
    SCENARIO_MARKER,
    parse_prompt,
    prompt_example,
)
from baton.orchestrator.request import (
    ArgumentKind,
    classify_argument,
    prompt_template,
    run_inputs,
    sentence_prompt,
    write_template,
)

REQUEST = "Add a --json flag to the export command"


def test_an_existing_file_is_a_config_or_a_prompt_file_and_words_are_a_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "loop.json").write_text("{}", encoding="utf-8")
    (tmp_path / "feature.md").write_text("x", encoding="utf-8")
    assert classify_argument("loop.json").kind is ArgumentKind.CONFIG
    assert classify_argument("feature.md").kind is ArgumentKind.PROMPT_FILE
    assert classify_argument(REQUEST).kind is ArgumentKind.REQUEST
    assert classify_argument("Refactor").kind is ArgumentKind.REQUEST  # one word, not a path
    with pytest.raises(ConfigError, match=r"^no file missing\.json: "):
        classify_argument("missing.json")
    with pytest.raises(ConfigError, match="no file docs/x"):
        classify_argument("docs/x")
    with pytest.raises(ConfigError, match="is a directory"):
        classify_argument(str(tmp_path))


def test_a_request_in_words_builds_a_seed_format_prompt() -> None:
    prompt = sentence_prompt(REQUEST, "pytest -q tests/test_export.py")
    parts = parse_prompt(prompt)
    assert prompt.splitlines()[0] == REQUEST
    assert REQUEST in parts.explore_summary
    assert "In the project directory run: pytest -q tests/test_export.py" in parts.scenario_test
    assert "PASS when it exits 0" in parts.scenario_test


def test_run_inputs_turns_the_argument_into_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "loop.json").write_text("{}", encoding="utf-8")
    (tmp_path / "feature.md").write_text("x", encoding="utf-8")
    assert run_inputs(None, None, {"prompt": None}, {}) == (None, {"prompt": None})
    assert run_inputs("loop.json", None, {}, {}) == (Path("loop.json"), {})
    assert run_inputs("feature.md", None, {}, {}) == (None, {"prompt_file": Path("feature.md")})
    config, chosen = run_inputs(REQUEST, "pytest -q", {"project_test_cmd": None}, {})
    assert config is None
    assert chosen["prompt"] == sentence_prompt(REQUEST, "pytest -q")
    assert chosen["project_test_cmd"] == "pytest -q"  # the agents' test command too
    # A project test command already set stays, and stands in for a missing --test.
    _, chosen = run_inputs(REQUEST, None, {}, {"PROJECT_TEST_CMD": "make test"})
    assert "run: make test" in str(chosen["prompt"])
    assert "project_test_cmd" not in chosen


@pytest.mark.parametrize(
    ("argument", "test", "options", "message"),
    [
        (None, "pytest", {}, "--test goes with a request in words"),
        ("loop.json", "pytest", {}, "--test goes with a request in words, not a config"),
        (REQUEST, "pytest", {"prompt": "other"}, "two prompts"),
        ("feature.md", None, {"prompt_file": "x.md"}, "two prompts"),
        (REQUEST, None, {}, "a request in words needs its scenario test: add --test CMD"),
    ],
)
def test_run_inputs_refuses_what_cannot_be_meant(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    argument: str | None,
    test: str | None,
    options: dict[str, object],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "loop.json").write_text("{}", encoding="utf-8")
    (tmp_path / "feature.md").write_text("x", encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        run_inputs(argument, test, options, {})


def test_an_unfilled_template_is_refused_and_a_filled_one_is_taken() -> None:
    template = prompt_template()
    with pytest.raises(PromptError, match=r"the explore summary .* is blank") as refused:
        parse_prompt(template)
    assert refused.value.example == prompt_example()
    filled = template.replace(
        f"{EXPLORE_MARKER}\n", f"{EXPLORE_MARKER}\nThe export is in src/export.py.\n"
    ).replace(f"{SCENARIO_MARKER}\n", f"{SCENARIO_MARKER}\nRun pytest -q.\n")
    parts = parse_prompt(filled)
    assert "src/export.py" in parts.explore_summary and "pytest -q" in parts.scenario_test


def test_the_example_is_itself_an_accepted_prompt() -> None:
    block = prompt_example().split("\n\n", 1)[1].split("\n\nOr start", 1)[0]
    parts = parse_prompt("\n".join(line.strip() for line in block.splitlines()))
    assert "export.py" in parts.explore_summary


def test_baton_new_writes_once_and_never_overwrites(tmp_path: Path) -> None:
    target = write_template(tmp_path / "feature.md")
    assert target.read_text(encoding="utf-8") == prompt_template()
    target.write_text("mine", encoding="utf-8")
    with pytest.raises(ConfigError, match="exists; not overwritten"):
        write_template(target)
    assert target.read_text(encoding="utf-8") == "mine"


def test_baton_new_and_a_refused_prompt_on_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("PROMPT", "PROMPT_FILE", "STATE_FILE", "RESUME", "PROJECT_TEST_CMD", "WD"):
        monkeypatch.delenv(name, raising=False)
    runner = CliRunner()
    made = runner.invoke(cli, ["new"])
    assert made.exit_code == 0, made.output
    assert (tmp_path / "feature.md").is_file()
    assert f"wrote {tmp_path / 'feature.md'}; fill it in, then run: " in made.output
    again = runner.invoke(cli, ["new"])
    assert again.exit_code == 1 and "exists; not overwritten" in again.output

    refused = runner.invoke(cli, ["run", "feature.md", "--api", "http://127.0.0.1:9"])
    assert refused.exit_code == 1
    first, *rest = refused.output.splitlines()
    assert first.startswith("baton: error: --prompt-file ")
    assert "the explore summary" in first and first.endswith("is blank")
    assert "\n".join(rest) == prompt_example()
    no_test = runner.invoke(cli, ["run", REQUEST])
    assert no_test.exit_code == 1
    assert no_test.output.splitlines()[0].startswith("baton: error: a request in words needs")
