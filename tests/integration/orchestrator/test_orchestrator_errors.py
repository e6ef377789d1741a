"""Bad input stops `baton run` before any terminal exists, with one line naming the culprit."""

from __future__ import annotations

import socket

import pytest
from tests.integration.orchestrator.conftest import Project


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("baton: error:")]


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"PROMPT_FILE": "/nonexistent/prompt.md"}, "PROMPT_FILE: no such file"),
        ({"PROMPT": "no markers here"}, "missing the line '*** ORIGINAL EXPLORE SUMMARY ***'"),
        (
            {"PROMPT": "*** ORIGINAL EXPLORE SUMMARY ***\nexplore\n"},
            "missing the line '*** SCENARIO TEST ***'",
        ),
        (
            {"PROMPT": "*** ORIGINAL EXPLORE SUMMARY ***\n\n*** SCENARIO TEST ***\nrun\n"},
            "explore summary",
        ),
        ({"MAX_ROUNDS": "eight"}, "MAX_ROUNDS: expected a whole number"),
        ({"POLL_SECONDS": "soon"}, "POLL_SECONDS: expected a number of seconds"),
        ({"PROMPT": ""}, "no prompt: give the request (baton run"),
    ],
)
def test_bad_input_is_one_line_and_touches_no_server(
    project: Project, env: dict[str, str], needle: str
) -> None:
    run = project.run(**env)
    assert run.returncode == 1
    errors = _error_lines(run.stderr)
    assert len(errors) == 1 and needle in errors[0], run.stderr
    assert "Traceback" not in run.stderr
    assert project.cao.requests == []


def test_bad_prompt_file_header_names_the_file(project: Project) -> None:
    prompt_file = project.wd.parent / "prompt.md"
    prompt_file.write_text("*** SCENARIO TEST ***\nonly a scenario\n")
    run = project.run(PROMPT_FILE=str(prompt_file))
    assert run.returncode == 1
    assert f"PROMPT_FILE {prompt_file}: missing the line" in _error_lines(run.stderr)[0]
    assert project.cao.requests == []


def test_json_syntax_error_names_the_file_and_line(project: Project) -> None:
    config = project.wd.parent / "baton.json"
    config.write_text('{\n  "limits": {"max_rounds": 2,}\n}\n')
    run = project.run(str(config))
    assert run.returncode == 1
    assert f"{config}: invalid JSON at line 2" in _error_lines(run.stderr)[0]
    assert project.cao.requests == []


def test_unknown_json_key_and_role(project: Project) -> None:
    config = project.wd.parent / "baton.json"
    config.write_text('{"agents": {"boss": {"provider": "codex"}}}')
    run = project.run(str(config))
    assert "agents.boss: unknown role" in _error_lines(run.stderr)[0]


def test_unreachable_api_is_one_line_naming_the_url(project: Project) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    run = project.run(API=url)
    assert run.returncode == 1
    errors = _error_lines(run.stderr)
    assert len(errors) == 1
    assert url in errors[0] and "baton serve" in errors[0] and "cao-server" in errors[0]
    assert not project.state_file.exists()


def test_failure_while_creating_the_team(project: Project) -> None:
    project.cao.refuse_profiles = {"peer_programmer"}
    run = project.run()
    assert run.returncode == 1
    errors = _error_lines(run.stderr)
    assert len(errors) == 1
    assert "HTTP 500" in errors[0] and "cannot start peer_programmer: tmux failed" in errors[0]
    # The partial team is in the state file, so the next run completes it, not a new one.
    # The four after the session are asked for at once: all but the refused one exist.
    made = {key: tid for key, tid in project.state()["terminals"].items() if tid}
    assert sorted(made) == ["analyst", "peer_analyst", "programmer", "tester"]
    assert "; resume with: cd " in run.stderr

    project.cao.refuse_profiles = set()
    second = project.run(MAX_ROUNDS="1")
    assert second.returncode == 0, second.stderr
    assert len(project.cao.posts("/sessions")) == 1
    assert {k: project.state()["terminals"][k] for k in made} == made


def test_failure_while_creating_the_team_with_cleanup(project: Project) -> None:
    project.cao.refuse_profiles = {"tester"}
    run = project.run(CLEANUP_ON_EXIT="1")
    assert run.returncode == 1
    assert len(project.cao.posts("/exit")) == 4
