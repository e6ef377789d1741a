"""Prompt parsing, the explore block, the five builders and their response instructions."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton.errors import ConfigError
from baton.orchestrator import prompts
from baton.orchestrator.prompts import (
    EXPLORE_BACK_REFERENCE,
    ExploreTracker,
    build_analyst_prompt,
    build_analyst_review_prompt,
    build_programmer_prompt,
    build_programmer_review_prompt,
    build_tester_prompt,
    parse_prompt,
)
from baton.orchestrator.response_files import response_path_for
from baton.scripted_agent.answers import find_response_target, read_number

WD = Path("/work/project")


def _all_prompts(test_cmd: str = "") -> dict[str, str]:
    return {
        "analyst": build_analyst_prompt(
            explore_block="EXPLORE",
            round_number=2,
            cycle=3,
            tester_feedback="RESULT: FAIL\nEVIDENCE: x",
            peer_feedback="REVIEW_NOTES: add P2",
            response_path=response_path_for("analyst", WD),
        ),
        "analyst_review": build_analyst_review_prompt(
            explore_block="EXPLORE",
            round_number=2,
            cycle=3,
            analyst_output="ANALYST_SUMMARY\nAnalyst review cycle: 3",
            response_path=response_path_for("analyst_review", WD),
        ),
        "programmer": build_programmer_prompt(
            explore_block="EXPLORE",
            round_number=2,
            cycle=1,
            analyst_output="ANALYST_SUMMARY body",
            peer_feedback="None yet.",
            project_test_cmd=test_cmd,
            response_path=response_path_for("programmer", WD),
        ),
        "programmer_review": build_programmer_review_prompt(
            explore_block="EXPLORE",
            round_number=2,
            cycle=1,
            programmer_output="PROGRAMMER_SUMMARY body",
            project_test_cmd=test_cmd,
            response_path=response_path_for("programmer_review", WD),
        ),
        "tester": build_tester_prompt(
            scenario_test="run the scenario",
            round_number=2,
            programmer_output="PROGRAMMER_SUMMARY body",
            response_path=response_path_for("tester", WD),
        ),
    }


def test_parse_prompt_splits_at_whole_line_markers() -> None:
    parts = parse_prompt(
        "Intro\n*** ORIGINAL EXPLORE SUMMARY ***\nThe code.\nMore.\n"
        "  *** SCENARIO TEST ***  \nRun `make e2e`.\n"
    )
    assert parts.explore_summary == "The code.\nMore."
    assert parts.scenario_test == "Run `make e2e`."


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("no markers", "missing the line '*** ORIGINAL EXPLORE SUMMARY ***'"),
        (
            "x *** ORIGINAL EXPLORE SUMMARY *** y\n*** SCENARIO TEST ***\nz",
            "missing the line '*** ORIGINAL EXPLORE SUMMARY ***'",
        ),
        ("*** ORIGINAL EXPLORE SUMMARY ***\nabc\n", "missing the line '*** SCENARIO TEST ***'"),
        (
            "*** SCENARIO TEST ***\nt\n*** ORIGINAL EXPLORE SUMMARY ***\ne\n",
            "missing the line '*** SCENARIO TEST ***' after",
        ),
        ("*** ORIGINAL EXPLORE SUMMARY ***\n  \n*** SCENARIO TEST ***\nt", "explore summary"),
        ("*** ORIGINAL EXPLORE SUMMARY ***\ne\n*** SCENARIO TEST ***\n\n \n", "scenario test"),
    ],
)
def test_bad_prompt_names_the_problem(text: str, needle: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_prompt(text, source="PROMPT_FILE p.md")
    assert needle in str(raised.value)
    assert str(raised.value).startswith("PROMPT_FILE p.md: ")


def test_first_send_includes_full_summary() -> None:
    tracker = ExploreTracker("the summary")
    assert tracker.explore_block_for("t1").endswith("the summary")


def test_repeat_send_returns_condensed() -> None:
    tracker = ExploreTracker("the summary")
    tracker.explore_block_for("t1")
    assert EXPLORE_BACK_REFERENCE in tracker.explore_block_for("t1")
    assert tracker.explore_block_for("t2").endswith("the summary")
    assert EXPLORE_BACK_REFERENCE == "(Same as initial turn -- refer to your conversation history.)"


def test_repeat_send_is_full_when_condensing_is_off_or_forgotten() -> None:
    tracker = ExploreTracker("the summary", condense_on_repeat=False)
    tracker.explore_block_for("t1")
    assert tracker.explore_block_for("t1").endswith("the summary")
    tracker = ExploreTracker("the summary", sent={"t1"})  # restored from a state file
    assert EXPLORE_BACK_REFERENCE in tracker.explore_block_for("t1")
    tracker.forget("t1")
    assert tracker.explore_block_for("t1").endswith("the summary")


def test_analyst_prompt_structure() -> None:
    text = _all_prompts()["analyst"]
    assert "EXPLORE" in text
    assert "Round: 2" in text and "Analyst review cycle: 3" in text
    assert "RESULT: FAIL\nEVIDENCE: x" in text  # tester feedback
    assert "REVIEW_NOTES: add P2" in text  # peer analyst feedback
    assert "Do not run tests and do not implement code" in text
    for section in (
        "Per-file artifact review",
        "proposal.md",
        "design.md",
        "tasks.md",
        "specs/*",
        "P1-P4 traceability",
        "Phased delivery coverage",
        "Downstream contract impact",
        "handoff to the programmer",
        "ANALYST_SUMMARY",
        "fast-forward",
    ):
        assert section in text, section
    assert read_number(text, "Round") == 2
    assert read_number(text, "Analyst review cycle") == 3


def test_analyst_prompt_includes_file_instruction() -> None:
    text = _all_prompts()["analyst"]
    instruction = text[text.index("RESPONSE FILE INSTRUCTION") :]
    assert "/work/project/.tmp/agent-responses/analyst_summary.md" in instruction


def test_all_five_agent_roles_have_file_instructions() -> None:
    for key, text in _all_prompts().items():
        assert "RESPONSE FILE INSTRUCTION" in text
        target = find_response_target(text)
        assert target is not None
        assert target.path == response_path_for(key, WD), key
        assert text.rstrip().endswith("wait for the next instruction.")


def test_programmer_prompt_condenses_upstream_on_repeat() -> None:
    first = build_programmer_prompt(
        explore_block="E",
        round_number=1,
        cycle=1,
        analyst_output="ANALYST_SUMMARY unique-analyst-text",
        peer_feedback="None yet.",
        project_test_cmd="",
        response_path=response_path_for("programmer", WD),
    )
    second = build_programmer_prompt(
        explore_block="E",
        round_number=1,
        cycle=2,
        analyst_output="ANALYST_SUMMARY unique-analyst-text",
        peer_feedback="REVIEW_NOTES: add a test",
        project_test_cmd="",
        response_path=response_path_for("programmer", WD),
    )
    assert "unique-analyst-text" in first
    assert "unique-analyst-text" not in second
    assert prompts.UPSTREAM_BACK_REFERENCE in second
    off = build_programmer_prompt(
        explore_block="E",
        round_number=1,
        cycle=2,
        analyst_output="ANALYST_SUMMARY unique-analyst-text",
        peer_feedback="x",
        project_test_cmd="",
        response_path=response_path_for("programmer", WD),
        condense_upstream=False,
    )
    assert "unique-analyst-text" in off


def test_programmer_prompts_carry_guards_and_test_command() -> None:
    built = _all_prompts("make check")
    for key in ("programmer", "programmer_review"):
        text = built[key]
        assert "use this project test command: make check" in text
        assert "git reset --hard" in text and "git clean" in text
        assert "tests/fixtures/**" in text and ".tmp/ or /tmp/" in text
        assert "scenario test" in text
        assert "Programmer review cycle: 1" in text
    assert "PROGRAMMER_SUMMARY" in built["programmer"]
    assert "Validation run status: NOT_RUN" in built["programmer_review"]
    assert "REVIEW_RESULT: APPROVED" in built["programmer_review"]
    default = _all_prompts("")["programmer"]
    assert "use the project-specific test command from AGENTS.md (not plain pytest)" in default


def test_test_command_line() -> None:
    assert prompts.test_command_line("tox -e py") == "use this project test command: tox -e py"
    assert "AGENTS.md" in prompts.test_command_line("")


def test_tester_prompt_structure() -> None:
    text = _all_prompts()["tester"]
    assert text.startswith("*** SCENARIO TEST ***\nrun the scenario")
    assert "PROGRAMMER_SUMMARY body" in text
    assert "RESULT: PASS" in text and "EVIDENCE:" in text
    assert "Do not write or change code" in text and "OpenSpec" in text


def test_peer_analyst_prompt_structure() -> None:
    text = _all_prompts()["analyst_review"]
    assert "ANALYST_SUMMARY" in text
    assert "Review only" in text
    assert "REVIEW_RESULT: APPROVED" in text and "REVIEW_NOTES:" in text
    assert read_number(text, "Analyst review cycle") == 3
